/* AVX-512 GEMM microkernels: 14 rows x 2 zmm (f32 14x32, f64 14x16) —
 * 28 accumulators, 2 B vectors, 1 broadcast of the 32 zmm registers; per
 * depth step 28 FMAs against 2 vector loads and 14 broadcast loads, so the
 * two FMA ports, not the load ports, are the limit. (12 rows measured the
 * same on the Xeon we tuned on.) B is prefetched 512 elements ahead: 16
 * depth steps of f32, 32 of f64. */
#include <immintrin.h>

#include "backend/simd/gemm_kernels.h"
#include "backend/simd/gemm_ukernel_template.h"

#define TP_PF_B(ptr) _mm_prefetch((const char *)((ptr) + 512), _MM_HINT_T0)
#define TP_PF_C(ptr) _mm_prefetch((const char *)(ptr), _MM_HINT_T0)

TP_GEMM_UKERNEL(tp_gemm_ukernel_avx512_f32, float, __m512, 16, TP_GEMM_AVX512_F32_MR,
                TP_GEMM_AVX512_F32_NR / 16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps,
                _mm512_fmadd_ps, _mm512_setzero_ps, TP_PF_B, TP_PF_C)

TP_GEMM_UKERNEL(tp_gemm_ukernel_avx512_f64, double, __m512d, 8, TP_GEMM_AVX512_F64_MR,
                TP_GEMM_AVX512_F64_NR / 8, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd,
                _mm512_fmadd_pd, _mm512_setzero_pd, TP_PF_B, TP_PF_C)
