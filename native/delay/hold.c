/*
 * hold.c - the hold-and-release queue.  The delay is constant, so a FIFO
 * keeps the packets in order and its head is the only deadline there is:
 * a packet read at stamp is due at stamp + D, and its verdict (NF_ACCEPT)
 * goes out once the clock has passed that.
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

static bool fifo_push(struct fifo *f, uint32_t id, int64_t due_ns)
{
    if (f->count == f->cap && !fifo_grow(f))
        return false;
    f->items[(f->head + f->count) % f->cap] = (struct held){ id, due_ns };
    f->count++;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Verdicts                                                                 */

static void accept_now(struct handler *h, uint32_t id)
{
    int err = send_verdict(h->nl, id, false);
    if (err != 0)
        h->st->verdict_errors++;
}

/* A packet message: hold it (or accept it at once when the FIFO cannot take it; D = 0
 * is handled by the caller's release pass, which runs right after).  A gap in
 * the ids is a message the kernel could not deliver. */
void hold_packet(struct handler *h, uint32_t id, int64_t stamp)
{
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
}

/*
 * Accept every held packet whose due time has come.  Several due at once are
 * accepted with one batch verdict (all ids up to the last due one): they are
 * all due, so batching changes no packet's timing.
 */
int release_due(struct handler *h)
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

