/* Base services for the quantized products: ranges on the thread pool of
 * src/base/threads.h (with an explicit range count for tests and benches),
 * CPU checks from src/base/cpu.h (TOPOS_DISABLE_ISA applied there), and the
 * test-only ISA cap. */
#include "quant/qk_shim.h"

#include "base/cpu.h"
#include "base/threads.h"

#include <stdatomic.h>

/* Balancing without breaking the streams. Each thread's share is one
 * contiguous span of [0, n), which its owner takes from the front a chunk
 * at a time, so the weights it reads stay one forward stream for the
 * hardware and software prefetchers (cutting [0, n) into many small ranges
 * handed out in turn interleaves the threads' streams: measured slower).
 * A thread whose span is empty takes the back half of what is left of the
 * fullest other span and makes it its own (where others may steal from it
 * in turn): on a shared machine the thread that got less of a core does
 * less, and the join waits for one chunk at most instead of the difference
 * between the shares (0.9-5 ms per decoded TinyLlama token at 2 threads
 * before). Every index is run exactly once, by whichever thread claims it;
 * the products' results never depend on the cut. A span is one 64-bit word
 * (front << 32 | back), claimed by compare-and-swap. */
typedef struct {
  _Alignas(64) atomic_uint_fast64_t span;
} tp_qk_span;

typedef struct {
  tp_qk_range_fn fn;
  void *ctx;
  int ranges;
  int64_t chunk;
  tp_qk_span *spans;
} tp_qk_steal;

static inline uint64_t tp_qk_pack(int64_t front, int64_t back) { return (uint64_t)front << 32 | (uint64_t)back; }

/* The owner's next claim from the front of its span. */
static bool tp_qk_take_front(tp_qk_span *s, int64_t chunk, int64_t *begin, int64_t *end) {
  uint64_t v = atomic_load_explicit(&s->span, memory_order_acquire);
  for (;;) {
    const int64_t f = (int64_t)(v >> 32), b = (int64_t)(uint32_t)v;
    if (f >= b) return false;
    /* a chunk, or a quarter of what is left once that is smaller (the
     * last claims small: the join waits for little) */
    const int64_t quarter = (b - f + 3) / 4, step = quarter < chunk ? quarter : chunk;
    const int64_t e = f + step;
    if (atomic_compare_exchange_weak_explicit(&s->span, &v, tp_qk_pack(e, b), memory_order_acq_rel,
                                              memory_order_acquire)) {
      *begin = f, *end = e;
      return true;
    }
  }
}

/* A thief's take: the back half (rounded up) of what is left of s. */
static bool tp_qk_take_back(tp_qk_span *s, int64_t *begin, int64_t *end) {
  uint64_t v = atomic_load_explicit(&s->span, memory_order_acquire);
  for (;;) {
    const int64_t f = (int64_t)(v >> 32), b = (int64_t)(uint32_t)v;
    if (f >= b) return false;
    const int64_t cut = b - (b - f + 1) / 2;
    if (atomic_compare_exchange_weak_explicit(&s->span, &v, tp_qk_pack(f, cut), memory_order_acq_rel,
                                              memory_order_acquire)) {
      *begin = cut, *end = b;
      return true;
    }
  }
}

static void tp_qk_steal_range(void *vx, int64_t r0, int64_t r1) {
  tp_qk_steal *x = vx;
  for (int64_t r = r0; r < r1; ++r) {
    tp_qk_span *own = &x->spans[r];
    for (;;) {
      int64_t begin, end;
      while (tp_qk_take_front(own, x->chunk, &begin, &end)) x->fn(x->ctx, begin, end);
      int victim = -1;
      int64_t most = 0;
      for (int j = 0; j < x->ranges; ++j) {
        const uint64_t v = atomic_load_explicit(&x->spans[j].span, memory_order_relaxed);
        const int64_t left = (int64_t)(uint32_t)v - (int64_t)(v >> 32);
        if (j != r && left > most) most = left, victim = j;
      }
      if (victim < 0) break;
      /* own is empty: nobody else takes from it until it holds the stolen run */
      if (tp_qk_take_back(&x->spans[victim], &begin, &end))
        atomic_store_explicit(&own->span, tp_qk_pack(begin, end), memory_order_release);
    }
  }
}

void tp_qk_parallel_for(int threads, int64_t n, int64_t grain, tp_qk_range_fn fn, void *ctx) {
  if (n <= 0) return;
  const int ranges = tp_parallel_range_count(n, grain, threads > 0 ? threads : topos_threads());
  enum { MOST = 64 };
  if (ranges <= 1 || ranges > MOST || n > INT32_MAX) {
    if (threads <= 0 || ranges <= 1) tp_parallel_for(n, grain, fn, ctx);
    else tp_parallel_for(n, (n + ranges - 1) / ranges, fn, ctx);
    return;
  }
  tp_qk_span spans[MOST];
  for (int i = 0; i < ranges; ++i) {
    int64_t lo, hi;
    tp_parallel_range(n, ranges, i, &lo, &hi);
    atomic_init(&spans[i].span, tp_qk_pack(lo, hi));
  }
  /* an eighth of a share per claim: few claims, a short wait at the join */
  const int64_t share = n / ranges, chunk = share / 8 > 0 ? share / 8 : 1;
  tp_qk_steal x = {fn, ctx, ranges, chunk, spans};
  tp_parallel_for(ranges, 1, tp_qk_steal_range, &x);
}

bool tp_qk_cpu_avx2(void) {
#if defined(__x86_64__)
  return tp_cpu_has_avx2_set();
#else
  return false;
#endif
}

bool tp_qk_cpu_avx512vnni(void) {
#if defined(__x86_64__)
  return tp_cpu_has_avx512vnni_set();
#else
  return false;
#endif
}

bool tp_qk_cpu_neon_dotprod(void) {
#if defined(__aarch64__)
  const uint32_t need = TP_CPU_BIT(TOPOS_CPU_NEON) | TP_CPU_BIT(TOPOS_CPU_DOTPROD);
  return (tp_cpu_features() & need) == need;
#else
  return false;
#endif
}

static int tp_qk_cap = TP_QK_ISA_ANY;

bool tp_qk_amx_usable(void) {
#if defined(__x86_64__)
  return tp_qk_cap >= TP_QK_ISA_AMX && tp_qk_cpu_avx512vnni() &&
         (tp_cpu_features() & TP_CPU_BIT(TOPOS_CPU_AMX_INT8)) != 0;
#else
  return false;
#endif
}
bool tp_qk_amx_bf16_usable(void) {
#if defined(__x86_64__)
  return tp_qk_cap >= TP_QK_ISA_AMX && tp_qk_cpu_avx512vnni() &&
         (tp_cpu_features() & TP_CPU_BIT(TOPOS_CPU_AMX_BF16)) != 0;
#else
  return false;
#endif
}
void tp_qk_set_isa_cap(int cap) { tp_qk_cap = cap; }
int tp_qk_isa_cap(void) { return tp_qk_cap; }
