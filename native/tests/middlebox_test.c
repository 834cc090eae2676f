/*
 * middlebox_test.c - tfo-delay's middlebox (native/delay/middlebox.c) on
 * crafted packets, without a queue or a namespace.  Compiled with the
 * sanitizers and run by tests/delay/test_middlebox_buffer.py, beside
 * middlebox.c alone; never installed.
 *
 *   middlebox_test            every case below; one line each, then
 *                             "middlebox: N passed, M failed"; exit 1 on a failure
 *   middlebox_test --filter   lines "PORT MODE HEX" on stdin, each answered on
 *                             stdout with "ACTION HEX" (ACTION pass, unparsed,
 *                             drop or mangled; HEX the packet after): the Python
 *                             test's own packets, checked by its own code
 *
 * The checksums are checked here by a route of their own: the one's-complement
 * sum over the pseudo-header and the whole segment, checksum included, must be
 * 0xffff (RFC 1071), and the IPv4 header's likewise; the rest of each rewritten
 * packet byte for byte.  One case is compared whole with bytes computed by
 * another program (GOLDEN).
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

#include "tfo_delay.h"

#define PORT 8080
#define MAX_PACKET 65535u

static int passed, failed;

/* ------------------------------------------------------------------------ */
/* Building packets                                                         */

static const uint8_t LOCAL4[4] = { 127, 0, 0, 1 };
static const uint8_t LOCAL6[16] = { [15] = 1 };

/* The one's-complement sum of 16-bit words, not folded (the verifier's own). */
static uint32_t add_words(const uint8_t *p, size_t len, uint32_t sum)
{
    for (size_t i = 0; i < len; i++)
        sum += i % 2 == 0 ? (uint32_t)p[i] << 8 : p[i];
    return sum;
}

static uint16_t folded(uint32_t sum)
{
    while (sum > 0xffffu)
        sum = (sum & 0xffffu) + (sum >> 16);
    return (uint16_t)sum;
}

struct spec {
    bool v6;
    uint16_t sport, dport;
    uint8_t flags;
    const uint8_t *opts;
    size_t optlen; /* a multiple of 4, or not (a malformed header's case) */
    const uint8_t *payload;
    size_t paylen;
    uint8_t doff_words; /* 0: from optlen */
    uint16_t frag;      /* IPv4's flags and fragment offset (0x4000: DF) */
};

/* The packet as lo hands it to the queue: the IPv4 header checksum right, the
 * TCP checksum field holding only the pseudo-header sum (CHECKSUM_PARTIAL). */
static size_t build(const struct spec *s, uint8_t *out)
{
    size_t ip = s->v6 ? 40u : 20u;
    size_t tcp_len = 20u + s->optlen + s->paylen;
    size_t len = ip + tcp_len;
    memset(out, 0, len);
    if (s->v6) {
        out[0] = 0x60;
        out[4] = (uint8_t)(tcp_len >> 8);
        out[5] = (uint8_t)tcp_len;
        out[6] = 6;
        out[7] = 64;
        memcpy(out + 8, LOCAL6, 16);
        memcpy(out + 24, LOCAL6, 16);
    } else {
        out[0] = 0x45;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        out[4] = 0x12;
        out[5] = 0x34;
        out[6] = (uint8_t)(s->frag >> 8);
        out[7] = (uint8_t)s->frag;
        out[8] = 64;
        out[9] = 6;
        memcpy(out + 12, LOCAL4, 4);
        memcpy(out + 16, LOCAL4, 4);
        uint16_t c = (uint16_t)~folded(add_words(out, 20, 0));
        out[10] = (uint8_t)(c >> 8);
        out[11] = (uint8_t)c;
    }
    uint8_t *t = out + ip;
    t[0] = (uint8_t)(s->sport >> 8);
    t[1] = (uint8_t)s->sport;
    t[2] = (uint8_t)(s->dport >> 8);
    t[3] = (uint8_t)s->dport;
    t[4] = 1, t[5] = 2, t[6] = 3, t[7] = 4; /* seq */
    if (s->flags & 0x10u)
        t[8] = 9, t[9] = 8, t[10] = 7, t[11] = 6; /* ack */
    uint8_t words = s->doff_words ? s->doff_words : (uint8_t)((20u + s->optlen) / 4u);
    t[12] = (uint8_t)(words << 4);
    t[13] = s->flags;
    t[14] = 0xff, t[15] = 0xd7;
    if (s->optlen > 0)
        memcpy(t + 20, s->opts, s->optlen);
    if (s->paylen > 0)
        memcpy(t + 20 + s->optlen, s->payload, s->paylen);
    uint32_t pseudo = s->v6 ? add_words(out + 8, 32, 0) : add_words(out + 12, 8, 0);
    pseudo += 6 + (uint32_t)tcp_len;
    uint16_t partial = folded(pseudo);
    t[16] = (uint8_t)(partial >> 8);
    t[17] = (uint8_t)partial;
    return len;
}

