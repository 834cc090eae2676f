/*
 * record.c - --record-fd N: every packet this delayer releases, as a pcap file
 * (nanosecond records, LINKTYPE_RAW: the IP packet without a link header).
 *
 * Why: with the queue at the receiving end (the lab's rule is in INPUT), a
 * packet socket on lo sees each packet before its delay, so the time a packet
 * reaches the receiving TCP is the time of its verdict, which only this
 * program knows.  A record's time is that verdict's, on CLOCK_MONOTONIC (the
 * clock of the lab's own timestamps), not the Unix epoch a pcap file usually
 * holds: the reader moves it.
 *
 * Records are kept in memory and written on request (SIGUSR1, tfo_delay.c)
 * and at the stop, so recording costs the verdict path no system call.
 *
 * --late-record-fd M: beside each record, how late its verdict was after its
 * due time (ns, int64, host order), in record order, written with the records:
 * the lab reads the backend's own error per packet from it (a pcap record has
 * no field for it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tfo_delay.h"

#define PCAP_MAGIC_NS 0xa1b23c4dU
#define LINKTYPE_RAW 101u
#define SNAPLEN 65535u
#define RECORD_HEADER 16u

static int write_all(int fd, const unsigned char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static void put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, sizeof v); /* host order: the magic number tells readers which */
}

/* An inherited descriptor `option` names: open for writing, then close-on-exec; exits 2
 * with the reason and `example` when it is not. */
static void take_writable(int fd, const char *option, const char *example)
{
    char fix[96], what[64];
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) {
        snprintf(fix, sizeof fix, "open that descriptor for writing first, e.g. %s", example);
        fail_setup(option, errno, fix);
    }
    if ((flags & O_ACCMODE) == O_RDONLY) {
        snprintf(fix, sizeof fix, "open that descriptor for writing, e.g. %s", example);
        fail_setup(option, EBADF, fix);
    }
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
        snprintf(what, sizeof what, "fcntl(FD_CLOEXEC) on %s", option);
        fail_setup(what, errno, "report this as a bug");
    }
}

void recorder_open(struct recorder *r, int fd)
{
    *r = (struct recorder){ .fd = -1, .late_fd = -1 };
    take_writable(fd, "--record-fd", "3>lab.pcap");
    unsigned char header[24];
    put32(header, PCAP_MAGIC_NS);
    uint16_t major = 2, minor = 4;
    memcpy(header + 4, &major, 2);
    memcpy(header + 6, &minor, 2);
    put32(header + 8, 0);  /* thiszone */
    put32(header + 12, 0); /* sigfigs */
    put32(header + 16, SNAPLEN);
    put32(header + 20, LINKTYPE_RAW);
    int err = write_all(fd, header, sizeof header);
    if (err != 0)
        fail_setup("writing the pcap header to --record-fd", err,
                   "give a descriptor open for writing");
    r->fd = fd;
}

static bool reserve(struct recorder *r, size_t more)
{
    if (r->len + more <= r->cap)
        return true;
    size_t want = r->cap ? r->cap : 1u << 20;
    while (want < r->len + more) {
        if (want > SIZE_MAX / 2)
            return false;
        want *= 2;
    }
    unsigned char *n = realloc(r->buf, want);
    if (n == NULL)
        return false;
    r->buf = n;
    r->cap = want;
    return true;
}

void recorder_keep_lateness(struct recorder *r, int fd)
{
    take_writable(fd, "--late-record-fd", "5>late.bin");
    r->late_fd = fd;
}

static bool reserve_late(struct recorder *r)
{
    if (r->late_fd < 0 || r->late_len < r->late_cap)
        return true;
    size_t want = r->late_cap ? r->late_cap * 2 : 1u << 14;
    if (want > SIZE_MAX / sizeof *r->late)
        return false;
    int64_t *n = realloc(r->late, want * sizeof *r->late);
    if (n == NULL)
        return false;
    r->late = n;
    r->late_cap = want;
    return true;
}

void recorder_add(struct recorder *r, int64_t t_ns, int64_t late_ns, const unsigned char *packet,
                  uint32_t cap_len, uint32_t wire_len)
{
    if (r->fd < 0 || packet == NULL)
        return;
    if (!reserve(r, RECORD_HEADER + cap_len) || !reserve_late(r)) {
        r->lost++;
        return;
    }
    if (r->late_fd >= 0)
        r->late[r->late_len++] = late_ns;
    unsigned char *p = r->buf + r->len;
    put32(p, (uint32_t)(t_ns / 1000000000LL));
    put32(p + 4, (uint32_t)(t_ns % 1000000000LL));
    put32(p + 8, cap_len);
    put32(p + 12, wire_len > cap_len ? wire_len : cap_len);
    memcpy(p + RECORD_HEADER, packet, cap_len);
    r->len += RECORD_HEADER + cap_len;
    r->records++;
}

int recorder_flush(struct recorder *r)
{
    if (r->fd < 0)
        return 0;
    int err = write_all(r->fd, r->buf, r->len);
    r->len = 0;
    if (r->late_fd >= 0) {
        int late_err = write_all(r->late_fd, (const unsigned char *)r->late,
                                 r->late_len * sizeof *r->late);
        if (err == 0)
            err = late_err;
        r->late_len = 0;
    }
    return err;
}

int recorder_close(struct recorder *r)
{
    if (r->fd < 0)
        return 0;
    int err = recorder_flush(r);
    if (close(r->fd) != 0 && err == 0)
        err = errno;
    r->fd = -1;
    free(r->buf);
    r->buf = NULL;
    r->cap = r->len = 0;
    if (r->late_fd >= 0 && close(r->late_fd) != 0 && err == 0)
        err = errno;
    r->late_fd = -1;
    free(r->late);
    r->late = NULL;
    r->late_cap = r->late_len = 0;
    return err;
}
