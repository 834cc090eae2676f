/*
 * tfo_delay.h - the internal interface between the files of tfo-delay (see
 * tfo_delay.c for what the program does and the rules every file follows).
 *
 *   tfo_delay.c   main(): set-up, the event loop, the orderly stop
 *   options.c     the command line (on the shared parser, src/cli/args.h)
 *   nfnl_msg.c    nfnetlink messages: building, sending, receiving, parsing
 *   nfnl_queue.c  the queue: the socket, bind, parameters, release-and-unbind
 *   hold.c        the hold-and-release FIFO: due times and verdicts
 *   record.c      --record-fd: every released packet, stamped, as a pcap file
 *                 (--late-record-fd: and how late each one was)
 *   stats.c       lateness histogram, kernel drop counters, the report lines
 *   drop.c        --control: deterministic drops, a plan per iteration
 *
 * Every file defines _GNU_SOURCE before its first include (signalfd,
 * SO_RCVBUFFORCE, clock_gettime under -std=c11).
 */
#ifndef TFOLAB_TFO_DELAY_H
#define TFOLAB_TFO_DELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <linux/netlink.h>

#define PROG "tfo-delay"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2 /* bad input or an environment that cannot work */

#define NS_PER_MS 1000000LL
/* A packet's send stamp (NFQA_TIMESTAMP) is trusted only this far before its read:
 * further back, the wall clock has stepped since start (hold.c). */
#define MAX_SEND_LAG_NS (10 * NS_PER_MS)
/* NFQA_TIMESTAMP carries microseconds; a send stamp is taken at its microsecond's end */
#define SEND_STAMP_ROUNDING_NS 1000
#define HIST_BINS 100000u /* lateness histogram: 1 us bins up to 100 ms */
/* A packet message with its whole packet (copy range 65531) fits with room to spare. */
#define RECV_BUF_BYTES (128 * 1024)
/* With drop plans possible and nothing recorded, each packet's first bytes are
 * copied: IPv6's 40-byte header and TCP's ports fit with room to spare. */
#define HEADER_COPY_BYTES 128u

/* ------------------------------------------------------------------------ */
/* options.c                                                                */

struct options {
    uint16_t queue;
    bool have_queue;
    int64_t delay_ns;
    bool have_delay;
    uint32_t max_queue;
    bool die_with_parent;
    bool stats_json;
    bool fail_open;
    int rt_priority;
    int record_fd; /* --record-fd N, or -1 */
    bool control;  /* --control: plans on stdin, answers on stdout (drop.c) */
    int drop_record_fd; /* --drop-record-fd N, or -1 */
    int late_record_fd; /* --late-record-fd N, or -1 */
};

/* Fill *o from the command line; bad input exits 2, --help exits 0. */
void parse_args(int argc, char **argv, struct options *o);

/* ------------------------------------------------------------------------ */
/* hold.c: held packets, a FIFO ring of (id, due time)                      */

struct held {
    uint32_t id;
    int64_t due_ns;
    unsigned char *packet; /* the packet's bytes while recording (malloc'd), else NULL */
    uint32_t cap_len;      /* bytes in packet */
    uint32_t wire_len;     /* the packet's whole length (more than cap_len if cut) */
    bool mangled;          /* the middlebox rewrote it: released with these bytes */
    bool dropped;          /* a plan or the middlebox drops it: NF_DROP at its due time */
};

struct fifo {
    struct held *items;
    uint32_t cap, head, count, limit;
};

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t now_ns(void);

/* Double the ring (the first call allocates it), up to f->limit entries. */
bool fifo_grow(struct fifo *f);

static inline const struct held *fifo_front(const struct fifo *f)
{
    return f->count ? &f->items[f->head] : NULL;
}

static inline void fifo_pop(struct fifo *f)
{
    free(f->items[f->head].packet);
    f->items[f->head].packet = NULL;
    f->head = (f->head + 1) % f->cap;
    f->count--;
}

/* ------------------------------------------------------------------------ */
/* record.c: released packets as a pcap file (--record-fd)                  */

struct recorder {
    int fd;               /* -1: not recording */
    unsigned char *buf;   /* records not written yet */
    size_t len, cap;
    int late_fd;          /* each record's lateness, in record order; -1: not kept */
    int64_t *late;        /* lateness not written yet, one per record in buf */
    size_t late_len, late_cap;
    uint64_t records;     /* packets recorded since the start */
    uint64_t lost;        /* packets released but not recorded (out of memory) */
};

/* Record to fd (open for writing, inherited): write the pcap file header; exits
 * 2 with the reason when it cannot. */
void recorder_open(struct recorder *r, int fd);

/* Also keep each record's lateness (--late-record-fd): written to fd with the
 * records, one signed 64-bit nanosecond count in host order per record. */
void recorder_keep_lateness(struct recorder *r, int fd);

/* Append one released packet: its release time (CLOCK_MONOTONIC ns), how late
 * that is after its due time (ns), and its bytes. */
void recorder_add(struct recorder *r, int64_t t_ns, int64_t late_ns, const unsigned char *packet,
                  uint32_t cap_len, uint32_t wire_len);

