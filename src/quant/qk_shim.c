/* Stop-gap base services for the quantized products until src/base provides
 * the thread pool and CPU detection: a pthread fan-out per call and
 * __builtin_cpu_supports with a minimal TOPOS_DISABLE_ISA parser. */
#include "quant/qk_shim.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TP_QK_MAX_THREADS 64

typedef struct {
  tp_qk_range_fn fn;
  void *ctx;
  int64_t begin, end;
} tp_qk_job;

static void *tp_qk_job_main(void *arg) {
  tp_qk_job *job = arg;
  job->fn(job->ctx, job->begin, job->end);
  return NULL;
}

static int tp_qk_default_threads(void) {
  const char *env = getenv("TOPOS_THREADS");
  if (env) {
    int v = atoi(env);
    if (v >= 1 && v <= TP_QK_MAX_THREADS) return v;
  }
  return 1;
}

void tp_qk_parallel_for(int threads, int64_t n, int64_t grain, tp_qk_range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (threads <= 0) threads = tp_qk_default_threads();
  if (threads > TP_QK_MAX_THREADS) threads = TP_QK_MAX_THREADS;
  if (grain < 1) grain = 1;
  int64_t ranges = n / grain;
  if (ranges > threads) ranges = threads;
  if (ranges <= 1) {
    fn(ctx, 0, n);
    return;
  }
  tp_qk_job jobs[TP_QK_MAX_THREADS];
  pthread_t tids[TP_QK_MAX_THREADS];
  int started[TP_QK_MAX_THREADS];
  int64_t base = n / ranges, extra = n % ranges, at = 0;
  for (int64_t i = 0; i < ranges; ++i) {
    int64_t len = base + (i < extra ? 1 : 0);
    jobs[i] = (tp_qk_job){fn, ctx, at, at + len};
    at += len;
  }
  for (int64_t i = 1; i < ranges; ++i)
    started[i] = pthread_create(&tids[i], NULL, tp_qk_job_main, &jobs[i]) == 0;
  fn(ctx, jobs[0].begin, jobs[0].end);
  for (int64_t i = 1; i < ranges; ++i) {
    if (started[i])
      pthread_join(tids[i], NULL);
    else
      fn(ctx, jobs[i].begin, jobs[i].end); /* could not start a thread: run it here */
  }
}

/* 1 when TOPOS_DISABLE_ISA names `group` (comma separated, case-insensitive). */
static int tp_qk_isa_disabled(const char *group) {
  const char *spec = getenv("TOPOS_DISABLE_ISA");
  if (!spec) return 0;
  size_t len = strlen(group);
  for (const char *p = spec; *p;) {
    while (*p == ' ' || *p == ',') ++p;
    const char *e = p;
    while (*e && *e != ',') ++e;
    const char *t = e;
    while (t > p && t[-1] == ' ') --t;
    if ((size_t)(t - p) == len && strncasecmp(p, group, len) == 0) return 1;
    if ((size_t)(t - p) == 3 && strncasecmp(p, "all", 3) == 0) return 1;
    p = e;
  }
  return 0;
}

bool tp_qk_cpu_avx2(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         !tp_qk_isa_disabled("avx2") && !tp_qk_isa_disabled("avx");
#else
  return false;
#endif
}

bool tp_qk_cpu_avx512vnni(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return tp_qk_cpu_avx2() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni") &&
         !tp_qk_isa_disabled("avx512") && !tp_qk_isa_disabled("vnni") &&
         !tp_qk_isa_disabled("avx512vnni");
#else
  return false;
#endif
}

static int tp_qk_cap = TP_QK_ISA_ANY;
void tp_qk_set_isa_cap(int cap) { tp_qk_cap = cap; }
int tp_qk_isa_cap(void) { return tp_qk_cap; }
