/*
 * server.c - the epoll echo server of libtfolab (modes echo, line, http). In line
 * mode each complete line is answered with itself, or with response_bytes of
 * tfl_fill_line (the same answer for every line, built once).
 *
 * Rules: one thread, non-blocking sockets, level-triggered epoll, one recv()
 * per readiness event (so TCP_QUICKACK, when asked for, is set before every
 * read). In http mode the listener defers accept until the request has
 * arrived (TCP_DEFER_ACCEPT; a Fast Open request comes with its SYN anyway)
 * and a new connection is read at once, before it joins the epoll set. Memory per connection is bounded: a partial line or HTTP head may
 * grow to TFL_MAX_LINE, then the connection is dropped with one line on
 * stderr; reading pauses while more than OUT_HIGH bytes wait to be sent.
 * A line answered with response_bytes is sent straight from the answer built
 * once, with one sendmsg() for every line of that read where nothing else waits
 * (what the socket does not take is buffered as before): the kernel's copy is
 * the only one, so the first segment leaves as soon as its own bytes are
 * copied (a copy into a fresh output buffer first made a 300 kB answer leave
 * 2-4 ms late after a long idle on a VM).
 * The only output is one stderr line per connection dropped for a reason
 * other than the peer going away. What the application did is counted in
 * struct tfl_server_stats (tfl_server_run_counted): connections accepted,
 * requests received (lines, HTTP heads, or data reads in echo mode).
 * Where cfg->stamp_fd >= 0, each recv() that returned data or end of file, each
 * send call and each close() is stamped (struct tfl_call_stamp: the time taken
 * just before the call, written just after it, so the stamp never delays what
 * the call sends); a stamp that cannot be written ends the run with an error
 * (the lab reads the applications' own wake-ups from them: a missing one would
 * be a silent gap).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "http.h"
#include "internal.h"

#define CHUNK (64 * 1024)
#define OUT_HIGH (4 * 1024 * 1024)
#define MAX_EVENTS 64
#define ACCEPT_PAUSE_MS 100

struct buffer {
    char *data;
    size_t len;
    size_t cap;
};

struct conn {
    int fd;
    int peer_port;       /* the client's port, for the call stamps */
    uint32_t events;     /* current epoll interest */
    int read_eof;        /* peer sent FIN */
    int closing;         /* close once out is flushed */
    size_t scanned;      /* bytes of in already searched for a terminator */
    size_t body_left;    /* http: request body bytes still to skip */
    size_t out_off;      /* bytes of out already sent */
    struct buffer in;
    struct buffer out;
    struct conn *prev, *next;
};

struct server {
    const struct tfl_server_config *cfg;
    int epfd;
    int listen_fd;
    int stop_fd;
    int accept_paused;
    int done;
    long closed;
    int stamp_errno;                /* a call stamp could not be written: the run ends */
    struct tfl_server_stats *stats; /* never NULL: a local one when the caller has none */
    struct conn *conns;
    char *answer;   /* line mode with response_bytes: every line's answer, else NULL */
    char *err;
    size_t errlen;
};

static char listen_tag, stop_tag;

void tfl_server_config_init(struct tfl_server_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    tfl_copy_str(cfg->bind_addr, sizeof cfg->bind_addr, "127.0.0.1");
    cfg->mode = TFL_MODE_ECHO;
    cfg->stamp_fd = -1;
}

