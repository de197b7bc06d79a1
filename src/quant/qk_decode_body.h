/* Weight decoders of the fast engine (included by each ISA file, so the
 * loops are compiled, and auto-vectorised, for that ISA). Each turns one
 * weight row of k elements into q[kpad] unsigned bytes and s[kpad/16],
 * mn[kpad/16] floats with w = s * (q - bias) - mn (see qk_internal.h); the
 * padding beyond k is zero. Layouts: reference/ggml.md §2. Blocks are read
 * byte by byte, so rows need no alignment. */
#ifndef TP_QUANT_QK_DECODE_BODY_H
#define TP_QUANT_QK_DECODE_BODY_H

#include <string.h>

#include "topos/base.h"

typedef void (*qk_decode_fn)(const uint8_t *row, int64_t k, uint8_t *q, float *s, float *mn);

static inline float qk_f16(const uint8_t *p) {
  return topos_f16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
}

static void qk_decode_q8_0(const uint8_t *row, int64_t k, uint8_t *q, float *s, float *mn) {
  (void)mn;
  for (int64_t b = 0; b < k / 32; ++b, row += 34) {
    float d = qk_f16(row);
    for (int i = 0; i < 32; ++i) q[32 * b + i] = (uint8_t)(row[2 + i] ^ 0x80); /* qs + 128 */
    s[2 * b] = s[2 * b + 1] = d;
  }
}

static void qk_decode_q4_0(const uint8_t *row, int64_t k, uint8_t *q, float *s, float *mn) {
  (void)mn;
  for (int64_t b = 0; b < k / 32; ++b, row += 18) {
    float d = qk_f16(row);
    const uint8_t *qs = row + 2;
    for (int j = 0; j < 16; ++j) {
      q[32 * b + j] = qs[j] & 15;
      q[32 * b + 16 + j] = qs[j] >> 4;
    }
    s[2 * b] = s[2 * b + 1] = d;
  }
}

static void qk_decode_q4_1(const uint8_t *row, int64_t k, uint8_t *q, float *s, float *mn) {
  for (int64_t b = 0; b < k / 32; ++b, row += 20) {
    float d = qk_f16(row), m = qk_f16(row + 2);
    const uint8_t *qs = row + 4;
    for (int j = 0; j < 16; ++j) {
      q[32 * b + j] = qs[j] & 15;
      q[32 * b + 16 + j] = qs[j] >> 4;
    }
    s[2 * b] = s[2 * b + 1] = d;
    mn[2 * b] = mn[2 * b + 1] = -m; /* w = d q + m */
  }
}

