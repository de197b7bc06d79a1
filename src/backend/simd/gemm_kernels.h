/* Internal: GEMM microkernels, the only ISA-specific part of the SIMD GEMM.
 *
 * A microkernel computes one MR x NR tile of C from packed panels:
 *   a: kc steps of MR values (A rows ir..ir+MR-1 at depth p: a[p*MR + r])
 *   b: kc steps of NR values (B columns at depth p: b[p*NR + j])
 *   c: MR rows of NR values, row stride ldc.
 * accumulate == 0: C = A.B; otherwise C += A.B — by loading C into the
 * accumulators and continuing the chain, so each element stays one chain of
 * fused multiply-adds in ascending depth, whatever kc blocking is used.
 * The kernels must keep exactly that per-element operation order (no split
 * accumulators over depth), which makes all ISAs agree bit for bit.
 * Panels are 64-byte aligned; c has no alignment. kc >= 1. */
#ifndef TP_BACKEND_SIMD_GEMM_KERNELS_H
#define TP_BACKEND_SIMD_GEMM_KERNELS_H

#include <stdint.h>

typedef void (*tp_gemm_ukernel_f32)(int64_t kc, const float *a, const float *b, float *c,
                                    int64_t ldc, int accumulate);
typedef void (*tp_gemm_ukernel_f64)(int64_t kc, const double *a, const double *b, double *c,
                                    int64_t ldc, int accumulate);

/* Register tile shapes, shared by the kernel files and the blocking table. */
#define TP_GEMM_SCALAR_F32_MR 4
#define TP_GEMM_SCALAR_F32_NR 4
#define TP_GEMM_SCALAR_F64_MR 4
#define TP_GEMM_SCALAR_F64_NR 4
#define TP_GEMM_AVX2_F32_MR 6
#define TP_GEMM_AVX2_F32_NR 16
#define TP_GEMM_AVX2_F64_MR 6
#define TP_GEMM_AVX2_F64_NR 8
#define TP_GEMM_AVX512_F32_MR 14
#define TP_GEMM_AVX512_F32_NR 32
#define TP_GEMM_AVX512_F64_MR 14
#define TP_GEMM_AVX512_F64_NR 16
#define TP_GEMM_NEON_F32_MR 8
#define TP_GEMM_NEON_F32_NR 12
#define TP_GEMM_NEON_F64_MR 8
#define TP_GEMM_NEON_F64_NR 6

/* Largest MR * NR of any kernel (edge tiles go through a buffer this big). */
#define TP_GEMM_MAX_TILE 512

void tp_gemm_ukernel_scalar_f32(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                                int accumulate);
void tp_gemm_ukernel_scalar_f64(int64_t kc, const double *a, const double *b, double *c,
                                int64_t ldc, int accumulate);
#if defined(__x86_64__)
void tp_gemm_ukernel_avx2_f32(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                              int accumulate);
void tp_gemm_ukernel_avx2_f64(int64_t kc, const double *a, const double *b, double *c, int64_t ldc,
                              int accumulate);
void tp_gemm_ukernel_avx512_f32(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                                int accumulate);
void tp_gemm_ukernel_avx512_f64(int64_t kc, const double *a, const double *b, double *c,
                                int64_t ldc, int accumulate);
#endif
#if defined(__aarch64__)
void tp_gemm_ukernel_neon_f32(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                              int accumulate);
void tp_gemm_ukernel_neon_f64(int64_t kc, const double *a, const double *b, double *c, int64_t ldc,
                              int accumulate);
#endif

#endif
