/*
 * echo_client.c - tfo-echo-client: a thin main() over tfl_run_client that
 * prints a table a student can read, or one JSON object with --json.
 * Exit codes: 0 every iteration worked, 1 a connection failed (one line on
 * stderr says which call and why), 2 bad input.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "tfolab.h"

static const char usage[] =
    "usage: tfo-echo-client --connect HOST:PORT [options]\n"
    "\n"
    "Talks to tfo-echo-server (--mode line or echo) and times every step with\n"
    "CLOCK_MONOTONIC.\n"
    "\n"
    "options:\n"
    "  --connect HOST:PORT  server to talk to, e.g. 127.0.0.1:5000 or [::1]:5000\n"
    "  --tfo                TCP Fast Open with sendto(MSG_FASTOPEN): the request\n"
    "                       rides in the SYN once a cookie is cached\n"
    "  --tfo-connect        TCP Fast Open with TCP_FASTOPEN_CONNECT + connect()\n"
    "  --pattern rr|wwr     rr: write one request, read the echo (default)\n"
    "                       wwr: write, write, read (Nagle meets delayed ACK)\n"
    "  --nodelay            set TCP_NODELAY (turns Nagle off)\n"
    "  --congestion NAME    TCP_CONGESTION (e.g. cubic; default: the system's)\n"
    "  --cork               wwr: TCP_CORK on before the two writes, off after\n"
    "  --msg-more           wwr: first write with send(MSG_MORE)\n"
    "  --single-write       wwr: one write of both parts\n"
    "  --payload BYTES      rr: request size including its '\\n', 1..1048576\n"
    "                       (default 16)\n"
    "  --response-bytes N   read an answer of N bytes per request or round, from a\n"
    "                       server started with --response-bytes N (default: the\n"
    "                       echo of what was written), 1..1048576\n"
    "  --read-whole         wait until the rest of the answer is in (SO_RCVLOWAT\n"
    "                       and poll) before each read: one read per answer,\n"
    "                       unless the window closes first\n"
    "  --first-write B      wwr: bytes of the first write (default 10)\n"
    "  --second-write B     wwr: bytes of the second write, ending in '\\n'\n"
    "                       (default 6); both together at most 1048576\n"
    "  --iterations N       requests (rr) or rounds (wwr) on one connection\n"
    "                       (default 1)\n"
    "  --connections N      fresh connections, one after the other (default 1);\n"
    "                       connections x iterations at most 100000\n"
    "  --timeout-ms MS      give up on any single call after MS ms (default 5000)\n"
    "  --json               print one JSON object instead of the table\n"
    "  --help               show this help\n"
    "\n"
    "columns: connect_ms = connect()/sendto() call until it returned;\n"
    "first_byte_ms = from connect start (later iterations: from their first\n"
    "write) to the first response byte; round_ms = first write to last byte.\n"
    "\n"
    "exit codes: 0 all worked, 1 a connection failed, 2 bad input\n"
    "example: tfo-echo-client --connect 127.0.0.1:5000 --pattern wwr --iterations 5\n";

struct given {
    int payload, first, second, cork, msg_more, single_write;
};


enum { OPT_CONGESTION, OPT_CONNECT, OPT_TFO, OPT_TFO_CONNECT, OPT_PATTERN, OPT_NODELAY, OPT_CORK,
       OPT_MSG_MORE, OPT_SINGLE_WRITE, OPT_PAYLOAD, OPT_RESPONSE_BYTES, OPT_FIRST_WRITE,
       OPT_SECOND_WRITE, OPT_READ_WHOLE,
       OPT_ITERATIONS, OPT_CONNECTIONS, OPT_TIMEOUT_MS, OPT_JSON };

static const struct args_option options[] = {
    {"--help", ARGS_FLAG, NULL, ARGS_HELP},
    {"-h", ARGS_FLAG, NULL, ARGS_HELP},
    {"--connect", ARGS_VALUE, "127.0.0.1:5000", OPT_CONNECT},
    {"--tfo", ARGS_FLAG, NULL, OPT_TFO},
    {"--tfo-connect", ARGS_FLAG, NULL, OPT_TFO_CONNECT},
    {"--pattern", ARGS_VALUE, "wwr", OPT_PATTERN},
    {"--nodelay", ARGS_FLAG, NULL, OPT_NODELAY},
    {"--congestion", ARGS_VALUE, "", OPT_CONGESTION},
    {"--cork", ARGS_FLAG, NULL, OPT_CORK},
    {"--msg-more", ARGS_FLAG, NULL, OPT_MSG_MORE},
    {"--single-write", ARGS_FLAG, NULL, OPT_SINGLE_WRITE},
    {"--payload", ARGS_VALUE, "100", OPT_PAYLOAD},
    {"--response-bytes", ARGS_VALUE, "100000", OPT_RESPONSE_BYTES},
    {"--read-whole", ARGS_FLAG, NULL, OPT_READ_WHOLE},
    {"--first-write", ARGS_VALUE, "10", OPT_FIRST_WRITE},
    {"--second-write", ARGS_VALUE, "6", OPT_SECOND_WRITE},
    {"--iterations", ARGS_VALUE, "5", OPT_ITERATIONS},
    {"--connections", ARGS_VALUE, "2", OPT_CONNECTIONS},
    {"--timeout-ms", ARGS_VALUE, "1000", OPT_TIMEOUT_MS},
    {"--json", ARGS_FLAG, NULL, OPT_JSON},
    {NULL, ARGS_FLAG, NULL, 0},
};

static void parse(int argc, char **argv, struct tfl_client_config *cfg, int *json)
{
    struct args a = {.prog = "tfo-echo-client", .usage = usage, .dialect = ARGS_DIALECT_ECHO,
                     .options = options, .argc = argc, .argv = argv};
    struct given g = {0};
    int have_connect = 0, tfo = 0, tfo_connect = 0;
    const char *v;
    int id;
    while ((id = args_next(&a, &v)) != ARGS_END) {
        switch (id) {
        case OPT_CONNECT:
            cfg->port = (int32_t)args_host_port(&a, v, cfg->host, sizeof cfg->host);
            have_connect = 1;
            break;
        case OPT_TFO:
            tfo = 1;
            break;
        case OPT_TFO_CONNECT:
            tfo_connect = 1;
            break;
        case OPT_PATTERN:
            if (strcmp(v, "rr") == 0)
                cfg->pattern = TFL_PATTERN_RR;
            else if (strcmp(v, "wwr") == 0)
                cfg->pattern = TFL_PATTERN_WWR;
            else
                args_fail(&a, "--pattern '%.40s' is not a pattern: use rr or wwr", v);
            break;
        case OPT_CONGESTION:
            if (strlen(v) >= sizeof cfg->congestion)
                args_fail(&a, "--congestion '%.40s' is too long: give a name such as cubic", v);
            strcpy(cfg->congestion, v); /* length checked above */
            break;
        case OPT_NODELAY:
            cfg->nodelay = 1;
            break;
        case OPT_CORK:
            cfg->cork = g.cork = 1;
            break;
        case OPT_MSG_MORE:
            cfg->msg_more = g.msg_more = 1;
            break;
        case OPT_SINGLE_WRITE:
            cfg->single_write = g.single_write = 1;
            break;
        case OPT_PAYLOAD:
            cfg->payload_bytes = (int32_t)args_long(&a, "--payload", v, 1, TFL_MAX_PAYLOAD);
            g.payload = 1;
            break;
        case OPT_RESPONSE_BYTES:
            cfg->response_bytes =
                (int32_t)args_long(&a, "--response-bytes", v, 1, TFL_MAX_PAYLOAD);
            break;
        case OPT_READ_WHOLE:
            cfg->read_whole = 1;
            break;
        case OPT_FIRST_WRITE:
            cfg->first_write_bytes =
                (int32_t)args_long(&a, "--first-write", v, 1, TFL_MAX_PAYLOAD - 1);
            g.first = 1;
            break;
        case OPT_SECOND_WRITE:
            cfg->second_write_bytes =
                (int32_t)args_long(&a, "--second-write", v, 1, TFL_MAX_PAYLOAD - 1);
            g.second = 1;
            break;
        case OPT_ITERATIONS:
            cfg->iterations = (int32_t)args_long(&a, "--iterations", v, 1, TFL_MAX_ITERATIONS);
            break;
        case OPT_CONNECTIONS:
            cfg->connections =
                (int32_t)args_long(&a, "--connections", v, 1, TFL_MAX_CONNECTIONS);
            break;
        case OPT_TIMEOUT_MS:
            cfg->timeout_ms = (int32_t)args_long(&a, "--timeout-ms", v, 1, TFL_MAX_TIMEOUT_MS);
            break;
        case OPT_JSON:
            *json = 1;
            break;
        }
    }
    if (!have_connect)
        args_fail(&a, "missing --connect HOST:PORT, e.g. --connect 127.0.0.1:5000");
    if (tfo && tfo_connect)
        args_fail(&a, "--tfo and --tfo-connect are two ways of doing the same: pick one");
    cfg->fastopen = tfo ? TFL_FASTOPEN_SENDTO : tfo_connect ? TFL_FASTOPEN_CONNECT
                                                            : TFL_FASTOPEN_OFF;
    if (cfg->pattern == TFL_PATTERN_RR) {
        const char *wwr_only = g.cork           ? "--cork"
                               : g.msg_more     ? "--msg-more"
                               : g.single_write ? "--single-write"
                               : g.first        ? "--first-write"
                               : g.second       ? "--second-write"
                                                : NULL;
        if (wwr_only != NULL)
            args_fail(&a, "%s applies to --pattern wwr only: add --pattern wwr", wwr_only);
    } else if (g.payload) {
        args_fail(&a, "--payload applies to --pattern rr; with wwr use --first-write and "
                      "--second-write");
    }
    char err[256];
    if (tfl_client_validate(cfg, err, sizeof err) != 0)
        args_fail(&a, "%s", err);
}

