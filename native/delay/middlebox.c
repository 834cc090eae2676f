/*
 * middlebox.c - a middlebox on the lab's path (--control): what it does to a
 * packet by what the packet carries, for every connection to or from one port.
 *
 * Rules:
 * - A mode is one control line, "MIDDLEBOX PORT MODE": PORT the lab server's
 *   TCP port, MODE one of none, drop-syn-data, strip-tfo-option, drop-tfo-syn.
 *   It holds for every packet to or from PORT from then on, until the next such
 *   line; a bad line changes nothing and is answered with the reason.
 * - drop-syn-data drops a SYN without ACK that carries payload; drop-tfo-syn a
 *   SYN without ACK that carries a Fast Open option: kind 34 (RFC 7413) or
 *   kind 254 with the magic 0xF989 (the experimental option Linux also sends).
 * - strip-tfo-option takes those options out of SYNs and SYN-ACKs: the other
 *   options keep their order, NOPs left at the end of the list go (they padded
 *   the option taken out: Linux pads its Fast Open option with NOPs after it,
 *   so a stripped Linux SYN is byte for byte the plain SYN it would send
 *   without Fast Open), the list is padded to a multiple of 4 with EOL (zero)
 *   bytes, the data offset shrinks, the payload moves up, and the IP length,
 *   the IPv4 header checksum and the TCP checksum are computed again.
 * - Why EOL and not NOP for the padding: RFC 9293 (3.1) defines the padding
 *   after the option list as zeros, and a zero is EOL, so the bytes say where
 *   the list ends; a receiver stops reading there (Linux's tcp_parse_options
 *   returns at TCPOPT_EOL), while NOPs would be read as more options.  NOPs
 *   between the options that stay are kept: they align the option after them.
 * - The TCP checksum is computed in full, never updated from the old one: the
 *   queue has NFQA_CFG_F_GSO set, so the kernel copies a packet as it is
 *   (nfqnl_build_packet_message calls skb_checksum_help only without that
 *   flag), and on lo a packet is CHECKSUM_PARTIAL, its checksum field holding
 *   only the pseudo-header sum; a packet returned with its verdict is marked
 *   CHECKSUM_NONE (nfnetlink_queue.c, nfqnl_mangle), so the receiver checks
 *   every byte (tcp_v4_rcv, tcp_checksum_complete) and drops a bad one
 *   (TcpInCsumErrors).
 * - An option list that does not parse (a length running past the header, a
 *   length below 2, a kind without its length byte at the end) is left alone
 *   and counted (unparsed): a real middlebox passes what it does not
 *   understand.  So is a SYN whose data offset is below 5 or past the packet.
 * - Only whole, unfragmented TCP is judged: IPv4 with the whole packet in the
 *   buffer (its total length), no fragment offset and no more-fragments flag;
 *   IPv6 with TCP as the first next header (lo's packets carry no extension
 *   headers).  Anything else passes, uncounted.
 * - middlebox_decide is a pure function of the packet's bytes and the mode
 *   (and the counters it adds to): no system call, no clock, so it is tested
 *   on crafted packets (native/tests/middlebox_test.c, tests/delay).
 * - The counting of drop plans (drop.c) sees every packet first, so a packet
 *   this middlebox drops still takes its place in the order.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tfo_delay.h"

#define TCP_PROTO 6
#define FLAG_SYN 0x02u
#define FLAG_ACK 0x10u
#define OPT_EOL 0
#define OPT_NOP 1
#define OPT_FASTOPEN 34
#define OPT_EXP 254
#define TFO_MAGIC 0xF989u

static const char *const MODE_NAMES[] = {
    [MB_NONE] = "none",
    [MB_DROP_SYN_DATA] = "drop-syn-data",
    [MB_STRIP_TFO_OPTION] = "strip-tfo-option",
    [MB_DROP_TFO_SYN] = "drop-tfo-syn",
};

const char *middlebox_mode_name(enum mb_mode mode)
{
    return MODE_NAMES[mode];
}

const char *middlebox_parse(struct middlebox *mb, const char *line)
{
    if (strncmp(line, "MIDDLEBOX ", 10) != 0)
        return "not a MIDDLEBOX line: use MIDDLEBOX PORT MODE";
    const char *p = line + 10;
    const char *space = strchr(p, ' ');
    if (space == NULL || space == p || space - p > 5)
        return "the port is not 1..65535";
    uint32_t port = 0;
    for (const char *c = p; c < space; c++) {
        if (*c < '0' || *c > '9')
            return "the port is not 1..65535";
        port = port * 10u + (uint32_t)(*c - '0');
    }
    if (port == 0 || port > 65535)
        return "the port is not 1..65535";
    for (size_t m = 0; m < sizeof MODE_NAMES / sizeof MODE_NAMES[0]; m++) {
        if (strcmp(space + 1, MODE_NAMES[m]) == 0) {
            mb->port = (uint16_t)port;
            mb->mode = (enum mb_mode)m;
            return NULL;
        }
    }
    return "the mode is not none, drop-syn-data, strip-tfo-option or drop-tfo-syn";
}

/* Where the TCP header starts, or 0 when the packet is not whole TCP we can read. */
static uint32_t tcp_offset(const unsigned char *pkt, uint32_t len, bool *v6)
{
    if (len < 1)
        return 0;
    if (pkt[0] >> 4 == 4) {
        uint32_t ihl = (uint32_t)(pkt[0] & 0x0f) * 4u;
        if (len < 20 || ihl < 20 || pkt[9] != TCP_PROTO || len < ihl + 20)
            return 0;
        if ((uint32_t)(pkt[2] << 8 | pkt[3]) != len)
            return 0; /* cut or padded: not the whole packet */
        if ((pkt[6] & 0x3fu) != 0 || pkt[7] != 0)
            return 0; /* a fragment (more fragments, or an offset): not whole TCP */
        *v6 = false;
        return ihl;
    }
    if (pkt[0] >> 4 == 6) {
        if (len < 60 || pkt[6] != TCP_PROTO || (uint32_t)(pkt[4] << 8 | pkt[5]) + 40u != len)
            return 0; /* lo's IPv6 packets carry no extension headers */
        *v6 = true;
        return 40;
    }
    return 0;
}

