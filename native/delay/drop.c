/*
 * drop.c - deterministic drops (--control): before each iteration the lab
 * names, by their order, which of the client's and the server's packets the
 * delayer drops instead of delaying.
 *
 * Rules:
 * - A plan is one control line, "DROP PORT LIST": PORT is the lab server's TCP
 *   port; LIST is "-" (drop nothing) or comma-separated "client:N" and
 *   "server:N", N counting from 1.
 * - A plan is for the next connection to PORT: the first SYN (without ACK) to
 *   PORT after the line names its client port.  Only that connection's
 *   packets are counted, the client's (to PORT) and the server's (from PORT).
 *   The lab sends a plan before each iteration's connection, so N counts within
 *   the iteration's connection.  The plans of the last DROP_PLANS connections
 *   stay in force: an earlier connection's last packets (its last ACK, which
 *   may leave after the next connection began) count against its own plan,
 *   never shifting the next one's.  Where two plans name the same client port
 *   (a SYN replayed on an earlier connection's ports) the newer one counts.  A packet counts as it reaches the queue, one per packet the
 *   queue hands over (on the lab's lo, with TSO and GSO off, one per segment:
 *   the device cuts GSO packets in software first), and a retransmission is a
 *   new one.
 * - Parsing is strict (digits only, no duplicates, at most MAX_DROPS entries);
 *   a bad line changes nothing and is answered with the reason.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tfo_delay.h"

#define IPPROTO_TCP_NUMBER 6
#define MAX_INDEX 1000000u

/* Decimal 1..MAX_INDEX from s up to (not including) end. */
static bool parse_index(const char *s, const char *end, uint32_t *out)
{
    uint32_t v = 0;
    if (s == end)
        return false;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9')
            return false;
        v = v * 10u + (uint32_t)(*s - '0');
        if (v > MAX_INDEX)
            return false;
    }
    if (v == 0)
        return false;
    *out = v;
    return true;
}

static bool parse_entry(const char *s, const char *end, struct drop_entry *e)
{
    static const char client[] = "client:", server[] = "server:";
    size_t len = (size_t)(end - s);
    if (len > sizeof client - 1 && memcmp(s, client, sizeof client - 1) == 0) {
        e->sender = DROP_CLIENT;
        return parse_index(s + sizeof client - 1, end, &e->index);
    }
    if (len > sizeof server - 1 && memcmp(s, server, sizeof server - 1) == 0) {
        e->sender = DROP_SERVER;
        return parse_index(s + sizeof server - 1, end, &e->index);
    }
    return false;
}

const char *drop_plan_parse(struct drop_book *book, const char *line)
{
    struct drop_plan next = { .active = true };
    if (strncmp(line, "DROP ", 5) != 0)
        return "not a DROP line: use DROP PORT LIST";
    const char *p = line + 5;
    const char *space = strchr(p, ' ');
    uint32_t port;
    if (space == NULL || !parse_index(p, space, &port) || port > 65535)
        return "the port is not 1..65535";
    next.server_port = (uint16_t)port;
    const char *list = space + 1;
    if (strcmp(list, "-") != 0) {
        while (*list != '\0') {
            const char *comma = strchr(list, ',');
            const char *end = comma != NULL ? comma : list + strlen(list);
            if (next.count == MAX_DROPS)
                return "too many drops in one plan";
            struct drop_entry e;
            if (!parse_entry(list, end, &e))
                return "an entry is not client:N or server:N with N 1..1000000";
            for (uint32_t i = 0; i < next.count; i++)
                if (next.drops[i].sender == e.sender && next.drops[i].index == e.index)
                    return "an entry is named twice";
            next.drops[next.count++] = e;
            if (comma == NULL)
                break;
            list = comma + 1;
            if (*list == '\0')
                return "the list ends with a comma";
        }
    }
    book->newest = (book->newest + 1) % DROP_PLANS;
    book->plans[book->newest] = next;
    return NULL;
}

#define TCP_FLAG_SYN 0x02u
#define TCP_FLAG_ACK 0x10u

/* The TCP ports and flags of an IPv4 or IPv6 packet; false when it is not TCP or
 * too short. */
static bool tcp_ports(const unsigned char *packet, uint32_t len, uint16_t *sport, uint16_t *dport,
                      uint8_t *flags)
{
    uint32_t at;
    if (len < 1)
        return false;
    if (packet[0] >> 4 == 4) {
        if (len < 20 || packet[9] != IPPROTO_TCP_NUMBER)
            return false;
        at = (uint32_t)(packet[0] & 0x0f) * 4u;
    } else if (packet[0] >> 4 == 6) {
        if (len < 40 || packet[6] != IPPROTO_TCP_NUMBER)
            return false; /* lo's IPv6 packets carry no extension headers */
        at = 40;
    } else {
        return false;
    }
    if (len < at + 14)
        return false;
    *sport = (uint16_t)(packet[at] << 8 | packet[at + 1]);
    *dport = (uint16_t)(packet[at + 2] << 8 | packet[at + 3]);
    *flags = packet[at + 13];
    return true;
}

/* The plan whose connection the packet belongs to, newest first; NULL: none. */
static struct drop_plan *plan_of(struct drop_book *book, uint16_t sport, uint16_t dport,
                                 int *sender)
{
    for (uint32_t back = 0; back < DROP_PLANS; back++) {
        struct drop_plan *plan = &book->plans[(book->newest + DROP_PLANS - back) % DROP_PLANS];
        if (!plan->active || plan->client_port == 0)
            continue;
        if (dport == plan->server_port && sport == plan->client_port) {
            *sender = DROP_CLIENT;
            return plan;
        }
        if (sport == plan->server_port && dport == plan->client_port) {
            *sender = DROP_SERVER;
            return plan;
        }
    }
    return NULL;
}

bool drop_plan_decide(struct drop_book *book, const unsigned char *packet, uint32_t len)
{
    uint16_t sport, dport;
    uint8_t flags;
    if (packet == NULL || !tcp_ports(packet, len, &sport, &dport, &flags))
        return false;
    struct drop_plan *newest = &book->plans[book->newest];
    if (newest->active && newest->client_port == 0 && dport == newest->server_port &&
        (flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == TCP_FLAG_SYN)
        newest->client_port = sport; /* the plan's connection begins */
    int sender;
    struct drop_plan *plan = plan_of(book, sport, dport, &sender);
    if (plan == NULL)
        return false;
    uint32_t index = ++plan->seen[sender];
    for (uint32_t i = 0; i < plan->count; i++) {
        if (plan->drops[i].sender == sender && plan->drops[i].index == index) {
            return true;
        }
    }
    return false;
}
