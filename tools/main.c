/* topos CLI entry point: dispatches to the registered subcommands. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cli.h"

typedef struct {
  const char *name;
  const char *summary;
  tp_command_fn fn;
} tp_command;

static tp_command tp_commands[64];
static int tp_command_count;

void tp_command_register(const char *name, const char *summary, tp_command_fn fn) {
  if (tp_command_count < (int)(sizeof tp_commands / sizeof tp_commands[0]))
    tp_commands[tp_command_count++] = (tp_command){name, summary, fn};
}

tp_command_fn tp_command_find(const char *name) {
  for (int i = 0; i < tp_command_count; ++i)
    if (strcmp(name, tp_commands[i].name) == 0) return tp_commands[i].fn;
  return NULL;
}

void tp_command_each(void (*fn)(const char *name, const char *summary, void *ctx), void *ctx) {
  for (int i = 0; i < tp_command_count; ++i) fn(tp_commands[i].name, tp_commands[i].summary, ctx);
}

int tp_cli_fail(const char *command, topos_status status, const char *what) {
  fprintf(stderr, "topos %s: %s: %s (%s)\n", command, what, topos_last_error(),
          topos_status_name(status));
  return 1;
}

int tp_cli_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  const long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno == ERANGE || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

int tp_cli_float(const char *s, float lo, float hi, float *out) {
  char *end;
  errno = 0;
  const float v = strtof(s, &end);
  if (*s == '\0' || *end != '\0' || errno == ERANGE || !(v >= lo && v <= hi)) return 0;
  *out = v;
  return 1;
}

int tp_cli_u64(const char *s, unsigned long long *out) {
  char *end;
  errno = 0;
  const unsigned long long v = strtoull(s, &end, 10);
  if (*s == '\0' || *s == '-' || *end != '\0' || errno == ERANGE) return 0;
  *out = v;
  return 1;
}

int tp_cli_long_list(const char *s, long lo, long hi, long *out, int cap) {
  int count = 0;
  for (const char *item = s;; ++item) {
    const char *comma = strchr(item, ',');
    const size_t len = comma ? (size_t)(comma - item) : strlen(item);
    char text[32];
    if (count == cap || len == 0 || len >= sizeof text) return 0;
    memcpy(text, item, len);
    text[len] = '\0';
    if (!tp_cli_long(text, lo, hi, &out[count])) return 0;
    ++count;
    if (!comma) return count;
    item = comma;
  }
}

int tp_cli_bad_value(const char *command, const char *flag, const char *value, const char *want) {
  fprintf(stderr, "topos %s: %s wants %s, got '%s'\n", command, flag, want, value);
  return 2;
}

int tp_cli_run_flag(const char *command, const char *flag, const char *value, long *threads, topos_dtype *kv) {
  if (strcmp(flag, "--threads") == 0 || strcmp(flag, "-t") == 0) {
    if (!tp_cli_long(value, 0, 1L << 20, threads)) return tp_cli_bad_value(command, flag, value, "a thread count (0: default)");
    return 1;
  }
  if (strcmp(flag, "--kv") == 0) {
    if (topos_dtype_parse(value, kv) != TOPOS_OK) return tp_cli_bad_value(command, flag, value, "f32, f16 or bf16");
    return 1;
  }
  return 0;
}

double tp_cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int tp_compare_commands(const void *a, const void *b) {
  return strcmp(((const tp_command *)a)->name, ((const tp_command *)b)->name);
}

static void tp_usage(FILE *out) {
  fprintf(out, "topos %s — tensor programs, GGUF models and quantized kernels\n\n", topos_version());
  fprintf(out, "usage: topos COMMAND [ARGS...]\n\ncommands:\n");
  for (int i = 0; i < tp_command_count; ++i)
    if (strncmp(tp_commands[i].name, "bench-", 6) != 0) /* listed by `topos bench` */
      fprintf(out, "  %-12s %s\n", tp_commands[i].name, tp_commands[i].summary);
  fprintf(out, "\n'topos COMMAND --help' describes one command.\n");
}

int main(int argc, char **argv) {
  qsort(tp_commands, (size_t)tp_command_count, sizeof tp_commands[0], tp_compare_commands);
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    tp_usage(stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("topos %s\n", topos_version());
    return 0;
  }
  tp_command_fn fn = tp_command_find(argv[1]);
  if (fn) return fn(argc - 1, argv + 1);
  fprintf(stderr, "topos: unknown command '%s'\n\n", argv[1]);
  tp_usage(stderr);
  return 2;
}
