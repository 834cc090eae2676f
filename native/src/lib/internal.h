/*
 * internal.h - helpers shared by the library's source files, not exported.
 */
#ifndef TFOLAB_INTERNAL_H
#define TFOLAB_INTERNAL_H

#include <stddef.h>
#include <sys/socket.h>

#include "tfolab.h"

#define TFL_INTERNAL __attribute__((visibility("hidden")))

/* snprintf into err (if err and errlen are usable); never overflows. */
TFL_INTERNAL void tfl_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Copy src into dst[dstlen] with truncation and NUL termination. */
TFL_INTERNAL void tfl_copy_str(char *dst, size_t dstlen, const char *src);

/* True when s is NUL-terminated within n bytes. */
TFL_INTERNAL int tfl_is_terminated(const char *s, size_t n);

/*
 * Resolve an IPv4/IPv6 literal or "localhost" (127.0.0.1) and a port into
 * *addr. No DNS: a lab never waits on a resolver. 0 or -1.
 */
TFL_INTERNAL int tfl_resolve(const char *host, int port, struct sockaddr_storage *addr,
                             socklen_t *addrlen);

/*
 * A payload buffer of len bytes (an answer, a request, the answer read back),
 * mapped apart, advised onto transparent huge pages where the kernel offers them
 * (MADV_HUGEPAGE; where it refuses, 4 KiB pages serve) and touched whole, so no
 * page is faulted in while a measured call copies it.  Why: on a virtual
 * machine each 4 KiB page first touched after an idle of ~1 s costs ~15 us
 * (a 300 kB copy 0.8-1.7 ms instead of 30 us); a huge page pays that once.
 * NULL when out of memory.  Free with tfl_payload_free(buf, len).
 */
TFL_INTERNAL char *tfl_payload_alloc(size_t len);
TFL_INTERNAL void tfl_payload_free(char *buf, size_t len);

#endif
