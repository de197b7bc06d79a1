/* Internal: what the SIMD backend needs from the platform — which ISA the
 * microkernels may use, and a fork-join parallel loop.
 *
 * These are stand-ins until branch `base` lands src/base/cpu.h
 * (tp_cpu_has_avx512_set, TOPOS_DISABLE_ISA masking) and src/base/threads.h
 * (tp_parallel_for, topos_threads). They have the same shape, so switching is
 * a change of these few functions only. */
#ifndef TP_BACKEND_SIMD_PLATFORM_H
#define TP_BACKEND_SIMD_PLATFORM_H

#include <stdint.h>

/* Instruction sets with microkernels, weakest first. */
typedef enum tp_simd_isa {
  TP_SIMD_ISA_SCALAR, /* portable C with fma(): everywhere */
  TP_SIMD_ISA_AVX2,   /* x86-64 AVX2 + FMA + F16C */
  TP_SIMD_ISA_AVX512, /* x86-64 AVX-512 F/BW/DQ/VL (+ AVX2 set) */
  TP_SIMD_ISA_NEON,   /* aarch64 Advanced SIMD */
  TP_SIMD_ISA_COUNT
} tp_simd_isa;

/* "scalar", "avx2", "avx512", "neon". */
const char *tp_simd_isa_name(tp_simd_isa isa);
/* 1 when this build has the ISA's kernels and the CPU (after the
 * TOPOS_DISABLE_ISA mask) can run them. Scalar is always available. */
int tp_simd_isa_available(tp_simd_isa isa);
/* The strongest available ISA. */
tp_simd_isa tp_simd_isa_best(void);

/* Fork-join loop: calls fn(ctx, begin, end) on disjoint chunks covering
 * [0, n), each at least `grain` long (but the last), possibly concurrently;
 * returns when all calls have returned. Same contract as tp_parallel_for. */
void tp_simd_parallel_for(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t begin, int64_t end),
                          void *ctx);
/* Threads the parallel loop may use (>= 1): topos_threads() once it exists;
 * until then TOPOS_THREADS, else online cores, overridable for tests. */
int tp_simd_threads(void);
/* Test and bench hook: 0 returns to the default. */
void tp_simd_set_threads(int threads);

#endif
