/*
 * bench_client.c - tfo-bench-client: the load generator of `tfolab bench`.
 *
 * N fresh connections, each one HTTP GET and the whole response (read until
 * the server closes), with C of them in flight at once over one epoll set.
 * --tfo sends the request with sendto(MSG_FASTOPEN): once a cookie is cached
 * (the warm-up requests learn it) the request rides in the SYN; without --tfo
 * it is connect(), then send(). Timestamps are CLOCK_MONOTONIC (tfl_now_ns),
 * as in tfo-echo-client.
 *
 * Rules: one thread, non-blocking sockets, every call's error checked; the
 * first failed request stops the run (its call and errno are reported).
 * Output on stdout: with --progress K a line "progress DONE" every K measured
 * requests, then ONE JSON object on the last line (every request's latency,
 * connect()/sendto() start to the response's last byte, in microseconds).
 * Exit codes: 0 every request got a 200, 1 a request failed, 2 bad input.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "args.h"
#include "tfolab.h"

#ifndef TCPI_OPT_SYN_DATA
#define TCPI_OPT_SYN_DATA 32
#endif

#define MAX_REQUESTS 1000000
#define MAX_CONCURRENCY 65535
#define FD_RESERVE 16 /* descriptors beside the sockets: stdio, epoll */
#define MAX_EVENTS 256

static const char usage[] =
    "usage: tfo-bench-client --connect HOST:PORT [options]\n"
    "\n"
    "The load generator of `tfolab bench`: N fresh connections, each one HTTP GET\n"
    "and its whole response (read until the server closes), C in flight at once.\n"
    "\n"
    "options:\n"
    "  --connect HOST:PORT  the HTTP server, an IPv4 or [IPv6] literal and a port\n"
    "  --requests N         measured requests, 1..1000000 (default 1024)\n"
    "  --concurrency C      requests in flight at once, 1..65535 (default 1);\n"
    "                       C + 16 must fit in RLIMIT_NOFILE\n"
    "  --tfo                TCP Fast Open: sendto(MSG_FASTOPEN), the request rides\n"
    "                       in the SYN once a cookie is cached\n"
    "  --warmup N           unmeasured requests first, one at a time (default 1);\n"
    "                       with --tfo the first one learns the cookie\n"
    "  --progress K         print 'progress DONE' every K measured requests\n"
    "  --timeout-ms MS      fail when nothing happens for MS ms (default 10000)\n"
    "  --help               show this help\n"
    "\n"
    "output: one JSON object on the last line of stdout: latency_us is every\n"
    "measured request's time from connect()/sendto() to the response's last byte;\n"
    "syn_data_acked counts requests whose SYN data the server acknowledged;\n"
    "wakeups counts epoll_wait calls with events and cpu_us this process's CPU\n"
    "time (user + system), both over the measured requests.\n"
    "exit codes: 0 every request got a 200, 1 a request failed, 2 bad input\n"
    "example: tfo-bench-client --connect 127.0.0.1:8080 --tfo --concurrency 8\n";

enum slot_state { SLOT_FREE, SLOT_CONNECTING, SLOT_WRITING, SLOT_READING };

struct slot {
    int fd;
    enum slot_state state;
    long request;     /* 0-based within its phase */
    int64_t start_ns; /* connect()/sendto() called */
    size_t sent;
    size_t got;
    char head[16]; /* the response's first bytes: the status line */
};

struct bench {
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char host[TFL_HOST_MAX];
    int port;
    char request[160];
    size_t request_len;
    long requests, concurrency, warmup, progress_every;
    int tfo, timeout_ms;
    int epfd;
    struct slot *slots;
    int *free_slots;
    long n_free;
    int64_t *latency_ns; /* measured requests, by completion */
    long done;           /* completed in the current phase */
    long syn_data_acked; /* measured requests only */
    int measuring;
    int64_t start_ns, end_ns;
    long wakeups;      /* epoll_wait calls that returned events, measured phase */
    int64_t cpu_ns;    /* this process's CPU (user + system) in the measured phase */
    /* the first failure */
    long failed_request;
    const char *failed_call;
    char failed_errno[32];
};

static void fail(struct bench *b, const struct slot *s, const char *call, int errnum)
{
    if (b->failed_call != NULL)
        return;
    b->failed_request = s != NULL ? s->request : -1;
    b->failed_call = call;
    snprintf(b->failed_errno, sizeof b->failed_errno, "%s",
             errnum ? tfl_errno_name(errnum) : "BADREPLY");
}

