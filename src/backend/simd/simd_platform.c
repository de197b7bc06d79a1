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
#include <time.h>
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

/* A small persistent pool: workers spin briefly after each job (back-to-back
 * GEMMs then start in microseconds, and the other cores stay awake), then
 * sleep on a condition variable. One dispatch at a time; a call made while
 * another is in flight (or from inside a job) runs inline. */
enum { TP_SIMD_MAX_THREADS = 64 };
#define TP_SIMD_SPIN_NS 200000 /* 0.2 ms */

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t wake, done_cond;
  pthread_t ids[TP_SIMD_MAX_THREADS];
  int workers;
  atomic_int busy;          /* a dispatch is in flight */
  atomic_uint generation;   /* bumped per job */
  atomic_int quit;
  /* the current job */
  void (*fn)(void *ctx, int64_t begin, int64_t end);
  void *ctx;
  int64_t n;
  /* generation << 32 | chunks << 16 | next chunk index: a worker that wakes
   * late for an old job sees another generation and claims nothing. */
  atomic_ullong claim;
  atomic_llong done_chunks;
} tp_simd_pool;

static tp_simd_pool tp_simd_the_pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
                                        .wake = PTHREAD_COND_INITIALIZER,
                                        .done_cond = PTHREAD_COND_INITIALIZER};
static _Thread_local int tp_simd_in_job;

static double tp_simd_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline void tp_simd_pause(void) {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#endif
}

/* Claims and runs chunks of job `generation` until none is left. The claim
 * word alone decides (generation, chunk count, next index); the job's other
 * fields are read only after a successful claim, and the caller cannot start
 * the next job before this chunk is counted done. */
static void tp_simd_pool_work(tp_simd_pool *pool, unsigned generation) {
  for (;;) {
    unsigned long long c = atomic_load(&pool->claim);
    if ((unsigned)(c >> 32) != generation) return;
    int64_t chunks = (int64_t)((c >> 16) & 0xffffu), i = (int64_t)(c & 0xffffu);
    if (i >= chunks) return;
    if (!atomic_compare_exchange_weak(&pool->claim, &c, c + 1)) continue;
    tp_simd_in_job = 1;
    pool->fn(pool->ctx, i * pool->n / chunks, (i + 1) * pool->n / chunks);
    tp_simd_in_job = 0;
    if (atomic_fetch_add(&pool->done_chunks, 1) + 1 == chunks) {
      pthread_mutex_lock(&pool->lock);
      pthread_cond_broadcast(&pool->done_cond);
      pthread_mutex_unlock(&pool->lock);
    }
  }
}

static void *tp_simd_worker_main(void *arg) {
  tp_simd_pool *pool = arg;
  unsigned seen = atomic_load(&pool->generation);
  for (;;) {
    double start = tp_simd_now_ns();
    unsigned spins = 0;
    while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->quit)) {
      tp_simd_pause();
      if ((++spins & 255) == 0 && tp_simd_now_ns() - start > TP_SIMD_SPIN_NS) {
        pthread_mutex_lock(&pool->lock);
        while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->quit))
          pthread_cond_wait(&pool->wake, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
      }
    }
    if (atomic_load(&pool->quit)) return NULL;
    seen = atomic_load(&pool->generation);
    tp_simd_pool_work(pool, seen);
  }
}

static void tp_simd_pool_shutdown(void) {
  tp_simd_pool *pool = &tp_simd_the_pool;
  pthread_mutex_lock(&pool->lock);
  atomic_store(&pool->quit, 1);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  for (int i = 0; i < pool->workers; ++i) pthread_join(pool->ids[i], NULL);
  pool->workers = 0;
}

void tp_simd_parallel_for(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t begin, int64_t end),
                          void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int64_t chunks = (n + grain - 1) / grain;
  int64_t threads = tp_simd_threads();
  if (threads > TP_SIMD_MAX_THREADS) threads = TP_SIMD_MAX_THREADS;
  if (chunks > threads) chunks = threads;
  tp_simd_pool *pool = &tp_simd_the_pool;
  int expected = 0;
  if (chunks <= 1 || tp_simd_in_job || !atomic_compare_exchange_strong(&pool->busy, &expected, 1)) {
    fn(ctx, 0, n);
    return;
  }
  /* Grow the pool to chunks - 1 workers (the caller works too). */
  while (pool->workers < chunks - 1 && !atomic_load(&pool->quit)) {
    if (pool->workers == 0 && atexit(tp_simd_pool_shutdown) != 0) break;
    if (pthread_create(&pool->ids[pool->workers], NULL, tp_simd_worker_main, pool) != 0) break;
    ++pool->workers;
  }
  pool->fn = fn;
  pool->ctx = ctx;
  pool->n = n;
  atomic_store(&pool->done_chunks, 0);
  unsigned generation = atomic_load(&pool->generation) + 1;
  atomic_store(&pool->claim, (unsigned long long)generation << 32 | (unsigned long long)chunks << 16);
  pthread_mutex_lock(&pool->lock);
  atomic_store(&pool->generation, generation);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  tp_simd_pool_work(pool, generation); /* with no workers at all, this runs every chunk */
  double start = tp_simd_now_ns();
  unsigned spins = 0;
  while (atomic_load(&pool->done_chunks) < chunks) {
    tp_simd_pause();
    if ((++spins & 255) == 0 && tp_simd_now_ns() - start > TP_SIMD_SPIN_NS) {
      pthread_mutex_lock(&pool->lock);
      while (atomic_load(&pool->done_chunks) < chunks) pthread_cond_wait(&pool->done_cond, &pool->lock);
      pthread_mutex_unlock(&pool->lock);
    }
  }
  atomic_store(&pool->busy, 0);
}
