/* Weight decoders of the fast engine (included by each ISA file, so the
 * loops are compiled, and auto-vectorised, for that ISA). Each turns one
 * weight row of k elements into q[kpad] unsigned bytes and s[kpad/16],
 * mn[kpad/16] floats with w = s * (q - bias) - mn (see qk_internal.h); the
 * padding beyond k is zero. Layouts: reference/ggml.md §2. Blocks are read
 * byte by byte, so rows need no alignment. */
#ifndef TP_QUANT_QK_DECODE_BODY_H
#define TP_QUANT_QK_DECODE_BODY_H

#include <string.h>

#include "quant/mxfp4.h"
#include "topos/base.h"

typedef void (*qk_decode_fn)(const uint8_t *restrict row, int64_t k, uint8_t *restrict q, float *restrict s, float *restrict mn);

/* QK_F16_TO_F32 comes from the ISA file (F16C). */
static inline float qk_f16(const uint8_t *p) { return QK_F16_TO_F32((uint16_t)(p[0] | (p[1] << 8))); }

/* 16 packed bytes -> 16 low nibbles at dst, 16 high nibbles at dst + 16,
 * each OR'ed with the 5th bits in hi_lo / hi_hi (0x10 per element or 0).
 * Explicit SSE2: compilers do not vectorise these 18/22-byte strides well. */
#if defined(__SSE4_1__)
#include <emmintrin.h>
#include <smmintrin.h>
#include <tmmintrin.h>
static inline void qk_nibbles(const uint8_t *src, uint8_t *dst, __m128i hi_lo, __m128i hi_hi) {
  const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)src), m = _mm_set1_epi8(0x0F);
  _mm_storeu_si128((__m128i *)(void *)dst, _mm_or_si128(_mm_and_si128(x, m), hi_lo));
  _mm_storeu_si128((__m128i *)(void *)(dst + 16), _mm_or_si128(_mm_and_si128(_mm_srli_epi16(x, 4), m), hi_hi));
}
/* Bits 0..15 of `bits` -> 16 bytes of 0x10 (bit set) or 0. */
static inline __m128i qk_bits_to_0x10(uint32_t bits) {
  const __m128i spread = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)bits),
                                          _mm_set_epi8(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0));
  const __m128i sel = _mm_set_epi8((char)0x80, 0x40, 0x20, 0x10, 8, 4, 2, 1, (char)0x80, 0x40, 0x20, 0x10, 8, 4, 2, 1);
  return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(spread, sel), sel), _mm_set1_epi8(0x10));
}
#define QK_NO_HI _mm_setzero_si128()
#define QK_NIBBLES(src, dst, qh) \
  qk_nibbles((src), (dst), qk_bits_to_0x10((qh) & 0xFFFF), qk_bits_to_0x10((qh) >> 16))
#define QK_NIBBLES4(src, dst) qk_nibbles((src), (dst), QK_NO_HI, QK_NO_HI)
/* MXFP4's 16 packed bytes -> the 32 levels + TP_MXFP4_BIAS (0..24) in
 * element order: one byte shuffle per half. */
