/* Q3_K's sixteen 6-bit sub-block scales less 32 (-32..31) as signed bytes,
 * in sub-block order, for the x86 super-block-sum kernels (AVX2 and
 * AVX-512; included by qk_ksum_avx2.h and qk_ksum_avx512vnni.h). The 12
 * scale bytes s start at byte 96 of the block: the low 4 bits of scale j
 * are the low nibbles of s[0..7] (j < 8) and their high nibbles (j >= 8),
 * the top 2 bits are bits 2 (j / 4) of s[8 + j % 4]. */
#ifndef TP_QUANT_QK_Q3K_SCALES_X86_H
#define TP_QUANT_QK_Q3K_SCALES_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

static inline __attribute__((always_inline)) __m128i qk_q3k_scales(const uint8_t *blk) {
  const uint8_t *s = blk + 96;
  long long lo8;
  int hi4;
  memcpy(&lo8, s, 8);
  memcpy(&hi4, s + 8, 4);
  const __m128i l = _mm_cvtsi64_si128(lo8), nib = _mm_set1_epi8(0x0F);
  const __m128i low = _mm_unpacklo_epi64(_mm_and_si128(l, nib), _mm_and_si128(_mm_srli_epi16(l, 4), nib));
  /* dword j / 4: s[8..11] >> 2 (j / 4), its byte j % 4 */
  const __m128i h = _mm_srlv_epi32(_mm_set1_epi32(hi4), _mm_setr_epi32(0, 2, 4, 6));
  const __m128i high = _mm_slli_epi16(_mm_and_si128(h, _mm_set1_epi8(3)), 4);
  return _mm_sub_epi8(_mm_or_si128(low, high), _mm_set1_epi8(32));
}

#endif