/* Write what is buffered.  Returns 0 or an errno. */
int recorder_flush(struct recorder *r);

/* Flush, then close.  Returns 0 or an errno. */
int recorder_close(struct recorder *r);

/* ------------------------------------------------------------------------ */
/* drop.c: deterministic drops                                              */

#define MAX_DROPS 64u
enum { DROP_CLIENT = 0, DROP_SERVER = 1 };

struct drop_entry {
    int sender;     /* DROP_CLIENT or DROP_SERVER */
    uint32_t index; /* 1-based, among that sender's packets since the plan began */
};

struct drop_plan {
    bool active;          /* a plan was given: packets of its port are counted */
    uint16_t server_port;
    uint16_t client_port; /* the plan's connection, from its first SYN; 0: not yet */
    uint32_t seen[2];     /* packets counted per sender since the plan began */
    uint32_t count;
    struct drop_entry drops[MAX_DROPS];
};

/* The plans of the last DROP_PLANS connections: an iteration's connection may
 * still be closing (its last ACK, a probe of its FIN) after the next one's plan
 * was given, and its packets keep their own count. */
#define DROP_PLANS 8u
struct drop_book {
    struct drop_plan plans[DROP_PLANS];
    uint32_t newest; /* index of the plan given last */
};

/* Parse a control line "DROP PORT LIST" into the book's next plan (its counts
 * from zero).  Returns NULL, or the reason the line is refused (then the book is
 * unchanged). */
const char *drop_plan_parse(struct drop_book *book, const char *line);

/* Count a packet (its IP header onward) against the plan of its connection: true
 * to drop it. */
bool drop_plan_decide(struct drop_book *book, const unsigned char *packet, uint32_t len);

/* ------------------------------------------------------------------------ */
/* stats.c                                                                  */

/* middlebox.c: a middlebox on the path to and from one port (--control). */
enum mb_mode { MB_NONE, MB_DROP_SYN_DATA, MB_STRIP_TFO_OPTION, MB_DROP_TFO_SYN };
enum mb_action { MB_PASS, MB_DROP, MB_MANGLED };

struct middlebox {
    uint16_t port;
    enum mb_mode mode;
    uint64_t dropped;  /* packets it dropped since the start */
    uint64_t mangled;  /* packets it rewrote */
    uint64_t unparsed; /* SYNs whose options it could not read (passed as they were) */
};

const char *middlebox_parse(struct middlebox *mb, const char *line);

const char *middlebox_mode_name(enum mb_mode mode);

/* What the middlebox does to the packet; MB_MANGLED rewrote it in place (*len: its
 * new length, never longer). */
enum mb_action middlebox_decide(struct middlebox *mb, unsigned char *packet, uint32_t *len);

/* The IPv4 header checksum and the TCP checksum of a whole packet, computed again. */
void middlebox_fix_checksums(unsigned char *packet, uint32_t len);

struct stats {
    uint64_t packets;           /* packet messages read */
    uint64_t on_time_verdicts;  /* accepted at their due time (lateness measured) */
    uint64_t released_at_exit;  /* accepted early because we were stopping */
    uint64_t overflow_accepts;  /* FIFO could not take a packet: accepted at once */
    uint64_t enobufs;           /* ENOBUFS from recv: the socket buffer overran */
    uint64_t lost;              /* gaps in packet ids: messages the kernel could not deliver */
    uint64_t verdict_errors;    /* NLMSG_ERROR answers to our verdicts */
    uint64_t recorded;          /* packets written to --record's file */
    uint64_t implausible_stamps; /* send stamps not trusted (see MAX_SEND_LAG_NS) */
    uint64_t dropped;           /* packets dropped by a plan or the middlebox (--control) */
    uint64_t middlebox_dropped; /* of those, by the middlebox (middlebox.c) */
    uint64_t mangled;           /* packets the middlebox rewrote */
    uint64_t middlebox_unparsed; /* SYNs it could not read, passed as they were */
    uint32_t max_depth;
    int64_t late_max_ns;
    uint64_t hist_over;         /* lateness >= HIST_BINS us */
    uint32_t hist[HIST_BINS];   /* lateness in 1 us bins */
};

/* Count one verdict given late_ns after its due time. */
void stats_late(struct stats *s, int64_t late_ns);

/* The kernel's drop counters for a queue and the portid bound to it; false
 * when the queue is not listed (not bound) or the file cannot be read. */
bool kernel_counters(uint16_t queue, uint64_t *queue_dropped, uint64_t *user_dropped,
                     uint32_t *portid);

/* The statistics line on stderr and, with --stats-json, the JSON line on stdout. */
void print_stats(const struct options *o, const struct stats *s, bool have_kc, uint64_t kq,
                 uint64_t ku, const char *sched);

/* ------------------------------------------------------------------------ */
/* nfnl_msg.c and nfnl_queue.c                                              */

