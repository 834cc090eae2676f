/*
 * tfo-delay - the bundled NFQUEUE delayer: a stand-in for netem on kernels
 * built without sch_netem.
 *
 * An iptables rule sends packets to an nfnetlink queue:
 *
 *     iptables -A OUTPUT -o lo -p tcp -j NFQUEUE --queue-num N --queue-bypass
 *
 * and this program accepts each queued packet exactly D milliseconds after it
 * was queued.  The delay is constant, so a FIFO keeps the packets in order and
 * one timer (the head of the FIFO) is all the scheduling there is.
 *
 * Rules of this file:
 * - C11, libc and Linux uapi headers only.  No libnetfilter_queue, no libmnl:
 *   the nfnetlink_queue messages are built and parsed by hand.
 * - Time is CLOCK_MONOTONIC in nanoseconds everywhere.  A packet is stamped
 *   when its message is read; its verdict is due at stamp + D; the wait is an
 *   absolute timerfd deadline (hrtimer, no timer slack), so lateness is the
 *   wake-up latency of this process, measured and reported.
 * - Every system call is checked.  Bad input and an environment that cannot
 *   work (no CAP_NET_ADMIN, queue already bound) give one line on stderr with
 *   the fix and exit status 2.  A failure after start-up releases the held
 *   packets and exits 1.  SIGTERM/SIGINT/SIGHUP release the held packets,
 *   unbind, print statistics and exit 0.
 * - The kernel queue's maximum length is --max-queue and the FIFO never grows
 *   beyond it, so the FIFO cannot overflow: the kernel refuses (drops) packets
 *   first, and counts them in /proc/net/netfilter/nfnetlink_queue.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* signalfd, SO_RCVBUFFORCE, clock_gettime under -std=c11 */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netlink.h>

#define PROG "tfo-delay"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

#define NS_PER_MS 1000000LL
#define MAX_DELAY_MS 3600000LL          /* one hour: anything longer is a typo */
#define DEFAULT_MAX_QUEUE 65536u
#define MAX_MAX_QUEUE (1u << 22)
#define INITIAL_RING 1024u
#define RCVBUF_BYTES (16 * 1024 * 1024)
#define RECV_BUF_BYTES 65536
#define ACK_TIMEOUT_MS 3000
#define DEFAULT_RT_PRIORITY 10
#define HIST_BINS 100000u               /* lateness histogram: 1 us bins up to 100 ms */

/* ------------------------------------------------------------------------ */
/* Options                                                                  */

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
};

static void usage(FILE *out)
{
    fprintf(out,
"Usage: " PROG " --queue N --delay-ms D [--max-queue LEN] [--die-with-parent]\n"
"                 [--stats-json] [--fail-open] [--rt-priority P]\n"
"\n"
"Delays every packet of nfnetlink queue N by D milliseconds (one-way delay,\n"
"RTT = 2 x D when both directions pass the queue), then accepts it.  A stand-in\n"
"for 'tc qdisc add dev lo root netem delay Dms' where sch_netem is missing.\n"
"Packets reach the queue through an iptables rule, for example:\n"
"  iptables -A OUTPUT -o lo -p tcp -j NFQUEUE --queue-num N --queue-bypass\n"
"(--queue-bypass lets traffic flow undelayed when no delayer is bound).\n"
"\n"
"Options (each also accepted as --option=VALUE):\n"
"  --queue N          queue number to bind, 0..65535 (iptables --queue-num).\n"
"  --delay-ms D       delay in milliseconds, decimal, >= 0 and <= 3600000,\n"
"                     fractional allowed with nanosecond resolution (0.5, 12.25);\n"
"                     0 accepts each packet at once.\n"
"  --max-queue LEN    most packets held at once, 1..4194304 (default 65536).\n"
"                     Also the kernel queue length: beyond it the kernel drops\n"
"                     (or, with --fail-open, accepts undelayed) new packets.\n"
"  --die-with-parent  receive SIGTERM when the parent process (thread) exits.\n"
"  --stats-json       at exit also print the statistics as one JSON line on stdout.\n"
"  --fail-open        when the kernel queue is full or this socket's buffer\n"
"                     overflows, let packets through undelayed instead of\n"
"                     dropping them (NFQA_CFG_F_FAIL_OPEN).  Off by default: an\n"
"                     undelayed packet would silently distort a measurement.\n"
"  --rt-priority P    run SCHED_FIFO at priority P, 1..99 (default 10), so the\n"
"                     delayer wakes on time even when the lab's processes keep\n"
"                     every CPU busy (netem's timers run in softirq context,\n"
"                     ahead of any process).  0 keeps the normal scheduler.\n"
"                     Without CAP_SYS_NICE it quietly keeps the normal one; the\n"
"                     JSON statistics say which (\"sched\").\n"
"  --help             show this help and exit.\n"
"\n"
"Protocol: prints READY on stdout once the queue is bound.  SIGTERM, SIGINT or\n"
"SIGHUP accepts the packets still held, unbinds and prints one statistics line\n"
"on stderr:\n"
"  " PROG ": queue N delay D ms: packets P, max queue depth M, enobufs E, lost L,\n"
"  released at exit R, lateness us median A p99 B max C\n"
"lateness = verdict time - due time (due = read time + D); lost = packets whose\n"
"queue message never arrived (ENOBUFS overruns).  JSON keys: queue, delay_ms,\n"
"packets, max_queue_depth, enobufs, lost, released_at_exit, verdict_errors,\n"
"kernel_queue_dropped, kernel_user_dropped, late_median_us, late_p99_us,\n"
"late_max_us, sched.\n"
"\n"
"Needs CAP_NET_ADMIN in the network namespace of the queue (root there).\n"
"Exit status: 0 after a signal, 1 on a failure while running, 2 on bad input\n"
"or an environment that cannot work (one line on stderr says why and the fix).\n");
}

