/*
 * nfnl_msg.c - nfnetlink_queue messages by hand (no libnetfilter_queue, no
 * libmnl): building requests and verdicts, sending them, reading what the
 * kernel sends (packet messages, acknowledgements, errors) and parsing it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netlink.h>

#include "tfo_delay.h"

/* ------------------------------------------------------------------------ */
/* Building and sending                                                     */

struct nlmsghdr *msg_begin(char *buf, size_t cap, size_t *off, uint16_t type, uint16_t flags,
                           uint32_t seq, uint16_t res_id)
{
    size_t need = NLMSG_ALIGN(*off) + NLMSG_SPACE(sizeof(struct nfgenmsg));
    if (need > cap)
        abort(); /* buffers are sized for the fixed messages we build */
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

void msg_attr(char *buf, size_t cap, size_t *off, struct nlmsghdr *nlh, uint16_t type,
              const void *data, uint16_t len)
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
int nl_send(struct nl *n, const void *buf, size_t len)
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

static int verdict(struct nl *n, uint32_t id, bool batch, uint32_t what)
{
    _Alignas(struct nlmsghdr) char buf[128];
    size_t off = 0;
    struct nlmsghdr *nlh = msg_begin(buf, sizeof buf, &off,
                                     batch ? NFQNL_MSG_VERDICT_BATCH : NFQNL_MSG_VERDICT,
                                     0, ++n->seq, n->queue);
    struct nfqnl_msg_verdict_hdr vh = { .verdict = htonl(what), .id = htonl(id) };
    msg_attr(buf, sizeof buf, &off, nlh, NFQA_VERDICT_HDR, &vh, sizeof vh);
    return nl_send(n, buf, off);
}

int send_verdict(struct nl *n, uint32_t id, bool batch)
{
    return verdict(n, id, batch, NF_ACCEPT);
}

int send_drop_verdict(struct nl *n, uint32_t id)
{
    return verdict(n, id, false, NF_DROP);
}

/* Accept a packet as these bytes (a middlebox rewrote it: nfqnl_mangle). */
int send_verdict_payload(struct nl *n, uint32_t id, const unsigned char *packet, uint32_t len)
{
    if (len > 0xffffu - 64u)
        return EMSGSIZE;
    size_t cap = NLMSG_SPACE(0) + sizeof(struct nfgenmsg) + 2 * NLA_HDRLEN + 16 + len + 8;
    char *buf = aligned_alloc(NLMSG_ALIGNTO, NLMSG_ALIGN(cap));
    if (buf == NULL)
        return ENOMEM;
    size_t off = 0;
    struct nlmsghdr *nlh = msg_begin(buf, NLMSG_ALIGN(cap), &off, NFQNL_MSG_VERDICT, 0, ++n->seq,
                                     n->queue);
    struct nfqnl_msg_verdict_hdr vh = { .verdict = htonl(NF_ACCEPT), .id = htonl(id) };
    msg_attr(buf, NLMSG_ALIGN(cap), &off, nlh, NFQA_VERDICT_HDR, &vh, sizeof vh);
    msg_attr(buf, NLMSG_ALIGN(cap), &off, nlh, NFQA_PAYLOAD, packet, (uint16_t)len);
    int err = nl_send(n, buf, off);
    free(buf);
    return err;
}

/* ------------------------------------------------------------------------ */
/* Receiving and parsing                                                    */

/* A packet message: its id, the time it was read and (while recording) its
 * bytes go to the FIFO.  NFQA_CAP_LEN comes only with a copy cut short. */
static void on_packet(struct handler *h, const struct nlmsghdr *nlh, int64_t stamp)
{
    const size_t hdr = NLMSG_ALIGN(sizeof(struct nfgenmsg));
    if (nlh->nlmsg_len < NLMSG_LENGTH(hdr))
        return;
    const char *p = (const char *)NLMSG_DATA(nlh) + hdr;
    size_t left = nlh->nlmsg_len - NLMSG_LENGTH(hdr);
    struct queued q = { 0 };
    bool have_id = false;
    uint32_t cap_len_attr = 0;
    while (left >= NLA_HDRLEN) {
        const struct nlattr *a = (const struct nlattr *)p;
        if (a->nla_len < NLA_HDRLEN || a->nla_len > left)
            break;
        size_t data_len = a->nla_len - NLA_HDRLEN;
        const char *data = p + NLA_HDRLEN;
        switch (a->nla_type & NLA_TYPE_MASK) {
        case NFQA_PACKET_HDR:
            if (data_len >= sizeof(struct nfqnl_msg_packet_hdr)) {
                struct nfqnl_msg_packet_hdr ph;
                memcpy(&ph, data, sizeof ph);
                q.id = ntohl(ph.packet_id);
                have_id = true;
            }
            break;
        case NFQA_PAYLOAD:
            q.packet = (const unsigned char *)data;
            q.cap_len = (uint32_t)data_len;
            break;
        case NFQA_TIMESTAMP:
            if (data_len >= sizeof(struct nfqnl_msg_packet_timestamp)) {
                struct nfqnl_msg_packet_timestamp ts;
                memcpy(&ts, data, sizeof ts);
                /* The stamp is the kernel's, truncated to its microsecond: the end of
                 * that microsecond, so that no packet is released before its delay. */
                int64_t real_ns = (int64_t)be64toh(ts.sec) * 1000000000LL +
                                  (int64_t)be64toh(ts.usec) * 1000LL + 999;
                q.sent_ns = real_ns - h->realtime_minus_monotonic_ns;
            }
            break;
        case NFQA_CAP_LEN:
            if (data_len >= sizeof cap_len_attr) {
                memcpy(&cap_len_attr, data, sizeof cap_len_attr);
                cap_len_attr = ntohl(cap_len_attr);
            }
            break;
        default:
            break;
        }
        size_t step = NLA_ALIGN(a->nla_len);
        if (step >= left)
            break;
        p += step;
        left -= step;
    }
    if (!have_id)
        return;
    q.wire_len = cap_len_attr > q.cap_len ? cap_len_attr : q.cap_len;
    hold_packet(h, &q, stamp);
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

/* One datagram, without blocking; see tfo_delay.h. */
int read_one(struct handler *h, union nl_buf *b)
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
