/* Portable GEMM microkernels (4x4) for CPUs without a vector kernel, and the
 * forced fallback (TOPOS_DISABLE_ISA). They use fma()/fmaf() so each element
 * is the same fused chain as in the vector kernels: every ISA gives the same
 * bits. (Where the CPU has no FMA instruction libm emulates it — slow but
 * exact; such machines are better served by the reference path anyway.) */
#include <math.h>

#include "backend/simd/gemm_kernels.h"

#define TP_GEMM_SCALAR_UKERNEL(NAME, T, MR, NR, FMA)                        \
  void NAME(int64_t kc, const T *a, const T *b, T *c, int64_t ldc, int accumulate) { \
    T acc[MR][NR];                                                          \
    for (int r = 0; r < MR; ++r)                                            \
      for (int j = 0; j < NR; ++j) acc[r][j] = accumulate ? c[r * ldc + j] : (T)0; \
    for (int64_t p = 0; p < kc; ++p) {                                      \
      for (int r = 0; r < MR; ++r)                                          \
        for (int j = 0; j < NR; ++j) acc[r][j] = FMA(a[r], b[j], acc[r][j]); \
      a += MR;                                                              \
      b += NR;                                                              \
    }                                                                       \
    for (int r = 0; r < MR; ++r)                                            \
      for (int j = 0; j < NR; ++j) c[r * ldc + j] = acc[r][j];              \
  }

TP_GEMM_SCALAR_UKERNEL(tp_gemm_ukernel_scalar_f32, float, TP_GEMM_SCALAR_F32_MR,
                       TP_GEMM_SCALAR_F32_NR, fmaf)
TP_GEMM_SCALAR_UKERNEL(tp_gemm_ukernel_scalar_f64, double, TP_GEMM_SCALAR_F64_MR,
                       TP_GEMM_SCALAR_F64_NR, fma)