/* Milliseconds between two timestamps, or a negative value when one is missing. */
static double ms_between(int64_t from, int64_t to)
{
    return from == 0 || to == 0 ? -1.0 : (double)(to - from) / 1e6;
}

static double connect_ms(const struct tfl_sample *s)
{
    return ms_between(s->connect_start_ns, s->connect_return_ns);
}

static double first_byte_ms(const struct tfl_sample *s)
{
    int64_t from = s->connect_start_ns ? s->connect_start_ns : s->write_ns[0];
    return ms_between(from, s->first_byte_ns);
}

static double round_ms(const struct tfl_sample *s)
{
    return ms_between(s->write_ns[0], s->last_byte_ns);
}

static void json_ms(const char *key, double ms)
{
    if (ms < 0)
        printf("\"%s\":null", key);
    else
        printf("\"%s\":%.3f", key, ms);
}

static const char *fastopen_name(int32_t f)
{
    return f == TFL_FASTOPEN_SENDTO ? "sendto" : f == TFL_FASTOPEN_CONNECT ? "connect" : "off";
}

static const char *tf(int32_t v) { return v ? "true" : "false"; }

static void print_json(const struct tfl_client_config *cfg, const struct tfl_sample *samples,
                       size_t n)
{
    printf("{\"tool\":\"tfo-echo-client\",\"abi\":%d,\"host\":\"%s\",\"port\":%d,"
           "\"pattern\":\"%s\",\"fastopen\":\"%s\",\"nodelay\":%s,\"cork\":%s,"
           "\"msg_more\":%s,\"single_write\":%s,\"read_whole\":%s,\"payload_bytes\":%d,"
           "\"first_write_bytes\":%d,\"second_write_bytes\":%d,\"iterations\":%d,"
           "\"connections\":%d,\"timeout_ms\":%d,\"samples\":[",
           tfl_abi_version(), cfg->host, (int)cfg->port,
           cfg->pattern == TFL_PATTERN_WWR ? "wwr" : "rr", fastopen_name(cfg->fastopen),
           tf(cfg->nodelay), tf(cfg->cork), tf(cfg->msg_more), tf(cfg->single_write),
           tf(cfg->read_whole), (int)cfg->payload_bytes, (int)cfg->first_write_bytes, (int)cfg->second_write_bytes,
           (int)cfg->iterations, (int)cfg->connections, (int)cfg->timeout_ms);
    for (size_t i = 0; i < n; i++) {
        const struct tfl_sample *s = &samples[i];
        printf("%s{\"connection\":%d,\"iteration\":%d,\"connect_start_ns\":%lld,"
               "\"connect_return_ns\":%lld,\"write_ns\":[",
               i ? "," : "", (int)s->connection, (int)s->iteration,
               (long long)s->connect_start_ns, (long long)s->connect_return_ns);
        for (int w = 0; w < s->n_writes && w < TFL_MAX_WRITES; w++)
            printf("%s%lld", w ? "," : "", (long long)s->write_ns[w]);
        printf("],\"first_byte_ns\":%lld,\"last_byte_ns\":%lld,\"close_ns\":%lld,",
               (long long)s->first_byte_ns, (long long)s->last_byte_ns, (long long)s->close_ns);
        json_ms("connect_ms", connect_ms(s));
        putchar(',');
        json_ms("first_byte_ms", first_byte_ms(s));
        putchar(',');
        json_ms("round_ms", round_ms(s));
        printf(",\"syn_data_acked\":%s,\"error\":", tf(s->syn_data_acked));
        if (s->failed_call[0])
            printf("{\"call\":\"%s\",\"errno\":\"%s\"}}", s->failed_call, s->errno_name);
        else
            printf("null}");
    }
    printf("]}\n");
}

