/*
 * tfo-delay - the bundled NFQUEUE delayer: a stand-in for netem on kernels
 * built without sch_netem.
 *
 * An iptables rule sends packets to an nfnetlink queue:
 *
 *     iptables -A INPUT -i lo -p tcp -j NFQUEUE --queue-num N --queue-bypass
 *
 * and this program accepts each queued packet exactly D milliseconds after it
 * was queued.  The delay is constant, so a FIFO keeps the packets in order and
 * one timer (the head of the FIFO) is all the scheduling there is.
 *
 * Rules of this program (every file of native/delay/, see tfo_delay.h for
 * which file does what):
 * - C11, libc and Linux uapi headers only.  No libnetfilter_queue, no libmnl:
 *   the nfnetlink_queue messages are built and parsed by hand.
 * - Time is CLOCK_MONOTONIC in nanoseconds everywhere.  A packet is stamped
 *   when its message is read; its verdict is due at stamp + D; the wait is an
 *   absolute timerfd deadline (hrtimer, no timer slack), so lateness is the
 *   wake-up latency of this process, measured and reported.
 * - Every system call is checked.  Bad input and an environment that cannot
 *   work (no CAP_NET_ADMIN, queue already bound) give one line on stderr with
 *   the fix and exit status 2.  A failure after start-up releases the held
 *   packets and exits 1.  SIGUSR1 writes --record-fd's packets (record.c).
 *   SIGTERM/SIGINT/SIGHUP release the held packets,
 *   unbind, print statistics and exit 0.
 * - The kernel queue's maximum length is --max-queue and the FIFO never grows
 *   beyond it, so the FIFO cannot overflow: the kernel refuses (drops) packets
 *   first, and counts them in /proc/net/netfilter/nfnetlink_queue.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* signalfd, SO_RCVBUFFORCE, clock_gettime under -std=c11 */
#endif
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
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

#include <linux/netfilter/nfnetlink_queue.h>

#include "tfo_delay.h"

