/*
 * client.c - the measuring TCP client of libtfolab.
 *
 * Rules: blocking sockets bounded by SO_RCVTIMEO/SO_SNDTIMEO (a timeout is
 * reported as ETIMEDOUT); every send uses MSG_NOSIGNAL so a closed peer never
 * kills the calling process with SIGPIPE; EINTR is retried; a failing call is
 * recorded in the sample (call name + errno name) and ends that connection,
 * the next connection still runs. Timestamps are taken right before a call is
 * issued (connect start, writes, close) or right after it returns (connect
 * return, first and last response byte).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "internal.h"

#ifndef TCP_FASTOPEN_CONNECT
#define TCP_FASTOPEN_CONNECT 30
#endif
#ifndef TCPI_OPT_SYN_DATA
#define TCPI_OPT_SYN_DATA 32
#endif

struct client_run {
    const struct tfl_client_config *cfg;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char *request;        /* rr: the request; wwr: both writes back to back */
    size_t request_len;
    char *expected;       /* the answer: the request itself, or response_bytes */
    size_t expected_len;
    char *response;       /* expected_len bytes: what was read */
};

struct piece {
    const char *data;
    size_t len;
    int flags;
};

void tfl_client_config_init(struct tfl_client_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    tfl_copy_str(cfg->host, sizeof cfg->host, "127.0.0.1");
    cfg->fastopen = TFL_FASTOPEN_OFF;
    cfg->pattern = TFL_PATTERN_RR;
    cfg->payload_bytes = 16;
    cfg->first_write_bytes = 10;
    cfg->second_write_bytes = 6;
    cfg->iterations = 1;
    cfg->connections = 1;
    cfg->timeout_ms = 5000;
}

static int is_bool(int32_t v) { return v == 0 || v == 1; }

