/*
 * args.c - see args.h.
 */
#define _GNU_SOURCE
#include "args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void args_fail(const struct args *a, const char *fmt, ...)
{
    char small[512];
    char *big = NULL;
    const char *msg = small;
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        small[0] = '\0';
    } else if ((size_t)n >= sizeof small) {
        /* a long argument quoted whole: format it again, in full */
        big = malloc((size_t)n + 1);
        if (big != NULL && vsnprintf(big, (size_t)n + 1, fmt, again) == n)
            msg = big;
    }
    va_end(again);
    (void)fprintf(stderr, "%s: %s\n", a->prog, msg);
    free(big);
    exit(EXIT_BAD_INPUT);
}

long args_long(const struct args *a, const char *name, const char *value, long min, long max)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (end == value || *end != '\0')
        args_fail(a, "%s '%.40s' is not a number: give a whole number in %ld..%ld", name, value,
                  min, max);
    if (errno == ERANGE || v < min || v > max)
        args_fail(a, "%s %.40s is out of range: give a whole number in %ld..%ld", name, value,
                  min, max);
    return v;
}

long args_host_port(const struct args *a, const char *v, char *host, size_t host_size)
{
    const char *start = v;
    size_t host_len;
    const char *colon;
    if (v[0] == '[') {
        const char *close = strchr(v, ']');
        if (close == NULL || close[1] != ':')
            args_fail(a, "--connect '%.60s' is not HOST:PORT: write IPv6 as [::1]:5000", v);
        start = v + 1;
        host_len = (size_t)(close - start);
        colon = close + 1;
    } else {
        colon = strrchr(v, ':');
        if (colon == NULL || colon == v)
            args_fail(a, "--connect '%.60s' is not HOST:PORT, e.g. --connect 127.0.0.1:5000", v);
        host_len = (size_t)(colon - v);
        if (memchr(v, ':', host_len) != NULL)
            args_fail(a, "--connect '%.60s' is ambiguous: write IPv6 as [::1]:5000", v);
    }
    if (host_len == 0 || host_len >= host_size)
        args_fail(a, "--connect '%.60s': bad host, give an address such as 127.0.0.1", v);
    memcpy(host, start, host_len);
    host[host_len] = '\0';
    return args_long(a, "--connect port", colon + 1, 1, 65535);
}

static int is_long_name(const char *s)
{
    return strncmp(s, "--", 2) == 0;
}

/* The option argv[i] names: an alias written exactly, or "--name" followed by
 * nothing or '='. NULL when there is none. */
static const struct args_option *find_option(const struct args *a, const char *arg)
{
    size_t len = strcspn(arg, "=");
    for (const struct args_option *o = a->options; o->name != NULL; o++) {
        if (!is_long_name(o->name)) {
            if (strcmp(arg, o->name) == 0)
                return o;
        } else if (is_long_name(arg) && strlen(o->name) == len &&
                   strncmp(arg, o->name, len) == 0) {
            return o;
        }
    }
    return NULL;
}

static _Noreturn void fail_unknown(const struct args *a, const char *arg)
{
    int echo = a->dialect == ARGS_DIALECT_ECHO;
    if (is_long_name(arg)) {
        if (echo)
            args_fail(a, "unknown option '%.60s' (see %s --help)", arg, a->prog);
        args_fail(a, "unknown option '%s' (see %s --help)", arg, a->prog);
    }
    if (echo)
        args_fail(a, "unexpected argument '%.60s': options start with -- (see %s --help)", arg,
                  a->prog);
    args_fail(a, "unexpected argument '%s' (see %s --help)", arg, a->prog);
}

static _Noreturn void fail_missing_value(const struct args *a, const struct args_option *o)
{
    if (a->dialect == ARGS_DIALECT_ECHO)
        args_fail(a, "%s needs a value, e.g. %s %s", o->name, o->name,
                  o->example != NULL ? o->example : "VALUE");
    args_fail(a, "option '%s' needs a value (see %s --help)", o->name, a->prog);
}

static _Noreturn void show_help(const struct args *a)
{
    (void)fputs(a->usage, stdout);
    exit(ferror(stdout) || fflush(stdout) != 0 ? 1 : 0);
}

int args_next(struct args *a, const char **value)
{
    *value = NULL;
    if (++a->i >= a->argc) {
        a->i = a->argc;
        return ARGS_END;
    }
    const char *arg = a->argv[a->i];
    const struct args_option *o = find_option(a, arg);
    if (o == NULL)
        fail_unknown(a, arg);
    const char *eq = is_long_name(o->name) ? strchr(arg, '=') : NULL;

    if (o->kind == ARGS_FLAG) {
        if (eq != NULL) {
            if (a->dialect == ARGS_DIALECT_ECHO)
                args_fail(a, "%s takes no value (got '%.40s')", o->name, arg);
            args_fail(a, "option '%s' takes no value", o->name);
        }
        if (o->id == ARGS_HELP)
            show_help(a);
        return o->id;
    }

    if (eq != NULL) {
        *value = eq + 1;
    } else {
        const char *next = a->i + 1 < a->argc ? a->argv[a->i + 1] : NULL;
        if (next == NULL || (a->dialect == ARGS_DIALECT_ECHO && is_long_name(next)))
            fail_missing_value(a, o);
        *value = next;
        a->i++;
    }
    if (a->dialect == ARGS_DIALECT_ECHO && **value == '\0')
        fail_missing_value(a, o);
    return o->id;
}