/* Both checksums verify: the IPv4 header's, and the TCP segment's with its pseudo-header. */
static bool checksums_verify(const uint8_t *p, size_t len)
{
    bool v6 = p[0] >> 4 == 6;
    size_t ip = v6 ? 40u : (size_t)(p[0] & 0x0f) * 4u;
    if (!v6 && folded(add_words(p, ip, 0)) != 0xffffu)
        return false;
    uint32_t sum = v6 ? add_words(p + 8, 32, 0) : add_words(p + 12, 8, 0);
    sum += 6 + (uint32_t)(len - ip);
    return folded(add_words(p + ip, len - ip, sum)) == 0xffffu;
}

/* Equal, but for the two checksum fields (checked by checksums_verify). */
static bool same_but_checksums(const uint8_t *a, const uint8_t *b, size_t len)
{
    bool v6 = a[0] >> 4 == 6;
    size_t tcp_check = (v6 ? 40u : (size_t)(a[0] & 0x0f) * 4u) + 16u;
    for (size_t i = 0; i < len; i++) {
        bool skip = i == tcp_check || i == tcp_check + 1 || (!v6 && (i == 10 || i == 11));
        if (!skip && a[i] != b[i])
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* Checking                                                                 */

static void dump(const char *what, const uint8_t *p, size_t len)
{
    fprintf(stderr, "    %s:", what);
    for (size_t i = 0; i < len; i++)
        fprintf(stderr, "%02x", p[i]);
    fprintf(stderr, "\n");
}

static void verdict(const char *name, bool ok, const char *why)
{
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name, ok ? "" : ": ", ok ? "" : why);
    if (ok)
        passed++;
    else
        failed++;
}

static struct middlebox box(const char *mode)
{
    struct middlebox mb = { .mode = MB_NONE };
    char line[64];
    snprintf(line, sizeof line, "MIDDLEBOX %d %s", PORT, mode);
    if (middlebox_parse(&mb, line) != NULL) {
        fprintf(stderr, "the test's own line was refused: %s\n", line);
        exit(EXIT_FAILURE);
    }
    return mb;
}

/* `in` through the middlebox in `mode`: the action and counters it should give, and
 * for MB_MANGLED the packet `want` (checksums aside, those verified). */
static void expect(const char *name, const char *mode, const struct spec *in, enum mb_action act,
                   const struct spec *want, uint64_t unparsed)
{
    static uint8_t pkt[MAX_PACKET], before[MAX_PACKET], wanted[MAX_PACKET];
    struct middlebox mb = box(mode);
    size_t n = build(in, pkt);
    memcpy(before, pkt, n);
    uint32_t len = (uint32_t)n;
    enum mb_action got = middlebox_decide(&mb, pkt, &len);
    const char *why = NULL;
    if (got != act)
        why = "the action differs";
    else if (mb.unparsed != unparsed)
        why = "the unparsed count differs";
    else if (mb.mangled != (act == MB_MANGLED ? 1u : 0u))
        why = "the mangled count differs";
    else if (act != MB_MANGLED && (len != n || memcmp(pkt, before, n) != 0))
        why = "a packet not rewritten was changed";
    else if (act == MB_MANGLED) {
        size_t wn = build(want, wanted);
        if (len != wn)
            why = "the rewritten packet's length differs";
        else if (!same_but_checksums(pkt, wanted, wn))
            why = "the rewritten packet's bytes differ";
        else if (!checksums_verify(pkt, len))
            why = "a checksum does not verify";
    }
    verdict(name, why == NULL, why ? why : "");
    if (why != NULL) {
        dump("in  ", before, n);
        dump("out ", pkt, len);
        if (act == MB_MANGLED)
            dump("want", wanted, build(want, wanted));
    }
}

/* ------------------------------------------------------------------------ */
/* The cases                                                                */

#define OPTS(...) \
    .opts = (const uint8_t[]){ __VA_ARGS__ }, .optlen = sizeof((const uint8_t[]){ __VA_ARGS__ })

static const uint8_t PING[] = { 'p', 'i', 'n', 'g' };
#define DATA .payload = PING, .paylen = sizeof PING
/* Linux's SYN options: MSS, SACK permitted with timestamps, NOP and window scale. */
#define LINUX_SYN 2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7
#define COOKIE 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8

/* A Linux SYN-data with its cookie, rewritten: computed by another program (the
 * test's Python twin), checksums included. */
static const char GOLDEN[] =
    "450000401234400040062a827f0000017f000001a2c41f900102030400000000a002ffd7a4f50000"
    "020405b40402080a00000001000000000103030770696e67";

static void golden_case(void)
{
    static uint8_t pkt[MAX_PACKET];
    struct spec in = { .sport = 0xa2c4, .dport = PORT, .flags = 0x02, .frag = 0x4000,
                       OPTS(LINUX_SYN, 34, 10, COOKIE, 1, 1), DATA };
    struct middlebox mb = box("strip-tfo-option");
    uint32_t len = (uint32_t)build(&in, pkt);
    bool ok = middlebox_decide(&mb, pkt, &len) == MB_MANGLED && len * 2 == sizeof GOLDEN - 1;
    for (uint32_t i = 0; ok && i < len; i++) {
        unsigned byte;
        ok = sscanf(GOLDEN + 2 * i, "%2x", &byte) == 1 && byte == pkt[i];
    }
    verdict("golden: a Linux SYN-data with its cookie, rewritten, every byte", ok,
            "the bytes differ from the golden ones");
    if (!ok)
        dump("out", pkt, len);
}

static void strip_cases(void)
{
    const char *strip = "strip-tfo-option";
    /* Linux pads a cookie with NOPs after it: they go with it, and the SYN is the
     * plain one (data offset 10), its data moved up. */
    struct spec syn_data = { .sport = 40000, .dport = PORT, .flags = 0x02, .frag = 0x4000,
                             OPTS(LINUX_SYN, 34, 10, COOKIE, 1, 1), DATA };
    struct spec plain_data = { .sport = 40000, .dport = PORT, .flags = 0x02, .frag = 0x4000,
                               OPTS(LINUX_SYN), DATA };
    expect("strip: SYN with MSS, SACK, TS, WS and a cookie, with data", strip, &syn_data,
           MB_MANGLED, &plain_data, 0);

    struct spec request = { .sport = 40000, .dport = PORT, .flags = 0x02,
                            OPTS(LINUX_SYN, 34, 2, 1, 1) };
    struct spec plain = { .sport = 40000, .dport = PORT, .flags = 0x02, OPTS(LINUX_SYN) };
    expect("strip: SYN with a cookie request", strip, &request, MB_MANGLED, &plain, 0);

    struct spec synack = { .sport = PORT, .dport = 40000, .flags = 0x12,
                           OPTS(LINUX_SYN, 34, 10, COOKIE, 1, 1) };
    struct spec synack_plain = { .sport = PORT, .dport = 40000, .flags = 0x12,
                                 OPTS(LINUX_SYN) };
    expect("strip: SYN-ACK with a cookie (from the port)", strip, &synack, MB_MANGLED,
           &synack_plain, 0);

    struct spec exp = { .sport = 40000, .dport = PORT, .flags = 0x02, .frag = 0x4000,
                        OPTS(LINUX_SYN, 254, 12, 0xf9, 0x89, COOKIE), DATA };
    expect("strip: the experimental option (254, magic 0xF989) with a cookie", strip, &exp,
           MB_MANGLED, &plain_data, 0);

    struct spec exp_request = { .sport = 40000, .dport = PORT, .flags = 0x02,
                                OPTS(2, 4, 0x05, 0xb4, 254, 4, 0xf9, 0x89) };
    struct spec mss_only = { .sport = 40000, .dport = PORT, .flags = 0x02,
                             OPTS(2, 4, 0x05, 0xb4) };
    expect("strip: an experimental cookie request", strip, &exp_request, MB_MANGLED, &mss_only, 0);

    /* Options at odd offsets: WS (3 bytes), a cookie (10), SACK permitted (2), a 254
     * of another magic (4, no Fast Open: kept), an MSS (4) and a NOP: 13 bytes kept,
     * padded with three EOLs to 16. */
    struct spec odd = { .sport = 40000, .dport = PORT, .flags = 0x02,
                        OPTS(3, 3, 7, 34, 10, COOKIE, 4, 2, 254, 4, 0x12, 0x34, 2, 4, 0x05, 0xb4,
                             1),
                        DATA };
    struct spec odd_out = { .sport = 40000, .dport = PORT, .flags = 0x02,
                            OPTS(3, 3, 7, 4, 2, 254, 4, 0x12, 0x34, 2, 4, 0x05, 0xb4, 0, 0, 0),
                            DATA };
    expect("strip: options at odd offsets, padded with EOL", strip, &odd, MB_MANGLED, &odd_out, 0);

    /* NOPs before a kept option stay (they align it); the list after an EOL is padding. */
    struct spec nops = { .sport = 40000, .dport = PORT, .flags = 0x02,
                         OPTS(34, 2, 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 34, 2, 0, 0, 0) };
    struct spec nops_out = { .sport = 40000, .dport = PORT, .flags = 0x02,
                             OPTS(1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0) };
    expect("strip: NOPs before a kept option stay; nothing is read after EOL", strip, &nops,
           MB_MANGLED, &nops_out, 0);

    /* Nothing but the option: the header shrinks to 20 bytes. */
    struct spec only = { .sport = 40000, .dport = PORT, .flags = 0x02,
                         OPTS(34, 10, COOKIE, 1, 1), DATA };
    struct spec bare = { .sport = 40000, .dport = PORT, .flags = 0x02, DATA };
    expect("strip: only the option: a 20-byte header", strip, &only, MB_MANGLED, &bare, 0);

    struct spec v6 = { .v6 = true, .sport = 40000, .dport = PORT, .flags = 0x02,
                       OPTS(LINUX_SYN, 34, 10, COOKIE, 1, 1), DATA };
    struct spec v6_out = { .v6 = true, .sport = 40000, .dport = PORT, .flags = 0x02,
                           OPTS(LINUX_SYN), DATA };
    expect("strip: IPv6 SYN-data with a cookie (payload length, checksum)", strip, &v6,
           MB_MANGLED, &v6_out, 0);
}

static void pass_cases(void)
{
    const char *strip = "strip-tfo-option";
    struct spec plain = { .sport = 40000, .dport = PORT, .flags = 0x02, OPTS(LINUX_SYN) };
    expect("strip: a SYN without the option passes as it is", strip, &plain, MB_PASS, NULL, 0);
    struct spec no_opts = { .sport = 40000, .dport = PORT, .flags = 0x02 };
    expect("strip: a SYN without options passes", strip, &no_opts, MB_PASS, NULL, 0);
    struct spec other_magic = { .sport = 40000, .dport = PORT, .flags = 0x02,
                                OPTS(LINUX_SYN, 254, 4, 0x12, 0x34) };
    expect("strip: 254 with another magic is no Fast Open", strip, &other_magic, MB_PASS, NULL,
           0);
    struct spec other_port = { .sport = 40000, .dport = PORT + 1, .flags = 0x02,
                               OPTS(LINUX_SYN, 34, 2, 1, 1) };
    expect("strip: another port passes", strip, &other_port, MB_PASS, NULL, 0);
    struct spec ack = { .sport = 40000, .dport = PORT, .flags = 0x10,
                        OPTS(34, 2, 1, 1), DATA };
    expect("strip: not a SYN: passes", strip, &ack, MB_PASS, NULL, 0);
    struct spec fragment = { .sport = 40000, .dport = PORT, .flags = 0x02, .frag = 0x2000,
                             OPTS(LINUX_SYN, 34, 2, 1, 1) };
    expect("strip: an IPv4 fragment passes untouched", strip, &fragment, MB_PASS, NULL, 0);
    struct spec request = { .sport = 40000, .dport = PORT, .flags = 0x02,
                            OPTS(LINUX_SYN, 34, 2, 1, 1), DATA };
    expect("none: nothing is judged", "none", &request, MB_PASS, NULL, 0);
}

static void malformed_cases(void)
{
    const char *modes[] = { "strip-tfo-option", "drop-tfo-syn" };
    for (size_t m = 0; m < 2; m++) {
        char name[128];
        struct spec past = { .sport = 40000, .dport = PORT, .flags = 0x02,
                             OPTS(34, 2, 1, 1, 2, 4, 0x05, 0xb4, 8, 10, 0, 0, 0, 1) };
        past.optlen = 12; /* the header ends inside the timestamps */
        snprintf(name, sizeof name, "%s: an option running past the header: left alone, counted",
                 modes[m]);
        expect(name, modes[m], &past, MB_PASS, NULL, 1);
        struct spec short_len = { .sport = 40000, .dport = PORT, .flags = 0x02,
                                  OPTS(34, 2, 8, 1, 1, 1, 1, 1) };
        snprintf(name, sizeof name, "%s: an option length below 2: left alone, counted",
                 modes[m]);
        expect(name, modes[m], &short_len, MB_PASS, NULL, 1);
        struct spec no_len = { .sport = 40000, .dport = PORT, .flags = 0x02,
                               OPTS(34, 2, 1, 2) };
        snprintf(name, sizeof name, "%s: a kind without its length byte: left alone, counted",
                 modes[m]);
        expect(name, modes[m], &no_len, MB_PASS, NULL, 1);
        struct spec big_doff = { .sport = 40000, .dport = PORT, .flags = 0x02,
                                 OPTS(34, 2, 1, 1), .doff_words = 15 };
        snprintf(name, sizeof name, "%s: a data offset past the packet: left alone, counted",
                 modes[m]);
        expect(name, modes[m], &big_doff, MB_PASS, NULL, 1);
        struct spec small_doff = { .sport = 40000, .dport = PORT, .flags = 0x02, DATA, .doff_words = 4 };
        snprintf(name, sizeof name, "%s: a data offset below 5: left alone, counted", modes[m]);
        expect(name, modes[m], &small_doff, MB_PASS, NULL, 1);
    }
}

static void drop_cases(void)
{
    struct spec syn_data = { .sport = 40000, .dport = PORT, .flags = 0x02,
                             OPTS(LINUX_SYN, 34, 10, COOKIE, 1, 1), DATA };
    struct spec request = { .sport = 40000, .dport = PORT, .flags = 0x02,
                            OPTS(LINUX_SYN, 34, 2, 1, 1) };
    struct spec exp_request = { .sport = 40000, .dport = PORT, .flags = 0x02,
                                OPTS(LINUX_SYN, 254, 4, 0xf9, 0x89) };
    struct spec plain_data = { .sport = 40000, .dport = PORT, .flags = 0x02, OPTS(LINUX_SYN), DATA };
    struct spec plain = { .sport = 40000, .dport = PORT, .flags = 0x02, OPTS(LINUX_SYN) };
    struct spec synack_cookie = { .sport = PORT, .dport = 40000, .flags = 0x12,
                                  OPTS(LINUX_SYN, 34, 10, COOKIE, 1, 1) };
    struct spec synack_data = { .sport = PORT, .dport = 40000, .flags = 0x12, OPTS(LINUX_SYN), DATA };
    struct spec ack_data = { .sport = 40000, .dport = PORT, .flags = 0x18, DATA };

    expect("drop-syn-data: a SYN-data with a cookie is dropped", "drop-syn-data", &syn_data,
           MB_DROP, NULL, 0);
    expect("drop-syn-data: a SYN-data without a cookie is dropped", "drop-syn-data", &plain_data,
           MB_DROP, NULL, 0);
    expect("drop-syn-data: a cookie request (no data) passes", "drop-syn-data", &request, MB_PASS,
           NULL, 0);
    expect("drop-syn-data: a SYN-ACK with data passes", "drop-syn-data", &synack_data, MB_PASS,
           NULL, 0);
    expect("drop-syn-data: data after the handshake passes", "drop-syn-data", &ack_data, MB_PASS,
           NULL, 0);

    expect("drop-tfo-syn: a cookie request is dropped", "drop-tfo-syn", &request, MB_DROP, NULL, 0);
    expect("drop-tfo-syn: an experimental cookie request is dropped", "drop-tfo-syn", &exp_request,
           MB_DROP, NULL, 0);
    expect("drop-tfo-syn: a SYN-data with a cookie is dropped", "drop-tfo-syn", &syn_data, MB_DROP,
           NULL, 0);
    expect("drop-tfo-syn: a plain SYN passes", "drop-tfo-syn", &plain, MB_PASS, NULL, 0);
    expect("drop-tfo-syn: a plain SYN-data passes", "drop-tfo-syn", &plain_data, MB_PASS, NULL, 0);
    expect("drop-tfo-syn: a SYN-ACK with a cookie passes", "drop-tfo-syn", &synack_cookie, MB_PASS,
           NULL, 0);
}

static void parse_cases(void)
{
    static const struct {
        const char *line, *refused; /* refused NULL: taken */
        enum mb_mode mode;
    } lines[] = {
        { "MIDDLEBOX 8080 none", NULL, MB_NONE },
        { "MIDDLEBOX 1 drop-syn-data", NULL, MB_DROP_SYN_DATA },
        { "MIDDLEBOX 65535 strip-tfo-option", NULL, MB_STRIP_TFO_OPTION },
        { "MIDDLEBOX 8080 drop-tfo-syn", NULL, MB_DROP_TFO_SYN },
        { "MIDDLEBOX 0 none", "the port is not 1..65535", MB_NONE },
        { "MIDDLEBOX 65536 none", "the port is not 1..65535", MB_NONE },
        { "MIDDLEBOX 123456 none", "the port is not 1..65535", MB_NONE },
        { "MIDDLEBOX -1 none", "the port is not 1..65535", MB_NONE },
        { "MIDDLEBOX 8080", "the port is not 1..65535", MB_NONE },
        { "MIDDLEBOX  none", "the port is not 1..65535", MB_NONE },
        { "MIDDLEBOX 8080 drop-everything", "the mode is not none, drop-syn-data, "
          "strip-tfo-option or drop-tfo-syn", MB_NONE },
        { "MIDDLEBOX 8080 none ", "the mode is not none, drop-syn-data, "
          "strip-tfo-option or drop-tfo-syn", MB_NONE },
        { "MIDDLEBOX 8080 NONE", "the mode is not none, drop-syn-data, "
          "strip-tfo-option or drop-tfo-syn", MB_NONE },
        { "MIDDLEBOX", "not a MIDDLEBOX line: use MIDDLEBOX PORT MODE", MB_NONE },
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        /* a refused line leaves the mode before in force */
        struct middlebox mb = { .port = 9, .mode = MB_DROP_TFO_SYN };
        const char *why = middlebox_parse(&mb, lines[i].line);
        bool ok;
        if (lines[i].refused == NULL)
            ok = why == NULL && mb.mode == lines[i].mode;
        else
            ok = why != NULL && strcmp(why, lines[i].refused) == 0 && mb.port == 9 &&
                 mb.mode == MB_DROP_TFO_SYN;
        char name[160];
        snprintf(name, sizeof name, "parse: '%s'", lines[i].line);
        verdict(name, ok, why ? why : "taken");
    }
}

/* ------------------------------------------------------------------------ */
/* --filter                                                                 */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static int filter(void)
{
    static uint8_t pkt[MAX_PACKET];
    struct middlebox mb = { .mode = MB_NONE };
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int status = 0;
    while ((got = getline(&line, &cap, stdin)) > 0) {
        if (line[got - 1] == '\n')
            line[--got] = '\0';
        char *hex = strrchr(line, ' ');
        if (hex == NULL) {
            fprintf(stderr, "middlebox_test: a line is not MODE PORT HEX\n");
            status = 2;
            break;
        }
        *hex++ = '\0';
        char setting[96];
        snprintf(setting, sizeof setting, "MIDDLEBOX %s", line);
        size_t n = strlen(hex) / 2;
        const char *why = middlebox_parse(&mb, setting);
        if (why != NULL || strlen(hex) % 2 != 0 || n > MAX_PACKET) {
            fprintf(stderr, "middlebox_test: bad line: %s\n", why ? why : "the hex");
            status = 2;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
            if (hi < 0 || lo < 0) {
                fprintf(stderr, "middlebox_test: the hex is not lower-case hex\n");
                free(line);
                return 2;
            }
            pkt[i] = (uint8_t)(hi << 4 | lo);
        }
        uint64_t unparsed = mb.unparsed;
        uint32_t len = (uint32_t)n;
        enum mb_action act = middlebox_decide(&mb, pkt, &len);
        const char *name = act == MB_DROP ? "drop" : act == MB_MANGLED ? "mangled"
                           : mb.unparsed != unparsed ? "unparsed" : "pass";
        printf("%s ", name);
        for (uint32_t i = 0; i < len; i++)
            printf("%02x", pkt[i]);
        printf("\n");
    }
    if (ferror(stdin)) {
        fprintf(stderr, "middlebox_test: reading stdin: %s\n", strerror(errno));
        status = 1;
    }
    free(line);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "middlebox_test: writing stdout: %s\n", strerror(errno));
        status = 1;
    }
    return status;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--filter") == 0)
        return filter();
    if (argc != 1) {
        fprintf(stderr, "usage: middlebox_test [--filter]\n");
        return 2;
    }
    golden_case();
    strip_cases();
    pass_cases();
    malformed_cases();
    drop_cases();
    parse_cases();
    printf("middlebox: %d passed, %d failed\n", passed, failed);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "middlebox_test: writing stdout: %s\n", strerror(errno));
        return 1;
    }
    return failed == 0 ? 0 : 1;
}
