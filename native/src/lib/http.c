/*
 * http.c - just enough HTTP/1.x for the echo server's `http` mode: a request
 * line, headers up to CRLFCRLF, Connection and Content-Length honoured,
 * everything else ignored. Bounded: it only looks inside the given head.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http.h"

#define HTTP_BODY "hello from tfo-echo-server\n"

/* Next CRLF-terminated line of [*pos, end); NULL at the end. */
static const char *next_line(const char **pos, const char *end, size_t *line_len)
{
    const char *start = *pos;
    if (start >= end)
        return NULL;
    const char *crlf = memmem(start, (size_t)(end - start), "\r\n", 2);
    if (crlf == NULL)
        crlf = end;
    *line_len = (size_t)(crlf - start);
    *pos = crlf + (crlf < end ? 2 : 0);
    return start;
}

/* Case-insensitive search of token in a comma-separated header value. */
static int has_token(const char *value, size_t len, const char *token)
{
    size_t tlen = strlen(token);
    for (size_t i = 0; i + tlen <= len; i++) {
        if (strncasecmp(value + i, token, tlen) == 0)
            return 1;
    }
    return 0;
}

static int header_is(const char *line, size_t len, const char *name, const char **value,
                     size_t *value_len)
{
    size_t nlen = strlen(name);
    if (len <= nlen || line[nlen] != ':' || strncasecmp(line, name, nlen) != 0)
        return 0;
    size_t i = nlen + 1;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    *value = line + i;
    *value_len = len - i;
    return 1;
}

static void parse_request_line(const char *line, size_t len, struct tfl_http_request *req)
{
    const char *sp1 = memchr(line, ' ', len);
    if (sp1 == NULL || sp1 == line) {
        req->status = 400;
        return;
    }
    const char *rest = sp1 + 1;
    size_t rest_len = len - (size_t)(rest - line);
    const char *sp2 = memchr(rest, ' ', rest_len);
    if (sp2 == NULL || sp2 == rest) {
        req->status = 400;
        return;
    }
    const char *version = sp2 + 1;
    size_t vlen = len - (size_t)(version - line);
    if (vlen != 8 || memcmp(version, "HTTP/", 5) != 0 || version[6] != '.') {
        req->status = 400;
        return;
    }
    if (version[5] != '1' || version[7] < '0' || version[7] > '9') {
        req->status = 505;
        return;
    }
    req->keep_alive = version[7] >= '1';
    req->head_only = (size_t)(sp1 - line) == 4 && memcmp(line, "HEAD", 4) == 0;
}

void tfl_http_parse(const char *head, size_t len, struct tfl_http_request *req)
{
    const char *pos = head;
    const char *end = head + len;
    size_t line_len = 0;

    memset(req, 0, sizeof *req);
    req->status = 200;
    const char *line = next_line(&pos, end, &line_len);
    if (line == NULL) {
        req->status = 400;
        return;
    }
    parse_request_line(line, line_len, req);
    if (req->status != 200)
        return;
    while ((line = next_line(&pos, end, &line_len)) != NULL) {
        const char *value;
        size_t vlen;
        if (line_len == 0)
            break;
        if (header_is(line, line_len, "Connection", &value, &vlen)) {
            if (has_token(value, vlen, "close"))
                req->keep_alive = 0;
            else if (has_token(value, vlen, "keep-alive"))
                req->keep_alive = 1;
        } else if (header_is(line, line_len, "Content-Length", &value, &vlen)) {
            size_t n = 0;
            if (vlen == 0) {
                req->status = 400;
                return;
            }
            for (size_t i = 0; i < vlen; i++) {
                if (value[i] < '0' || value[i] > '9') {
                    req->status = 400;
                    return;
                }
                n = n * 10 + (size_t)(value[i] - '0');
                if (n > TFL_MAX_PAYLOAD) {
                    req->status = 413;
                    return;
                }
            }
            req->body_len = n;
        } else if (header_is(line, line_len, "Transfer-Encoding", &value, &vlen)) {
            req->status = 501; /* chunked request bodies are not supported */
            return;
        }
    }
}

size_t tfl_http_response(const struct tfl_http_request *req, char *buf, size_t cap)
{
    const char *reason = "OK";
    const char *body = HTTP_BODY;
    int keep_alive = req->keep_alive;
    switch (req->status) {
    case 200:
        break;
    case 413:
        reason = "Content Too Large";
        break;
    case 501:
        reason = "Not Implemented";
        break;
    case 505:
        reason = "HTTP Version Not Supported";
        break;
    default:
        reason = "Bad Request";
        break;
    }
    if (req->status != 200) {
        body = "";
        keep_alive = 0;
    }
    int n = snprintf(buf, cap,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                     "Connection: %s\r\n\r\n%s",
                     req->status, reason, strlen(body), keep_alive ? "keep-alive" : "close",
                     req->head_only ? "" : body);
    if (n < 0 || (size_t)n >= cap)
        return 0;
    return (size_t)n;
}