__attribute__((format(printf, 1, 2), noreturn))
static void die_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(EXIT_USAGE);
}

/* Decimal unsigned integer, digits only (no sign, no spaces, no hex). */
static bool parse_uint(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (*s == '\0')
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > max)
            return false;
    }
    *out = v;
    return true;
}

/*
 * Milliseconds as a plain decimal ("10", "0.5", ".25", "12.") converted to
 * nanoseconds with integer arithmetic; digits beyond the nanosecond are
 * rounded.  Signs, exponents, hex, inf and nan are refused.
 */
static bool parse_delay_ms(const char *s, int64_t *out_ns)
{
    int64_t whole = 0, frac_ns = 0, scale = 100000; /* first decimal = 100000 ns */
    bool digits = false, round_up = false, seen_round_digit = false;
    const char *p = s;

    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (*p - '0');
        digits = true;
        if (whole > MAX_DELAY_MS)
            return false;
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++) {
            digits = true;
            if (scale > 0) {
                frac_ns += (*p - '0') * scale;
                scale /= 10;
            } else if (!seen_round_digit) {
                round_up = *p >= '5';
                seen_round_digit = true;
            }
        }
    }
    if (!digits || *p != '\0')
        return false;
    int64_t ns = whole * NS_PER_MS + frac_ns + (round_up ? 1 : 0);
    if (ns > MAX_DELAY_MS * NS_PER_MS)
        return false;
    *out_ns = ns;
    return true;
}

static void parse_args(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->max_queue = DEFAULT_MAX_QUEUE;
    o->rt_priority = DEFAULT_RT_PRIORITY;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = NULL;
        char name[32];

        if (strncmp(arg, "--", 2) != 0)
            die_usage("unexpected argument '%s' (see " PROG " --help)", arg);
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof name)
            die_usage("unknown option '%s' (see " PROG " --help)", arg);
        memcpy(name, arg, len);
        name[len] = '\0';

        bool takes_value = strcmp(name, "--queue") == 0 ||
                           strcmp(name, "--delay-ms") == 0 ||
                           strcmp(name, "--max-queue") == 0 ||
                           strcmp(name, "--rt-priority") == 0;
        bool is_flag = strcmp(name, "--die-with-parent") == 0 ||
                       strcmp(name, "--stats-json") == 0 ||
                       strcmp(name, "--fail-open") == 0 ||
                       strcmp(name, "--help") == 0;
        if (!takes_value && !is_flag)
            die_usage("unknown option '%s' (see " PROG " --help)", arg);
        if (is_flag && eq)
            die_usage("option '%s' takes no value", name);
        if (takes_value) {
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                die_usage("option '%s' needs a value (see " PROG " --help)", name);
        }

        if (strcmp(name, "--help") == 0) {
            usage(stdout);
            if (fflush(stdout) != 0)
                exit(EXIT_RUNTIME);
            exit(0);
        } else if (strcmp(name, "--queue") == 0) {
            uint64_t q;
            if (!parse_uint(val, 65535, &q))
                die_usage("--queue '%s' is not a queue number: use an integer "
                          "0..65535, the iptables --queue-num", val);
            o->queue = (uint16_t)q;
            o->have_queue = true;
        } else if (strcmp(name, "--delay-ms") == 0) {
            if (!parse_delay_ms(val, &o->delay_ns))
                die_usage("--delay-ms '%s' is not a delay: use a decimal number of "
                          "milliseconds >= 0 and <= 3600000, e.g. 10 or 0.5", val);
            o->have_delay = true;
        } else if (strcmp(name, "--max-queue") == 0) {
            uint64_t m;
            if (!parse_uint(val, MAX_MAX_QUEUE, &m) || m == 0)
                die_usage("--max-queue '%s' is not a length: use an integer "
                          "1..4194304", val);
            o->max_queue = (uint32_t)m;
        } else if (strcmp(name, "--rt-priority") == 0) {
            uint64_t prio;
            if (!parse_uint(val, 99, &prio))
                die_usage("--rt-priority '%s' is not a priority: use an integer 1..99, "
                          "or 0 for the normal scheduler", val);
            o->rt_priority = (int)prio;
        } else if (strcmp(name, "--die-with-parent") == 0) {
            o->die_with_parent = true;
        } else if (strcmp(name, "--stats-json") == 0) {
            o->stats_json = true;
        } else if (strcmp(name, "--fail-open") == 0) {
            o->fail_open = true;
        }
    }
    if (!o->have_queue)
        die_usage("%s", "--queue is required, e.g. --queue 0 (see " PROG " --help)");
    if (!o->have_delay)
        die_usage("%s", "--delay-ms is required, e.g. --delay-ms 10 (see " PROG " --help)");
}