static void parse_connect(struct args *a, const char *v, struct bench *b)
{
    b->port = (int)args_host_port(a, v, b->host, sizeof b->host);
    struct sockaddr_in *in4 = (struct sockaddr_in *)&b->addr;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&b->addr;
    memset(&b->addr, 0, sizeof b->addr);
    if (inet_pton(AF_INET, b->host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)b->port);
        b->addrlen = sizeof *in4;
    } else if (inet_pton(AF_INET6, b->host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)b->port);
        b->addrlen = sizeof *in6;
    } else {
        args_fail(a, "--connect '%.60s': '%s' is not an IPv4 or IPv6 address", v, b->host);
    }
}

enum { OPT_CONNECT, OPT_REQUESTS, OPT_CONCURRENCY, OPT_TFO, OPT_WARMUP, OPT_PROGRESS,
       OPT_TIMEOUT_MS };

static const struct args_option options[] = {
    {"--help", ARGS_FLAG, NULL, ARGS_HELP},
    {"-h", ARGS_FLAG, NULL, ARGS_HELP},
    {"--connect", ARGS_VALUE, "127.0.0.1:8080", OPT_CONNECT},
    {"--requests", ARGS_VALUE, "1024", OPT_REQUESTS},
    {"--concurrency", ARGS_VALUE, "8", OPT_CONCURRENCY},
    {"--tfo", ARGS_FLAG, NULL, OPT_TFO},
    {"--warmup", ARGS_VALUE, "1", OPT_WARMUP},
    {"--progress", ARGS_VALUE, "64", OPT_PROGRESS},
    {"--timeout-ms", ARGS_VALUE, "10000", OPT_TIMEOUT_MS},
    {NULL, ARGS_FLAG, NULL, 0},
};

static void parse(int argc, char **argv, struct bench *b)
{
    struct args a = {.prog = "tfo-bench-client", .usage = usage, .dialect = ARGS_DIALECT_ECHO,
                     .options = options, .argc = argc, .argv = argv};
    int have_connect = 0;
    const char *v;
    int id;
    while ((id = args_next(&a, &v)) != ARGS_END) {
        switch (id) {
        case OPT_CONNECT:
            parse_connect(&a, v, b);
            have_connect = 1;
            break;
        case OPT_REQUESTS:
            b->requests = args_long(&a, "--requests", v, 1, MAX_REQUESTS);
            break;
        case OPT_CONCURRENCY:
            b->concurrency = args_long(&a, "--concurrency", v, 1, MAX_CONCURRENCY);
            break;
        case OPT_TFO:
            b->tfo = 1;
            break;
        case OPT_WARMUP:
            b->warmup = args_long(&a, "--warmup", v, 0, 1000);
            break;
        case OPT_PROGRESS:
            b->progress_every = args_long(&a, "--progress", v, 0, MAX_REQUESTS);
            break;
        case OPT_TIMEOUT_MS:
            b->timeout_ms = (int)args_long(&a, "--timeout-ms", v, 1, TFL_MAX_TIMEOUT_MS);
            break;
        }
    }
    if (!have_connect)
        args_fail(&a, "missing --connect HOST:PORT, e.g. --connect 127.0.0.1:8080");
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) != 0)
        args_fail(&a, "getrlimit(RLIMIT_NOFILE): %s", tfl_errno_name(errno));
    if (files.rlim_cur != RLIM_INFINITY &&
        (rlim_t)(b->concurrency + FD_RESERVE) > files.rlim_cur)
        args_fail(&a, "--concurrency %ld needs %ld open files but RLIMIT_NOFILE is %llu: "
                      "lower --concurrency or raise `ulimit -n`",
                  b->concurrency, b->concurrency + FD_RESERVE,
                  (unsigned long long)files.rlim_cur);
    int n = snprintf(b->request, sizeof b->request,
                     "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", b->host);
    if (n < 0 || (size_t)n >= sizeof b->request)
        args_fail(&a, "--connect host '%s' is too long for the request", b->host);
    b->request_len = (size_t)n;
}

static int watch(struct bench *b, struct slot *s, int op, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)(s - b->slots)};
    if (epoll_ctl(b->epfd, op, s->fd, &ev) != 0) {
        fail(b, s, "epoll_ctl", errno);
        return -1;
    }
    return 0;
}

/* Close a slot's socket and give the slot back; -1 if close failed. */
static int release(struct bench *b, struct slot *s)
{
    int rc = 0;
    if (s->fd >= 0 && close(s->fd) != 0 && errno != EINTR) {
        fail(b, s, "close", errno);
        rc = -1;
    }
    s->fd = -1;
    s->state = SLOT_FREE;
    b->free_slots[b->n_free++] = (int)(s - b->slots);
    return rc;
}

/* Give up on a slot's request (its failure is recorded): always -1. */
static int drop(struct bench *b, struct slot *s)
{
    (void)release(b, s);
    return -1;
}