/* Make room for `more` bytes, growing up to limit; -1 if it would exceed it. */
static int buffer_reserve(struct buffer *b, size_t more, size_t limit)
{
    if (more > limit || b->len > limit - more)
        return -1;
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (p == NULL)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static int buffer_append(struct buffer *b, const char *data, size_t len, size_t limit)
{
    if (buffer_reserve(b, len, limit) != 0)
        return -1;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    return 0;
}

static void buffer_consume(struct buffer *b, size_t n)
{
    if (n == 0)
        return;
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

/* Write one call stamp (see the rules above); the first failure ends the run. */
static void stamp_call(struct server *srv, const struct conn *c, int call, int64_t ns)
{
    if (srv->cfg->stamp_fd < 0 || srv->stamp_errno != 0)
        return;
    struct tfl_call_stamp stamp = {.ns = ns, .peer_port = c->peer_port, .call = call};
    ssize_t n;
    do {
        n = write(srv->cfg->stamp_fd, &stamp, sizeof stamp);
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof stamp) {
        srv->stamp_errno = n < 0 ? errno : EIO;
        srv->done = 1;
    }
}

static void log_drop(const struct conn *c, const char *why)
{
    fprintf(stderr, "tfolab server: dropped connection (fd %d): %s\n", c->fd, why);
}

static void conn_close(struct server *srv, struct conn *c)
{
    /* Closing the fd removes it from the epoll set; EINTR still frees it on Linux. */
    int64_t called = tfl_now_ns();
    if (close(c->fd) != 0 && errno != EINTR)
        fprintf(stderr, "tfolab server: close: %s\n", tfl_errno_name(errno));
    stamp_call(srv, c, TFL_CALL_CLOSE, called);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    free(c->in.data);
    free(c->out.data);
    free(c);
    srv->closed++;
    srv->stats->closed++;
    if (srv->cfg->max_conns > 0 && srv->closed >= srv->cfg->max_conns)
        srv->done = 1;
}

static int set_interest(struct server *srv, int fd, void *tag, uint32_t *current, uint32_t want)
{
    if (*current == want)
        return 0;
    struct epoll_event ev = {.events = want, .data.ptr = tag};
    if (epoll_ctl(srv->epfd, EPOLL_CTL_MOD, fd, &ev) != 0)
        return errno;
    *current = want;
    return 0;
}

/* `count` copies of srv->answer for a connection with nothing else waiting: one
 * sendmsg() as far as the socket takes them, the rest buffered; -1 when the
 * connection must go. */
static int send_answers(struct server *srv, struct conn *c, size_t count)
{
    size_t len = (size_t)srv->cfg->response_bytes;
    struct iovec iov[64];
    size_t in_call = count < 64 ? count : 64;
    for (size_t i = 0; i < in_call; i++)
        iov[i] = (struct iovec){.iov_base = srv->answer, .iov_len = len};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = in_call};
    ssize_t n;
    int64_t called = tfl_now_ns();
    do {
        n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    int saved = errno;
    stamp_call(srv, c, TFL_CALL_WRITE, called);
    errno = saved;
    if (n < 0) {
        if (errno == EPIPE || errno == ECONNRESET)
            return -1;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            log_drop(c, tfl_errno_name(errno));
            return -1;
        }
        n = 0;
    }
    size_t sent = (size_t)n;
    for (size_t i = 0; i < count; i++) {
        size_t skip = sent < len ? sent : len;
        sent -= skip;
        if (skip < len && buffer_append(&c->out, srv->answer + skip, len - skip, SIZE_MAX / 2))
            return -1;
    }
    return 0;
}

/* Line mode: answer every complete line, with the line itself or with srv->answer
 * (one memmove per read; the answers sent at once where nothing else waits). */
static int process_lines(struct server *srv, struct conn *c)
{
    size_t pos = 0;
    size_t answers = 0; /* srv->answer's, not sent yet */
    bool direct = srv->answer != NULL && c->out_off == c->out.len;
    const char *nl;
    while ((nl = memchr(c->in.data + c->scanned, '\n', c->in.len - c->scanned)) != NULL) {
        size_t end = (size_t)(nl - c->in.data) + 1;
        int appended = 0;
        if (direct)
            answers++;
        else if (srv->answer != NULL)
            appended = buffer_append(&c->out, srv->answer, (size_t)srv->cfg->response_bytes,
                                     SIZE_MAX / 2);
        else
            appended = buffer_append(&c->out, c->in.data + pos, end - pos, SIZE_MAX / 2);
        if (appended != 0)
            return -1;
        pos = end;
        c->scanned = end;
        srv->stats->requests++;
    }
    if (answers > 0 && send_answers(srv, c, answers) != 0)
        return -1;
    buffer_consume(&c->in, pos);
    c->scanned = c->in.len;
    if (c->in.len > TFL_MAX_LINE) {
        log_drop(c, "line longer than 1048576 bytes (TFL_MAX_LINE)");
        return -1;
    }
    return 0;
}

/* HTTP mode: answer every complete request head, skip request bodies. */
static int process_http(struct server *srv, struct conn *c)
{
    size_t pos = 0; /* bytes of in handled; removed once at the end */
    int rc = 0;
    while (!c->closing) {
        if (c->body_left > 0) {
            size_t left = c->in.len - pos;
            size_t skip = c->body_left < left ? c->body_left : left;
            pos += skip;
            c->body_left -= skip;
            if (c->body_left > 0)
                break;
        }
        size_t from = c->scanned > pos + 3 ? c->scanned - 3 : pos;
        const char *end = c->in.len > from ? memmem(c->in.data + from, c->in.len - from,
                                                    "\r\n\r\n", 4)
                                           : NULL;
        if (end == NULL) {
            c->scanned = c->in.len;
            if (c->in.len - pos > TFL_MAX_LINE) {
                log_drop(c, "HTTP request head longer than 1048576 bytes");
                rc = -1;
            }
            break;
        }
        size_t head_end = (size_t)(end - c->in.data) + 4;
        struct tfl_http_request req;
        char response[512];
        tfl_http_parse(c->in.data + pos, head_end - pos, &req);
        size_t n = tfl_http_response(&req, response, sizeof response);
        if (n == 0 || buffer_append(&c->out, response, n, SIZE_MAX / 2) != 0) {
            rc = -1;
            break;
        }
        pos = head_end;
        c->scanned = head_end;
        srv->stats->requests++;
        c->body_left = req.status == 200 ? req.body_len : 0;
        if (req.status != 200 || !req.keep_alive)
            c->closing = 1; /* anything after a request that closes is ignored */
    }
    buffer_consume(&c->in, pos);
    c->scanned = c->scanned > pos ? c->scanned - pos : 0;
    return rc;
}

/* Send what is pending; -1 when the connection must go. */
static int flush_out(struct server *srv, struct conn *c)
{
    while (c->out_off < c->out.len) {
        int64_t called = tfl_now_ns();
        ssize_t n = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        int saved = errno;
        stamp_call(srv, c, TFL_CALL_WRITE, called);
        errno = saved;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            if (errno != EPIPE && errno != ECONNRESET)
                log_drop(c, tfl_errno_name(errno));
            return -1;
        }
        c->out_off += (size_t)n;
    }
    c->out.len = 0;
    c->out_off = 0;
    return 0;
}

