/*
 * tfolab.h - the C API of libtfolab: a TCP client and an echo server with
 * CLOCK_MONOTONIC nanosecond timestamps, for the tfolab teaching lab.
 *
 * Rules of this API:
 *  - Every shared struct is plain data with fixed-size fields (int32_t,
 *    int64_t, char arrays), so the Python ctypes mirror in tfolab/native.py
 *    can be checked field by field. Its size is exported (tfl_sizeof_*) and
 *    checked by the binding at load time; TFL_ABI_VERSION changes whenever a
 *    struct or a signature changes.
 *  - Functions never exit. Failures of the network calls of a measurement
 *    are recorded in the samples (the errno NAME and the call that failed);
 *    bad configuration is reported through an `err` buffer. The only output
 *    is tfl_server_run's one stderr line per connection it drops for a
 *    reason other than the peer going away.
 *  - The client is plain blocking code, bounded by timeout_ms per call, so a
 *    ctypes caller (which releases the GIL) never hangs forever.
 *  - Timestamps are CLOCK_MONOTONIC in nanoseconds; 0 means "did not happen".
 */
#ifndef TFOLAB_H
#define TFOLAB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TFOLAB_BUILDING_LIBRARY)
#define TFL_API __attribute__((visibility("default")))
#else
#define TFL_API
#endif

#define TFL_ABI_VERSION 6

/* Limits (documented in --help of the executables). */
#define TFL_HOST_MAX 64                  /* host / bind address, incl. NUL  */
#define TFL_CC_MAX 16                    /* congestion control name (TCP_CA_NAME_MAX) */
#define TFL_MAX_PAYLOAD (1024 * 1024)    /* largest request or line, bytes  */
#define TFL_MAX_LINE (1024 * 1024)       /* server: longest line / HTTP head */
#define TFL_MAX_ITERATIONS 100000
#define TFL_MAX_CONNECTIONS 100000
#define TFL_MAX_SAMPLES 100000           /* connections x iterations        */
#define TFL_MAX_TIMEOUT_MS (3600 * 1000)
#define TFL_MAX_WRITES 2

enum tfl_fastopen {
    TFL_FASTOPEN_OFF = 0,     /* connect() then write()                     */
    TFL_FASTOPEN_SENDTO = 1,  /* sendto(..., MSG_FASTOPEN, addr)            */
    TFL_FASTOPEN_CONNECT = 2  /* setsockopt TCP_FASTOPEN_CONNECT, connect(), write() */
};

enum tfl_pattern {
    TFL_PATTERN_RR = 0,  /* write one request (payload_bytes, ends in '\n'), read the answer */
    TFL_PATTERN_WWR = 1  /* write first_write_bytes, write second_write_bytes (ends in '\n'), read */
};

enum tfl_server_mode {
    TFL_MODE_ECHO = 0,  /* echo bytes as they come                         */
    TFL_MODE_LINE = 1,  /* answer each complete '\n'-terminated line: its echo,
                           or a line of response_bytes (tfl_fill_line)    */
    TFL_MODE_HTTP = 2   /* answer each HTTP/1.x request with 200 OK        */
};

struct tfl_client_config {
    char host[TFL_HOST_MAX];     /* IPv4/IPv6 literal or "localhost"          */
    int32_t port;                /* 1..65535                                  */
    int32_t fastopen;            /* enum tfl_fastopen                         */
    int32_t pattern;             /* enum tfl_pattern                          */
    int32_t nodelay;             /* TCP_NODELAY before connecting             */
    int32_t cork;                /* wwr: TCP_CORK=1 before the writes, 0 after */
    int32_t msg_more;            /* wwr: first write with MSG_MORE            */
    int32_t single_write;        /* wwr: one write of both parts              */
    int32_t payload_bytes;       /* rr: request size including the '\n'       */
    int32_t first_write_bytes;   /* wwr                                       */
    int32_t second_write_bytes;  /* wwr, includes the '\n'                    */
    int32_t iterations;          /* requests (rr) or rounds (wwr) per connection */
    int32_t connections;         /* fresh connections, one after the other    */
    int32_t timeout_ms;          /* bound on every blocking call              */
    int32_t response_bytes;      /* 0: read the echo of what was written; N: the
                                    server (line mode, --response-bytes N) answers
                                    each line with tfl_fill_line's N bytes      */
    int32_t read_whole;          /* SO_RCVLOWAT = the whole answer (before connecting
                                    where it fits in half the buffer), then poll()
                                    until the rest is in before each read */
    char congestion[TFL_CC_MAX]; /* TCP_CONGESTION before connecting; "" = the default */
};

/* One iteration on one connection. */
struct tfl_sample {
    int64_t connect_start_ns;    /* connect()/sendto() called (first iteration only) */
    int64_t connect_return_ns;   /* connect() returned; sendto mode: sendto returned */
    int64_t write_ns[TFL_MAX_WRITES]; /* each write call issued                */
    int64_t first_byte_ns;       /* first response byte read                  */
    int64_t last_byte_ns;        /* last response byte read                   */
    int64_t close_ns;            /* close() called (last iteration of a connection) */
    int32_t connection;          /* 1-based                                   */
    int32_t iteration;           /* 1-based                                   */
    int32_t n_writes;            /* entries of write_ns used                  */
    int32_t syn_data_acked;      /* TCP_INFO tcpi_options & TCPI_OPT_SYN_DATA */
    int32_t error_errno;         /* errno of the failed call, 0 if none       */
    char errno_name[24];         /* "ECONNREFUSED", "ETIMEDOUT", "EOF", ""    */
    char failed_call[16];        /* "connect", "sendto", "recv", ... or ""    */
    int32_t local_port;          /* the connection's own port once connected, else 0 */
};