/* Send what is left of the request; -1 on failure. */
static int send_rest(struct bench *b, struct slot *s)
{
    while (s->sent < b->request_len) {
        ssize_t n = send(s->fd, b->request + s->sent, b->request_len - s->sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            fail(b, s, "send", errno);
            return -1;
        }
        s->sent += (size_t)n;
    }
    s->state = SLOT_READING;
    return watch(b, s, EPOLL_CTL_MOD, EPOLLIN);
}

static int start_request(struct bench *b, long request)
{
    struct slot *s = &b->slots[b->free_slots[--b->n_free]];
    s->request = request;
    s->sent = s->got = 0;
    memset(s->head, 0, sizeof s->head);
    s->fd = socket(b->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        fail(b, s, "socket", errno);
        b->free_slots[b->n_free++] = (int)(s - b->slots);
        return -1;
    }
    s->start_ns = tfl_now_ns();
    const struct sockaddr *to = (const struct sockaddr *)&b->addr;
    if (b->tfo) {
        ssize_t n = sendto(s->fd, b->request, b->request_len, MSG_FASTOPEN | MSG_NOSIGNAL, to,
                           b->addrlen);
        if (n >= 0) {
            s->sent = (size_t)n;
            s->state = s->sent == b->request_len ? SLOT_READING : SLOT_WRITING;
        } else if (errno == EINPROGRESS) {
            s->state = SLOT_CONNECTING; /* no cookie yet: the SYN asks for one */
        } else {
            fail(b, s, "sendto", errno);
            return drop(b, s);
        }
    } else if (connect(s->fd, to, b->addrlen) == 0) {
        s->state = SLOT_WRITING;
    } else if (errno == EINPROGRESS) {
        s->state = SLOT_CONNECTING;
    } else {
        fail(b, s, "connect", errno);
        return drop(b, s);
    }
    uint32_t events = s->state == SLOT_READING ? EPOLLIN : EPOLLOUT;
    if (watch(b, s, EPOLL_CTL_ADD, events) != 0)
        return drop(b, s);
    if (s->state == SLOT_WRITING && send_rest(b, s) != 0)
        return drop(b, s);
    return 0;
}

/* The response is complete (the server closed): check it, time it, free the slot. */
static int finish(struct bench *b, struct slot *s)
{
    int64_t end = tfl_now_ns();
    if (s->got < 13 ||
        (memcmp(s->head, "HTTP/1.1 200 ", 13) != 0 && memcmp(s->head, "HTTP/1.0 200 ", 13) != 0)) {
        fail(b, s, "status", 0);
        return drop(b, s);
    }
    if (b->measuring) {
        struct tcp_info info;
        socklen_t len = sizeof info;
        memset(&info, 0, sizeof info);
        if (getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) {
            fail(b, s, "getsockopt", errno);
            return drop(b, s);
        }
        if (info.tcpi_options & TCPI_OPT_SYN_DATA)
            b->syn_data_acked++;
        b->latency_ns[b->done] = end - s->start_ns;
        b->end_ns = end;
    }
    b->done++;
    if (b->measuring && b->progress_every > 0 && b->done % b->progress_every == 0 &&
        b->done < b->requests) {
        printf("progress %ld\n", b->done);
        if (fflush(stdout) != 0) {
            fail(b, s, "write", errno);
            return drop(b, s);
        }
    }
    return release(b, s);
}

static int on_event(struct bench *b, struct slot *s, uint32_t events)
{
    if (s->state == SLOT_CONNECTING) {
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) {
            fail(b, s, "getsockopt", errno);
            return drop(b, s);
        }
        if (soerr != 0) {
            fail(b, s, b->tfo ? "sendto" : "connect", soerr);
            return drop(b, s);
        }
        if (!(events & EPOLLOUT))
            return 0;
        s->state = SLOT_WRITING;
    }
    if (s->state == SLOT_WRITING)
        return send_rest(b, s) != 0 ? drop(b, s) : 0;
    for (;;) {
        char buf[4096];
        ssize_t n = recv(s->fd, buf, sizeof buf, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            fail(b, s, "recv", errno);
            return drop(b, s);
        }
        if (n == 0)
            return finish(b, s);
        if (s->got < sizeof s->head) {
            size_t take = sizeof s->head - s->got < (size_t)n ? sizeof s->head - s->got
                                                              : (size_t)n;
            memcpy(s->head + s->got, buf, take);
        }
        s->got += (size_t)n;
    }
}

