/* AVX2 + FMA GEMM microkernels: 6 rows x 2 ymm (f32 6x16, f64 6x8) —
 * 12 accumulators, 2 B vectors, 1 broadcast of the 16 ymm registers. */
#include <immintrin.h>

#include "backend/simd/gemm_kernels.h"
#include "backend/simd/gemm_ukernel_template.h"

#define TP_PF_B(ptr) _mm_prefetch((const char *)((ptr) + 256), _MM_HINT_T0)
#define TP_PF_C(ptr) _mm_prefetch((const char *)(ptr), _MM_HINT_T0)

TP_GEMM_UKERNEL(tp_gemm_ukernel_avx2_f32, float, __m256, 8, TP_GEMM_AVX2_F32_MR,
                TP_GEMM_AVX2_F32_NR / 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps,
                _mm256_fmadd_ps, _mm256_setzero_ps, TP_PF_B, TP_PF_C)

TP_GEMM_UKERNEL(tp_gemm_ukernel_avx2_f64, double, __m256d, 4, TP_GEMM_AVX2_F64_MR,
                TP_GEMM_AVX2_F64_NR / 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd,
                _mm256_fmadd_pd, _mm256_setzero_pd, TP_PF_B, TP_PF_C)