/* ------------------------------------------------------------------------ */
/* Clock                                                                    */

static int64_t now_ns(void)
{
    struct timespec ts;
    /* CLOCK_MONOTONIC cannot fail with a valid pointer; checked anyway. */
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        fprintf(stderr, PROG ": clock_gettime(CLOCK_MONOTONIC): %s\n", strerror(errno));
        abort();
    }
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ------------------------------------------------------------------------ */
/* Held packets: a FIFO ring of (id, due time)                              */

struct held {
    uint32_t id;
    int64_t due_ns;
};

struct fifo {
    struct held *items;
    uint32_t cap, head, count, limit;
};

static bool fifo_grow(struct fifo *f)
{
    if (f->cap >= f->limit)
        return false;
    uint64_t want = f->cap ? (uint64_t)f->cap * 2 : INITIAL_RING;
    if (want > f->limit)
        want = f->limit;
    struct held *n = calloc((size_t)want, sizeof *n);
    if (n == NULL)
        return false;
    for (uint32_t i = 0; i < f->count; i++)
        n[i] = f->items[(f->head + i) % f->cap];
    free(f->items);
    f->items = n;
    f->cap = (uint32_t)want;
    f->head = 0;
    return true;
}

static bool fifo_push(struct fifo *f, uint32_t id, int64_t due_ns)
{
    if (f->count == f->cap && !fifo_grow(f))
        return false;
    f->items[(f->head + f->count) % f->cap] = (struct held){ id, due_ns };
    f->count++;
    return true;
}

static const struct held *fifo_front(const struct fifo *f)
{
    return f->count ? &f->items[f->head] : NULL;
}

static void fifo_pop(struct fifo *f)
{
    f->head = (f->head + 1) % f->cap;
    f->count--;
}

/* ------------------------------------------------------------------------ */
/* Statistics                                                               */

struct stats {
    uint64_t packets;           /* packet messages read */
    uint64_t on_time_verdicts;  /* accepted at their due time (lateness measured) */
    uint64_t released_at_exit;  /* accepted early because we were stopping */
    uint64_t overflow_accepts;  /* FIFO could not take a packet: accepted at once */
    uint64_t enobufs;           /* ENOBUFS from recv: the socket buffer overran */
    uint64_t lost;              /* gaps in packet ids: messages the kernel could not deliver */
    uint64_t verdict_errors;    /* NLMSG_ERROR answers to our verdicts */
    uint32_t max_depth;
    int64_t late_max_ns;
    uint64_t hist_over;         /* lateness >= HIST_BINS us */
    uint32_t hist[HIST_BINS];   /* lateness in 1 us bins */
};

static void stats_late(struct stats *s, int64_t late_ns)
{
    if (late_ns < 0)
        late_ns = 0;
    if (late_ns > s->late_max_ns)
        s->late_max_ns = late_ns;
    uint64_t us = (uint64_t)late_ns / 1000u;
    if (us >= HIST_BINS)
        s->hist_over++;
    else
        s->hist[us]++;
    s->on_time_verdicts++;
}

/* Lateness percentile in us (bin lower edge; the maximum if in the overflow). */
static double stats_percentile(const struct stats *s, double p)
{
    uint64_t n = s->on_time_verdicts;
    if (n == 0)
        return 0.0;
    uint64_t rank = (uint64_t)(p * (double)n + 0.999999);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < HIST_BINS; i++) {
        seen += s->hist[i];
        if (seen >= rank)
            return (double)i;
    }
    return (double)s->late_max_ns / 1000.0;
}

/* ------------------------------------------------------------------------ */
/* Netlink                                                                  */

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

/* Append one nfnetlink message header to buf (at offset *off). */
static struct nlmsghdr *msg_begin(char *buf, size_t cap, size_t *off, uint16_t type,
                                  uint16_t flags, uint32_t seq, uint16_t res_id)
{
    size_t need = NLMSG_ALIGN(*off) + NLMSG_SPACE(sizeof(struct nfgenmsg));
    if (need > cap)
        abort(); /* buffers are sized for the fixed messages below */
    *off = NLMSG_ALIGN(*off);
    struct nlmsghdr *nlh = (struct nlmsghdr *)(buf + *off);
    memset(nlh, 0, NLMSG_SPACE(sizeof(struct nfgenmsg)));
    nlh->nlmsg_len = NLMSG_LENGTH(sizeof(struct nfgenmsg));
    nlh->nlmsg_type = (uint16_t)((NFNL_SUBSYS_QUEUE << 8) | type);
    nlh->nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags);
    nlh->nlmsg_seq = seq;
    struct nfgenmsg *g = NLMSG_DATA(nlh);
    g->nfgen_family = AF_UNSPEC;
    g->version = NFNETLINK_V0;
    g->res_id = htons(res_id);
    *off += NLMSG_ALIGN(nlh->nlmsg_len);
    return nlh;
}

