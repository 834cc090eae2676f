/*
 * hold.c - the hold-and-release queue.  The delay is constant, so a FIFO
 * keeps the packets in order and its head is the only deadline there is:
 * a packet read at stamp is due at stamp + D, and its verdict (NF_ACCEPT)
 * goes out once the clock has passed that.  A packet a drop plan or the
 * middlebox drops is held the same way and gets NF_DROP at its due time, so
 * the records keep the order the packets would have arrived in (a lost
 * packet is stamped when its delay ends, as a capture behind netem would see
 * it), and the records of one release pass are a nanosecond apart in that
 * order (the capture merges the dropped packets' file with the released one's).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tfo_delay.h"

#define INITIAL_RING 1024u

/* ------------------------------------------------------------------------ */
/* Clock                                                                    */

int64_t now_ns(void)
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

bool fifo_grow(struct fifo *f)
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

/* Insert in due order (from the tail: a packet out of order is rarely far back),
 * after every packet due at the same time or earlier. */
static bool fifo_push(struct fifo *f, const struct held *item)
{
    if (f->count == f->cap && !fifo_grow(f))
        return false;
    uint32_t at = f->count;
    while (at > 0 && f->items[(f->head + at - 1) % f->cap].due_ns > item->due_ns) {
        f->items[(f->head + at) % f->cap] = f->items[(f->head + at - 1) % f->cap];
        at--;
    }
    f->items[(f->head + at) % f->cap] = *item;
    f->count++;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Verdicts                                                                 */

/* due_ns: when its delay would have ended (the record's lateness is counted from it). */
static void accept_now(struct handler *h, const struct queued *q, int64_t due_ns)
{
    int err = send_verdict(h->nl, q->id, false);
    if (err != 0)
        h->st->verdict_errors++;
    int64_t t = now_ns();
    recorder_add(h->rec, t, t - due_ns, q->packet, q->cap_len, q->wire_len);
}

/* A packet message: hold it (or accept it at once when the FIFO cannot take it; D = 0
 * is handled by the caller's release pass, which runs right after).  A gap in
 * the ids is a message the kernel could not deliver.  While recording, the
 * packet's bytes are kept with it until its release. */
void hold_packet(struct handler *h, const struct queued *q, int64_t stamp)
{
    struct nl *n = h->nl;
    if (n->have_last_id) {
        uint32_t gap = q->id - n->last_id - 1u;
        if (gap != 0 && gap < 0x80000000u)
            h->st->lost += gap;
    }
    n->have_last_id = true;
    n->last_id = q->id;
    h->st->packets++;
    if (h->stopping) { /* queued before the shutdown datagram: its batch accepts it */
        h->st->released_at_exit++;
        int64_t t = now_ns(); /* its delay cut short by the stop: lateness unknown, 0 */
        recorder_add(h->rec, t, 0, q->packet, q->cap_len, q->wire_len);
        return;
    }
    /* The send stamp is trusted only where it is plausible: not after the read, and
     * at most MAX_SEND_LAG_NS before it.  It comes from CLOCK_REALTIME through an
     * offset taken at start, so a step of the wall clock since then (NTP, an
     * administrator) would otherwise release a packet early.  Rounded up to the end of
     * its microsecond (nfnl_msg.c), it may pass the read by less than that: then the
     * read, which came after the send, stands for it. */
    bool plausible = q->sent_ns > 0 && q->sent_ns <= stamp + SEND_STAMP_ROUNDING_NS &&
                     stamp - q->sent_ns <= MAX_SEND_LAG_NS;
    int64_t sent = plausible ? (q->sent_ns < stamp ? q->sent_ns : stamp) : stamp;
    if (q->sent_ns > 0 && !plausible)
        h->st->implausible_stamps++;
    struct held item = { .id = q->id, .due_ns = sent + h->delay_ns };
    if (drop_plan_decide(h->plans, q->packet, q->cap_len)) {
        h->st->dropped++;
        item.dropped = true;
    } else if (h->mb->mode != MB_NONE && q->packet != NULL && q->cap_len > 0 &&
        q->cap_len == q->wire_len) {
        unsigned char *copy = malloc(q->cap_len);
        if (copy == NULL) {
            h->mb->unparsed++; /* cannot judge it: it passes as it is */
        } else {
            memcpy(copy, q->packet, q->cap_len);
            uint32_t len = q->cap_len;
            enum mb_action act = middlebox_decide(h->mb, copy, &len);
            if (act == MB_DROP) {
                h->mb->dropped++;
                h->st->dropped++;
                item.dropped = true;
                free(copy);
            } else if (act == MB_MANGLED) { /* held with its new bytes, released with them */
                item.packet = copy;
                item.cap_len = item.wire_len = len;
                item.mangled = true;
            } else {
                free(copy);
            }
        }
    }
    struct recorder *keeps = item.dropped ? h->drop_rec : h->rec;
    if (!item.mangled && keeps->fd >= 0 && q->packet != NULL && q->cap_len > 0) {
        item.packet = malloc(q->cap_len);
        if (item.packet == NULL) {
            keeps->lost++; /* the packet is still held; its record is lost */
        } else {
            memcpy(item.packet, q->packet, q->cap_len);
            item.cap_len = q->cap_len;
            item.wire_len = q->wire_len;
        }
    }
    if (fifo_push(h->fifo, &item)) {
        if (h->fifo->count > h->st->max_depth)
            h->st->max_depth = h->fifo->count;
    } else if (item.dropped) { /* the FIFO is full: dropped at once */
        if (send_drop_verdict(n, q->id) != 0)
            h->st->verdict_errors++;
        int64_t t = now_ns();
        recorder_add(h->drop_rec, t, t - item.due_ns, q->packet, q->cap_len, q->wire_len);
        free(item.packet);
    } else {
        h->st->overflow_accepts++;
        if (item.mangled) { /* accepted at once, but as the middlebox left it */
            if (send_verdict_payload(n, q->id, item.packet, item.cap_len) != 0)
                h->st->verdict_errors++;
            int64_t t = now_ns(); /* early: its lateness is negative */
            recorder_add(h->rec, t, t - item.due_ns, item.packet, item.cap_len, item.wire_len);
        } else {
            accept_now(h, q, item.due_ns);
        }
        free(item.packet);
    }
}

/*
 * Accept every held packet whose due time has come (or drop it, where a plan or
 * the middlebox said so).  Several due at once are accepted with one batch
 * verdict (all ids up to the last due one): they are all due, so batching
 * changes no packet's timing; a rewritten or dropped one goes with its own.
 * The verdicts go first; the statistics and the records after, stamped with
 * the verdicts' time plus the packet's place in the pass, in nanoseconds.
 */
int release_due(struct handler *h)
{
    if (h->stopping) /* the shutdown gave every held packet its verdict already */
        return 0;
    struct fifo *f = h->fifo;
    const struct held *front = fifo_front(f);
    if (front == NULL)
        return 0;
    int64_t t = now_ns();
    if (front->due_ns > t)
        return 0;
    uint32_t n = 0, last = 0;
    for (; n < f->count; n++) {
        const struct held *item = &f->items[(f->head + n) % f->cap];
        if (item->due_ns > t)
            break;
        if (n == 0 || (int32_t)(item->id - last) > 0)
            last = item->id;
    }
    /* One batch verdict accepts every queued id up to `last` (serial order): only
     * when no packet still held has an id that far (queued earlier, due later). */
    bool batch = n > 1;
    for (uint32_t i = n; batch && i < f->count; i++)
        if ((int32_t)(f->items[(f->head + i) % f->cap].id - last) <= 0)
            batch = false;
    bool own = false; /* a rewritten or dropped packet goes with its own verdict */
    for (uint32_t i = 0; i < n; i++) {
        const struct held *item = &f->items[(f->head + i) % f->cap];
        own = own || item->mangled || item->dropped;
    }
    int err = 0;
    if (!own && (batch || n == 1)) {
        err = send_verdict(h->nl, last, batch);
    } else {
        for (uint32_t i = 0; i < n && err == 0; i++) {
            const struct held *item = &f->items[(f->head + i) % f->cap];
            err = item->dropped   ? send_drop_verdict(h->nl, item->id)
                  : item->mangled ? send_verdict_payload(h->nl, item->id, item->packet, item->cap_len)
                                  : send_verdict(h->nl, item->id, false);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        front = fifo_front(f);
        stats_late(h->st, t - front->due_ns);
        if (err == 0)
            recorder_add(front->dropped ? h->drop_rec : h->rec, t + (int64_t)i,
                         t - front->due_ns, front->packet, front->cap_len, front->wire_len);
        fifo_pop(f);
    }
    if (err != 0) {
        errno = err;
        return -1;
    }
    return 0;
}

uint32_t release_own_verdicts_at_exit(struct handler *h)
{
    const struct fifo *f = h->fifo;
    uint32_t released = 0;
    int64_t t = now_ns();
    for (uint32_t i = 0; i < f->count; i++) {
        const struct held *item = &f->items[(f->head + i) % f->cap];
        if (!item->mangled && !item->dropped)
            continue;
        int err = item->dropped ? send_drop_verdict(h->nl, item->id)
                                : send_verdict_payload(h->nl, item->id, item->packet, item->cap_len);
        if (err != 0) {
            h->st->verdict_errors++; /* the batch accepts it as it came */
            continue;
        }
        released++;
        if (item->dropped)
            recorder_add(h->drop_rec, t + (int64_t)i, t - item->due_ns, item->packet,
                         item->cap_len, item->wire_len);
    }
    return released;
}

void release_held_at_exit(struct handler *h, bool released)
{
    int64_t t = now_ns();
    struct fifo *f = h->fifo;
    while (f->count > 0) {
        const struct held *front = fifo_front(f);
        if (released && !front->dropped) /* the dropped ones: release_own_verdicts_at_exit */
            recorder_add(h->rec, t, t - front->due_ns, front->packet, front->cap_len,
                         front->wire_len);
        fifo_pop(f);
    }
    f->head = 0;
}
