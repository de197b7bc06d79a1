/* The topos CLI: each subcommand is one file that registers itself with
 * TOPOS_COMMAND; tools/main.c dispatches on argv[1]. Nested groups (gguf
 * inspect, bench ladder) register as "gguf" and parse their own argv. */
#ifndef TOPOS_CLI_H
#define TOPOS_CLI_H

#include <stdio.h>

#include "topos.h"

typedef int (*tp_command_fn)(int argc, char **argv); /* argv[0] is the subcommand name */
void tp_command_register(const char *name, const char *summary, tp_command_fn fn);

#define TOPOS_COMMAND(name, summary, fn)                                   \
  __attribute__((constructor)) static void tp_register_command_##fn(void) { \
    tp_command_register(name, summary, fn);                                \
  }

/* The registered command with this exact name, or NULL. */
tp_command_fn tp_command_find(const char *name);
/* Calls fn(name, summary) for each registered command in name order. */
void tp_command_each(void (*fn)(const char *name, const char *summary, void *ctx), void *ctx);

/* Prints "topos NAME: <message>: <topos_last_error()>" to stderr; returns 1. */
int tp_cli_fail(const char *command, topos_status status, const char *what);

/* The whole of s as a number in [lo, hi] (decimal integer / finite float);
 * 0 when s is empty, has anything after the number, or is out of range. */
int tp_cli_long(const char *s, long lo, long hi, long *out);
int tp_cli_float(const char *s, float lo, float hi, float *out);
int tp_cli_u64(const char *s, unsigned long long *out); /* decimal, no minus sign */
/* "a,b,c": up to cap items, each a whole decimal integer in [lo, hi], into
 * out; the count, or 0 when an item is bad, there are more than cap or none. */
int tp_cli_long_list(const char *s, long lo, long hi, long *out, int cap);
/* Prints "topos COMMAND: FLAG wants WANT, got 'VALUE'" to stderr; returns 2
 * (the usage exit status). */
int tp_cli_bad_value(const char *command, const char *flag, const char *value, const char *want);

/* The flags every command that runs a model shares: --threads / -t N (0:
 * the default) into *threads, --kv f32|f16|bf16 into *kv. Returns 1 when
 * FLAG was one of them and VALUE good, 0 when FLAG is none of them, 2 after
 * printing what is wrong with VALUE (tp_cli_bad_value). */
int tp_cli_run_flag(const char *command, const char *flag, const char *value, long *threads, topos_dtype *kv);

/* Seconds on the monotonic clock. */
double tp_cli_now(void);

#endif