static void msg_attr(char *buf, size_t cap, size_t *off, struct nlmsghdr *nlh,
                     uint16_t type, const void *data, uint16_t len)
{
    size_t at = NLMSG_ALIGN(nlh->nlmsg_len);
    size_t space = NLA_ALIGN(NLA_HDRLEN + len);
    if ((size_t)((char *)nlh - buf) + at + space > cap)
        abort();
    struct nlattr *a = (struct nlattr *)((char *)nlh + at);
    a->nla_type = type;
    a->nla_len = (uint16_t)(NLA_HDRLEN + len);
    memcpy((char *)a + NLA_HDRLEN, data, len);
    memset((char *)a + NLA_HDRLEN + len, 0, space - NLA_HDRLEN - len);
    nlh->nlmsg_len = (uint32_t)(at + space);
    *off = (size_t)((char *)nlh - buf) + nlh->nlmsg_len;
}

/* Send a buffer of messages to the kernel.  Returns 0 or an errno. */
static int nl_send(struct nl *n, const void *buf, size_t len)
{
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    for (;;) {
        ssize_t r = sendto(n->fd, buf, len, 0, (struct sockaddr *)&kernel, sizeof kernel);
        if (r >= 0) {
            if ((size_t)r != len)
                return EMSGSIZE;
            return 0;
        }
        if (errno != EINTR)
            return errno;
    }
}

static int send_verdict(struct nl *n, uint32_t id, bool batch)
{
    _Alignas(struct nlmsghdr) char buf[128];
    size_t off = 0;
    struct nlmsghdr *nlh = msg_begin(buf, sizeof buf, &off,
                                     batch ? NFQNL_MSG_VERDICT_BATCH : NFQNL_MSG_VERDICT,
                                     0, ++n->seq, n->queue);
    struct nfqnl_msg_verdict_hdr vh = { .verdict = htonl(NF_ACCEPT), .id = htonl(id) };
    msg_attr(buf, sizeof buf, &off, nlh, NFQA_VERDICT_HDR, &vh, sizeof vh);
    return nl_send(n, buf, off);
}

struct handler {
    struct nl *nl;
    struct fifo *fifo;
    struct stats *st;
    int64_t delay_ns;
};

static void accept_now(struct handler *h, uint32_t id);

/* A packet message: stamp it and hold it (or accept it at once when D = 0 is
 * handled by the caller's release pass, which runs right after). */
static void on_packet(struct handler *h, const struct nlmsghdr *nlh, int64_t stamp)
{
    const size_t hdr = NLMSG_ALIGN(sizeof(struct nfgenmsg));
    if (nlh->nlmsg_len < NLMSG_LENGTH(hdr))
        return;
    const char *p = (const char *)NLMSG_DATA(nlh) + hdr;
    size_t left = nlh->nlmsg_len - NLMSG_LENGTH(hdr);
    while (left >= NLA_HDRLEN) {
        const struct nlattr *a = (const struct nlattr *)p;
        if (a->nla_len < NLA_HDRLEN || a->nla_len > left)
            return;
        if ((a->nla_type & NLA_TYPE_MASK) == NFQA_PACKET_HDR &&
            a->nla_len >= NLA_HDRLEN + sizeof(struct nfqnl_msg_packet_hdr)) {
            struct nfqnl_msg_packet_hdr ph;
            memcpy(&ph, p + NLA_HDRLEN, sizeof ph);
            uint32_t id = ntohl(ph.packet_id);
            struct nl *n = h->nl;
            if (n->have_last_id) {
                uint32_t gap = id - n->last_id - 1u;
                if (gap != 0 && gap < 0x80000000u)
                    h->st->lost += gap;
            }
            n->have_last_id = true;
            n->last_id = id;
            h->st->packets++;
            if (fifo_push(h->fifo, id, stamp + h->delay_ns)) {
                if (h->fifo->count > h->st->max_depth)
                    h->st->max_depth = h->fifo->count;
            } else {
                h->st->overflow_accepts++;
                accept_now(h, id);
            }
            return;
        }
        size_t step = NLA_ALIGN(a->nla_len);
        if (step >= left)
            return;
        p += step;
        left -= step;
    }
}

static void on_error_msg(struct handler *h, const struct nlmsghdr *nlh)
{
    if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
        return;
    const struct nlmsgerr *e = NLMSG_DATA(nlh);
    struct nl *n = h->nl;
    uint32_t seq = nlh->nlmsg_seq;
    if (n->want_seq != 0 && seq == n->want_seq) {
        n->got_ack = true;
        n->ack_error = -e->error;
        return;
    }
    if (e->error == 0)
        return;
    if (seq == n->shutdown_batch_seq && -e->error == ENOENT && n->shutdown_nothing_held)
        return; /* nothing was left to release */
    h->st->verdict_errors++;
}

