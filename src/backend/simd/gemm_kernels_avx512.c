/* AVX-512 GEMM microkernels: 12 rows x 2 zmm (f32 12x32, f64 12x16) —
 * 24 accumulators, 2 B vectors, 1 broadcast of the 32 zmm registers. */
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
