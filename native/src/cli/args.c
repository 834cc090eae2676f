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
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        msg[0] = '\0';
    (void)fprintf(stderr, "%s: %s\n", a->prog, msg);
    exit(EXIT_BAD_INPUT);
}

int args_is_flag(const struct args *a, const char *name)
{
    const char *arg = a->argv[a->i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return 0;
    if (arg[n] == '=')
        args_fail(a, "%s takes no value (got '%.40s')", name, arg);
    return arg[n] == '\0';
}

int args_is_value(struct args *a, const char *name, const char *example, const char **value)
{
    const char *arg = a->argv[a->i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
    } else if (arg[n] == '\0') {
        if (a->i + 1 >= a->argc || strncmp(a->argv[a->i + 1], "--", 2) == 0)
            args_fail(a, "%s needs a value, e.g. %s %s", name, name, example);
        *value = a->argv[++a->i];
    } else {
        return 0;
    }
    if (**value == '\0')
        args_fail(a, "%s needs a value, e.g. %s %s", name, name, example);
    return 1;
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

void args_unknown(const struct args *a)
{
    const char *arg = a->argv[a->i];
    if (strncmp(arg, "--", 2) == 0)
        args_fail(a, "unknown option '%.60s' (see %s --help)", arg, a->prog);
    args_fail(a, "unexpected argument '%.60s': options start with -- (see %s --help)", arg,
              a->prog);
}