/* Parse one datagram from the kernel. */
static void on_datagram(struct handler *h, const union nl_buf *b, size_t len, int64_t stamp)
{
    const struct nlmsghdr *nlh = &b->hdr;
    int rem = (int)len;
    for (; NLMSG_OK(nlh, rem); nlh = NLMSG_NEXT(nlh, rem)) {
        if (nlh->nlmsg_type == NLMSG_ERROR)
            on_error_msg(h, nlh);
        else if (nlh->nlmsg_type == ((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET))
            on_packet(h, nlh, stamp);
    }
}

/*
 * Read one datagram without blocking.  Returns 1 if one was handled, 0 when
 * the socket is empty, -1 on a fatal error (errno set).
 */
static int read_one(struct handler *h, union nl_buf *b)
{
    for (;;) {
        struct sockaddr_nl from;
        socklen_t fromlen = sizeof from;
        ssize_t r = recvfrom(h->nl->fd, b->bytes, sizeof b->bytes, MSG_DONTWAIT | MSG_TRUNC,
                             (struct sockaddr *)&from, &fromlen);
        int64_t stamp = now_ns();
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            if (errno == ENOBUFS) {
                h->st->enobufs++;
                return 1;
            }
            return -1;
        }
        if (from.nl_pid != 0)
            return 1; /* not from the kernel: ignore */
        if ((size_t)r > sizeof b->bytes)
            r = (ssize_t)sizeof b->bytes; /* truncated: parse what fits */
        on_datagram(h, b, (size_t)r, stamp);
        return 1;
    }
}

static void accept_now(struct handler *h, uint32_t id)
{
    int err = send_verdict(h->nl, id, false);
    if (err != 0)
        h->st->verdict_errors++;
}

/*
 * Accept every held packet whose due time has come.  Several due at once are
 * accepted with one batch verdict (all ids up to the last due one): they are
 * all due, so batching changes no packet's timing.
 */
static int release_due(struct handler *h)
{
    struct fifo *f = h->fifo;
    const struct held *front = fifo_front(f);
    if (front == NULL)
        return 0;
    int64_t t = now_ns();
    if (front->due_ns > t)
        return 0;
    uint32_t n = 0, last = 0;
    while ((front = fifo_front(f)) != NULL && front->due_ns <= t) {
        stats_late(h->st, t - front->due_ns);
        last = front->id;
        fifo_pop(f);
        n++;
    }
    int err = send_verdict(h->nl, last, n > 1);
    if (err != 0) {
        errno = err;
        return -1;
    }
    return 0;
}

/* Send a configuration message and wait for its acknowledgement, holding any
 * packets that arrive meanwhile.  Returns 0 or an errno (ETIMEDOUT too). */
static int config_and_wait(struct handler *h, char *buf, size_t len, uint32_t seq,
                           union nl_buf *rb)
{
    struct nl *n = h->nl;
    n->want_seq = seq;
    n->got_ack = false;
    n->ack_error = 0;
    int err = nl_send(n, buf, len);
    if (err != 0) {
        n->want_seq = 0;
        return err;
    }
    int64_t deadline = now_ns() + (int64_t)ACK_TIMEOUT_MS * NS_PER_MS;
    while (!n->got_ack) {
        int64_t left = deadline - now_ns();
        if (left <= 0) {
            n->want_seq = 0;
            return ETIMEDOUT;
        }
        struct pollfd p = { .fd = n->fd, .events = POLLIN };
        int r = poll(&p, 1, (int)(left / NS_PER_MS) + 1);
        if (r < 0 && errno != EINTR) {
            err = errno;
            n->want_seq = 0;
            return err;
        }
        while (!n->got_ack) {
            int got = read_one(h, rb);
            if (got < 0) {
                err = errno;
                n->want_seq = 0;
                return err;
            }
            if (got == 0)
                break;
        }
        if (release_due(h) != 0) {
            err = errno;
            n->want_seq = 0;
            return err;
        }
    }
    n->want_seq = 0;
    return n->ack_error;
}

static int send_cmd(struct handler *h, uint8_t cmd, union nl_buf *rb)
{
    _Alignas(struct nlmsghdr) char buf[128];
    size_t off = 0;
    uint32_t seq = ++h->nl->seq;
    struct nlmsghdr *nlh = msg_begin(buf, sizeof buf, &off, NFQNL_MSG_CONFIG, NLM_F_ACK,
                                     seq, h->nl->queue);
    struct nfqnl_msg_config_cmd c = { .command = cmd, .pf = htons(AF_INET) };
    msg_attr(buf, sizeof buf, &off, nlh, NFQA_CFG_CMD, &c, sizeof c);
    return config_and_wait(h, buf, off, seq, rb);
}

static int send_params(struct handler *h, uint32_t maxlen, bool fail_open, union nl_buf *rb)
{
    _Alignas(struct nlmsghdr) char buf[256];
    size_t off = 0;
    uint32_t seq = ++h->nl->seq;
    struct nlmsghdr *nlh = msg_begin(buf, sizeof buf, &off, NFQNL_MSG_CONFIG, NLM_F_ACK,
                                     seq, h->nl->queue);
    /* Copy only metadata: the packet id is all a delayer needs. */
    struct nfqnl_msg_config_params params = { .copy_range = htonl(0),
                                              .copy_mode = NFQNL_COPY_META };
    msg_attr(buf, sizeof buf, &off, nlh, NFQA_CFG_PARAMS, &params, sizeof params);
    uint32_t ml = htonl(maxlen);
    msg_attr(buf, sizeof buf, &off, nlh, NFQA_CFG_QUEUE_MAXLEN, &ml, sizeof ml);
    /* GSO: hand over large segments whole (no segmentation for our sake), the
     * way netem delays them. */
    uint32_t flags = htonl(NFQA_CFG_F_GSO | (fail_open ? NFQA_CFG_F_FAIL_OPEN : 0));
    uint32_t mask = htonl(NFQA_CFG_F_GSO | NFQA_CFG_F_FAIL_OPEN);
    msg_attr(buf, sizeof buf, &off, nlh, NFQA_CFG_FLAGS, &flags, sizeof flags);
    msg_attr(buf, sizeof buf, &off, nlh, NFQA_CFG_MASK, &mask, sizeof mask);
    return config_and_wait(h, buf, off, seq, rb);
}

