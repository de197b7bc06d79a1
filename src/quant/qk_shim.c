/* Base services for the quantized products: ranges on the thread pool of
 * src/base/threads.h (with an explicit range count for tests and benches),
 * CPU checks from src/base/cpu.h (TOPOS_DISABLE_ISA applied there), and the
 * test-only ISA cap. */
#include "quant/qk_shim.h"

#include "base/cpu.h"
#include "base/threads.h"

typedef struct {
  int64_t n;
  int ranges;
  tp_qk_range_fn fn;
  void *ctx;
} tp_qk_split;

/* Range indices -> the same contiguous cut tp_parallel_for would make for
 * `ranges` threads. */
static void tp_qk_split_range(void *vsplit, int64_t begin, int64_t end) {
  const tp_qk_split *s = vsplit;
  for (int64_t i = begin; i < end; ++i) {
    int64_t lo, hi;
    tp_parallel_range(s->n, s->ranges, (int)i, &lo, &hi);
    if (hi > lo) s->fn(s->ctx, lo, hi);
  }
}

void tp_qk_parallel_for(int threads, int64_t n, int64_t grain, tp_qk_range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (threads <= 0) {
    tp_parallel_for(n, grain, fn, ctx);
    return;
  }
  tp_qk_split s = {n, tp_parallel_range_count(n, grain, threads), fn, ctx};
  if (s.ranges <= 1) {
    fn(ctx, 0, n);
    return;
  }
  tp_parallel_for(s.ranges, 1, tp_qk_split_range, &s);
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
void tp_qk_set_isa_cap(int cap) { tp_qk_cap = cap; }
int tp_qk_isa_cap(void) { return tp_qk_cap; }