_Noreturn void fail_setup(const char *what, int err, const char *fix)
{
    fprintf(stderr, PROG ": %s: %s; %s\n", what, strerror(err), fix);
    exit(EXIT_USAGE);
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC, from the tightest of several bracketed readings:
 * the smallest value that bracket allows (the realtime read as late as `after`), so a
 * send stamp converted with it is never earlier than the packet's (no early release). */
static int64_t realtime_minus_monotonic(void)
{
    int64_t best_gap = -1, best = 0;
    for (int i = 0; i < 9; i++) {
        struct timespec real;
        int64_t before = now_ns();
        if (clock_gettime(CLOCK_REALTIME, &real) != 0)
            fail_setup("clock_gettime(CLOCK_REALTIME)", errno, "report this as a bug");
        int64_t after = now_ns();
        int64_t real_ns = (int64_t)real.tv_sec * 1000000000LL + real.tv_nsec;
        if (best_gap < 0 || after - before < best_gap) {
            best_gap = after - before;
            best = real_ns - after;
        }
    }
    return best;
}

/* SIGUSR1 with --record-fd: write the records so far (and --drop-record-fd's),
 * then say so on stdout ("FLUSHED N L D": N packets recorded since the start, L
 * released but not recorded for want of memory, D dropped packets recorded).
 * 0, or -1 on a failure (said on stderr). */
static int flush_records(struct recorder *rec, struct recorder *drop_rec)
{
    int err = recorder_flush(rec);
    if (err != 0) {
        fprintf(stderr, PROG ": writing to --record-fd: %s\n", strerror(err));
        return -1;
    }
    err = recorder_flush(drop_rec);
    if (err != 0) {
        fprintf(stderr, PROG ": writing to --drop-record-fd: %s\n", strerror(err));
        return -1;
    }
    if (printf("FLUSHED %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", rec->records, rec->lost,
               drop_rec->records) < 0 ||
        fflush(stdout) != 0) {
        fprintf(stderr, PROG ": cannot write FLUSHED to stdout: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

/* Control lines on stdin (--control), read as they come: each whole line is
 * one drop plan (drop.c), answered on stdout with "DROPPING" or "REFUSED
 * reason", or a middlebox mode (middlebox.c), answered "MIDDLEBOX MODE".
 * Returns 0, 1 at end of file (no more lines will come), -1 on a failure. */
struct control {
    char line[1024];
    size_t len;
    bool overlong; /* the line being read is too long: refused when it ends */
};

static int answer(const char *what, const char *why)
{
    if (printf("%s%s%s\n", what, why ? " " : "", why ? why : "") < 0 || fflush(stdout) != 0) {
        fprintf(stderr, PROG ": cannot answer on stdout: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

/* One whole control line: a drop plan or a middlebox mode, answered. */
static int control_line(const char *line, bool overlong, struct drop_book *plans,
                        struct middlebox *mb)
{
    if (overlong)
        return answer("REFUSED", "the line is too long");
    if (strncmp(line, "MIDDLEBOX ", 10) == 0) {
        const char *why = middlebox_parse(mb, line);
        if (why != NULL)
            return answer("REFUSED", why);
        char done[64];
        snprintf(done, sizeof done, "MIDDLEBOX %s", middlebox_mode_name(mb->mode));
        return answer(done, NULL);
    }
    const char *why = drop_plan_parse(plans, line);
    return answer(why ? "REFUSED" : "DROPPING", why);
}

static int read_control(struct control *c, struct drop_book *plans, struct middlebox *mb)
{
    char buf[512];
    ssize_t r = read(STDIN_FILENO, buf, sizeof buf);
    if (r < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -1;
    if (r == 0)
        return 1;
    for (ssize_t i = 0; i < r; i++) {
        if (buf[i] != '\n') {
            if (c->len + 1 < sizeof c->line)
                c->line[c->len++] = buf[i];
            else
                c->overlong = true;
            continue;
        }
        c->line[c->len] = '\0';
        bool overlong = c->overlong;
        c->len = 0;
        c->overlong = false;
        if (control_line(c->line, overlong, plans, mb) != 0)
            return -1;
    }
    return 0;
}

/* Set-up (parent death signal, timer slack, SCHED_FIFO, signals, timerfd),
 * bind and configure the queue, then the event loop until a signal or a
 * failure, then the orderly stop and the statistics. */
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
        sigaddset(&stop_signals, SIGINT) != 0 || sigaddset(&stop_signals, SIGHUP) != 0 ||
        sigaddset(&stop_signals, SIGUSR1) != 0)
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
    struct recorder rec = { .fd = -1 }, drop_rec = { .fd = -1 };
    if (opt.record_fd >= 0)
        recorder_open(&rec, opt.record_fd);
    if (opt.late_record_fd >= 0)
        recorder_keep_lateness(&rec, opt.late_record_fd);
    if (opt.drop_record_fd >= 0)
        recorder_open(&drop_rec, opt.drop_record_fd);
    struct drop_book plans = { .newest = 0 }; /* no plan active */
    struct middlebox mb = { .mode = MB_NONE };
    struct control control = { .len = 0 };
    bool control_open = opt.control;
    struct nl nl = { .fd = open_netlink(), .queue = opt.queue };
    struct handler h = { .nl = &nl, .fifo = &fifo, .st = &st, .rec = &rec,
                         .drop_rec = &drop_rec, .plans = &plans, .mb = &mb,
                         .delay_ns = opt.delay_ns,
                         .realtime_minus_monotonic_ns = realtime_minus_monotonic() };
    /* A socket that asks for receive timestamps turns on the kernel's stamping
     * at netif_rx (net_enable_timestamp), which the queue's messages then carry
     * (NFQA_TIMESTAMP): each packet's send time on lo.  Kept open to the end.
     * The switch is one static key for the whole machine: while the delayer runs,
     * every namespace's received packets are stamped at netif_rx (a clock read
     * each), as whenever any program asks for receive timestamps. */
    int stamps = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (stamps < 0 || setsockopt(stamps, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) != 0)
        fail_setup("a socket with SO_TIMESTAMPNS", errno, "report this as a bug");

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
    err = send_params(&h, opt.max_queue, opt.fail_open, opt.control, &rb);
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

        struct pollfd pfd[4] = {
            { .fd = nl.fd, .events = POLLIN },
            { .fd = tfd, .events = POLLIN },
            { .fd = sfd, .events = POLLIN },
            { .fd = control_open ? STDIN_FILENO : -1, .events = POLLIN },
        };
        if (poll(pfd, 4, -1) < 0) {
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
                break;
            }
            if (r == (ssize_t)sizeof si && si.ssi_signo == SIGUSR1) {
                if (flush_records(&rec, &drop_rec) != 0) {
                    exit_code = EXIT_RUNTIME;
                    break;
                }
                continue;
            }
            if (r == (ssize_t)sizeof si || r == 0)
                break;
            continue; /* EAGAIN or EINTR: nothing read */
        }
        if (pfd[3].revents & (POLLIN | POLLHUP | POLLERR)) {
            int got = read_control(&control, &plans, &mb);
            if (got < 0) {
                fprintf(stderr, PROG ": reading the control lines on stdin: %s\n",
                        strerror(errno));
                exit_code = EXIT_RUNTIME;
                break;
            }
            if (got == 1)
                control_open = false; /* end of file: the plans in force stay */
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
    int rec_err = recorder_close(&rec);
    if (rec_err != 0) {
        fprintf(stderr, PROG ": writing to --record-fd: %s\n", strerror(rec_err));
        exit_code = EXIT_RUNTIME;
    }
    rec_err = recorder_close(&drop_rec);
    if (rec_err != 0) {
        fprintf(stderr, PROG ": writing to --drop-record-fd: %s\n", strerror(rec_err));
        exit_code = EXIT_RUNTIME;
    }
    st.recorded = rec.records;
    st.middlebox_dropped = mb.dropped;
    st.mangled = mb.mangled;
    st.middlebox_unparsed = mb.unparsed;
    print_stats(&opt, &st, have_kc, kq, ku, sched);

    free(fifo.items);
    if (close(nl.fd) != 0 || close(tfd) != 0 || close(sfd) != 0 || close(stamps) != 0) {
        fprintf(stderr, PROG ": close: %s\n", strerror(errno));
        exit_code = EXIT_RUNTIME;
    }
    return exit_code;
}