/* One recv(); -1 when the connection must go. */
static int read_once(struct server *srv, struct conn *c)
{
    char chunk[CHUNK];
    const struct tfl_server_config *cfg = srv->cfg;
    if (cfg->quickack) {
        int one = 1;
        if (setsockopt(c->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one) != 0) {
            log_drop(c, "setsockopt(TCP_QUICKACK) failed");
            return -1;
        }
    }
    ssize_t n;
    int64_t called = tfl_now_ns();
    do {
        n = recv(c->fd, chunk, sizeof chunk, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n >= 0)
        stamp_call(srv, c, TFL_CALL_READ, called);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno != ECONNRESET)
            log_drop(c, tfl_errno_name(errno));
        return -1;
    }
    if (n == 0) {
        c->read_eof = 1;
        c->closing = 1;
        return 0;
    }
    size_t len = (size_t)n;
    srv->stats->bytes_received += n;
    if (cfg->mode == TFL_MODE_ECHO) {
        srv->stats->requests++;
        return buffer_append(&c->out, chunk, len, SIZE_MAX / 2);
    }
    if (c->closing)
        return 0; /* http: a request said close; the rest is ignored */
    if (buffer_append(&c->in, chunk, len, TFL_MAX_LINE + CHUNK) != 0) {
        log_drop(c, "request buffer full");
        return -1;
    }
    return cfg->mode == TFL_MODE_LINE ? process_lines(srv, c) : process_http(srv, c);
}

