/* Stand-ins for base's CPU detection and thread pool (see simd_platform.h).
 * The CPU check uses the compiler's cpuid helper (which also checks that the
 * OS saves the wide registers); the parallel loop starts plain threads per
 * call, which is fine for the coarse, one-fork-per-GEMM way the GEMM uses it. */
#include "backend/simd/simd_platform.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *tp_simd_isa_name(tp_simd_isa isa) {
  switch (isa) {
    case TP_SIMD_ISA_SCALAR: return "scalar";
    case TP_SIMD_ISA_AVX2: return "avx2";
    case TP_SIMD_ISA_AVX512: return "avx512";
    case TP_SIMD_ISA_NEON: return "neon";
    case TP_SIMD_ISA_COUNT: break;
  }
  return "unknown";
}

/* 1 when the comma-separated list names `group` (case-insensitive), or "all". */
static int tp_simd_env_lists(const char *list, const char *group) {
  size_t glen = strlen(group);
  const char *p = list;
  while (*p) {
    while (*p == ',' || *p == ' ') ++p;
    const char *start = p;
    while (*p && *p != ',') ++p;
    const char *end = p;
    while (end > start && end[-1] == ' ') --end;
    size_t len = (size_t)(end - start);
    int match = 1;
    if (len == glen) {
      for (size_t i = 0; i < len; ++i)
        if (tolower((unsigned char)start[i]) != group[i]) match = 0;
    } else if (len == 3) {
      for (size_t i = 0; i < 3; ++i)
        if (tolower((unsigned char)start[i]) != "all"[i]) match = 0;
    } else {
      match = 0;
    }
    if (match) return 1;
  }
  return 0;
}

static int tp_simd_detect(tp_simd_isa isa) {
  const char *mask = getenv("TOPOS_DISABLE_ISA");
  if (!mask) mask = "";
  switch (isa) {
    case TP_SIMD_ISA_SCALAR: return 1;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    case TP_SIMD_ISA_AVX2:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             !tp_simd_env_lists(mask, "avx2") && !tp_simd_env_lists(mask, "avx");
    case TP_SIMD_ISA_AVX512:
      __builtin_cpu_init();
      return tp_simd_detect(TP_SIMD_ISA_AVX2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl") && !tp_simd_env_lists(mask, "avx512");
#endif
#if defined(__aarch64__)
    case TP_SIMD_ISA_NEON: return !tp_simd_env_lists(mask, "neon"); /* baseline on aarch64 */
#endif
    default: return 0;
  }
}

static atomic_int tp_simd_isa_bits = -1; /* bit per available ISA, -1 until detected */

int tp_simd_isa_available(tp_simd_isa isa) {
  int bits = atomic_load_explicit(&tp_simd_isa_bits, memory_order_acquire);
  if (bits < 0) {
    bits = 0;
    for (int i = 0; i < TP_SIMD_ISA_COUNT; ++i)
      if (tp_simd_detect((tp_simd_isa)i)) bits |= 1 << i;
    atomic_store_explicit(&tp_simd_isa_bits, bits, memory_order_release);
  }
  return (int)isa >= 0 && isa < TP_SIMD_ISA_COUNT && ((bits >> isa) & 1);
}

tp_simd_isa tp_simd_isa_best(void) {
  static const tp_simd_isa order[] = {TP_SIMD_ISA_AVX512, TP_SIMD_ISA_NEON, TP_SIMD_ISA_AVX2};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; ++i)
    if (tp_simd_isa_available(order[i])) return order[i];
  return TP_SIMD_ISA_SCALAR;
}

/* ---- threads */

static atomic_int tp_simd_thread_override;

void tp_simd_set_threads(int threads) {
  atomic_store(&tp_simd_thread_override, threads > 0 ? threads : 0);
}

int tp_simd_threads(void) {
  int forced = atomic_load(&tp_simd_thread_override);
  if (forced > 0) return forced;
  const char *env = getenv("TOPOS_THREADS");
  if (env && *env) {
    long v = strtol(env, NULL, 10);
    if (v >= 1 && v <= 1024) return (int)v;
  }
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores >= 1 && cores <= 1024 ? (int)cores : 1;
}

typedef struct {
  void (*fn)(void *ctx, int64_t begin, int64_t end);
  void *ctx;
  int64_t begin, end;
} tp_simd_chunk;

static void *tp_simd_chunk_main(void *arg) {
  tp_simd_chunk *chunk = arg;
  chunk->fn(chunk->ctx, chunk->begin, chunk->end);
  return NULL;
}

enum { TP_SIMD_MAX_THREADS = 64 };

void tp_simd_parallel_for(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t begin, int64_t end),
                          void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int64_t chunks = (n + grain - 1) / grain;
  int64_t threads = tp_simd_threads();
  if (threads > TP_SIMD_MAX_THREADS) threads = TP_SIMD_MAX_THREADS;
  if (chunks > threads) chunks = threads;
  if (chunks <= 1) {
    fn(ctx, 0, n);
    return;
  }
  tp_simd_chunk work[TP_SIMD_MAX_THREADS];
  pthread_t ids[TP_SIMD_MAX_THREADS];
  int started[TP_SIMD_MAX_THREADS] = {0};
  for (int64_t i = 0; i < chunks; ++i)
    work[i] = (tp_simd_chunk){fn, ctx, i * n / chunks, (i + 1) * n / chunks};
  for (int64_t i = 1; i < chunks; ++i)
    started[i] = pthread_create(&ids[i], NULL, tp_simd_chunk_main, &work[i]) == 0;
  fn(ctx, work[0].begin, work[0].end);
  for (int64_t i = 1; i < chunks; ++i) {
    if (started[i])
      pthread_join(ids[i], NULL);
    else /* could not start a thread: do its share here */
      fn(ctx, work[i].begin, work[i].end);
  }
}
