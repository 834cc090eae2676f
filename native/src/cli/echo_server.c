/*
 * echo_server.c - tfo-echo-server: a thin main() over tfl_server_listen and
 * tfl_server_run. Prints "READY <port>" once listening; exits 0 on SIGTERM,
 * SIGINT or after --max-conns connections, 2 on bad input, 1 on failures.
 * With --tfo it checks net.ipv4.tcp_fastopen of its network namespace and
 * prints one warning line on stderr when the kernel will ignore the option.
 * SIGUSR1 prints one line "STATS accepted=A requests=R bytes=B closed=C" on
 * stdout: what the application did so far (a signal handler, async-signal-safe:
 * it formats the numbers itself and calls write() once).
 * --stamp-fd N: an inherited descriptor, open for writing, that receives one
 * struct tfl_call_stamp per read, send and close (the applications' own
 * wake-ups, which the lab compares beside its capture).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "args.h"
#include "tfolab.h"

static const char usage[] =
    "usage: tfo-echo-server [options]\n"
    "\n"
    "A TCP echo server for the tfolab labs. Prints 'READY <port>' on stdout once\n"
    "it listens, then serves many connections at once until SIGTERM/SIGINT.\n"
    "\n"
    "options:\n"
    "  --bind ADDR        address to listen on, an IPv4/IPv6 literal or localhost\n"
    "  --congestion NAME  TCP_CONGESTION on the listener (e.g. cubic; default: the system's)\n"
    "                     (default 127.0.0.1)\n"
    "  --port N           port to listen on, 0 picks a free one (default 0)\n"
    "  --tfo QLEN         TCP Fast Open on the listener with this queue length,\n"
    "                     0 = off (default 0); needs net.ipv4.tcp_fastopen & 2\n"
    "  --mode MODE        echo: echo bytes as they come (default)\n"
    "                     line: echo each complete '\\n'-terminated line\n"
    "                           (a line may be up to 1048576 bytes)\n"
    "                     http: answer each HTTP/1.x request with 200 OK; the\n"
    "                           listener defers accept until a request has\n"
    "                           arrived (TCP_DEFER_ACCEPT) and answers it at once\n"
    "  --response-bytes N line mode: answer each line with N bytes ('a'..'z'\n"
    "                     repeated, ending in '\\n') instead of its echo,\n"
    "                     1..1048576 (default: the echo)\n"
    "  --quickack         set TCP_QUICKACK before every read (no delayed-ACK stall)\n"
    "  --nodelay          set TCP_NODELAY on accepted connections (no Nagle)\n"
    "  --max-conns N      exit after N connections have closed, 0 = never (default 0)\n"
    "  --die-with-parent  exit when the process that started this one exits\n"
    "  --stamp-fd N       write one 16-byte struct tfl_call_stamp (CLOCK_MONOTONIC ns,\n"
    "                     the client's port, 1 read / 2 write / 3 close) per call to\n"
    "                     the inherited descriptor N, open for writing\n"
    "  --help             show this help\n"
    "\n"
    "SIGUSR1 prints 'STATS accepted=A requests=R bytes=B closed=C' on stdout: the\n"
    "connections accepted, requests received (lines, HTTP requests, or reads in\n"
    "echo mode), bytes received and connections closed since the start.\n"
    "\n"
    "exit codes: 0 stopped cleanly, 1 runtime failure, 2 bad input or port in use\n"
    "example: tfo-echo-server --port 5000 --tfo 16 --mode line\n";

enum { OPT_CONGESTION, OPT_BIND, OPT_PORT, OPT_TFO, OPT_MODE, OPT_RESPONSE_BYTES, OPT_QUICKACK,
       OPT_NODELAY, OPT_MAX_CONNS, OPT_DIE_WITH_PARENT, OPT_STAMP_FD };

static const struct args_option options[] = {
    {"--help", ARGS_FLAG, NULL, ARGS_HELP},
    {"-h", ARGS_FLAG, NULL, ARGS_HELP},
    {"--bind", ARGS_VALUE, "127.0.0.1", OPT_BIND},
    {"--congestion", ARGS_VALUE, "", OPT_CONGESTION},
    {"--port", ARGS_VALUE, "5000", OPT_PORT},
    {"--tfo", ARGS_VALUE, "16", OPT_TFO},
    {"--mode", ARGS_VALUE, "line", OPT_MODE},
    {"--response-bytes", ARGS_VALUE, "100000", OPT_RESPONSE_BYTES},
    {"--quickack", ARGS_FLAG, NULL, OPT_QUICKACK},
    {"--nodelay", ARGS_FLAG, NULL, OPT_NODELAY},
    {"--max-conns", ARGS_VALUE, "10", OPT_MAX_CONNS},
    {"--die-with-parent", ARGS_FLAG, NULL, OPT_DIE_WITH_PARENT},
    {"--stamp-fd", ARGS_VALUE, "3", OPT_STAMP_FD},
    {NULL, ARGS_FLAG, NULL, 0},
};

static void parse(int argc, char **argv, struct tfl_server_config *cfg, int *die_with_parent)
{
    struct args a = {.prog = "tfo-echo-server", .usage = usage, .dialect = ARGS_DIALECT_ECHO,
                     .options = options, .argc = argc, .argv = argv};
    const char *v;
    int id;
    while ((id = args_next(&a, &v)) != ARGS_END) {
        switch (id) {
        case OPT_CONGESTION:
            if (strlen(v) >= sizeof cfg->congestion)
                args_fail(&a, "--congestion '%.40s' is too long: give a name such as cubic", v);
            strcpy(cfg->congestion, v); /* length checked above */
            break;
        case OPT_BIND:
            if (strlen(v) >= sizeof cfg->bind_addr)
                args_fail(&a, "--bind '%.40s...' is too long: give an address such as 127.0.0.1",
                          v);
            strcpy(cfg->bind_addr, v); /* length checked above */
            break;
        case OPT_PORT:
            cfg->port = (int32_t)args_long(&a, "--port", v, 0, 65535);
            break;
        case OPT_TFO:
            cfg->tfo_qlen = (int32_t)args_long(&a, "--tfo", v, 0, 1000000);
            break;
        case OPT_MODE:
            if (strcmp(v, "echo") == 0)
                cfg->mode = TFL_MODE_ECHO;
            else if (strcmp(v, "line") == 0)
                cfg->mode = TFL_MODE_LINE;
            else if (strcmp(v, "http") == 0)
                cfg->mode = TFL_MODE_HTTP;
            else
                args_fail(&a, "--mode '%.40s' is not a mode: use echo, line or http", v);
            break;
        case OPT_RESPONSE_BYTES:
            cfg->response_bytes =
                (int32_t)args_long(&a, "--response-bytes", v, 1, TFL_MAX_PAYLOAD);
            break;
        case OPT_QUICKACK:
            cfg->quickack = 1;
            break;
        case OPT_NODELAY:
            cfg->nodelay = 1;
            break;
        case OPT_MAX_CONNS:
            cfg->max_conns = (int32_t)args_long(&a, "--max-conns", v, 0, 1000000000);
            break;
        case OPT_DIE_WITH_PARENT:
            *die_with_parent = 1;
            break;
        case OPT_STAMP_FD:
            cfg->stamp_fd = (int32_t)args_long(&a, "--stamp-fd", v, 0, 1000000);
            break;
        }
    }
    if (cfg->stamp_fd >= 0) {
        int flags = fcntl(cfg->stamp_fd, F_GETFL);
        if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
            args_fail(&a, "--stamp-fd %d is not a descriptor open for writing: open one, "
                          "e.g. 3>stamps.bin",
                      (int)cfg->stamp_fd);
        if (fcntl(cfg->stamp_fd, F_SETFD, FD_CLOEXEC) != 0)
            args_fail(&a, "--stamp-fd %d: fcntl(FD_CLOEXEC): %s", (int)cfg->stamp_fd,
                      strerror(errno));
    }
    if (cfg->response_bytes > 0 && cfg->mode != TFL_MODE_LINE)
        args_fail(&a, "--response-bytes answers lines: add --mode line");
}