static inline void qk_fp4_nibbles(const uint8_t *src, uint8_t *dst) {
  const __m128i lut = _mm_add_epi8(_mm_setr_epi8(TP_MXFP4_LEVELS), _mm_set1_epi8(TP_MXFP4_BIAS));
  const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)src), m = _mm_set1_epi8(0x0F);
  _mm_storeu_si128((__m128i *)(void *)dst, _mm_shuffle_epi8(lut, _mm_and_si128(x, m)));
  _mm_storeu_si128((__m128i *)(void *)(dst + 16), _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(x, 4), m)));
}
static inline void qk_xor80_32(const uint8_t *src, uint8_t *dst) {
  const __m128i f = _mm_set1_epi8((char)0x80);
  _mm_storeu_si128((__m128i *)(void *)dst, _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)src), f));
  _mm_storeu_si128((__m128i *)(void *)(dst + 16),
                   _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(src + 16)), f));
}
#else
static inline void qk_nibbles_c(const uint8_t *src, uint8_t *dst, uint32_t qh) {
  for (int j = 0; j < 16; ++j) {
    dst[j] = (uint8_t)((src[j] & 15) | (((qh >> j) & 1) << 4));
    dst[j + 16] = (uint8_t)((src[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
  }
}
#define QK_NIBBLES(src, dst, qh) qk_nibbles_c((src), (dst), (qh))
#define QK_NIBBLES4(src, dst) qk_nibbles_c((src), (dst), 0)
static inline void qk_fp4_nibbles(const uint8_t *src, uint8_t *dst) {
  for (int j = 0; j < 16; ++j) {
    dst[j] = (uint8_t)(tp_mxfp4_level(src[j] & 15u) + TP_MXFP4_BIAS);
    dst[j + 16] = (uint8_t)(tp_mxfp4_level(src[j] >> 4) + TP_MXFP4_BIAS);
  }
}
static inline void qk_xor80_32(const uint8_t *src, uint8_t *dst) {
  for (int i = 0; i < 32; ++i) dst[i] = (uint8_t)(src[i] ^ 0x80);
}
#endif

static void qk_decode_q8_0(const uint8_t *restrict row, int64_t k, uint8_t *restrict q,
                           float *restrict s, float *restrict mn) {
  (void)mn;
  for (int64_t b = 0; b < k / 32; ++b, row += 34) {
    s[2 * b] = s[2 * b + 1] = qk_f16(row);
    qk_xor80_32(row + 2, q + 32 * b); /* qs + 128 */
  }
}

static void qk_decode_q4_0(const uint8_t *restrict row, int64_t k, uint8_t *restrict q,
                           float *restrict s, float *restrict mn) {
  (void)mn;
  for (int64_t b = 0; b < k / 32; ++b, row += 18) {
    s[2 * b] = s[2 * b + 1] = qk_f16(row);
    QK_NIBBLES4(row + 2, q + 32 * b);
  }
}

static void qk_decode_q4_1(const uint8_t *restrict row, int64_t k, uint8_t *restrict q,
                           float *restrict s, float *restrict mn) {
  for (int64_t b = 0; b < k / 32; ++b, row += 20) {
    s[2 * b] = s[2 * b + 1] = qk_f16(row);
    mn[2 * b] = mn[2 * b + 1] = -qk_f16(row + 2); /* w = d q + m */
    QK_NIBBLES4(row + 4, q + 32 * b);
  }
}

/* MXFP4: w = 2^(e-128) * level = s * (q - 12) with q = level + 12. */
static void qk_decode_mxfp4(const uint8_t *restrict row, int64_t k, uint8_t *restrict q,
                            float *restrict s, float *restrict mn) {
  (void)mn;
  for (int64_t b = 0; b < k / 32; ++b, row += 17) {
    s[2 * b] = s[2 * b + 1] = tp_e8m0_half(row[0]);
    qk_fp4_nibbles(row + 1, q + 32 * b);
  }
}

static inline uint32_t qk_le32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void qk_decode_q5_0(const uint8_t *restrict row, int64_t k, uint8_t *restrict q,
                           float *restrict s, float *restrict mn) {
  (void)mn;
  for (int64_t b = 0; b < k / 32; ++b, row += 22) {
    s[2 * b] = s[2 * b + 1] = qk_f16(row);
    QK_NIBBLES(row + 6, q + 32 * b, qk_le32(row + 2));
  }
}

static void qk_decode_q5_1(const uint8_t *restrict row, int64_t k, uint8_t *restrict q,
                           float *restrict s, float *restrict mn) {
  for (int64_t b = 0; b < k / 32; ++b, row += 24) {
    s[2 * b] = s[2 * b + 1] = qk_f16(row);
    mn[2 * b] = mn[2 * b + 1] = -qk_f16(row + 2);
    QK_NIBBLES(row + 8, q + 32 * b, qk_le32(row + 4));
  }
}

/* ---- K formats: integer scales, so a super-block's integer sums can be
 * scaled exactly in integers (vpdpwssd / madd) before one float multiply.
 * Each decodes into q[k], sc[k/16] (int32), mf[k/16] (the min of each 16
 * elements as a float, dmin * min; left alone for types without a min) and
 * d[k/256], with
 *     w = d * sc * (q - bias) - mf. */
/* A scale as vpdpwssd / madd want it: the value in the low 16 bits, zero
 * above, so the high half of each 32-bit lane contributes nothing. */
static inline int32_t qk_sc16(int v) { return (int32_t)(uint16_t)(int16_t)v; }

typedef void (*qk_kdecode_fn)(const uint8_t *row, int64_t k, uint8_t *q, int32_t *sc,
                              float *mf, float *d);

/* The 6-bit scale and min of sub-block j of Q4_K / Q5_K (12 packed bytes). */
static inline void qk_scale_min_k4(int j, const uint8_t *sc, int *scale, int *min) {
  if (j < 4) {
    *scale = sc[j] & 63;
    *min = sc[j + 4] & 63;
  } else {
    *scale = (sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4);
    *min = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
  }
}

/* The 12 packed bytes at p as three words: byte-parallel masks and shifts
 * give the eight 6-bit scales and mins (the same values as
 * qk_scale_min_k4), four to a word: bytes of out[0] scales 0..3, out[1]
 * scales 4..7, out[2] mins 0..3, out[3] mins 4..7. */
static inline void qk_k4_scale_words(const uint8_t *p, uint32_t out[4]) {
  uint32_t w[3];
  memcpy(w, p, 12);
  const uint32_t lo6 = 0x3f3f3f3fu, lo4 = 0x0f0f0f0fu, top2 = 0x03030303u;
  out[0] = w[0] & lo6;
  out[1] = (w[2] & lo4) | (((w[0] >> 6) & top2) << 4);
  out[2] = w[1] & lo6;
  out[3] = ((w[2] >> 4) & lo4) | (((w[1] >> 6) & top2) << 4);
}

static inline void qk_k4_scales(const uint8_t *blk, int32_t *sc, float *mf, float *d) {
  *d = qk_f16(blk);
  const float dmin = qk_f16(blk + 2);
#if defined(__SSE4_1__)
  uint32_t sw[4];
  qk_k4_scale_words(blk + 4, sw);
  const uint32_t sc_lo = sw[0], sc_hi = sw[1], m_lo = sw[2], m_hi = sw[3];
  const __m128i s8 = _mm_set_epi32(0, 0, (int)sc_hi, (int)sc_lo), m8 = _mm_set_epi32(0, 0, (int)m_hi, (int)m_lo);
  const __m128i s16 = _mm_unpacklo_epi8(s8, s8), m16 = _mm_unpacklo_epi8(m8, m8); /* each twice: per 16 elements */
  const __m128 vmin = _mm_set1_ps(dmin);
  _mm_storeu_si128((__m128i *)(void *)sc, _mm_cvtepu8_epi32(s16));
  _mm_storeu_si128((__m128i *)(void *)(sc + 4), _mm_cvtepu8_epi32(_mm_srli_si128(s16, 4)));
  _mm_storeu_si128((__m128i *)(void *)(sc + 8), _mm_cvtepu8_epi32(_mm_srli_si128(s16, 8)));
  _mm_storeu_si128((__m128i *)(void *)(sc + 12), _mm_cvtepu8_epi32(_mm_srli_si128(s16, 12)));
  _mm_storeu_ps(mf, _mm_mul_ps(vmin, _mm_cvtepi32_ps(_mm_cvtepu8_epi32(m16))));
  _mm_storeu_ps(mf + 4, _mm_mul_ps(vmin, _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_srli_si128(m16, 4)))));
  _mm_storeu_ps(mf + 8, _mm_mul_ps(vmin, _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_srli_si128(m16, 8)))));
  _mm_storeu_ps(mf + 12, _mm_mul_ps(vmin, _mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_srli_si128(m16, 12)))));
