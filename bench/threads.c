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

/* --work N: each index runs a dependent chain of N multiply-adds (about a
 * nanosecond each), so a dispatch costs the work plus the join; with the
 * work split over T threads the ideal is (indices / T) x the work. */
typedef struct {
  int64_t iterations;
  float sink[64];
} tp_bench_work;

static void tp_bench_work_range(void *ctx, int64_t begin, int64_t end) {
  tp_bench_work *work = ctx;
  for (int64_t i = begin; i < end; ++i) {
    float x = (float)i;
    for (int64_t k = 0; k < work->iterations; ++k) x = x * 0.999999f + 1e-6f;
    work->sink[i % 64] = x; /* one writer per index within a dispatch */
  }
}

static double tp_bench_now_us(void) {
  return tp_cli_now() * 1e6;
}

static int tp_bench_threads_command(int argc, char **argv) {
  int iterations = 20000;
  tp_bench_work work = {0, {0}};
  int counts[16] = {1, 2}, count_n = 2, counts_given = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: topos bench-threads [--iterations N] [--work N] [THREADS...]\n\n"
             "Microseconds per empty tp_parallel_for dispatch (default at 1 and 2 threads);\n"
             "--work N: each index (one per thread) runs N dependent multiply-adds.\n");
      return 0;
    }
    long v;
    if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      if (!tp_cli_long(argv[++i], 1, 100000000, &v))
        return tp_cli_bad_value("bench-threads", "--iterations", argv[i], "a count in 1..100000000");
      iterations = (int)v;
      continue;
    }
    if (strcmp(argv[i], "--work") == 0 && i + 1 < argc) {
      if (!tp_cli_long(argv[++i], 0, 1000000000L, &v))
        return tp_cli_bad_value("bench-threads", "--work", argv[i], "a count in 0..1000000000");
      work.iterations = v;
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
    tp_range_fn range_fn = work.iterations ? tp_bench_work_range : tp_bench_empty_range;
    for (int i = 0; i < 1000; ++i) tp_parallel_for(n, 1, range_fn, &work);
    /* back-to-back: workers are still spinning, as inside a decode step */
    double t0 = tp_bench_now_us();
    for (int i = 0; i < iterations; ++i) tp_parallel_for(n, 1, range_fn, &work);
    double hot = (tp_bench_now_us() - t0) / iterations;
    /* after a pause long enough for workers to fall asleep: the wake-up cost */
    int cold_iterations = iterations / 100 < 20 ? 20 : iterations / 100;
    double cold_total = 0;
    for (int i = 0; i < cold_iterations; ++i) {
      struct timespec pause = {0, 2000000}; /* 2 ms */
      nanosleep(&pause, NULL);
      double t1 = tp_bench_now_us();
      tp_parallel_for(n, 1, range_fn, &work);
      cold_total += tp_bench_now_us() - t1;
    }
    printf("%-8d %-8d %-22.3f %.3f\n", counts[c], tp_parallel_range_count(n, 1, counts[c]), hot,
           cold_total / cold_iterations);
  }
  return 0;
}

TOPOS_COMMAND("bench-threads", "microseconds per empty parallel_for dispatch",
              tp_bench_threads_command)