#define TFO_SYSCTL_PATH "/proc/sys/net/ipv4/tcp_fastopen"
#define TFO_SERVER_ENABLE 0x2 /* the kernel's TFO_SERVER_ENABLE */

/*
 * The kernel accepts setsockopt(TCP_FASTOPEN) whatever net.ipv4.tcp_fastopen
 * says, but accepts SYN data only when the sysctl of the listener's network
 * namespace has the server bit 0x2; 0x400 (every listener) and 0x200 (no
 * cookie) do nothing without it. /proc/sys/net shows the namespace of the
 * process that opens it, which is the listener's. Never fails: at worst one
 * warning line on stderr.
 */
static void warn_if_tfo_ignored(void)
{
    char text[32];
    size_t len = 0;
    int fd = open(TFO_SYSCTL_PATH, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr,
                "tfo-echo-server: warning: --tfo could not be verified: cannot open %s: %s\n",
                TFO_SYSCTL_PATH, strerror(errno));
        return;
    }
    for (;;) {
        ssize_t n = read(fd, text + len, sizeof text - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            (void)close(fd); /* the read error is the one worth reporting */
            fprintf(stderr,
                    "tfo-echo-server: warning: --tfo could not be verified: cannot read %s: %s\n",
                    TFO_SYSCTL_PATH, strerror(e));
            return;
        }
        len += (size_t)n;
        if (n == 0 || len == sizeof text - 1)
            break;
    }
    if (close(fd) != 0 && errno != EINTR) {
        fprintf(stderr,
                "tfo-echo-server: warning: --tfo could not be verified: cannot close %s: %s\n",
                TFO_SYSCTL_PATH, strerror(errno));
        return;
    }
    text[len] = '\0';
    text[strcspn(text, "\n")] = '\0'; /* the sysctl's one line, without its newline */
    char *end = text;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || errno != 0 || *end != '\0') {
        fprintf(stderr,
                "tfo-echo-server: warning: --tfo could not be verified: %s holds '%.20s', "
                "not a number\n",
                TFO_SYSCTL_PATH, text);
        return;
    }
    if (value & TFO_SERVER_ENABLE)
        return;
    fprintf(stderr,
            "tfo-echo-server: warning: --tfo has no effect: net.ipv4.tcp_fastopen is 0x%lx in "
            "this network namespace (needs 0x2); set it with sysctl -w "
            "net.ipv4.tcp_fastopen=%ld in a throwaway namespace\n",
            (unsigned long)value, value | 0x3);
}

