/* Internal: the f32 lane operations (TP_V*) of the vector-math templates
 * (base/vexp_template.h, backend/simd/vmath_template.h, the engine's softmax
 * rows) for AVX-512 F/DQ (+FMA): 16 f32 lanes; comparisons give mask registers (TP_VMASK),
 * used directly by the blend: a round trip through a vector of all-ones
 * lanes costs two extra instructions per select.
 * Include only from files compiled for that ISA (*_avx512.c). */
#ifndef TP_BASE_VLANES_AVX512_H
#define TP_BASE_VLANES_AVX512_H

#include <immintrin.h>

#define TP_V __m512
#define TP_VI __m512i
#define TP_VMASK __mmask16
#define TP_VW 16
#define TP_VLOAD(p) _mm512_loadu_ps(p)
#define TP_VSTORE(p, v) _mm512_storeu_ps(p, v)
#define TP_VSET(x) _mm512_set1_ps(x)
#define TP_VADD(a, b) _mm512_add_ps(a, b)
#define TP_VSUB(a, b) _mm512_sub_ps(a, b)
#define TP_VMUL(a, b) _mm512_mul_ps(a, b)
#define TP_VDIV(a, b) _mm512_div_ps(a, b)
#define TP_VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define TP_VFNMA(a, b, c) _mm512_fnmadd_ps(a, b, c)
#define TP_VMIN(a, b) _mm512_min_ps(a, b)
#define TP_VMAX(a, b) _mm512_max_ps(a, b)
#define TP_VSQRT(a) _mm512_sqrt_ps(a)
#define TP_VCVTF(i) _mm512_cvtepi32_ps(i)
#define TP_VCAST_I(a) _mm512_castps_si512(a)
#define TP_VCAST_F(i) _mm512_castsi512_ps(i)
#define TP_VI_SET(x) _mm512_set1_epi32(x)
#define TP_VI_ADD(a, b) _mm512_add_epi32(a, b)
#define TP_VI_SUB(a, b) _mm512_sub_epi32(a, b)
#define TP_VI_AND(a, b) _mm512_and_si512(a, b)
#define TP_VI_OR(a, b) _mm512_or_si512(a, b)
#define TP_VI_XOR(a, b) _mm512_xor_si512(a, b)
#define TP_VI_SLLI(a, n) _mm512_slli_epi32(a, n)
#define TP_VI_SRLI(a, n) _mm512_srli_epi32(a, n)
#define TP_VI_SRAI(a, n) _mm512_srai_epi32(a, n)
#define TP_VCMP(a, b, pred) _mm512_cmp_ps_mask(a, b, pred)
#define TP_VSELECT(mask, x, y) _mm512_mask_blend_ps(mask, y, x)

#define TP_VMASK_OR(a, b) ((__mmask16)((a) | (b)))
#define TP_VMASK_ANY(m) ((m) != 0)

#endif
