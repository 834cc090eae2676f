/*
 * common.c - clock, errno names, sizes and small string helpers of libtfolab.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "internal.h"

int tfl_abi_version(void) { return TFL_ABI_VERSION; }
size_t tfl_sizeof_client_config(void) { return sizeof(struct tfl_client_config); }
size_t tfl_sizeof_sample(void) { return sizeof(struct tfl_sample); }
size_t tfl_sizeof_server_config(void) { return sizeof(struct tfl_server_config); }
size_t tfl_sizeof_server_stats(void) { return sizeof(struct tfl_server_stats); }

void tfl_fill_line(char *buf, size_t len)
{
    if (len == 0)
        return;
    for (size_t i = 0; i + 1 < len; i++)
        buf[i] = (char)('a' + (char)(i % 26));
    buf[len - 1] = '\n';
}

#define HUGE_PAGE (2u << 20)

/* Whole huge pages: only a 2 MiB-aligned 2 MiB range can be backed by one. */
static size_t payload_span(size_t len)
{
    return (len / HUGE_PAGE + 1) * HUGE_PAGE;
}

char *tfl_payload_alloc(size_t len)
{
    size_t span = payload_span(len);
    /* One huge page's alignment is needed for one to back it: map a page more and
     * trim the ends. */
    size_t mapped = span + HUGE_PAGE;
    char *raw = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uintptr_t start = ((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    char *buf = (char *)start;
    size_t head = (size_t)(buf - raw), tail = mapped - head - span;
    /* munmap of a range we mapped cannot fail but for a bad range: checked anyway */
    if ((head && munmap(raw, head) != 0) || (tail && munmap(buf + span, tail) != 0)) {
        munmap(raw, mapped);
        return NULL;
    }
    /* EINVAL: a kernel without transparent huge pages; 4 KiB pages serve then */
    if (madvise(buf, span, MADV_HUGEPAGE) != 0 && errno != EINVAL)
        fprintf(stderr, "tfolab: madvise(MADV_HUGEPAGE): %s\n", tfl_errno_name(errno));
    memset(buf, 0, span);
    return buf;
}

void tfl_payload_free(char *buf, size_t len)
{
    if (buf != NULL && munmap(buf, payload_span(len)) != 0)
        fprintf(stderr, "tfolab: munmap: %s\n", tfl_errno_name(errno));
}

int64_t tfl_now_ns(void)
{
    struct timespec ts;
    /* CLOCK_MONOTONIC cannot fail with a valid pointer; still checked. */
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

#define E(name) { name, #name }
static const struct {
    int value;
    const char *name;
} errno_names[] = {
    E(EPERM), E(ENOENT), E(EINTR), E(EIO), E(EBADF), E(EAGAIN), E(ENOMEM),
    E(EACCES), E(EFAULT), E(EBUSY), E(EEXIST), E(EINVAL), E(ENFILE), E(EMFILE),
    E(ENOSPC), E(EPIPE), E(ERANGE), E(ENOSYS), E(EBADMSG), E(EMSGSIZE),
    E(EPROTOTYPE), E(ENOPROTOOPT), E(EPROTONOSUPPORT), E(EOPNOTSUPP),
    E(EAFNOSUPPORT), E(EADDRINUSE), E(EADDRNOTAVAIL), E(ENETDOWN),
    E(ENETUNREACH), E(ENETRESET), E(ECONNABORTED), E(ECONNRESET), E(ENOBUFS),
    E(EISCONN), E(ENOTCONN), E(ESHUTDOWN), E(ETIMEDOUT), E(ECONNREFUSED),
    E(EHOSTDOWN), E(EHOSTUNREACH), E(EALREADY), E(EINPROGRESS), E(ENOTSOCK),
    E(EDESTADDRREQ), E(EPROTO), E(ENODEV), E(ENXIO), E(E2BIG), E(ENOTSUP),
};
#undef E

const char *tfl_errno_name(int errnum)
{
    static _Thread_local char unknown[24];
    for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++) {
        if (errno_names[i].value == errnum)
            return errno_names[i].name;
    }
    (void)snprintf(unknown, sizeof unknown, "E%d", errnum);
    return unknown;
}

void tfl_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (n < 0)
        err[0] = '\0';
}

void tfl_copy_str(char *dst, size_t dstlen, const char *src)
{
    if (dstlen == 0)
        return;
    size_t n = strnlen(src, dstlen - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

int tfl_is_terminated(const char *s, size_t n) { return memchr(s, '\0', n) != NULL; }

int tfl_resolve(const char *host, int port, struct sockaddr_storage *addr, socklen_t *addrlen)
{
    memset(addr, 0, sizeof *addr);
    if (port < 0 || port > 65535)
        return -1;
    if (strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    struct sockaddr_in *sin = (struct sockaddr_in *)addr;
    if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t)port);
        *addrlen = sizeof *sin;
        return 0;
    }
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)addr;
    if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((uint16_t)port);
        *addrlen = sizeof *sin6;
        return 0;
    }
    return -1;
}