/* Run `count` requests, `concurrency` at once; 0, or -1 with the failure recorded. */
static int run_phase(struct bench *b, long count, long concurrency)
{
    struct epoll_event events[MAX_EVENTS];
    long started = 0;
    b->done = 0;
    while (b->done < count) {
        while (started < count && started - b->done < concurrency && b->n_free > 0) {
            if (start_request(b, started++) != 0)
                return -1;
        }
        int n = epoll_wait(b->epfd, events, MAX_EVENTS, b->timeout_ms);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fail(b, NULL, "epoll_wait", errno);
            return -1;
        }
        if (n == 0) {
            fail(b, NULL, "epoll_wait", ETIMEDOUT);
            return -1;
        }
        b->wakeups += b->measuring;
        for (int i = 0; i < n; i++) {
            struct slot *s = &b->slots[events[i].data.u64];
            if (s->state != SLOT_FREE && on_event(b, s, events[i].events) != 0)
                return -1;
        }
    }
    return 0;
}

/* This process's CPU time so far (user + system), ns; -1 (and the failure) if unknown. */
static int64_t process_cpu_ns(struct bench *b)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        fail(b, NULL, "getrusage", errno);
        return -1;
    }
    struct timeval total;
    timeradd(&ru.ru_utime, &ru.ru_stime, &total);
    return (int64_t)total.tv_sec * 1000000000 + (int64_t)total.tv_usec * 1000;
}

static void print_json(const struct bench *b)
{
    printf("{\"tool\":\"tfo-bench-client\",\"host\":\"%s\",\"port\":%d,\"fastopen\":\"%s\","
           "\"requests\":%ld,\"concurrency\":%ld,\"warmup\":%ld,\"request_bytes\":%zu,"
           "\"start_ns\":%lld,\"end_ns\":%lld,\"completed\":%ld,\"syn_data_acked\":%ld,"
           "\"wakeups\":%ld,\"cpu_us\":%.1f,\"latency_us\":[",
           b->host, b->port, b->tfo ? "sendto" : "off", b->requests, b->concurrency, b->warmup,
           b->request_len, (long long)b->start_ns, (long long)b->end_ns,
           b->measuring ? b->done : 0L, b->syn_data_acked, b->wakeups, (double)b->cpu_ns / 1e3);
    long completed = b->measuring ? b->done : 0;
    for (long i = 0; i < completed; i++)
        printf("%s%.1f", i ? "," : "", (double)b->latency_ns[i] / 1e3);
    printf("],\"error\":");
    if (b->failed_call != NULL)
        printf("{\"request\":%ld,\"call\":\"%s\",\"errno\":\"%s\"}}\n", b->failed_request,
               b->failed_call, b->failed_errno);
    else
        printf("null}\n");
}

int main(int argc, char **argv)
{
    struct bench b = {.requests = 1024, .concurrency = 1, .warmup = 1, .timeout_ms = 10000,
                      .epfd = -1};
    parse(argc, argv, &b);
    int rc = 1;
    b.slots = calloc((size_t)b.concurrency, sizeof *b.slots);
    b.free_slots = calloc((size_t)b.concurrency, sizeof *b.free_slots);
    b.latency_ns = calloc((size_t)b.requests, sizeof *b.latency_ns);
    if (b.slots == NULL || b.free_slots == NULL || b.latency_ns == NULL) {
        fprintf(stderr, "tfo-bench-client: out of memory for %ld requests\n", b.requests);
        goto out;
    }
    for (long i = 0; i < b.concurrency; i++) {
        b.slots[i].fd = -1;
        b.free_slots[b.n_free++] = (int)(b.concurrency - 1 - i);
    }
    b.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (b.epfd < 0) {
        fprintf(stderr, "tfo-bench-client: epoll_create1: %s\n", tfl_errno_name(errno));
        goto out;
    }
    if (run_phase(&b, b.warmup, 1) == 0) {
        int64_t cpu_before = process_cpu_ns(&b);
        b.measuring = 1;
        b.start_ns = tfl_now_ns();
        (void)run_phase(&b, b.requests, b.concurrency);
        int64_t cpu_after = process_cpu_ns(&b);
        b.cpu_ns = cpu_before >= 0 && cpu_after >= cpu_before ? cpu_after - cpu_before : 0;
    }
    for (long i = 0; i < b.concurrency; i++) {
        if (b.slots[i].fd >= 0 && close(b.slots[i].fd) != 0 && errno != EINTR)
            fail(&b, &b.slots[i], "close", errno);
    }
    print_json(&b);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "tfo-bench-client: writing the results: %s\n", strerror(errno));
        goto out;
    }
    if (b.failed_call != NULL) {
        fprintf(stderr, "tfo-bench-client: %s request %ld: %s failed: %s\n",
                b.measuring ? "measured" : "warm-up", b.failed_request, b.failed_call,
                b.failed_errno);
        goto out;
    }
    rc = 0;
out:
    if (b.epfd >= 0 && close(b.epfd) != 0 && errno != EINTR && rc == 0) {
        fprintf(stderr, "tfo-bench-client: close(epoll): %s\n", tfl_errno_name(errno));
        rc = 1;
    }
    free(b.slots);
    free(b.free_slots);
    free(b.latency_ns);
    return rc;
}