#else
  for (int j = 0; j < 8; ++j) {
    int s, m;
    qk_scale_min_k4(j, blk + 4, &s, &m);
    sc[2 * j] = sc[2 * j + 1] = qk_sc16(s);
    mf[2 * j] = mf[2 * j + 1] = dmin * (float)m;
  }
#endif
}

static void qk_decode_q4_K(const uint8_t *restrict row, int64_t k, uint8_t *restrict q,
                           int32_t *restrict sc, float *restrict mf, float *restrict d) {
  for (int64_t b = 0; b < k / 256; ++b, row += 144, q += 256, sc += 16, mf += 16) {
    qk_k4_scales(row, sc, mf, d + b);
    const uint8_t *qs = row + 16;
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        q[64 * c + l] = qs[32 * c + l] & 15;
        q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
      }
  }
}

static void qk_decode_q5_K(const uint8_t *restrict row, int64_t k, uint8_t *restrict q,
                           int32_t *restrict sc, float *restrict mf, float *restrict d) {
  for (int64_t b = 0; b < k / 256; ++b, row += 176, q += 256, sc += 16, mf += 16) {
    qk_k4_scales(row, sc, mf, d + b);
    const uint8_t *qh = row + 16, *qs = row + 48;
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        q[64 * c + l] = (uint8_t)((qs[32 * c + l] & 15) | (((qh[l] >> (2 * c)) & 1) << 4));
        q[64 * c + 32 + l] = (uint8_t)((qs[32 * c + l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4));
      }
  }
}

