/*
 * http.h - the tiny HTTP/1.x request-head parser of the echo server.
 */
#ifndef TFOLAB_HTTP_H
#define TFOLAB_HTTP_H

#include <stddef.h>

#include "internal.h"

struct tfl_http_request {
    int status;        /* 200, or the error status to answer (400, 413, 501, 505) */
    int keep_alive;    /* Connection: keep-alive/close, defaulted by the version  */
    int head_only;     /* HEAD: no body in the response                          */
    size_t body_len;   /* Content-Length of the request body to skip             */
};

/* Parse a request head (request line + headers, ending in CRLFCRLF). */
TFL_INTERNAL void tfl_http_parse(const char *head, size_t len, struct tfl_http_request *req);

/* Format the response into buf; returns its length, or 0 if it does not fit. */
TFL_INTERNAL size_t tfl_http_response(const struct tfl_http_request *req, char *buf, size_t cap);

#endif
