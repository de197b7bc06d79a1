/* Internal: the f32 lane operations (TP_V*) of the vector-math templates
 * (base/vexp_template.h, backend/simd/vmath_template.h, the engine's softmax
 * rows) for AVX2 + FMA: 8 f32 lanes; masks are all-ones lanes of a vector.
 * Include only from files compiled for that ISA (*_avx2.c). */
#ifndef TP_BASE_VLANES_AVX2_H
#define TP_BASE_VLANES_AVX2_H

#include <immintrin.h>

#define TP_V __m256
#define TP_VI __m256i
#define TP_VMASK __m256 /* all-ones lanes */
#define TP_VW 8
#define TP_VLOAD(p) _mm256_loadu_ps(p)
#define TP_VSTORE(p, v) _mm256_storeu_ps(p, v)
#define TP_VSET(x) _mm256_set1_ps(x)
#define TP_VADD(a, b) _mm256_add_ps(a, b)
#define TP_VSUB(a, b) _mm256_sub_ps(a, b)
#define TP_VMUL(a, b) _mm256_mul_ps(a, b)
#define TP_VDIV(a, b) _mm256_div_ps(a, b)
#define TP_VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
/* c - a*b as (-a)*b + c: hardware vfnmadd gives the same bits, but
 * valgrind 3.19 emulates it as -(a*b - c), wrong in the sign of zeros */
#define TP_VFNMA(a, b, c) _mm256_fmadd_ps(_mm256_xor_ps(a, _mm256_set1_ps(-0.0f)), b, c)
#define TP_VMIN(a, b) _mm256_min_ps(a, b)
#define TP_VMAX(a, b) _mm256_max_ps(a, b)
#define TP_VSQRT(a) _mm256_sqrt_ps(a)
#define TP_VCVTF(i) _mm256_cvtepi32_ps(i)
#define TP_VCAST_I(a) _mm256_castps_si256(a)
#define TP_VCAST_F(i) _mm256_castsi256_ps(i)
#define TP_VI_SET(x) _mm256_set1_epi32(x)
#define TP_VI_ADD(a, b) _mm256_add_epi32(a, b)
#define TP_VI_SUB(a, b) _mm256_sub_epi32(a, b)
#define TP_VI_AND(a, b) _mm256_and_si256(a, b)
#define TP_VI_OR(a, b) _mm256_or_si256(a, b)
#define TP_VI_XOR(a, b) _mm256_xor_si256(a, b)
#define TP_VI_SLLI(a, n) _mm256_slli_epi32(a, n)
#define TP_VI_SRLI(a, n) _mm256_srli_epi32(a, n)
#define TP_VI_SRAI(a, n) _mm256_srai_epi32(a, n)
#define TP_VCMP(a, b, pred) _mm256_cmp_ps(a, b, pred)
#define TP_VSELECT(mask, x, y) _mm256_blendv_ps(y, x, mask)

#define TP_VMASK_OR(a, b) _mm256_or_ps(a, b)
#define TP_VMASK_ANY(m) (_mm256_movemask_ps(m) != 0)

#endif