static void qk_decode_q6_K(const uint8_t *restrict row, int64_t k, uint8_t *restrict q,
                           int32_t *restrict sc, float *restrict mf, float *restrict d) {
  (void)mf;
  for (int64_t b = 0; b < k / 256; ++b, row += 210, q += 256, sc += 16) {
    const uint8_t *ql = row, *qh = row + 128;
    d[b] = qk_f16(row + 208);
    for (int h = 0; h < 2; ++h) {
      const uint8_t *l0 = ql + 64 * h, *h0 = qh + 32 * h;
      uint8_t *o = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        o[l] = (uint8_t)((l0[l] & 15) | ((h0[l] & 3) << 4));
        o[l + 32] = (uint8_t)((l0[l + 32] & 15) | (((h0[l] >> 2) & 3) << 4));
        o[l + 64] = (uint8_t)((l0[l] >> 4) | (((h0[l] >> 4) & 3) << 4));
        o[l + 96] = (uint8_t)((l0[l + 32] >> 4) | (((h0[l] >> 6) & 3) << 4));
      }
    }
    for (int g = 0; g < 16; ++g) sc[g] = qk_sc16((int8_t)row[192 + g]);
  }
}

static void qk_decode_q2_K(const uint8_t *restrict row, int64_t k, uint8_t *restrict q,
                           int32_t *restrict sc, float *restrict mf, float *restrict d) {
  for (int64_t b = 0; b < k / 256; ++b, row += 84, q += 256, sc += 16, mf += 16) {
    const uint8_t *scales = row, *qs = row + 16;
    d[b] = qk_f16(row + 80);
    const float dmin = qk_f16(row + 82);
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l) q[128 * h + 32 * j + l] = (qs[32 * h + l] >> (2 * j)) & 3;
    for (int g = 0; g < 16; ++g) {
      sc[g] = qk_sc16(scales[g] & 15);
      mf[g] = dmin * (float)(scales[g] >> 4);
    }
  }
}

static void qk_decode_q3_K(const uint8_t *restrict row, int64_t k, uint8_t *restrict q,
                           int32_t *restrict sc, float *restrict mf, float *restrict d) {
  (void)mf;
  for (int64_t b = 0; b < k / 256; ++b, row += 110, q += 256, sc += 16) {
    const uint8_t *hm = row, *qs = row + 32, *scales = row + 96;
    d[b] = qk_f16(row + 108);
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 4; ++j) {
        int bit = 4 * h + j;
        for (int l = 0; l < 32; ++l)
          q[128 * h + 32 * j + l] =
              (uint8_t)(((qs[32 * h + l] >> (2 * j)) & 3) | (((hm[l] >> bit) & 1) << 2));
      }
    for (int g = 0; g < 16; ++g) {
      int lo = g < 8 ? (scales[g] & 15) : (scales[g - 8] >> 4);
      int hi = (scales[8 + (g % 4)] >> (2 * (g / 4))) & 3;
      sc[g] = qk_sc16((lo | (hi << 4)) - 32);
    }
  }
}

static qk_kdecode_fn qk_kdecoder_of(topos_dtype wtype) {
  switch (wtype) {
    case TOPOS_Q2_K: return qk_decode_q2_K;
    case TOPOS_Q3_K: return qk_decode_q3_K;
    case TOPOS_Q4_K: return qk_decode_q4_K;
    case TOPOS_Q5_K: return qk_decode_q5_K;
    case TOPOS_Q6_K: return qk_decode_q6_K;
    default: return NULL;
  }
}

static qk_decode_fn qk_decoder_of(topos_dtype wtype) {
  switch (wtype) {
    case TOPOS_Q8_0: return qk_decode_q8_0;
    case TOPOS_Q4_0: return qk_decode_q4_0;
    case TOPOS_Q4_1: return qk_decode_q4_1;
    case TOPOS_Q5_0: return qk_decode_q5_0;
    case TOPOS_Q5_1: return qk_decode_q5_1;
    case TOPOS_MXFP4: return qk_decode_mxfp4;
    default: return NULL;
  }
}

#endif