int tfl_client_validate(const struct tfl_client_config *cfg, char *err, size_t errlen)
{
    struct sockaddr_storage addr;
    socklen_t addrlen;

    if (cfg == NULL) {
        tfl_set_err(err, errlen, "no client configuration given");
        return -1;
    }
    if (!tfl_is_terminated(cfg->host, sizeof cfg->host)) {
        tfl_set_err(err, errlen, "host is longer than %d characters", TFL_HOST_MAX - 1);
        return -1;
    }
    if (cfg->port < 1 || cfg->port > 65535) {
        tfl_set_err(err, errlen, "port must be 1..65535 (got %d)", (int)cfg->port);
        return -1;
    }
    if (tfl_resolve(cfg->host, cfg->port, &addr, &addrlen) != 0) {
        tfl_set_err(err, errlen,
                    "bad address '%s': use an IPv4 or IPv6 address such as 127.0.0.1 or ::1 "
                    "(or localhost)",
                    cfg->host);
        return -1;
    }
    if (cfg->fastopen < TFL_FASTOPEN_OFF || cfg->fastopen > TFL_FASTOPEN_CONNECT) {
        tfl_set_err(err, errlen, "fastopen must be 0 (off), 1 (sendto) or 2 (connect), got %d",
                    (int)cfg->fastopen);
        return -1;
    }
    if (cfg->pattern != TFL_PATTERN_RR && cfg->pattern != TFL_PATTERN_WWR) {
        tfl_set_err(err, errlen, "pattern must be 0 (rr) or 1 (wwr), got %d", (int)cfg->pattern);
        return -1;
    }
    if (memchr(cfg->congestion, '\0', sizeof cfg->congestion) == NULL) {
        tfl_set_err(err, errlen, "congestion must be a name of at most %d characters",
                    TFL_CC_MAX - 1);
        return -1;
    }
    if (!is_bool(cfg->nodelay) || !is_bool(cfg->cork) || !is_bool(cfg->msg_more) ||
        !is_bool(cfg->single_write) || !is_bool(cfg->read_whole)) {
        tfl_set_err(err, errlen,
                    "nodelay, cork, msg_more, single_write and read_whole must be 0 or 1");
        return -1;
    }
    if (cfg->pattern == TFL_PATTERN_RR) {
        if (cfg->payload_bytes < 1 || cfg->payload_bytes > TFL_MAX_PAYLOAD) {
            tfl_set_err(err, errlen, "payload must be 1..%d bytes (got %d)", TFL_MAX_PAYLOAD,
                        (int)cfg->payload_bytes);
            return -1;
        }
    } else {
        if (cfg->first_write_bytes < 1 || cfg->second_write_bytes < 1 ||
            (int64_t)cfg->first_write_bytes + cfg->second_write_bytes > TFL_MAX_PAYLOAD) {
            tfl_set_err(err, errlen,
                        "first and second write must be at least 1 byte each and at most %d "
                        "together (got %d + %d)",
                        TFL_MAX_PAYLOAD, (int)cfg->first_write_bytes,
                        (int)cfg->second_write_bytes);
            return -1;
        }
        if (cfg->single_write && cfg->msg_more) {
            tfl_set_err(err, errlen,
                        "single write and msg_more do not combine: MSG_MORE on the only write "
                        "would hold it back");
            return -1;
        }
    }
    if (cfg->response_bytes < 0 || cfg->response_bytes > TFL_MAX_PAYLOAD) {
        tfl_set_err(err, errlen,
                    "response must be 0 (the echo) or 1..%d bytes (got %d)", TFL_MAX_PAYLOAD,
                    (int)cfg->response_bytes);
        return -1;
    }
    if (cfg->iterations < 1 || cfg->iterations > TFL_MAX_ITERATIONS) {
        tfl_set_err(err, errlen, "iterations must be 1..%d (got %d)", TFL_MAX_ITERATIONS,
                    (int)cfg->iterations);
        return -1;
    }
    if (cfg->connections < 1 || cfg->connections > TFL_MAX_CONNECTIONS) {
        tfl_set_err(err, errlen, "connections must be 1..%d (got %d)", TFL_MAX_CONNECTIONS,
                    (int)cfg->connections);
        return -1;
    }
    if ((int64_t)cfg->connections * cfg->iterations > TFL_MAX_SAMPLES) {
        tfl_set_err(err, errlen, "connections x iterations must be at most %d (got %d x %d)",
                    TFL_MAX_SAMPLES, (int)cfg->connections, (int)cfg->iterations);
        return -1;
    }
    if (cfg->timeout_ms < 1 || cfg->timeout_ms > TFL_MAX_TIMEOUT_MS) {
        tfl_set_err(err, errlen, "timeout must be 1..%d ms (got %d)", TFL_MAX_TIMEOUT_MS,
                    (int)cfg->timeout_ms);
        return -1;
    }
    return 0;
}

/* Record a failure; blocking-socket timeouts surface as EAGAIN/EINPROGRESS. */
static void record_failure(struct tfl_sample *s, const char *call, int errnum)
{
    if (s->failed_call[0] != '\0')
        return; /* keep the first failure */
    if (errnum == EAGAIN || errnum == EWOULDBLOCK || errnum == EINPROGRESS)
        errnum = ETIMEDOUT;
    s->error_errno = errnum;
    tfl_copy_str(s->errno_name, sizeof s->errno_name, tfl_errno_name(errnum));
    tfl_copy_str(s->failed_call, sizeof s->failed_call, call);
}

static int set_int_opt(int fd, int level, int name, int value)
{
    return setsockopt(fd, level, name, &value, sizeof value) == 0 ? 0 : errno;
}

/* connect() on a blocking socket; an EINTR lets the handshake go on, so wait for it. */
static int connect_blocking(int fd, const struct sockaddr *addr, socklen_t addrlen,
                            int timeout_ms)
{
    if (connect(fd, addr, addrlen) == 0)
        return 0;
    if (errno != EINTR)
        return errno;
    int64_t deadline = tfl_now_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        int64_t left_ms = (deadline - tfl_now_ns()) / 1000000;
        if (left_ms <= 0)
            return ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int n = poll(&p, 1, (int)left_ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return ETIMEDOUT;
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
            return errno;
        return soerr;
    }
}