static struct tfl_server_stats stats;

/* Append the decimal digits of v (>= 0) at p; returns the new end. */
static char *put_number(char *p, int64_t v)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 && n < (int)sizeof digits);
    while (n > 0)
        *p++ = digits[--n];
    return p;
}

static char *put_text(char *p, const char *text)
{
    while (*text)
        *p++ = *text++;
    return p;
}

/* SIGUSR1: one STATS line on stdout; only async-signal-safe calls. */
static void print_stats(int sig)
{
    (void)sig;
    int saved = errno;
    char line[160];
    char *p = put_text(line, "STATS accepted=");
    p = put_number(p, stats.accepted);
    p = put_text(p, " requests=");
    p = put_number(p, stats.requests);
    p = put_text(p, " bytes=");
    p = put_number(p, stats.bytes_received);
    p = put_text(p, " closed=");
    p = put_number(p, stats.closed);
    *p++ = '\n';
    ssize_t ignored = write(STDOUT_FILENO, line, (size_t)(p - line));
    (void)ignored; /* nothing to do from a signal handler if stdout is gone */
    errno = saved;
}

static int is_input_error(int neg_errno)
{
    return neg_errno == -EINVAL || neg_errno == -EADDRINUSE || neg_errno == -EADDRNOTAVAIL ||
           neg_errno == -EACCES;
}

int main(int argc, char **argv)
{
    struct tfl_server_config cfg;
    int die_with_parent = 0;
    char err[256] = "";

    tfl_server_config_init(&cfg);
    parse(argc, argv, &cfg, &die_with_parent);

    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
        fprintf(stderr, "tfo-echo-server: signal(SIGPIPE): %s\n", strerror(errno));
        return 1;
    }
    sigset_t stop_signals;
    if (sigemptyset(&stop_signals) != 0 || sigaddset(&stop_signals, SIGTERM) != 0 ||
        sigaddset(&stop_signals, SIGINT) != 0 ||
        sigprocmask(SIG_BLOCK, &stop_signals, NULL) != 0) {
        fprintf(stderr, "tfo-echo-server: blocking SIGTERM/SIGINT: %s\n", strerror(errno));
        return 1;
    }
    int stop_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC | SFD_NONBLOCK);
    if (stop_fd < 0) {
        fprintf(stderr, "tfo-echo-server: signalfd: %s\n", strerror(errno));
        return 1;
    }
    if (die_with_parent) {
        pid_t parent = getppid();
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) {
            fprintf(stderr, "tfo-echo-server: prctl(PR_SET_PDEATHSIG): %s\n", strerror(errno));
            return 1;
        }
        if (getppid() != parent) /* the parent died before prctl took effect */
            return 0;
    }

    struct sigaction usr1;
    memset(&usr1, 0, sizeof usr1);
    usr1.sa_handler = print_stats;
    usr1.sa_flags = SA_RESTART;
    if (sigemptyset(&usr1.sa_mask) != 0 || sigaction(SIGUSR1, &usr1, NULL) != 0) {
        fprintf(stderr, "tfo-echo-server: sigaction(SIGUSR1): %s\n", strerror(errno));
        return 1;
    }

    int port = 0;
    int listen_fd = tfl_server_listen(&cfg, &port, err, sizeof err);
    if (listen_fd < 0) {
        fprintf(stderr, "tfo-echo-server: %s\n", err);
        return is_input_error(listen_fd) ? EXIT_BAD_INPUT : 1;
    }
    if (cfg.tfo_qlen > 0)
        warn_if_tfo_ignored();
    if (printf("READY %d\n", port) < 0 || fflush(stdout) != 0) {
        fprintf(stderr, "tfo-echo-server: cannot write READY to stdout: %s\n", strerror(errno));
        return 1;
    }
    int rc = tfl_server_run_counted(listen_fd, &cfg, stop_fd, &stats, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "tfo-echo-server: %s\n", err);
    if (close(listen_fd) != 0 || close(stop_fd) != 0) {
        fprintf(stderr, "tfo-echo-server: close: %s\n", strerror(errno));
        return 1;
    }
    return rc == 0 ? 0 : 1;
}