static void print_cell(double ms)
{
    if (ms < 0)
        printf(" %13s", "-");
    else
        printf(" %13.3f", ms);
}

static void print_table(const struct tfl_client_config *cfg, const struct tfl_sample *samples,
                        size_t n)
{
    int v6 = strchr(cfg->host, ':') != NULL;
    printf("%s%s%s:%d  ", v6 ? "[" : "", cfg->host, v6 ? "]" : "", (int)cfg->port);
    if (cfg->pattern == TFL_PATTERN_WWR)
        printf("pattern wwr: write %d B, write %d B, read the echo%s\n",
               (int)cfg->first_write_bytes, (int)cfg->second_write_bytes,
               cfg->single_write ? " (as one write)" : "");
    else
        printf("pattern rr: write %d B, read the echo\n", (int)cfg->payload_bytes);
    printf("fastopen %s, nodelay %s%s%s\n\n", fastopen_name(cfg->fastopen),
           cfg->nodelay ? "on" : "off", cfg->cork ? ", cork" : "",
           cfg->msg_more ? ", MSG_MORE" : "");
    printf("%4s %5s %13s %13s %13s  %-9s %s\n", "conn", "iter", "connect_ms", "first_byte_ms",
           "round_ms", "syn_data", "error");
    for (size_t i = 0; i < n; i++) {
        const struct tfl_sample *s = &samples[i];
        printf("%4d %5d", (int)s->connection, (int)s->iteration);
        print_cell(connect_ms(s));
        print_cell(first_byte_ms(s));
        print_cell(round_ms(s));
        printf("  %-9s ", s->syn_data_acked ? "acked" : "-");
        if (s->failed_call[0])
            printf("%s: %s\n", s->failed_call, s->errno_name);
        else
            printf("-\n");
    }
    printf("\nconnect_ms: connect()/sendto() until it returned. first_byte_ms: from connect\n"
           "start (later iterations: from their first write) to the first response byte.\n"
           "round_ms: first write to last response byte. syn_data: the server acknowledged\n"
           "data sent in the SYN (TCP Fast Open with a cookie).\n");
}

