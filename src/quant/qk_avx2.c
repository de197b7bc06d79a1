/* Fast quantized products with AVX2 + FMA + F16C: maddubs/madd for the
 * integer dots (u8 operands above 127 are split into nibbles so the 16-bit
 * pair sums never saturate), 8 f32 lanes. Call only after tp_qk_cpu_avx2(). */
#include <immintrin.h>

#include "quant/qk_internal.h"

#define QK_FN(name) qk_##name##_avx2
#define QK_VB 32
#define QK_VL 8
typedef __m256i qk_vi;
typedef __m256 qk_vf;
#define QK_LOAD_I(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define QK_LOAD_F(p) _mm256_loadu_ps(p)
#define QK_ZERO_I() _mm256_setzero_si256()
#define QK_ZERO_F() _mm256_setzero_ps()
#define QK_DPBUSD(acc, u, s, wide) qk_dpbusd_avx2((acc), (u), (s), (wide))
#define QK_CVT(v) _mm256_cvtepi32_ps(v)
#define QK_MUL(a, b) _mm256_mul_ps((a), (b))
#define QK_FMADD(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define QK_FNMADD(a, b, c) _mm256_fnmadd_ps((a), (b), (c))
#define QK_EXPAND4(p)                                                              \
  _mm256_permutevar8x32_ps(                                                        \
      _mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(const void *)(p)))), \
      _mm256_set_epi32(1, 1, 1, 1, 0, 0, 0, 0))
#define QK_REDUCE(v) qk_reduce_avx2(v)
#define QK_LOADW_F32(p) _mm256_loadu_ps(p)
#define QK_LOADW_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define QK_LOADW_BF16(p)                                                                          \
  _mm256_castsi256_ps(                                                                            \
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p))), 16))

static inline __m256i qk_dpbusd_avx2(__m256i acc, __m256i u, __m256i s, int wide) {
  const __m256i ones = _mm256_set1_epi16(1);
  if (!wide) return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones));
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i lo = _mm256_and_si256(u, low4);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(u, 4), low4);
  __m256i plo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, s), ones);
  __m256i phi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, s), _mm256_set1_epi16(16));
  return _mm256_add_epi32(acc, _mm256_add_epi32(plo, phi));
}

static inline float qk_reduce_avx2(__m256 v) {
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_movehdup_ps(q));
  return _mm_cvtss_f32(q);
}

#include "quant/qk_engine_body.h"

topos_status tp_qk_fast_avx2(const tp_qk_task *task) { return QK_FN(run)(task); }
