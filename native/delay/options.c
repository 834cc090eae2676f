/*
 * options.c - tfo-delay's command line, on the parser every tfolab program
 * shares (src/cli/args.h).  Its messages are the ones tfo-delay has always
 * printed (ARGS_DIALECT_DELAY); the values are checked here, strictly:
 * digits only, no signs, exponents, hex, inf or nan.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "args.h"
#include "tfo_delay.h"

#define MAX_DELAY_MS 3600000LL          /* one hour: anything longer is a typo */
#define DEFAULT_MAX_QUEUE 65536u
#define MAX_MAX_QUEUE (1u << 22)
#define DEFAULT_RT_PRIORITY 10

static const char usage[] =
"Usage: " PROG " --queue N --delay-ms D [--max-queue LEN] [--die-with-parent]\n"
"                 [--stats-json] [--fail-open] [--rt-priority P] [--record-fd N]\n"
"                 [--control] [--drop-record-fd N] [--late-record-fd N]\n"
"\n"
"Delays every packet of nfnetlink queue N by D milliseconds (one-way delay,\n"
"RTT = 2 x D when both directions pass the queue), then accepts it.  A stand-in\n"
"for 'tc qdisc add dev lo root netem delay Dms' where sch_netem is missing.\n"
"Packets reach the queue through an iptables rule, for example:\n"
"  iptables -A INPUT -i lo -p tcp -j NFQUEUE --queue-num N --queue-bypass\n"
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
"  --record-fd N      write every packet released to descriptor N (3 or more,\n"
"                     open for writing), a pcap file (raw IP, nanoseconds),\n"
"                     each packet stamped with its verdict's time on\n"
"                     CLOCK_MONOTONIC, not the Unix epoch: the time the packet\n"
"                     reached the receiver when the queue's rule is at the\n"
"                     receiving end (INPUT).  Records are written on SIGUSR1,\n"
"                     which is answered with a line 'FLUSHED N L D' on stdout\n"
"                     (N packets recorded so far, L not recorded for want of\n"
"                     memory, D dropped packets recorded, see\n"
"                     --drop-record-fd), and at the stop.\n"
"  --control          read control lines from stdin, one each, answered on\n"
"                     stdout with DROPPING (in force from now on) or\n"
"                     REFUSED and the reason (the plan before stays):\n"
"                       DROP PORT LIST\n"
"                     PORT is the server's TCP port.  The plan is for the next\n"
"                     connection to it: the first SYN to PORT after the line.\n"
"                     LIST is - (drop nothing) or comma-separated client:N and\n"
"                     server:N (N from 1, at most 64 entries): that connection's\n"
"                     Nth packet from the client (to PORT) or the server (from\n"
"                     PORT) is dropped (NF_DROP) when its delay ends.  Each\n"
"                     packet the queue hands over counts once (a GSO packet\n"
"                     that reaches it whole is one); a retransmission is new.\n"
"                     The plans of the last 8 connections stay in force: a\n"
"                     connection's packets count against its own plan even\n"
"                     after the next plan began (the newer plan first where\n"
"                     two name the same ports).  Other packets pass uncounted.\n"
"                     A second line sets a middlebox on the path to and from\n"
"                     PORT, for every packet from then on, answered with\n"
"                     MIDDLEBOX MODE (or REFUSED and the reason, the mode\n"
"                     before staying in force):\n"
"                       MIDDLEBOX PORT MODE\n"
"                     none; drop-syn-data (drop a SYN without ACK that\n"
"                     carries data); drop-tfo-syn (drop a SYN without ACK\n"
"                     with a Fast Open option: kind 34, or 254 with magic\n"
"                     0xF989); strip-tfo-option (take that option out of\n"
"                     SYNs and SYN-ACKs, the header shrunk, both checksums\n"
"                     computed again; the packet keeps its delay).  A dropped\n"
"                     packet is recorded as a plan's is.  With --control the\n"
"                     queue copies whole packets.\n"
"  --drop-record-fd N write every packet dropped (by a plan or the middlebox) to\n"
"                     descriptor N, a pcap file as --record-fd's, each stamped\n"
"                     with its verdict's time, as a released packet is (a\n"
"                     nanosecond apart in queue order where several go at\n"
"                     once); written on SIGUSR1 and at the stop.\n"
"  --late-record-fd N with --record-fd: write each released packet's lateness\n"
"                     (verdict time - due time, nanoseconds, a signed 64-bit\n"
"                     integer in host order; negative where a full queue let it\n"
"                     go early) to descriptor N, one per --record-fd record in\n"
"                     the same order, written with them.\n"
"  --help             show this help and exit.\n"
"\n"
"Protocol: prints READY on stdout once the queue is bound.  SIGTERM, SIGINT or\n"
"SIGHUP accepts the packets still held, unbinds and prints one statistics line\n"
"on stderr:\n"
"  " PROG ": queue N delay D ms: packets P, max queue depth M, enobufs E, lost L,\n"
"  released at exit R, lateness us median A p99 B max C, dropped X (middlebox Y),\n"
"  mangled Z\n"
"lateness = verdict time - due time (due = read time + D); lost = packets whose\n"
"queue message never arrived (ENOBUFS overruns); dropped = by a plan or the\n"
"middlebox, Y of them by the middlebox; mangled = rewritten by it.  JSON keys:\n"
"queue, delay_ms, packets, max_queue_depth, enobufs, lost, released_at_exit,\n"
"verdict_errors, overflow_accepts, kernel_queue_dropped, kernel_user_dropped,\n"
"late_median_us, late_p99_us, late_max_us, sched, recorded, implausible_stamps,\n"
"dropped, middlebox_dropped, mangled, middlebox_unparsed (SYNs whose options\n"
"it could not read, passed as they came).\n"
"\n"
"Needs CAP_NET_ADMIN in the network namespace of the queue (root there).\n"
"Exit status: 0 after a signal, 1 on a failure while running, 2 on bad input\n"
"or an environment that cannot work (one line on stderr says why and the fix).\n";

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