struct tfl_server_config {
    char bind_addr[TFL_HOST_MAX];  /* IPv4/IPv6 literal or "localhost"       */
    int32_t port;                  /* 0 = pick a free port                   */
    int32_t tfo_qlen;              /* TCP_FASTOPEN on the listener, 0 = off  */
    int32_t mode;                  /* enum tfl_server_mode                   */
    int32_t quickack;              /* TCP_QUICKACK=1 before every read       */
    int32_t nodelay;               /* TCP_NODELAY on accepted sockets        */
    int32_t max_conns;             /* return after N connections closed, 0 = forever */
    int32_t response_bytes;        /* line mode: 0 echoes each line; N answers each
                                      line with tfl_fill_line's N bytes (1..TFL_MAX_PAYLOAD) */
    char congestion[TFL_CC_MAX];   /* TCP_CONGESTION on the listener (its children inherit
                                      it); "" = the namespace's default */
    int32_t stamp_fd;              /* >= 0: one struct tfl_call_stamp per recv() that
                                      returned, send call and close(), written as each
                                      happens; -1 (tfl_server_config_init): none */
};

/*
 * One application call of the server, stamped on CLOCK_MONOTONIC (the clock of the
 * client's samples and of the lab's captures) just before the call was made.
 */
enum tfl_call { TFL_CALL_READ = 1, TFL_CALL_WRITE = 2, TFL_CALL_CLOSE = 3 };
struct tfl_call_stamp {
    int64_t ns;
    int32_t peer_port;             /* the client's port: which connection */
    int32_t call;                  /* enum tfl_call */
};

/*
 * What the server application did, totals since tfl_server_run_counted began.
 * A request is a complete line (line mode), a request head (http mode) or a
 * recv() that returned data (echo mode): what the application acted upon.
 */
struct tfl_server_stats {
    int64_t accepted;        /* connections accept()ed                      */
    int64_t requests;        /* requests received (see above)               */
    int64_t bytes_received;  /* bytes recv()ed                               */
    int64_t closed;          /* connections closed                          */
};

TFL_API int tfl_abi_version(void);
TFL_API size_t tfl_sizeof_client_config(void);
TFL_API size_t tfl_sizeof_sample(void);
TFL_API size_t tfl_sizeof_server_config(void);
TFL_API size_t tfl_sizeof_server_stats(void);

/* A line of len bytes, as the client's request and the server's answer are:
 * 'a'..'z' repeated, the last byte '\n'. */
TFL_API void tfl_fill_line(char *buf, size_t len);

/* CLOCK_MONOTONIC in nanoseconds, the clock of every timestamp. */
TFL_API int64_t tfl_now_ns(void);

/* "ECONNREFUSED" for ECONNREFUSED; "E<number>" for errnos it does not know. */
TFL_API const char *tfl_errno_name(int errnum);

/* Fill in the defaults (127.0.0.1, rr, 16-byte payload, 10+6 wwr, 1x1, 5000 ms). */
TFL_API void tfl_client_config_init(struct tfl_client_config *cfg);

/* 0 if cfg is valid; else -1 and one line in err saying what is wrong. */
TFL_API int tfl_client_validate(const struct tfl_client_config *cfg, char *err, size_t errlen);

/*
 * Run the client. Writes connections * iterations samples at most (fewer when
 * a connection fails: its failed iteration is the last sample it gets).
 * Returns 0 when it ran (even if samples carry errors), -1 with err set when
 * the configuration is invalid or capacity < connections * iterations.
 */
TFL_API int tfl_run_client(const struct tfl_client_config *cfg, struct tfl_sample *samples,
                           size_t capacity, size_t *count, char *err, size_t errlen);

TFL_API void tfl_server_config_init(struct tfl_server_config *cfg);

/*
 * Create the listening socket (SO_REUSEADDR, TCP_FASTOPEN when tfo_qlen > 0,
 * TCP_DEFER_ACCEPT in http mode, non-blocking). Returns the fd and the bound port in *port_out, or -errno
 * with one line in err (-EINVAL: bad configuration or address, -EADDRINUSE:
 * port in use, ...).
 */
TFL_API int tfl_server_listen(const struct tfl_server_config *cfg, int *port_out, char *err,
                              size_t errlen);

/*
 * Serve listen_fd with epoll until stop_fd (if >= 0) becomes readable, or
 * max_conns connections have closed. Returns 0 then, or -errno with err set
 * on a fatal error. Does not close listen_fd or stop_fd.
 */
TFL_API int tfl_server_run(int listen_fd, const struct tfl_server_config *cfg, int stop_fd,
                           char *err, size_t errlen);

/*
 * tfl_server_run that also counts into *stats (zeroed first; NULL counts
 * nothing). The counts are updated as they happen, in the serving thread, so a
 * signal handler of that thread may read them between two events.
 */
TFL_API int tfl_server_run_counted(int listen_fd, const struct tfl_server_config *cfg,
                                   int stop_fd, struct tfl_server_stats *stats, char *err,
                                   size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* TFOLAB_H */