/* Is this option a Fast Open one (34, or 254 with its magic)? */
static bool is_fastopen(const unsigned char *opt, uint32_t optlen)
{
    if (opt[0] == OPT_FASTOPEN)
        return true;
    return opt[0] == OPT_EXP && optlen >= 4 && (uint32_t)(opt[2] << 8 | opt[3]) == TFO_MAGIC;
}

/* Walk the options: false when the list does not parse. Sets *found when a Fast
 * Open option is there, and copies every other option to out (when not NULL),
 * *kept bytes. */
static bool walk_options(const unsigned char *opts, uint32_t n, bool *found, unsigned char *out,
                         uint32_t *kept)
{
    uint32_t i = 0, k = 0;
    *found = false;
    while (i < n) {
        if (opts[i] == OPT_EOL)
            break;
        if (opts[i] == OPT_NOP) {
            if (out != NULL)
                out[k] = OPT_NOP;
            k++;
            i++;
            continue;
        }
        if (i + 1 >= n || opts[i + 1] < 2 || i + opts[i + 1] > n)
            return false;
        uint32_t optlen = opts[i + 1];
        if (is_fastopen(opts + i, optlen)) {
            *found = true;
        } else {
            if (out != NULL)
                memcpy(out + k, opts + i, optlen);
            k += optlen;
        }
        i += optlen;
    }
    if (*found && out != NULL)
        while (k > 0 && out[k - 1] == OPT_NOP)
            k--; /* trailing NOPs: the padding of what was taken out */
    *kept = k;
    return true;
}

static uint32_t sum16(const unsigned char *p, uint32_t len, uint32_t sum)
{
    for (uint32_t i = 0; i + 1 < len; i += 2)
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (len & 1u)
        sum += (uint32_t)(p[len - 1] << 8);
    return sum;
}