enum { OPT_QUEUE, OPT_DELAY_MS, OPT_MAX_QUEUE, OPT_RT_PRIORITY, OPT_DIE_WITH_PARENT,
       OPT_STATS_JSON, OPT_FAIL_OPEN, OPT_RECORD, OPT_CONTROL, OPT_DROP_RECORD,
       OPT_LATE_RECORD };

static const struct args_option options[] = {
    {"--queue", ARGS_VALUE, NULL, OPT_QUEUE},
    {"--delay-ms", ARGS_VALUE, NULL, OPT_DELAY_MS},
    {"--max-queue", ARGS_VALUE, NULL, OPT_MAX_QUEUE},
    {"--rt-priority", ARGS_VALUE, NULL, OPT_RT_PRIORITY},
    {"--die-with-parent", ARGS_FLAG, NULL, OPT_DIE_WITH_PARENT},
    {"--stats-json", ARGS_FLAG, NULL, OPT_STATS_JSON},
    {"--fail-open", ARGS_FLAG, NULL, OPT_FAIL_OPEN},
    {"--record-fd", ARGS_VALUE, NULL, OPT_RECORD},
    {"--control", ARGS_FLAG, NULL, OPT_CONTROL},
    {"--drop-record-fd", ARGS_VALUE, NULL, OPT_DROP_RECORD},
    {"--late-record-fd", ARGS_VALUE, NULL, OPT_LATE_RECORD},
    {"--help", ARGS_FLAG, NULL, ARGS_HELP},
    {NULL, ARGS_FLAG, NULL, 0},
};