/* The epoll interest a connection needs now: read unless closing or backed up, write
 * while a reply waits. */
static uint32_t interest(const struct conn *c)
{
    size_t pending = c->out.len - c->out_off;
    uint32_t want = 0;
    if (!c->closing && pending < OUT_HIGH)
        want |= EPOLLIN;
    if (pending > 0)
        want |= EPOLLOUT;
    return want;
}

static void handle_conn(struct server *srv, struct conn *c, uint32_t events)
{
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->read_eof &&
        (c->events & EPOLLIN) && read_once(srv, c) != 0) {
        conn_close(srv, c);
        return;
    }
    if (flush_out(srv, c) != 0) {
        conn_close(srv, c);
        return;
    }
    size_t pending = c->out.len - c->out_off;
    if (c->closing && pending == 0) {
        conn_close(srv, c);
        return;
    }
    if ((events & EPOLLERR) && !(c->events & EPOLLIN)) {
        conn_close(srv, c); /* reset while we were not reading */
        return;
    }
    int rc = set_interest(srv, c->fd, c, &c->events, interest(c));
    if (rc != 0) {
        log_drop(c, tfl_errno_name(rc));
        conn_close(srv, c);
    }
}

static void add_conn(struct server *srv, int fd, int peer_port)
{
    struct conn *c = calloc(1, sizeof *c);
    if (c == NULL) {
        fprintf(stderr, "tfolab server: out of memory, refusing a connection\n");
        (void)close(fd);
        return;
    }
    c->fd = fd;
    c->peer_port = peer_port;
    srv->stats->accepted++;
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    if (srv->cfg->nodelay) {
        int one = 1;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
            log_drop(c, "setsockopt(TCP_NODELAY) failed");
            conn_close(srv, c);
            return;
        }
    }
    if (srv->cfg->mode == TFL_MODE_HTTP) {
        /* A request often arrives with its connection (TCP Fast Open puts it in the
         * SYN): answer it now instead of waiting for epoll to report it, and a
         * connection served whole here never enters the epoll set at all. */
        c->events = EPOLLIN; /* read_once may read */
        if (read_once(srv, c) != 0 || flush_out(srv, c) != 0) {
            conn_close(srv, c);
            return;
        }
        if (c->closing && c->out.len == c->out_off) {
            conn_close(srv, c);
            return;
        }
    }
    c->events = interest(c);
    struct epoll_event ev = {.events = c->events, .data.ptr = c};
    if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        log_drop(c, tfl_errno_name(errno));
        conn_close(srv, c);
    }
}

static void accept_some(struct server *srv)
{
    for (int i = 0; i < MAX_EVENTS; i++) {
        struct sockaddr_storage peer;
        socklen_t peer_len = sizeof peer;
        int fd = accept4(srv->listen_fd, (struct sockaddr *)&peer, &peer_len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            int port = peer.ss_family == AF_INET6
                           ? ntohs(((struct sockaddr_in6 *)&peer)->sin6_port)
                           : ntohs(((struct sockaddr_in *)&peer)->sin_port);
            add_conn(srv, fd, port);
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            /* Out of descriptors or memory: stop accepting for a while. */
            uint32_t none = 0, current = EPOLLIN;
            fprintf(stderr, "tfolab server: accept: %s, pausing for %d ms\n",
                    tfl_errno_name(errno), ACCEPT_PAUSE_MS);
            if (set_interest(srv, srv->listen_fd, &listen_tag, &current, none) == 0)
                srv->accept_paused = 1;
            return;
        }
        /* ECONNABORTED, EPROTO, EINTR, network errors: that one connection is gone. */
    }
}

static int resume_accept(struct server *srv)
{
    uint32_t current = 0;
    int rc = set_interest(srv, srv->listen_fd, &listen_tag, &current, EPOLLIN);
    if (rc == 0)
        srv->accept_paused = 0;
    return rc;
}