/*
 * Shutdown in one datagram, processed by the kernel in order:
 *  1. queue length 0 with fail-open: new packets pass at once instead of
 *     being queued (and then dropped by the unbind's flush);
 *  2. a batch accept of every queued id, read by us or not;
 *  3. unbind (acknowledged).
 */
static int release_all_and_unbind(struct handler *h, union nl_buf *rb)
{
    _Alignas(struct nlmsghdr) char buf[512];
    size_t off = 0;
    struct nl *n = h->nl;

    struct nlmsghdr *m1 = msg_begin(buf, sizeof buf, &off, NFQNL_MSG_CONFIG, 0,
                                    ++n->seq, n->queue);
    uint32_t zero = htonl(0);
    uint32_t fo = htonl(NFQA_CFG_F_FAIL_OPEN);
    msg_attr(buf, sizeof buf, &off, m1, NFQA_CFG_QUEUE_MAXLEN, &zero, sizeof zero);
    msg_attr(buf, sizeof buf, &off, m1, NFQA_CFG_FLAGS, &fo, sizeof fo);
    msg_attr(buf, sizeof buf, &off, m1, NFQA_CFG_MASK, &fo, sizeof fo);

    n->shutdown_batch_seq = ++n->seq;
    n->shutdown_nothing_held = h->fifo->count == 0;
    struct nlmsghdr *m2 = msg_begin(buf, sizeof buf, &off, NFQNL_MSG_VERDICT_BATCH, 0,
                                    n->shutdown_batch_seq, n->queue);
    /* A batch verdict takes every queued entry whose id is not after this one
     * in serial arithmetic, (int32_t)(entry - upto) <= 0: the window is the
     * 2^31 ids ending at upto.  Held ids lie at most --max-queue (< 2^30)
     * behind the last id read, ids not read yet lie ahead of it: a window
     * centred on the last id covers both. */
    uint32_t upto = (n->have_last_id ? n->last_id : 0u) + 0x40000000u;
    struct nfqnl_msg_verdict_hdr vh = { .verdict = htonl(NF_ACCEPT), .id = htonl(upto) };
    msg_attr(buf, sizeof buf, &off, m2, NFQA_VERDICT_HDR, &vh, sizeof vh);

    uint32_t seq = ++n->seq;
    struct nlmsghdr *m3 = msg_begin(buf, sizeof buf, &off, NFQNL_MSG_CONFIG, NLM_F_ACK,
                                    seq, n->queue);
    struct nfqnl_msg_config_cmd c = { .command = NFQNL_CFG_CMD_UNBIND, .pf = htons(AF_INET) };
    msg_attr(buf, sizeof buf, &off, m3, NFQA_CFG_CMD, &c, sizeof c);

    h->st->released_at_exit += h->fifo->count;
    h->fifo->count = 0;
    h->fifo->head = 0;
    h->delay_ns = INT64_MAX / 4; /* anything read from now on is already accepted */
    return config_and_wait(h, buf, off, seq, rb);
}

/* The kernel's drop counters for our queue, from /proc/net/netfilter/nfnetlink_queue:
 * queue_num portid queue_total copy_mode copy_range queue_dropped user_dropped id_seq 1 */
static bool kernel_counters(uint16_t queue, uint64_t *queue_dropped, uint64_t *user_dropped,
                            uint32_t *portid)
{
    FILE *f = fopen("/proc/net/netfilter/nfnetlink_queue", "re");
    if (f == NULL)
        return false;
    unsigned qn, pid, total, mode, range, id;
    unsigned long long qd, ud;
    int one;
    bool found = false;
    while (fscanf(f, "%u %u %u %u %u %llu %llu %u %d", &qn, &pid, &total, &mode, &range,
                  &qd, &ud, &id, &one) == 9) {
        if (qn == queue) {
            *queue_dropped = qd;
            *user_dropped = ud;
            *portid = pid;
            found = true;
            break;
        }
    }
    if (fclose(f) != 0)
        return false;
    return found;
}

/* ------------------------------------------------------------------------ */
/* Output                                                                   */