void parse_args(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->max_queue = DEFAULT_MAX_QUEUE;
    o->rt_priority = DEFAULT_RT_PRIORITY;
    o->record_fd = -1;
    o->drop_record_fd = -1;
    o->late_record_fd = -1;

    struct args a = {.prog = PROG, .usage = usage, .dialect = ARGS_DIALECT_DELAY,
                     .options = options, .argc = argc, .argv = argv};
    const char *val;
    int id;
    while ((id = args_next(&a, &val)) != ARGS_END) {
        switch (id) {
        case OPT_QUEUE: {
            uint64_t q;
            if (!parse_uint(val, 65535, &q))
                args_fail(&a, "--queue '%s' is not a queue number: use an integer "
                          "0..65535, the iptables --queue-num", val);
            o->queue = (uint16_t)q;
            o->have_queue = true;
            break;
        }
        case OPT_DELAY_MS:
            if (!parse_delay_ms(val, &o->delay_ns))
                args_fail(&a, "--delay-ms '%s' is not a delay: use a decimal number of "
                          "milliseconds >= 0 and <= 3600000, e.g. 10 or 0.5", val);
            o->have_delay = true;
            break;
        case OPT_MAX_QUEUE: {
            uint64_t m;
            if (!parse_uint(val, MAX_MAX_QUEUE, &m) || m == 0)
                args_fail(&a, "--max-queue '%s' is not a length: use an integer "
                          "1..4194304", val);
            o->max_queue = (uint32_t)m;
            break;
        }
        case OPT_RT_PRIORITY: {
            uint64_t prio;
            if (!parse_uint(val, 99, &prio))
                args_fail(&a, "--rt-priority '%s' is not a priority: use an integer 1..99, "
                          "or 0 for the normal scheduler", val);
            o->rt_priority = (int)prio;
            break;
        }
        case OPT_DIE_WITH_PARENT:
            o->die_with_parent = true;
            break;
        case OPT_STATS_JSON:
            o->stats_json = true;
            break;
        case OPT_FAIL_OPEN:
            o->fail_open = true;
            break;
        case OPT_RECORD: {
            uint64_t fd;
            if (!parse_uint(val, 65535, &fd) || fd < 3)
                args_fail(&a, "--record-fd '%s' is not a descriptor to record to: use an "
                          "integer 3..65535 open for writing, e.g. --record-fd 3 3>lab.pcap",
                          val);
            o->record_fd = (int)fd;
            break;
        }
        case OPT_CONTROL:
            o->control = true;
            break;
        case OPT_DROP_RECORD: {
            uint64_t fd;
            if (!parse_uint(val, 65535, &fd) || fd < 3)
                args_fail(&a, "--drop-record-fd '%s' is not a descriptor to record to: use "
                          "an integer 3..65535 open for writing, e.g. --drop-record-fd 4 "
                          "4>dropped.pcap", val);
            o->drop_record_fd = (int)fd;
            break;
        }
        case OPT_LATE_RECORD: {
            uint64_t fd;
            if (!parse_uint(val, 65535, &fd) || fd < 3)
                args_fail(&a, "--late-record-fd '%s' is not a descriptor to record to: use "
                          "an integer 3..65535 open for writing, e.g. --late-record-fd 5 "
                          "5>late.bin", val);
            o->late_record_fd = (int)fd;
            break;
        }
        }
    }
    if (!o->have_queue)
        args_fail(&a, "%s", "--queue is required, e.g. --queue 0 (see " PROG " --help)");
    if (o->drop_record_fd >= 0 && !o->control)
        args_fail(&a, "%s", "--drop-record-fd records the packets a plan drops: add --control");
    if (o->drop_record_fd >= 0 && o->drop_record_fd == o->record_fd)
        args_fail(&a, "%s", "--drop-record-fd and --record-fd need two descriptors");
    if (o->late_record_fd >= 0 && o->record_fd < 0)
        args_fail(&a, "%s", "--late-record-fd keeps --record-fd's lateness: add --record-fd");
    if (o->late_record_fd >= 0 &&
        (o->late_record_fd == o->record_fd || o->late_record_fd == o->drop_record_fd))
        args_fail(&a, "%s", "--late-record-fd needs a descriptor of its own");
    if (!o->have_delay)
        args_fail(&a, "%s", "--delay-ms is required, e.g. --delay-ms 10 (see " PROG " --help)");
}