int tfl_server_run(int listen_fd, const struct tfl_server_config *cfg, int stop_fd, char *err,
                   size_t errlen)
{
    return tfl_server_run_counted(listen_fd, cfg, stop_fd, NULL, err, errlen);
}

int tfl_server_run_counted(int listen_fd, const struct tfl_server_config *cfg, int stop_fd,
                           struct tfl_server_stats *stats, char *err, size_t errlen)
{
    struct tfl_server_stats own;
    if (stats == NULL)
        stats = &own;
    memset(stats, 0, sizeof *stats);
    struct server srv = {.cfg = cfg, .listen_fd = listen_fd, .stop_fd = stop_fd,
                         .stats = stats, .err = err, .errlen = errlen};
    int rc = 0;
    if (cfg == NULL || cfg->mode < TFL_MODE_ECHO || cfg->mode > TFL_MODE_HTTP ||
        cfg->max_conns < 0) {
        tfl_set_err(err, errlen, "bad server configuration (mode or max_conns)");
        return -EINVAL;
    }
    if (cfg->response_bytes < 0 || cfg->response_bytes > TFL_MAX_PAYLOAD ||
        (cfg->response_bytes > 0 && cfg->mode != TFL_MODE_LINE)) {
        tfl_set_err(err, errlen, "response_bytes must be 0, or 1..%d in line mode (got %d)",
                    TFL_MAX_PAYLOAD, (int)cfg->response_bytes);
        return -EINVAL;
    }
    if (cfg->response_bytes > 0) {
        srv.answer = tfl_payload_alloc((size_t)cfg->response_bytes);
        if (srv.answer == NULL) {
            tfl_set_err(err, errlen, "out of memory for a %d-byte answer",
                        (int)cfg->response_bytes);
            return -ENOMEM;
        }
        tfl_fill_line(srv.answer, (size_t)cfg->response_bytes);
    }
    srv.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (srv.epfd < 0) {
        rc = -errno;
        tfl_set_err(err, errlen, "epoll_create1: %s", tfl_errno_name(errno));
        tfl_payload_free(srv.answer, (size_t)cfg->response_bytes);
        return rc;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &listen_tag};
    if (epoll_ctl(srv.epfd, EPOLL_CTL_ADD, listen_fd, &ev) != 0) {
        rc = -errno;
        tfl_set_err(err, errlen, "epoll_ctl(listener): %s", tfl_errno_name(errno));
        goto out;
    }
    if (stop_fd >= 0) {
        struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &stop_tag};
        if (epoll_ctl(srv.epfd, EPOLL_CTL_ADD, stop_fd, &sev) != 0) {
            rc = -errno;
            tfl_set_err(err, errlen, "epoll_ctl(stop fd): %s", tfl_errno_name(errno));
            goto out;
        }
    }
    struct epoll_event events[MAX_EVENTS];
    while (!srv.done) {
        int n = epoll_wait(srv.epfd, events, MAX_EVENTS, srv.accept_paused ? ACCEPT_PAUSE_MS : -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            tfl_set_err(err, errlen, "epoll_wait: %s", tfl_errno_name(errno));
            goto out;
        }
        if (n == 0 && srv.accept_paused && (rc = -resume_accept(&srv)) != 0) {
            tfl_set_err(err, errlen, "epoll_ctl(listener): %s", tfl_errno_name(-rc));
            goto out;
        }
        for (int i = 0; i < n && !srv.done; i++) {
            void *tag = events[i].data.ptr;
            if (tag == &stop_tag)
                goto out;
            if (tag == &listen_tag)
                accept_some(&srv);
            else
                handle_conn(&srv, tag, events[i].events);
        }
    }
    if (srv.stamp_errno != 0) {
        rc = -srv.stamp_errno;
        tfl_set_err(err, errlen, "writing a call stamp to fd %d: %s", (int)cfg->stamp_fd,
                    tfl_errno_name(srv.stamp_errno));
    }