static int send_all(int fd, const char *data, size_t len, int flags)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, flags | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/*
 * read_whole: wait in poll() until the kernel says what is left of the answer is in
 * (SO_RCVLOWAT = the bytes still missing), then take what is queued without blocking.
 * The kernel may also report the socket readable before that, when the unread data
 * leaves the peer at most one MSS of window or fills the buffer (tcp_epollin_ready);
 * the low-water mark is then lowered to what is still missing.  A blocking recv()
 * cannot do this: once it has copied part of the answer it waits for sk_rcvlowat
 * more bytes, which never come, and only its timeout ends it.
 */
static int wait_for_rest(int fd, size_t missing, int timeout_ms, struct tfl_sample *s)
{
    int lowat = (int)missing; /* at most TFL_MAX_PAYLOAD */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat) != 0) {
        record_failure(s, "setsockopt", errno);
        return -1;
    }
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = poll(&p, 1, timeout_ms);
        if (ready > 0)
            return 0;
        if (ready == 0) {
            record_failure(s, "recv", ETIMEDOUT);
            return -1;
        }
        if (errno != EINTR) {
            record_failure(s, "poll", errno);
            return -1;
        }
    }
}

/* Read exactly len bytes of the answer; stamps the first and last byte. */
static int read_response(int fd, char *buf, size_t len, const struct tfl_client_config *cfg,
                         struct tfl_sample *s)
{
    size_t got = 0;
    while (got < len) {
        if (cfg->read_whole && wait_for_rest(fd, len - got, cfg->timeout_ms, s) != 0)
            return -1;
        ssize_t n = recv(fd, buf + got, len - got, cfg->read_whole ? MSG_DONTWAIT : 0);
        if (n < 0) {
            if (errno == EINTR || (cfg->read_whole && errno == EAGAIN))
                continue;
            record_failure(s, "recv", errno);
            return -1;
        }
        if (n == 0) {
            /* The peer closed before the whole answer came back. */
            tfl_copy_str(s->errno_name, sizeof s->errno_name, "EOF");
            tfl_copy_str(s->failed_call, sizeof s->failed_call, "recv");
            s->error_errno = 0;
            return -1;
        }
        if (got == 0)
            s->first_byte_ns = tfl_now_ns();
        got += (size_t)n;
    }
    s->last_byte_ns = tfl_now_ns();
    return 0;
}

/* One request/response (rr) or one write-write-read round (wwr). */
static int run_iteration(struct client_run *r, int fd, int first_iteration,
                         struct tfl_sample *s)
{
    const struct tfl_client_config *cfg = r->cfg;
    struct piece pieces[TFL_MAX_WRITES];
    int n_pieces = 1;
    int wwr = cfg->pattern == TFL_PATTERN_WWR;
    int cork = wwr && cfg->cork;
    int rc;

    pieces[0] = (struct piece){r->request, r->request_len, 0};
    if (wwr && !cfg->single_write) {
        size_t first = (size_t)cfg->first_write_bytes;
        pieces[0] = (struct piece){r->request, first, cfg->msg_more ? MSG_MORE : 0};
        pieces[1] = (struct piece){r->request + first, r->request_len - first, 0};
        n_pieces = 2;
    }
    if (cork && (rc = set_int_opt(fd, IPPROTO_TCP, TCP_CORK, 1)) != 0) {
        record_failure(s, "setsockopt", rc);
        return -1;
    }