static void print_stats(const struct options *o, const struct stats *s, bool have_kc,
                        uint64_t kq, uint64_t ku, const char *sched)
{
    double med = stats_percentile(s, 0.5), p99 = stats_percentile(s, 0.99);
    double mx = (double)s->late_max_ns / 1000.0;
    double dms = (double)o->delay_ns / (double)NS_PER_MS;

    fprintf(stderr,
            PROG ": queue %u delay %.3f ms: packets %" PRIu64 ", max queue depth %" PRIu32
            ", enobufs %" PRIu64 ", lost %" PRIu64 ", released at exit %" PRIu64
            ", lateness us median %.0f p99 %.0f max %.1f\n",
            o->queue, dms, s->packets, s->max_depth, s->enobufs, s->lost,
            s->released_at_exit, med, p99, mx);
    if (o->stats_json) {
        char kqs[32] = "null", kus[32] = "null";
        if (have_kc) {
            snprintf(kqs, sizeof kqs, "%" PRIu64, kq);
            snprintf(kus, sizeof kus, "%" PRIu64, ku);
        }
        printf("{\"queue\": %u, \"delay_ms\": %.6f, \"packets\": %" PRIu64
               ", \"max_queue_depth\": %" PRIu32 ", \"enobufs\": %" PRIu64
               ", \"lost\": %" PRIu64 ", \"released_at_exit\": %" PRIu64
               ", \"verdict_errors\": %" PRIu64 ", \"overflow_accepts\": %" PRIu64
               ", \"kernel_queue_dropped\": %s, \"kernel_user_dropped\": %s"
               ", \"late_median_us\": %.0f, \"late_p99_us\": %.0f, \"late_max_us\": %.1f"
               ", \"sched\": \"%s\"}\n",
               o->queue, dms, s->packets, s->max_depth, s->enobufs, s->lost,
               s->released_at_exit, s->verdict_errors, s->overflow_accepts, kqs, kus,
               med, p99, mx, sched);
        if (fflush(stdout) != 0)
            fprintf(stderr, PROG ": cannot write statistics to stdout: %s\n", strerror(errno));
    }
}

/* ------------------------------------------------------------------------ */
/* Main                                                                     */

static void fail_setup(const char *what, int err, const char *fix)
{
    fprintf(stderr, PROG ": %s: %s; %s\n", what, strerror(err), fix);
    exit(EXIT_USAGE);
}

static int open_netlink(void)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
    if (fd < 0)
        fail_setup("socket(AF_NETLINK, NETLINK_NETFILTER)", errno,
                   "this kernel needs CONFIG_NETFILTER_NETLINK (and _QUEUE)");
    struct sockaddr_nl self = { .nl_family = AF_NETLINK };
    if (bind(fd, (struct sockaddr *)&self, sizeof self) != 0)
        fail_setup("bind(netlink)", errno, "check the process's socket limits");
    /* A large receive buffer rides out bursts; FORCE needs CAP_NET_ADMIN, which
     * binding the queue needs anyway.  Without it, the plain option (capped by
     * net.core.rmem_max) is the best we can do. */
    int size = RCVBUF_BYTES;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) != 0) {
        if (errno != EPERM)
            fail_setup("setsockopt(SO_RCVBUFFORCE)", errno, "report this as a bug");
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size) != 0)
            fail_setup("setsockopt(SO_RCVBUF)", errno, "report this as a bug");
    }
    return fd;
}