out:
    while (srv.conns != NULL) {
        struct conn *c = srv.conns;
        srv.conns = c->next;
        if (close(c->fd) != 0 && errno != EINTR)
            fprintf(stderr, "tfolab server: close: %s\n", tfl_errno_name(errno));
        free(c->in.data);
        free(c->out.data);
        free(c);
    }
    tfl_payload_free(srv.answer, (size_t)cfg->response_bytes);
    if (close(srv.epfd) != 0 && errno != EINTR && rc == 0) {
        rc = -errno;
        tfl_set_err(err, errlen, "close(epoll): %s", tfl_errno_name(errno));
    }
    return rc;
}

int tfl_server_listen(const struct tfl_server_config *cfg, int *port_out, char *err,
                      size_t errlen)
{
    struct sockaddr_storage addr;
    socklen_t addrlen;
    if (cfg == NULL || !tfl_is_terminated(cfg->bind_addr, sizeof cfg->bind_addr)) {
        tfl_set_err(err, errlen, "bind address missing or longer than %d characters",
                    TFL_HOST_MAX - 1);
        return -EINVAL;
    }
    if (!tfl_is_terminated(cfg->congestion, sizeof cfg->congestion)) {
        tfl_set_err(err, errlen, "congestion control name longer than %d characters",
                    TFL_CC_MAX - 1);
        return -EINVAL;
    }
    if (cfg->port < 0 || cfg->port > 65535 || cfg->tfo_qlen < 0) {
        tfl_set_err(err, errlen, "port must be 0..65535 and the TFO queue length >= 0");
        return -EINVAL;
    }
    if (tfl_resolve(cfg->bind_addr, cfg->port, &addr, &addrlen) != 0) {
        tfl_set_err(err, errlen,
                    "bad bind address '%s': use an IPv4 or IPv6 address such as 127.0.0.1, "
                    "0.0.0.0 or ::1",
                    cfg->bind_addr);
        return -EINVAL;
    }
    int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        tfl_set_err(err, errlen, "socket: %s", tfl_errno_name(e));
        return -e;
    }
    int one = 1;
    const char *call = NULL;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        call = "setsockopt(SO_REUSEADDR)";
    else if (cfg->tfo_qlen > 0 &&
             setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN, &cfg->tfo_qlen, sizeof cfg->tfo_qlen) != 0)
        call = "setsockopt(TCP_FASTOPEN)";
    else if (cfg->congestion[0] != '\0' &&
             setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cfg->congestion,
                        (socklen_t)strlen(cfg->congestion)) != 0)
        call = "setsockopt(TCP_CONGESTION)";
    else if (cfg->mode == TFL_MODE_HTTP &&
             setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &one, sizeof one) != 0)
        call = "setsockopt(TCP_DEFER_ACCEPT)";
    else if (bind(fd, (struct sockaddr *)&addr, addrlen) != 0)
        call = "bind";
    else if (listen(fd, SOMAXCONN) != 0)
        call = "listen";
    else if (getsockname(fd, (struct sockaddr *)&addr, &addrlen) != 0)
        call = "getsockname";
    if (call != NULL) {
        int e = errno;
        if (e == EADDRINUSE)
            tfl_set_err(err, errlen,
                        "port %d on %s is already in use (EADDRINUSE): stop the other server or "
                        "use --port 0 to pick a free port",
                        (int)cfg->port, cfg->bind_addr);
        else if (e == EADDRNOTAVAIL)
            tfl_set_err(err, errlen,
                        "%s is not an address of this machine (EADDRNOTAVAIL): bind to "
                        "127.0.0.1 or 0.0.0.0",
                        cfg->bind_addr);
        else if (e == EACCES)
            tfl_set_err(err, errlen,
                        "port %d needs privileges (EACCES): use a port above 1023 or 0",
                        (int)cfg->port);
        else
            tfl_set_err(err, errlen, "%s: %s", call, tfl_errno_name(e));
        (void)close(fd);
        return -e;
    }
    if (port_out != NULL)
        *port_out = addr.ss_family == AF_INET6
                        ? ntohs(((struct sockaddr_in6 *)&addr)->sin6_port)
                        : ntohs(((struct sockaddr_in *)&addr)->sin_port);
    return fd;
}
