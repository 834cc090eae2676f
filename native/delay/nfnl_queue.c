/*
 * nfnl_queue.c - the queue itself: the NETLINK_NETFILTER socket, binding
 * the queue, its parameters (copy mode, length, NFQA_CFG_F_GSO and
 * fail-open) and the shutdown that accepts what is still held and unbinds.
 * Every configuration message is acknowledged, and packets that arrive while
 * we wait for an acknowledgement are held as usual.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netlink.h>

#include "tfo_delay.h"

#define RCVBUF_BYTES (16 * 1024 * 1024)
#define ACK_TIMEOUT_MS 3000

int open_netlink(void)
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

int send_cmd(struct handler *h, uint8_t cmd, union nl_buf *rb)
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

int send_params(struct handler *h, uint32_t maxlen, bool fail_open, bool headers,
                union nl_buf *rb)
{
    _Alignas(struct nlmsghdr) char buf[256];
    size_t off = 0;
    uint32_t seq = ++h->nl->seq;
    struct nlmsghdr *nlh = msg_begin(buf, sizeof buf, &off, NFQNL_MSG_CONFIG, NLM_F_ACK,
                                     seq, h->nl->queue);
    /* Copy only metadata, the packet id being all a delayer needs; recording,
     * or with control lines (a middlebox reads and rewrites whole SYNs), the
     * whole packet (the kernel caps the range at 65531 bytes and says how long a
     * longer one was, NFQA_CAP_LEN). */
    bool recording = h->rec->fd >= 0 || h->drop_rec->fd >= 0;
    uint32_t range = recording || headers ? 0xffffu : 0u;
    struct nfqnl_msg_config_params params = {
        .copy_range = htonl(range),
        .copy_mode = range > 0 ? NFQNL_COPY_PACKET : NFQNL_COPY_META,
    };
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
 * Shutdown: first the held packets the middlebox rewrote, each with its own
 * verdict and bytes, and the ones a plan or the middlebox drops (hold.c); then
 * one datagram, processed by the kernel in order:
 *  1. queue length 0 with fail-open: new packets pass at once instead of
 *     being queued (and then dropped by the unbind's flush);
 *  2. a batch accept of every queued id, read by us or not;
 *  3. unbind (acknowledged).
 */
int release_all_and_unbind(struct handler *h, union nl_buf *rb)
{
    _Alignas(struct nlmsghdr) char buf[512];
    size_t off = 0;
    struct nl *n = h->nl;

    uint32_t rewritten = release_own_verdicts_at_exit(h);

    struct nlmsghdr *m1 = msg_begin(buf, sizeof buf, &off, NFQNL_MSG_CONFIG, 0,
                                    ++n->seq, n->queue);
    uint32_t zero = htonl(0);
    uint32_t fo = htonl(NFQA_CFG_F_FAIL_OPEN);
    msg_attr(buf, sizeof buf, &off, m1, NFQA_CFG_QUEUE_MAXLEN, &zero, sizeof zero);
    msg_attr(buf, sizeof buf, &off, m1, NFQA_CFG_FLAGS, &fo, sizeof fo);
    msg_attr(buf, sizeof buf, &off, m1, NFQA_CFG_MASK, &fo, sizeof fo);

    n->shutdown_batch_seq = ++n->seq;
    n->shutdown_nothing_held = h->fifo->count == rewritten; /* the rest: ENOENT is no error */
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

    for (uint32_t i = 0; i < h->fifo->count; i++) /* the dropped ones are not released */
        h->st->released_at_exit += !h->fifo->items[(h->fifo->head + i) % h->fifo->cap].dropped;
    h->stopping = true; /* anything read from now on is accepted by the batch (hold.c) */
    int err = config_and_wait(h, buf, off, seq, rb);
    release_held_at_exit(h, err == 0);
    return err;
}
