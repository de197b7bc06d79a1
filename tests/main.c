/* Test runner: runs every registered test (or those whose name or file
 * contains one of the arguments) in registration order, prints failures and
 * ends with "N passed, M failed, K skipped". Exit status 1 when any failed.
 * `--shard I/N` keeps the selected tests whose position is I modulo N,
 * so N processes can share a slow run (valgrind, qemu) between cores:
 * scripts/test-shards.sh runs them side by side. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

typedef struct {
  const char *name;
  const char *file;
  tt_fn fn;
} tt_case;

static tt_case *tt_cases;
static size_t tt_count, tt_capacity;
static int tt_current_failed, tt_current_skipped;
static const char *tt_current_name;

void tt_register(const char *name, const char *file, tt_fn fn) {
  if (tt_count == tt_capacity) {
    tt_capacity = tt_capacity ? tt_capacity * 2 : 256;
    tt_cases = realloc(tt_cases, tt_capacity * sizeof *tt_cases);
    if (!tt_cases) {
      fprintf(stderr, "test registry: out of memory\n");
      exit(2);
    }
  }
  tt_cases[tt_count++] = (tt_case){name, file, fn};
}

void tt_fail_at(const char *file, int line, const char *fmt, ...) {
  va_list args;
  if (!tt_current_failed) printf("FAIL %s\n", tt_current_name);
  tt_current_failed = 1;
  printf("  %s:%d: ", file, line);
  va_start(args, fmt);
  vprintf(fmt, args);
  va_end(args);
  printf("\n");
  fflush(stdout);
}

void tt_skip(const char *why) {
  tt_current_skipped = 1;
  printf("skip %s: %s\n", tt_current_name, why);
}

int tt_under_valgrind(void) {
  const char *preload = getenv("LD_PRELOAD");
  return preload && strstr(preload, "vgpreload") != NULL;
}

int tt_instrumented(void) { return tt_under_valgrind() || getenv("TOPOS_TEST_EMULATOR") != NULL; }

const char *tt_data_path(const char *rel) {
  static char path[4096];
  const char *roots[3] = {getenv("TOPOS_DATA"), "../shared/data", "../../shared/data"};
  for (int i = 0; i < 3; ++i) {
    struct stat st;
    if (!roots[i]) continue;
    snprintf(path, sizeof path, "%s/%s", roots[i], rel);
    if (stat(path, &st) == 0) return path;
  }
  return NULL;
}

static char tt_tmp[256];
static void tt_cleanup_tmp(void) {
  if (tt_tmp[0]) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tt_tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tt_tmp);
  }
}
const char *tt_tmpdir(void) {
  if (!tt_tmp[0]) {
    snprintf(tt_tmp, sizeof tt_tmp, "/tmp/topos-tests-XXXXXX");
    if (!mkdtemp(tt_tmp)) {
      fprintf(stderr, "mkdtemp failed\n");
      exit(2);
    }
    atexit(tt_cleanup_tmp);
  }
  return tt_tmp;
}

static int tt_selected(const tt_case *c, int argc, char **argv) {
  if (argc < 2) return 1;
  for (int i = 1; i < argc; ++i)
    if (strstr(c->name, argv[i]) || strstr(c->file, argv[i])) return 1;
  return 0;
}

int main(int argc, char **argv) {
  int passed = 0, failed = 0, skipped = 0;
  int verbose = getenv("TOPOS_TEST_VERBOSE") != NULL;
  if (argc > 1 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < tt_count; ++i) printf("%s  (%s)\n", tt_cases[i].name, tt_cases[i].file);
    return 0;
  }
  unsigned shard = 0, shards = 1;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--shard") != 0) continue;
    char extra;
    if (i + 1 >= argc || sscanf(argv[i + 1], "%u/%u%c", &shard, &shards, &extra) != 2 ||
        shards == 0 || shard >= shards) {
      fprintf(stderr, "--shard wants I/N with 0 <= I < N, e.g. --shard 0/2\n");
      return 2;
    }
    for (int j = i; j + 2 <= argc; ++j) argv[j] = argv[j + 2]; /* drop the pair, keep NULL */
    argc -= 2;
    --i;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (size_t i = 0, n_selected = 0; i < tt_count; ++i) {
    tt_case *c = &tt_cases[i];
    if (!tt_selected(c, argc, argv)) continue;
    if (n_selected++ % shards != shard) continue;
    tt_current_name = c->name;
    tt_current_failed = 0;
    tt_current_skipped = 0;
    topos_clear_error();
    struct timespec t0, t1, u0, u1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &u0);
    c->fn();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &u1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (tt_current_failed)
      ++failed;
    else if (tt_current_skipped)
      ++skipped;
    else
      ++passed;
    /* CPU time of all threads: what a run under valgrind, which runs the
     * threads one at a time, pays for (wall time hides it behind threads) */
    if (verbose)
      printf("%s %s (%.1f ms, cpu %.1f ms)\n", tt_current_failed ? "FAIL" : "ok  ", c->name,
             (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
             (u1.tv_sec - u0.tv_sec) * 1e3 + (u1.tv_nsec - u0.tv_nsec) / 1e6);
  }
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  free(tt_cases);
  return failed ? 1 : 0;
}