static uint16_t fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffffu) + (sum >> 16);
    return (uint16_t)~sum;
}

/* The TCP checksum of the segment at tcp (seglen bytes), with the pseudo-header. */
static uint16_t tcp_checksum(const unsigned char *pkt, bool v6, const unsigned char *tcp,
                             uint32_t seglen)
{
    uint32_t sum = 0;
    if (v6) {
        sum = sum16(pkt + 8, 32, sum); /* source and destination */
        sum += seglen >> 16;
        sum += seglen & 0xffffu;
        sum += TCP_PROTO;
    } else {
        sum = sum16(pkt + 12, 8, sum);
        sum += TCP_PROTO;
        sum += seglen;
    }
    return fold(sum16(tcp, seglen, sum));
}

void middlebox_fix_checksums(unsigned char *pkt, uint32_t len)
{
    bool v6;
    uint32_t at = tcp_offset(pkt, len, &v6);
    if (at == 0)
        return;
    if (!v6) {
        pkt[10] = pkt[11] = 0;
        uint16_t ip = fold(sum16(pkt, at, 0));
        pkt[10] = (unsigned char)(ip >> 8);
        pkt[11] = (unsigned char)ip;
    }
    unsigned char *tcp = pkt + at;
    tcp[16] = tcp[17] = 0;
    uint16_t c = tcp_checksum(pkt, v6, tcp, len - at);
    tcp[16] = (unsigned char)(c >> 8);
    tcp[17] = (unsigned char)c;
}

enum mb_action middlebox_decide(struct middlebox *mb, unsigned char *pkt, uint32_t *len)
{
    bool v6;
    uint32_t at;
    if (mb->mode == MB_NONE || pkt == NULL || (at = tcp_offset(pkt, *len, &v6)) == 0)
        return MB_PASS;
    unsigned char *tcp = pkt + at;
    uint16_t sport = (uint16_t)(tcp[0] << 8 | tcp[1]), dport = (uint16_t)(tcp[2] << 8 | tcp[3]);
    if (sport != mb->port && dport != mb->port)
        return MB_PASS;
    uint8_t flags = tcp[13];
    if (!(flags & FLAG_SYN))
        return MB_PASS;
    bool syn_only = !(flags & FLAG_ACK);
    uint32_t doff = (uint32_t)(tcp[12] >> 4) * 4u;
    if (doff < 20 || at + doff > *len) {
        mb->unparsed++;
        return MB_PASS;
    }
    uint32_t payload = *len - at - doff;
    if (mb->mode == MB_DROP_SYN_DATA)
        return syn_only && payload > 0 ? MB_DROP : MB_PASS;
    bool found;
    uint32_t kept;
    unsigned char out[40];
    if (!walk_options(tcp + 20, doff - 20, &found, out, &kept)) {
        mb->unparsed++;
        return MB_PASS;
    }
    if (mb->mode == MB_DROP_TFO_SYN)
        return syn_only && found ? MB_DROP : MB_PASS;
    if (!found) /* strip-tfo-option */
        return MB_PASS;
    uint32_t padded = (kept + 3u) & ~3u;
    memset(out + kept, OPT_EOL, padded - kept);
    uint32_t new_doff = 20u + padded;
    memcpy(tcp + 20, out, padded);
    memmove(tcp + new_doff, tcp + doff, payload);
    tcp[12] = (unsigned char)((new_doff / 4u) << 4 | (tcp[12] & 0x0fu));
    *len -= doff - new_doff;
    if (v6) {
        uint32_t plen = *len - 40u;
        pkt[4] = (unsigned char)(plen >> 8);
        pkt[5] = (unsigned char)plen;
    } else {
        pkt[2] = (unsigned char)(*len >> 8);
        pkt[3] = (unsigned char)*len;
    }
    middlebox_fix_checksums(pkt, *len);
    mb->mangled++;
    return MB_MANGLED;
}