struct nl {
    int fd;
    uint32_t seq;
    uint16_t queue;
    /* an acknowledgement we are waiting for */
    uint32_t want_seq;
    bool got_ack;
    int ack_error;          /* errno from the kernel, 0 = success */
    /* the sequence number of the shutdown batch verdict (ENOENT allowed when
     * nothing was held) */
    uint32_t shutdown_batch_seq;
    bool shutdown_nothing_held;
    bool have_last_id;
    uint32_t last_id;
};

union nl_buf {
    struct nlmsghdr hdr;
    char bytes[RECV_BUF_BYTES];
};

/* What handling a queue message touches. */
struct handler {
    struct nl *nl;
    struct fifo *fifo;
    struct stats *st;
    struct recorder *rec; /* rec->fd < 0: not recording */
    struct recorder *drop_rec; /* the packets dropped, stamped when their delay ends; fd < 0: none */
    struct drop_book *plans; /* no active plan: nothing is dropped */
    struct middlebox *mb;   /* mb->mode MB_NONE: nothing is judged */
    int64_t delay_ns;
    bool stopping; /* the shutdown batch went out: what is read now is accepted by it */
    int64_t realtime_minus_monotonic_ns; /* to read a packet's send stamp (NFQA_TIMESTAMP) */
};

/* Append one nfnetlink_queue message header to buf (at offset *off). */
struct nlmsghdr *msg_begin(char *buf, size_t cap, size_t *off, uint16_t type, uint16_t flags,
                           uint32_t seq, uint16_t res_id);

/* Append one attribute to the message nlh (the last one in buf). */
void msg_attr(char *buf, size_t cap, size_t *off, struct nlmsghdr *nlh, uint16_t type,
              const void *data, uint16_t len);

/* Send a buffer of messages to the kernel.  Returns 0 or an errno. */
int nl_send(struct nl *n, const void *buf, size_t len);

/* NF_ACCEPT packet id (batch: every queued id up to it).  Returns 0 or an errno. */
int send_verdict(struct nl *n, uint32_t id, bool batch);

/* NF_DROP packet id.  Returns 0 or an errno. */
int send_drop_verdict(struct nl *n, uint32_t id);

int send_verdict_payload(struct nl *n, uint32_t id, const unsigned char *packet, uint32_t len);

/*
 * Read one datagram without blocking and handle it: packets are held,
 * acknowledgements recorded.  Returns 1 if one was handled, 0 when the socket
 * is empty, -1 on a fatal error (errno set).
 */
int read_one(struct handler *h, union nl_buf *b);

/* The NETLINK_NETFILTER socket, bound, with a large receive buffer; exits 2
 * when this kernel or process cannot have one. */
int open_netlink(void);

/* NFQNL_CFG_CMD_BIND or _UNBIND, acknowledged.  Returns 0 or an errno. */
int send_cmd(struct handler *h, uint8_t cmd, union nl_buf *rb);

/* Copy mode (metadata only, headers with a drop plan possible, whole packets
 * while recording), queue length,
 * GSO and fail-open flags, acknowledged.  Returns 0 or an errno. */
int send_params(struct handler *h, uint32_t maxlen, bool fail_open, bool headers,
                union nl_buf *rb);

/* Accept everything still queued and unbind, in one datagram.  Returns 0 or an errno. */
int release_all_and_unbind(struct handler *h, union nl_buf *rb);

/* ------------------------------------------------------------------------ */
/* hold.c: what happens to a packet                                         */

/* What a packet message carries: its id, and while recording its bytes. */
struct queued {
    uint32_t id;
    const unsigned char *packet; /* NULL without a payload attribute */
    uint32_t cap_len;
    uint32_t wire_len;           /* NFQA_CAP_LEN when the copy was cut, else cap_len */
    int64_t sent_ns;             /* its netif_rx stamp on CLOCK_MONOTONIC, or 0 */
};

/* A packet message read at stamp: hold it until D after it was sent (its
 * netif_rx stamp, where the kernel gave one and it is not later than stamp),
 * else until stamp + D.  The FIFO stays in due order, so a packet that reached
 * the queue after one sent later (lo's per-CPU backlogs) leaves before it. */
void hold_packet(struct handler *h, const struct queued *q, int64_t stamp);

/* Accept every held packet whose due time has come.  0, or -1 with errno set. */
int release_due(struct handler *h);

/* At the stop, before the batch that accepts the rest: each held packet the
 * middlebox rewrote goes with its own verdict and bytes, and each one a plan or
 * the middlebox drops gets NF_DROP (recorded now), so a stripped option or a
 * dropped packet never passes because we stopped.  Returns how many went; a
 * failure is a verdict error, and that packet is left to the batch. */
uint32_t release_own_verdicts_at_exit(struct handler *h);

/* Empty the FIFO at the stop, freeing the packets' bytes; `released`: the
 * shutdown's batch verdict went out, so record them as released now. */
void release_held_at_exit(struct handler *h, bool released);

/* ------------------------------------------------------------------------ */
/* tfo_delay.c                                                              */

/* A set-up step failed: "tfo-delay: what: strerror(err); fix" and exit 2. */
_Noreturn void fail_setup(const char *what, int err, const char *fix);

#endif