static const char *hint(const struct tfl_sample *s, const struct tfl_client_config *cfg,
                        char *buf, size_t len)
{
    if (strcmp(s->errno_name, "ECONNREFUSED") == 0)
        snprintf(buf, len, "nothing listens there; start a server: tfo-echo-server --port %d",
                 (int)cfg->port);
    else if (strcmp(s->errno_name, "ETIMEDOUT") == 0)
        snprintf(buf, len, "no answer within %d ms; raise --timeout-ms or check the server",
                 (int)cfg->timeout_ms);
    else if (strcmp(s->errno_name, "EOF") == 0)
        snprintf(buf, len, "the server closed before echoing everything; is it in --mode line?");
    else if (strcmp(s->failed_call, "verify") == 0)
        snprintf(buf, len, "the reply is not the echo of the request; is the server in "
                           "--mode line or echo?");
    else
        snprintf(buf, len, "see the table above");
    return buf;
}

int main(int argc, char **argv)
{
    struct tfl_client_config cfg;
    int json = 0;
    char err[256] = "";

    tfl_client_config_init(&cfg);
    parse(argc, argv, &cfg, &json);

    size_t capacity = (size_t)cfg.connections * (size_t)cfg.iterations;
    struct tfl_sample *samples = calloc(capacity, sizeof *samples);
    if (samples == NULL) {
        fprintf(stderr, "tfo-echo-client: out of memory for %zu samples\n", capacity);
        return 1;
    }
    size_t n = 0;
    if (tfl_run_client(&cfg, samples, capacity, &n, err, sizeof err) != 0) {
        fprintf(stderr, "tfo-echo-client: %s\n", err);
        free(samples);
        return EXIT_BAD_INPUT;
    }
    if (json)
        print_json(&cfg, samples, n);
    else
        print_table(&cfg, samples, n);
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        const struct tfl_sample *s = &samples[i];
        char why[160];
        if (s->failed_call[0] == '\0')
            continue;
        if (failures++ == 0)
            fprintf(stderr, "tfo-echo-client: connection %d, iteration %d: %s failed: %s (%s)\n",
                    (int)s->connection, (int)s->iteration, s->failed_call, s->errno_name,
                    hint(s, &cfg, why, sizeof why));
    }
    if (failures > 1)
        fprintf(stderr, "tfo-echo-client: %d of %d connections failed\n", failures,
                (int)cfg.connections);
    free(samples);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "tfo-echo-client: writing the results: %s\n", strerror(errno));
        return 1;
    }
    return failures ? 1 : 0;
}
