/* Stand-ins for base's CPU detection and thread pool (see platform.h). The
 * parallel loop starts plain threads per call: the kernels fork once per
 * task over large outputs, so a pool would save microseconds, not change
 * results. */
#include "backend/platform.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *tp_vector_isa_name(tp_vector_isa isa) {
  switch (isa) {
    case TP_VECTOR_AVX512: return "avx512";
    case TP_VECTOR_AVX2: return "avx2";
    case TP_VECTOR_BASELINE: break;
  }
#if defined(__x86_64__)
  return "sse2";
#elif defined(__aarch64__)
  return "neon";
#else
  return "scalar";
#endif
}

/* 1 when the comma-separated TOPOS_DISABLE_ISA names `word` or "all". */
static int tp_isa_masked(const char *word) {
  const char *list = getenv("TOPOS_DISABLE_ISA");
  if (!list) return 0;
  size_t wlen = strlen(word);
  while (*list) {
    while (*list == ',' || *list == ' ') ++list;
    const char *start = list;
    while (*list && *list != ',' && *list != ' ') ++list;
    size_t len = (size_t)(list - start);
    if ((len == wlen && strncasecmp(start, word, len) == 0) ||
        (len == 3 && strncasecmp(start, "all", 3) == 0))
      return 1;
  }
  return 0;
}

static tp_vector_isa tp_detect_isa(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             !tp_isa_masked("avx2");
  if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      !tp_isa_masked("avx512"))
    return TP_VECTOR_AVX512;
  if (avx2) return TP_VECTOR_AVX2;
#endif
  return TP_VECTOR_BASELINE;
}

static atomic_int tp_isa_cached = -1;

tp_vector_isa tp_vector_isa_best(void) {
  int isa = atomic_load_explicit(&tp_isa_cached, memory_order_acquire);
  if (isa < 0) {
    isa = (int)tp_detect_isa();
    atomic_store_explicit(&tp_isa_cached, isa, memory_order_release);
  }
  return (tp_vector_isa)isa;
}

static atomic_int tp_threads_override;

void tp_backend_set_threads(int threads) {
  atomic_store(&tp_threads_override, threads > 0 ? threads : 0);
}

int tp_backend_threads(void) {
  int forced = atomic_load(&tp_threads_override);
  if (forced > 0) return forced;
  const char *env = getenv("TOPOS_THREADS");
  if (env && *env) {
    long v = strtol(env, NULL, 10);
    if (v >= 1 && v <= 1024) return (int)v;
  }
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores >= 1 ? (int)(cores > 1024 ? 1024 : cores) : 1;
}

typedef struct tp_chunk {
  void (*fn)(void *ctx, int64_t begin, int64_t end);
  void *ctx;
  int64_t begin, end;
} tp_chunk;

static void *tp_chunk_run(void *arg) {
  tp_chunk *c = arg;
  c->fn(c->ctx, c->begin, c->end);
  return NULL;
}

enum { TP_MAX_WORKERS = 64 };

void tp_backend_parallel_for(int64_t n, int64_t grain,
                             void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int64_t chunks = (n + grain - 1) / grain;
  int64_t threads = tp_backend_threads();
  if (threads > TP_MAX_WORKERS) threads = TP_MAX_WORKERS;
  if (chunks > threads) chunks = threads;
  if (chunks <= 1) {
    fn(ctx, 0, n);
    return;
  }
  tp_chunk work[TP_MAX_WORKERS];
  pthread_t ids[TP_MAX_WORKERS];
  int started[TP_MAX_WORKERS] = {0};
  int64_t per = n / chunks, extra = n % chunks, at = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t len = per + (c < extra ? 1 : 0);
    work[c] = (tp_chunk){fn, ctx, at, at + len};
    at += len;
  }
  /* Chunk 0 runs here; a thread that cannot start runs here too, in order. */
  for (int64_t c = 1; c < chunks; ++c)
    started[c] = pthread_create(&ids[c], NULL, tp_chunk_run, &work[c]) == 0;
  tp_chunk_run(&work[0]);
  for (int64_t c = 1; c < chunks; ++c) {
    if (started[c])
      pthread_join(ids[c], NULL);
    else
      tp_chunk_run(&work[c]);
  }
}
