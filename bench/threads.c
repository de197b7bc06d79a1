/* `topos bench-threads`: cost of dispatching an empty tp_parallel_for, the
 * fixed price every parallel kernel call pays (LLM decode makes hundreds of
 * such calls per token). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/threads.h"
#include "tools/cli.h"

static void tp_bench_empty_range(void *ctx, int64_t begin, int64_t end) {
  (void)begin;
  (void)end;
  (void)ctx;
}

static double tp_bench_now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int tp_bench_threads_command(int argc, char **argv) {
  int iterations = 20000;
  int counts[16] = {1, 2}, count_n = 2, counts_given = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: topos bench-threads [--iterations N] [THREADS...]\n\n"
             "Microseconds per empty tp_parallel_for dispatch (default at 1 and 2 threads).\n");
      return 0;
    }
    if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = atoi(argv[++i]);
      if (iterations < 1) iterations = 1;
      continue;
    }
    if (!counts_given) count_n = 0;
    counts_given = 1;
    int t;
    if (!tp_threads_parse(argv[i], &t)) {
      fprintf(stderr, "topos bench-threads: bad thread count '%s'\n", argv[i]);
      return 2;
    }
    if (count_n < 16) counts[count_n++] = t;
  }
  printf("%-8s %-8s %-22s %s\n", "threads", "ranges", "us/dispatch (hot)", "us/dispatch (after 2 ms idle)");
  for (int c = 0; c < count_n; ++c) {
    topos_status status = topos_set_threads(counts[c]);
    if (status != TOPOS_OK) return tp_cli_fail("bench-threads", status, "set threads");
    int64_t n = counts[c]; /* one index per thread: every thread takes part */
    for (int i = 0; i < 1000; ++i) tp_parallel_for(n, 1, tp_bench_empty_range, NULL);
    /* back-to-back: workers are still spinning, as inside a decode step */
    double t0 = tp_bench_now_us();
    for (int i = 0; i < iterations; ++i) tp_parallel_for(n, 1, tp_bench_empty_range, NULL);
    double hot = (tp_bench_now_us() - t0) / iterations;
    /* after a pause long enough for workers to fall asleep: the wake-up cost */
    int cold_iterations = iterations / 100 < 20 ? 20 : iterations / 100;
    double cold_total = 0;
    for (int i = 0; i < cold_iterations; ++i) {
      struct timespec pause = {0, 2000000}; /* 2 ms */
      nanosleep(&pause, NULL);
      double t1 = tp_bench_now_us();
      tp_parallel_for(n, 1, tp_bench_empty_range, NULL);
      cold_total += tp_bench_now_us() - t1;
    }
    printf("%-8d %-8d %-22.3f %.3f\n", counts[c], tp_parallel_range_count(n, 1, counts[c]), hot,
           cold_total / cold_iterations);
  }
  return 0;
}

TOPOS_COMMAND("bench-threads", "microseconds per empty parallel_for dispatch",
              tp_bench_threads_command)
