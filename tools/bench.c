/* `topos bench NAME [ARGS]`: benchmarks are programs under bench/ that
 * register as "bench-NAME"; this group lists and runs them. `topos bench all`
 * runs each with its default arguments. */
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static void tp_bench_list_one(const char *name, const char *summary, void *ctx) {
  FILE *out = ctx;
  if (strncmp(name, "bench-", 6) == 0) fprintf(out, "  %-12s %s\n", name + 6, summary);
}

static void tp_bench_run_one(const char *name, const char *summary, void *ctx) {
  int *failures = ctx;
  (void)summary;
  if (strncmp(name, "bench-", 6) != 0) return;
  char *argv[2] = {(char *)name, NULL};
  printf("\n== topos bench %s\n", name + 6);
  fflush(stdout);
  if (tp_command_find(name)(1, argv) != 0) ++*failures;
}

static int tp_cmd_bench(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    FILE *out = argc < 2 ? stderr : stdout;
    fprintf(out, "usage: topos bench NAME [ARGS...]   (or: topos bench all)\n\nbenchmarks:\n");
    tp_command_each(tp_bench_list_one, out);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "all") == 0) {
    int failures = 0;
    tp_command_each(tp_bench_run_one, &failures);
    return failures ? 1 : 0;
  }
  char name[128];
  snprintf(name, sizeof name, "bench-%s", argv[1]);
  tp_command_fn fn = tp_command_find(name);
  if (!fn) {
    fprintf(stderr, "topos bench: no benchmark named '%s'\n", argv[1]);
    return 2;
  }
  argv[1] = name;
  return fn(argc - 1, argv + 1);
}

TOPOS_COMMAND("bench", "run a benchmark: topos bench NAME (list: topos bench --help)", tp_cmd_bench)
