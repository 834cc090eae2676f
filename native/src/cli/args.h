/*
 * args.h - the command-line parser of every tfolab executable
 * (tfo-echo-server, tfo-echo-client, tfo-delay).
 *
 * Rules: options are long options, `--name VALUE` or `--name=VALUE`, matched
 * by their exact name (no abbreviations, no reordering: arguments are handled
 * left to right, so --help exits where it stands); any mistake ends the
 * program with ONE line "prog: what is wrong and how to fix it" on stderr
 * and exit code 2.
 *
 * A program describes its options in a table and asks for them one by one:
 *
 *     static const struct args_option options[] = {
 *         {"--port", ARGS_VALUE, "5000", OPT_PORT},
 *         {"--nodelay", ARGS_FLAG, NULL, OPT_NODELAY},
 *         {"--help", ARGS_FLAG, NULL, ARGS_HELP},
 *         {NULL, 0, NULL, 0},
 *     };
 *     struct args a = {.prog = "tfo-echo-server", .usage = usage, .options = options,
 *                      .argc = argc, .argv = argv};
 *     const char *v;
 *     int id;
 *     while ((id = args_next(&a, &v)) != ARGS_END)
 *         switch (id) { case OPT_PORT: port = args_long(&a, "--port", v, 0, 65535); ... }
 *
 * Unknown options, stray arguments, a value given to a flag and a missing
 * value are refused by args_next itself; the program checks the values.
 */
#ifndef TFOLAB_ARGS_H
#define TFOLAB_ARGS_H

#include <stddef.h>

#define EXIT_BAD_INPUT 2

/* Returned by args_next after the last argument. */
#define ARGS_END (-1)
/* The id of the help option: args_next prints `usage` on stdout and exits 0
 * (1 when stdout cannot be written). */
#define ARGS_HELP (-2)

enum args_kind {
    ARGS_FLAG,  /* `--name`; `--name=VALUE` is refused */
    ARGS_VALUE, /* `--name VALUE` or `--name=VALUE` */
};

/*
 * How args_next words its refusals and what counts as a missing value. Each
 * program keeps the wording it has always had (tests and scripts match it):
 *
 * ARGS_DIALECT_ECHO (tfo-echo-server, tfo-echo-client): a value may not be
 *   empty nor start with "--" ("--port needs a value, e.g. --port 5000");
 *   arguments in messages are cut to 60 characters.
 * ARGS_DIALECT_DELAY (tfo-delay): a value is the rest after '=' or the next
 *   argument, whatever it is, for the program to judge; only a value missing
 *   at the end is refused ("option '--queue' needs a value (see tfo-delay
 *   --help)"); arguments are quoted whole.
 */
enum args_dialect {
    ARGS_DIALECT_ECHO,
    ARGS_DIALECT_DELAY,
};

struct args_option {
    /* "--name", or an alias such as "-h" that matches only exactly (no '=') */
    const char *name;
    enum args_kind kind;
    /* ARGS_DIALECT_ECHO: the value shown when it is missing ("5000") */
    const char *example;
    /* what args_next returns for it (>= 0), or ARGS_HELP */
    int id;
};

struct args {
    const char *prog;                  /* the prefix of every message */
    const char *usage;                 /* printed by the ARGS_HELP option */
    enum args_dialect dialect;
    const struct args_option *options; /* ends with a NULL name */
    int argc;
    char **argv;
    int i; /* index of the argument being looked at; 0 before the first */
};

/*
 * The next option: its id, with *value set for an ARGS_VALUE option (NULL for
 * a flag), or ARGS_END. Exits 2 with one line on stderr for an unknown
 * option, a stray argument, a flag given a value or a missing value.
 */
int args_next(struct args *a, const char **value);

/* Print "prog: message" on stderr and exit 2. */
_Noreturn void args_fail(const struct args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parse a decimal integer in [min, max] or fail naming the flag. */
long args_long(const struct args *a, const char *name, const char *value, long min, long max);

/*
 * Parse --connect's HOST:PORT ([V6]:PORT for IPv6): copy the host into
 * host[host_size] and return the port (1..65535), or fail with one line.
 */
long args_host_port(const struct args *a, const char *value, char *host, size_t host_size);

#endif