static inline uint32_t qk_le32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void qk_decode_q5_0(const uint8_t *row, int64_t k, uint8_t *q, float *s, float *mn) {
  (void)mn;
  for (int64_t b = 0; b < k / 32; ++b, row += 22) {
    float d = qk_f16(row);
    uint32_t qh = qk_le32(row + 2);
    const uint8_t *qs = row + 6;
    for (int j = 0; j < 16; ++j) {
      q[32 * b + j] = (uint8_t)((qs[j] & 15) | (((qh >> j) & 1) << 4));
      q[32 * b + 16 + j] = (uint8_t)((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
    }
    s[2 * b] = s[2 * b + 1] = d;
  }
}

static void qk_decode_q5_1(const uint8_t *row, int64_t k, uint8_t *q, float *s, float *mn) {
  for (int64_t b = 0; b < k / 32; ++b, row += 24) {
    float d = qk_f16(row), m = qk_f16(row + 2);
    uint32_t qh = qk_le32(row + 4);
    const uint8_t *qs = row + 8;
    for (int j = 0; j < 16; ++j) {
      q[32 * b + j] = (uint8_t)((qs[j] & 15) | (((qh >> j) & 1) << 4));
      q[32 * b + 16 + j] = (uint8_t)((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
    }
    s[2 * b] = s[2 * b + 1] = d;
    mn[2 * b] = mn[2 * b + 1] = -m;
  }
}

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

static void qk_k4_scales(const uint8_t *blk, float *s, float *mn) {
  float d = qk_f16(blk), dmin = qk_f16(blk + 2);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    qk_scale_min_k4(j, blk + 4, &sc, &m);
    s[2 * j] = s[2 * j + 1] = d * (float)sc;
    mn[2 * j] = mn[2 * j + 1] = dmin * (float)m;
  }
}

static void qk_decode_q4_K(const uint8_t *row, int64_t k, uint8_t *q, float *s, float *mn) {
  for (int64_t b = 0; b < k / 256; ++b, row += 144, q += 256, s += 16, mn += 16) {
    qk_k4_scales(row, s, mn);
    const uint8_t *qs = row + 16;
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        q[64 * c + l] = qs[32 * c + l] & 15;
        q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
      }
  }
}

static void qk_decode_q5_K(const uint8_t *row, int64_t k, uint8_t *q, float *s, float *mn) {
  for (int64_t b = 0; b < k / 256; ++b, row += 176, q += 256, s += 16, mn += 16) {
    qk_k4_scales(row, s, mn);
    const uint8_t *qh = row + 16, *qs = row + 48;
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        q[64 * c + l] = (uint8_t)((qs[32 * c + l] & 15) | (((qh[l] >> (2 * c)) & 1) << 4));
        q[64 * c + 32 + l] = (uint8_t)((qs[32 * c + l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4));
      }
  }
}

static void qk_decode_q6_K(const uint8_t *row, int64_t k, uint8_t *q, float *s, float *mn) {
  (void)mn;
  for (int64_t b = 0; b < k / 256; ++b, row += 210, q += 256, s += 16) {
    const uint8_t *ql = row, *qh = row + 128;
    const int8_t *sc = (const int8_t *)(row + 192);
    float d = qk_f16(row + 208);
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
    for (int g = 0; g < 16; ++g) s[g] = d * (float)sc[g];
  }
}

static void qk_decode_q2_K(const uint8_t *row, int64_t k, uint8_t *q, float *s, float *mn) {
  for (int64_t b = 0; b < k / 256; ++b, row += 84, q += 256, s += 16, mn += 16) {
    const uint8_t *sc = row, *qs = row + 16;
    float d = qk_f16(row + 80), dmin = qk_f16(row + 82);
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l) q[128 * h + 32 * j + l] = (qs[32 * h + l] >> (2 * j)) & 3;
    for (int g = 0; g < 16; ++g) {
      s[g] = d * (float)(sc[g] & 15);
      mn[g] = dmin * (float)(sc[g] >> 4);
    }
  }
}

static void qk_decode_q3_K(const uint8_t *row, int64_t k, uint8_t *q, float *s, float *mn) {
  (void)mn;
  for (int64_t b = 0; b < k / 256; ++b, row += 110, q += 256, s += 16) {
    const uint8_t *hm = row, *qs = row + 32, *sc = row + 96;
    float d = qk_f16(row + 108);
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 4; ++j) {
        int bit = 4 * h + j;
        for (int l = 0; l < 32; ++l)
          q[128 * h + 32 * j + l] =
              (uint8_t)(((qs[32 * h + l] >> (2 * j)) & 3) | (((hm[l] >> bit) & 1) << 2));
      }
    for (int g = 0; g < 16; ++g) {
      int lo = g < 8 ? (sc[g] & 15) : (sc[g - 8] >> 4);
      int hi = (sc[8 + (g % 4)] >> (2 * (g / 4))) & 3;
      s[g] = d * (float)((lo | (hi << 4)) - 32);
    }
  }
}

static qk_decode_fn qk_decoder_of(topos_dtype wtype) {
  switch (wtype) {
    case TOPOS_Q8_0: return qk_decode_q8_0;
    case TOPOS_Q4_0: return qk_decode_q4_0;
    case TOPOS_Q4_1: return qk_decode_q4_1;
    case TOPOS_Q5_0: return qk_decode_q5_0;
    case TOPOS_Q5_1: return qk_decode_q5_1;
    case TOPOS_Q2_K: return qk_decode_q2_K;
    case TOPOS_Q3_K: return qk_decode_q3_K;
    case TOPOS_Q4_K: return qk_decode_q4_K;
    case TOPOS_Q5_K: return qk_decode_q5_K;
    case TOPOS_Q6_K: return qk_decode_q6_K;
    default: return NULL;
  }
}

#endif