int main(int argc, char **argv)
{
    struct options opt;
    parse_args(argc, argv, &opt);

    if (opt.die_with_parent) {
        pid_t parent = getppid();
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
            fail_setup("prctl(PR_SET_PDEATHSIG)", errno, "run without --die-with-parent");
        if (getppid() != parent) {
            fprintf(stderr, PROG ": the parent process exited before we started; exiting\n");
            return 0;
        }
    }

    /* Precise wake-ups: no timer slack on our sleeps (timerfd has none anyway). */
    if (prctl(PR_SET_TIMERSLACK, 1UL) != 0)
        fprintf(stderr, PROG ": warning: prctl(PR_SET_TIMERSLACK): %s\n", strerror(errno));

    /* Real-time scheduling, when allowed: the verdict timer then preempts the
     * lab's own processes the way netem's softirq does.  Children (none) would
     * not inherit it. */
    char sched[24] = "other";
    if (opt.rt_priority > 0) {
        struct sched_param sp = { .sched_priority = opt.rt_priority };
        if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0)
            snprintf(sched, sizeof sched, "fifo:%d", opt.rt_priority);
        else if (errno != EPERM)
            fprintf(stderr, PROG ": warning: sched_setscheduler(SCHED_FIFO, %d): %s; "
                    "keeping the normal scheduler\n", opt.rt_priority, strerror(errno));
    }

    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
        fail_setup("signal(SIGPIPE)", errno, "report this as a bug");
    sigset_t stop_signals;
    if (sigemptyset(&stop_signals) != 0 || sigaddset(&stop_signals, SIGTERM) != 0 ||
        sigaddset(&stop_signals, SIGINT) != 0 || sigaddset(&stop_signals, SIGHUP) != 0)
        fail_setup("sigaddset", errno, "report this as a bug");
    if (sigprocmask(SIG_BLOCK, &stop_signals, NULL) != 0)
        fail_setup("sigprocmask", errno, "report this as a bug");
    int sfd = signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        fail_setup("signalfd", errno, "report this as a bug");
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (tfd < 0)
        fail_setup("timerfd_create", errno, "report this as a bug");

    static struct stats st;
    static union nl_buf rb;
    struct fifo fifo = { .limit = opt.max_queue };
    if (!fifo_grow(&fifo))
        fail_setup("allocating the packet FIFO", ENOMEM, "lower --max-queue");
    struct nl nl = { .fd = open_netlink(), .queue = opt.queue };
    struct handler h = { .nl = &nl, .fifo = &fifo, .st = &st, .delay_ns = opt.delay_ns };

    int err = send_cmd(&h, NFQNL_CFG_CMD_BIND, &rb);
    if (err == EPERM) {
        uint64_t kq, ku;
        uint32_t portid;
        if (kernel_counters(opt.queue, &kq, &ku, &portid)) {
            fprintf(stderr, PROG ": queue %u is already bound by another process (netlink "
                    "portid %" PRIu32 "); stop that delayer or pick another --queue\n",
                    opt.queue, portid);
        } else {
            fprintf(stderr, PROG ": binding queue %u: permission denied; binding an NFQUEUE "
                    "needs CAP_NET_ADMIN in this network namespace: run as root (or inside "
                    "the lab's namespace)\n", opt.queue);
        }
        return EXIT_USAGE;
    }
    if (err == EBUSY) {
        fprintf(stderr, PROG ": queue %u is already bound; stop the other delayer or pick "
                "another --queue\n", opt.queue);
        return EXIT_USAGE;
    }
    if (err != 0)
        fail_setup("binding the queue", err,
                   "this kernel needs CONFIG_NETFILTER_NETLINK_QUEUE");
    err = send_params(&h, opt.max_queue, opt.fail_open, &rb);
    if (err != 0) {
        fprintf(stderr, PROG ": configuring queue %u (copy mode, length, flags): %s; "
                "this kernel's nfnetlink_queue is too old\n", opt.queue, strerror(err));
        return EXIT_USAGE;
    }

    if (printf("READY\n") < 0 || fflush(stdout) != 0)
        fprintf(stderr, PROG ": warning: cannot write READY to stdout: %s\n", strerror(errno));

    int exit_code = 0;
    int64_t armed_due = -1;
    for (;;) {
        if (release_due(&h) != 0) {
            fprintf(stderr, PROG ": sending a verdict: %s\n", strerror(errno));
            exit_code = EXIT_RUNTIME;
            break;
        }
        const struct held *front = fifo_front(&fifo);
        if (front != NULL && front->due_ns != armed_due) {
            struct itimerspec its = { 0 };
            its.it_value.tv_sec = front->due_ns / 1000000000LL;
            its.it_value.tv_nsec = front->due_ns % 1000000000LL;
            if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) != 0) {
                fprintf(stderr, PROG ": timerfd_settime: %s\n", strerror(errno));
                exit_code = EXIT_RUNTIME;
                break;
            }
            armed_due = front->due_ns;
        }

        struct pollfd pfd[3] = {
            { .fd = nl.fd, .events = POLLIN },
            { .fd = tfd, .events = POLLIN },
            { .fd = sfd, .events = POLLIN },
        };
        if (poll(pfd, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, PROG ": poll: %s\n", strerror(errno));
            exit_code = EXIT_RUNTIME;
            break;
        }
        if (pfd[2].revents & POLLIN) {
            struct signalfd_siginfo si;
            ssize_t r = read(sfd, &si, sizeof si);
            if (r < 0 && errno != EAGAIN && errno != EINTR) {
                fprintf(stderr, PROG ": reading signalfd: %s\n", strerror(errno));
                exit_code = EXIT_RUNTIME;
            }
            break;
        }
        if (pfd[1].revents & POLLIN) {
            uint64_t expirations;
            if (read(tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN &&
                errno != EINTR) {
                fprintf(stderr, PROG ": reading timerfd: %s\n", strerror(errno));
                exit_code = EXIT_RUNTIME;
                break;
            }
        }
        if (pfd[0].revents & (POLLIN | POLLERR)) {
            /* Drain, releasing due packets between messages so a long burst
             * never makes an earlier packet late. */
            int got = 0;
            unsigned budget = 4096;
            while (budget-- > 0 && (got = read_one(&h, &rb)) > 0) {
                if (release_due(&h) != 0) {
                    got = -1;
                    break;
                }
            }
            if (got < 0) {
                fprintf(stderr, PROG ": reading the queue socket: %s\n", strerror(errno));
                exit_code = EXIT_RUNTIME;
                break;
            }
        }
        if (pfd[0].revents & (POLLHUP | POLLNVAL)) {
            fprintf(stderr, PROG ": the queue socket closed\n");
            exit_code = EXIT_RUNTIME;
            break;
        }
    }

    /* Stop: read what is waiting (so it is counted), then accept everything
     * still queued, unbind, report. */
    for (unsigned budget = 65536; budget > 0; budget--)
        if (read_one(&h, &rb) <= 0)
            break;
    uint64_t kq = 0, ku = 0;
    uint32_t portid = 0;
    bool have_kc = kernel_counters(opt.queue, &kq, &ku, &portid);
    err = release_all_and_unbind(&h, &rb);
    if (err != 0) {
        fprintf(stderr, PROG ": releasing the held packets and unbinding queue %u: %s\n",
                opt.queue, strerror(err));
        exit_code = EXIT_RUNTIME;
    }
    print_stats(&opt, &st, have_kc, kq, ku, sched);

    free(fifo.items);
    if (close(nl.fd) != 0 || close(tfd) != 0 || close(sfd) != 0) {
        fprintf(stderr, PROG ": close: %s\n", strerror(errno));
        exit_code = EXIT_RUNTIME;
    }
    return exit_code;
}