    int next_piece = 0;
    if (first_iteration) {
        const struct sockaddr *addr = (const struct sockaddr *)&r->addr;
        s->connect_start_ns = tfl_now_ns();
        if (cfg->fastopen == TFL_FASTOPEN_SENDTO) {
            s->write_ns[0] = s->connect_start_ns;
            ssize_t n = sendto(fd, pieces[0].data, pieces[0].len,
                               pieces[0].flags | MSG_FASTOPEN | MSG_NOSIGNAL, addr, r->addrlen);
            s->connect_return_ns = tfl_now_ns();
            if (n < 0) {
                record_failure(s, "sendto", errno);
                return -1;
            }
            size_t sent = (size_t)n;
            rc = send_all(fd, pieces[0].data + sent, pieces[0].len - sent, pieces[0].flags);
            if (rc != 0) {
                record_failure(s, "send", rc);
                return -1;
            }
            next_piece = 1;
        } else {
            rc = connect_blocking(fd, addr, r->addrlen, cfg->timeout_ms);
            s->connect_return_ns = tfl_now_ns();
            if (rc != 0) {
                record_failure(s, "connect", rc);
                return -1;
            }
        }
        struct sockaddr_storage own;
        socklen_t own_len = sizeof own;
        if (getsockname(fd, (struct sockaddr *)&own, &own_len) != 0) {
            record_failure(s, "getsockname", errno);
            return -1;
        }
        s->local_port = own.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&own)->sin6_port)
                                                  : ntohs(((struct sockaddr_in *)&own)->sin_port);
    }
    for (int i = next_piece; i < n_pieces; i++) {
        s->write_ns[i] = tfl_now_ns();
        rc = send_all(fd, pieces[i].data, pieces[i].len, pieces[i].flags);
        if (rc != 0) {
            record_failure(s, "send", rc);
            return -1;
        }
    }
    s->n_writes = n_pieces;
    if (cork && (rc = set_int_opt(fd, IPPROTO_TCP, TCP_CORK, 0)) != 0) {
        record_failure(s, "setsockopt", rc);
        return -1;
    }
    if (read_response(fd, r->response, r->expected_len, cfg, s) != 0)
        return -1;
    if (memcmp(r->response, r->expected, r->expected_len) != 0) {
        record_failure(s, "verify", EBADMSG);
        return -1;
    }
    return 0;
}

static int open_socket(struct client_run *r, struct tfl_sample *s)
{
    const struct tfl_client_config *cfg = r->cfg;
    int fd = socket(r->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        record_failure(s, "socket", errno);
        return -1;
    }
    struct timeval tv = {.tv_sec = cfg->timeout_ms / 1000,
                         .tv_usec = (cfg->timeout_ms % 1000) * 1000};
    int rc = 0;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
        rc = errno;
    if (rc == 0 && cfg->nodelay)
        rc = set_int_opt(fd, IPPROTO_TCP, TCP_NODELAY, 1);
    if (rc == 0 && cfg->congestion[0] != '\0' &&
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cfg->congestion,
                   (socklen_t)strlen(cfg->congestion)) != 0)
        rc = errno;
    if (rc == 0 && cfg->fastopen == TFL_FASTOPEN_CONNECT)
        rc = set_int_opt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 1);
    /* The mark goes in before connect() where it fits in half the buffer, so that
     * tcp_set_rcvlowat changes nothing but the mark.  A larger one would raise sk_rcvbuf,
     * and 6.1 also sets the window clamp to it, which picks the SYN's window scale
     * (1 for 100 kB); it is set after the handshake instead, before the first read
     * (wait_for_rest), where every kernel keeps the scale it announced.  A Fast Open
     * client sets it before its SYN whatever its size: the answer to data in the SYN
     * arrives right behind the SYN-ACK, and a mark set once connect() or sendto()
     * returns would race its first segments (from 6.6 the raise only grows sk_rcvbuf
     * before connect(), so the SYN offers a larger window and keeps its scale). */
    if (rc == 0 && cfg->read_whole) {
        int rcvbuf = 0;
        socklen_t len = sizeof rcvbuf;
        if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len) != 0)
            rc = errno;
        else if (r->expected_len <= (size_t)rcvbuf / 2 || cfg->fastopen != TFL_FASTOPEN_OFF)
            rc = set_int_opt(fd, SOL_SOCKET, SO_RCVLOWAT, (int)r->expected_len);
    }
    if (rc != 0) {
        record_failure(s, "setsockopt", rc);
        s->close_ns = tfl_now_ns();
        (void)close(fd); /* already failing; the first error is the one reported */
        return -1;
    }
    return fd;
}

