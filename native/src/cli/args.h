/*
 * args.h - command-line parsing shared by the tfolab executables.
 *
 * Rules: flags are long options, `--flag VALUE` or `--flag=VALUE`; any
 * mistake ends the program with ONE line on stderr that says what is wrong
 * and how to fix it, and exit code 2.
 */
#ifndef TFOLAB_ARGS_H
#define TFOLAB_ARGS_H

#include <stddef.h>

#define EXIT_BAD_INPUT 2

struct args {
    const char *prog;
    int argc;
    char **argv;
    int i;  /* index of the argument being looked at */
};

/* Print "prog: message" on stderr and exit 2. */
_Noreturn void args_fail(const struct args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* True when argv[i] is the boolean flag `name` (e.g. "--nodelay"). */
int args_is_flag(const struct args *a, const char *name);

/*
 * True when argv[i] is the value flag `name`; *value is its value (from
 * "--name=VALUE" or the next argument, which it consumes). A missing value
 * fails with `example` shown ("--port needs a value, e.g. --port 5000").
 */
int args_is_value(struct args *a, const char *name, const char *example, const char **value);

/* Parse a decimal integer in [min, max] or fail naming the flag. */
long args_long(const struct args *a, const char *name, const char *value, long min, long max);

/* Fail for argv[i]: an unknown option or a stray argument. */
_Noreturn void args_unknown(const struct args *a);

#endif
