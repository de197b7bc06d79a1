/* The built-in rungs' view of the platform (platform.h), on base's CPU
 * detection (with the TOPOS_DISABLE_ISA mask) and thread pool. */
#include "backend/platform.h"

#include <stdlib.h>

#include "base/cpu.h"
#include "base/threads.h"

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

tp_vector_isa tp_vector_isa_best(void) {
#if defined(__x86_64__)
  if (tp_cpu_has_avx512_set()) return TP_VECTOR_AVX512;
  if (tp_cpu_has_avx2_set()) return TP_VECTOR_AVX2;
#endif
  return TP_VECTOR_BASELINE;
}

int tp_backend_threads(void) { return topos_threads(); }

void tp_backend_set_threads(int threads) {
  if (threads < 1) threads = tp_threads_default_for(getenv("TOPOS_THREADS"));
  topos_set_threads(threads);
}

void tp_backend_parallel_for(int64_t n, int64_t grain,
                             void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx) {
  tp_parallel_for(n, grain, fn, ctx);
}