static void init_sample(struct tfl_sample *s, int connection, int iteration)
{
    memset(s, 0, sizeof *s);
    s->connection = connection;
    s->iteration = iteration;
}

/* One connection: its samples start at samples[0]; returns how many it wrote. */
static size_t run_connection(struct client_run *r, int connection, struct tfl_sample *samples)
{
    const struct tfl_client_config *cfg = r->cfg;
    size_t used = 1;
    init_sample(&samples[0], connection, 1);
    int fd = open_socket(r, &samples[0]);
    if (fd < 0)
        return used;

    int syn_data_acked = 0;
    for (int it = 1; it <= cfg->iterations; it++) {
        struct tfl_sample *s = &samples[it - 1];
        if (it > 1) {
            init_sample(s, connection, it);
            s->local_port = samples[0].local_port;
            used++;
        }
        int rc = run_iteration(r, fd, it == 1, s);
        if (it == 1 && rc == 0) {
            struct tcp_info info;
            socklen_t len = sizeof info;
            memset(&info, 0, sizeof info);
            if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) {
                record_failure(s, "getsockopt", errno);
                rc = -1;
            } else {
                syn_data_acked = (info.tcpi_options & TCPI_OPT_SYN_DATA) != 0;
            }
        }
        s->syn_data_acked = syn_data_acked;
        if (rc != 0)
            break;
    }
    struct tfl_sample *last = &samples[used - 1];
    last->close_ns = tfl_now_ns();
    if (close(fd) != 0 && errno != EINTR) /* Linux frees the fd even on EINTR */
        record_failure(last, "close", errno);
    return used;
}

int tfl_run_client(const struct tfl_client_config *cfg, struct tfl_sample *samples,
                   size_t capacity, size_t *count, char *err, size_t errlen)
{
    if (count == NULL || samples == NULL) {
        tfl_set_err(err, errlen, "samples and count must not be NULL");
        return -1;
    }
    *count = 0;
    if (tfl_client_validate(cfg, err, errlen) != 0)
        return -1;
    size_t needed = (size_t)cfg->connections * (size_t)cfg->iterations;
    if (capacity < needed) {
        tfl_set_err(err, errlen, "room for %zu samples, %zu needed (connections x iterations)",
                    capacity, needed);
        return -1;
    }

    struct client_run r = {.cfg = cfg};
    if (tfl_resolve(cfg->host, cfg->port, &r.addr, &r.addrlen) != 0) {
        tfl_set_err(err, errlen, "bad address '%s'", cfg->host);
        return -1;
    }
    r.request_len = cfg->pattern == TFL_PATTERN_RR
                        ? (size_t)cfg->payload_bytes
                        : (size_t)cfg->first_write_bytes + (size_t)cfg->second_write_bytes;
    r.expected_len = cfg->response_bytes > 0 ? (size_t)cfg->response_bytes : r.request_len;
    r.request = tfl_payload_alloc(r.request_len);
    r.expected = malloc(r.expected_len);
    r.response = tfl_payload_alloc(r.expected_len);
    if (r.request == NULL || r.expected == NULL || r.response == NULL) {
        tfl_payload_free(r.request, r.request_len);
        free(r.expected);
        tfl_payload_free(r.response, r.expected_len);
        tfl_set_err(err, errlen, "out of memory for a %zu-byte request and a %zu-byte answer",
                    r.request_len, r.expected_len);
        return -1;
    }
    tfl_fill_line(r.request, r.request_len);
    tfl_fill_line(r.expected, r.expected_len);

    size_t used = 0;
    for (int c = 1; c <= cfg->connections; c++)
        used += run_connection(&r, c, samples + used);
    *count = used;
    tfl_payload_free(r.request, r.request_len);
    free(r.expected);
    tfl_payload_free(r.response, r.expected_len);
    return 0;
}
