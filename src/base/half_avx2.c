/* F16C row conversions (compiled with -mavx2 -mfma -mf16c; called only after
 * tp_cpu_has_avx2_set()). Bit-identical to the scalar conversions:
 * vcvtps2ph with round-to-nearest-even matches them on every input (NaNs
 * included: quiet bit set, top payload bits kept), while vcvtph2ps quiets a
 * signalling NaN that the scalar widening keeps as is, so 8-lane blocks
 * holding a NaN take the scalar path. */
#include <immintrin.h>

#include "base/half.h"

void tp_f16_to_f32_row_f16c(const uint16_t *src, float *dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 wide = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i)));
    if (_mm256_movemask_ps(_mm256_cmp_ps(wide, wide, _CMP_UNORD_Q)) != 0) {
      tp_f16_to_f32_row_scalar(src + i, dst + i, 8);
      continue;
    }
    _mm256_storeu_ps(dst + i, wide);
  }
  tp_f16_to_f32_row_scalar(src + i, dst + i, n - i);
}

void tp_f32_to_f16_row_f16c(const float *src, uint16_t *dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i narrow = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128((__m128i *)(dst + i), narrow);
  }
  tp_f32_to_f16_row_scalar(src + i, dst + i, n - i);
}
