/* Internal: what the built-in rungs need from the platform — which vector
 * ISA the default kernels may use and a fork-join loop over outputs.
 * Thin names over base/cpu.h and base/threads.h (platform.c). */
#ifndef TP_BACKEND_PLATFORM_H
#define TP_BACKEND_PLATFORM_H

#include <stdint.h>

typedef enum tp_vector_isa {
  TP_VECTOR_BASELINE, /* what the library is compiled for (SSE2 on x86-64) */
  TP_VECTOR_AVX2,     /* AVX2 + FMA */
  TP_VECTOR_AVX512,   /* AVX-512 F/BW/DQ/VL */
} tp_vector_isa;

/* The strongest ISA the CPU, the OS and TOPOS_DISABLE_ISA (avx512, avx2,
 * all) allow. Detected once. */
tp_vector_isa tp_vector_isa_best(void);
const char *tp_vector_isa_name(tp_vector_isa isa);

/* Threads the built-in rungs use (>= 1): topos_threads(). */
int tp_backend_threads(void);
/* topos_set_threads; 0 returns to the default (TOPOS_THREADS or the cores). */
void tp_backend_set_threads(int threads);

/* Calls fn(ctx, begin, end) on disjoint chunks covering [0, n), each at
 * least `grain` long (but the last), on up to tp_backend_threads() threads;
 * returns when all have returned. Callers split outputs, never reductions,
 * so the chunking never changes a bit. */
void tp_backend_parallel_for(int64_t n, int64_t grain,
                             void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);

#endif
