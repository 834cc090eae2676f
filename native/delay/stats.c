/*
 * stats.c - what tfo-delay reports at exit: lateness (verdict time - due
 * time) in a 1 us histogram with its median, p99 and maximum, the kernel's
 * drop counters for the queue, the human line on stderr and, with
 * --stats-json, the JSON line on stdout.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tfo_delay.h"

void stats_late(struct stats *s, int64_t late_ns)
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

/* The kernel's drop counters for our queue, from /proc/net/netfilter/nfnetlink_queue:
 * queue_num portid queue_total copy_mode copy_range queue_dropped user_dropped id_seq 1 */
bool kernel_counters(uint16_t queue, uint64_t *queue_dropped, uint64_t *user_dropped,
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

void print_stats(const struct options *o, const struct stats *s, bool have_kc,
                 uint64_t kq, uint64_t ku, const char *sched)
{
    double med = stats_percentile(s, 0.5), p99 = stats_percentile(s, 0.99);
    double mx = (double)s->late_max_ns / 1000.0;
    double dms = (double)o->delay_ns / (double)NS_PER_MS;

    fprintf(stderr,
            PROG ": queue %u delay %.3f ms: packets %" PRIu64 ", max queue depth %" PRIu32
            ", enobufs %" PRIu64 ", lost %" PRIu64 ", released at exit %" PRIu64
            ", lateness us median %.0f p99 %.0f max %.1f, dropped %" PRIu64
            " (middlebox %" PRIu64 "), mangled %" PRIu64 "\n",
            o->queue, dms, s->packets, s->max_depth, s->enobufs, s->lost,
            s->released_at_exit, med, p99, mx, s->dropped, s->middlebox_dropped, s->mangled);
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
               ", \"sched\": \"%s\", \"recorded\": %" PRIu64
               ", \"implausible_stamps\": %" PRIu64 ", \"dropped\": %" PRIu64
               ", \"middlebox_dropped\": %" PRIu64 ", \"mangled\": %" PRIu64
               ", \"middlebox_unparsed\": %" PRIu64 "}\n",
               o->queue, dms, s->packets, s->max_depth, s->enobufs, s->lost,
               s->released_at_exit, s->verdict_errors, s->overflow_accepts, kqs, kus,
               med, p99, mx, sched, s->recorded, s->implausible_stamps, s->dropped,
               s->middlebox_dropped, s->mangled, s->middlebox_unparsed);
        if (fflush(stdout) != 0)
            fprintf(stderr, PROG ": cannot write statistics to stdout: %s\n", strerror(errno));
    }
}
