/* Q4_K and Q5_K: super-blocks of 256 = 8 sub-blocks of 32, each sub-block
 * with a 6-bit scale and a 6-bit min packed in 12 bytes (tp_k4_scale_min);
 * y = f16(d)*sc*q - f16(dmin)*m.
 *
 * Quantization (ggml quantize_row_q4_K_ref / _q5_K_ref, no importance matrix):
 *  1. per sub-block, weights w = sqrt(mean(x^2)) + |x| and an asymmetric fit
 *     (tp_fit_scale_min: nmax 15 / 31, rmin -1 / -0.5, rdelta 0.1, nstep 20 / 15);
 *  2. the 8 scales and 8 mins are quantized to 6 bits against their maxima:
 *     ls = min(63, nearest(63/max_scale * scale)), d = f16(max_scale/63), same for mins;
 *  3. every element is re-quantized with the stored (f16-rounded) values:
 *     q = clamp(nearest((x + dmin*m)/(d*sc)), 0, nmax); a sub-block whose
 *     stored scale is 0 keeps the levels of step 1.
 * Level layout: chunk c of 64 elements uses 32 bytes; byte l holds element
 * 64c+l (low nibble) and 64c+32+l (high nibble). Q5_K's fifth bits: element
 * 64c+l is bit 2c of qh[l], element 64c+32+l is bit 2c+1. */
#include "quant/quant_internal.h"

typedef struct tp_k4_params {
  int nmax;
  float rmin;
  int nstep;
} tp_k4_params;

static const tp_k4_params tp_q4_k_params = {15, -1.0f, 20};
static const tp_k4_params tp_q5_k_params = {31, -0.5f, 15};

/* Steps 1-3 for one super-block: fills packed scales, the f16 d/dmin and
 * the final levels L[256] (0..nmax). */
static void tp_k4_quantize_superblock(const float *x, const tp_k4_params *p, uint8_t scales[12],
                                      uint16_t *d_out, uint16_t *dmin_out, uint8_t L[TP_QK_K]) {
  float sub_scale[8], sub_min[8];
  float weights[32];
  uint8_t scratch[32];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float *xs = x + 32 * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = sqrtf(sum_x2 / 32.0f);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + fabsf(xs[l]);
    sub_scale[j] = tp_fit_scale_min(32, p->nmax, xs, weights, L + 32 * j, &sub_min[j], scratch,
                                    p->rmin, 0.1f, p->nstep, 0);
    if (sub_scale[j] > max_scale) max_scale = sub_scale[j];
    if (sub_min[j] > max_min) max_min = sub_min[j];
  }

  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  memset(scales, 0, 12);
  for (int j = 0; j < 8; ++j) {
    /* the conversion to uint8_t wraps a (rare) negative scale, as ggml's does */
    uint8_t ls = (uint8_t)tp_nearest_int(inv_scale * sub_scale[j]);
    uint8_t lm = (uint8_t)tp_nearest_int(inv_min * sub_min[j]);
    if (ls > 63) ls = 63;
    if (lm > 63) lm = 63;
    if (j < 4) {
      scales[j] = ls;
      scales[j + 4] = lm;
    } else {
      scales[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
      scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
      scales[j] |= (uint8_t)((lm >> 4) << 6);
    }
  }
  *d_out = tp_f2h(max_scale / 63.0f);
  *dmin_out = tp_f2h(max_min / 63.0f);

  const float d_all = tp_h2f(*d_out), dmin_all = tp_h2f(*dmin_out);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    tp_k4_scale_min(j, scales, &sc, &m);
    const float d = d_all * (float)sc;
    if (d == 0.0f) continue;
    const float dm = dmin_all * (float)m;
    for (int l = 0; l < 32; ++l)
      L[32 * j + l] = (uint8_t)tp_clamp_int(tp_nearest_int((x[32 * j + l] + dm) / d), 0, p->nmax);
  }
}

void tp_quantize_q4_K(const float *src, void *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q4_K b;
    uint8_t L[TP_QK_K];
    tp_k4_quantize_superblock(src + i * TP_QK_K, &tp_q4_k_params, b.scales, &b.d, &b.dmin, L);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l)
        b.qs[32 * c + l] = (uint8_t)(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    memcpy((uint8_t *)dst + i * (int64_t)sizeof b, &b, sizeof b);
  }
}

void tp_quantize_q5_K(const float *src, void *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q5_K b;
    uint8_t L[TP_QK_K];
    tp_k4_quantize_superblock(src + i * TP_QK_K, &tp_q5_k_params, b.scales, &b.d, &b.dmin, L);
    memset(b.qh, 0, sizeof b.qh);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
        b.qh[l] |= (uint8_t)(((lo >> 4) & 1) << (2 * c));
        b.qh[l] |= (uint8_t)(((hi >> 4) & 1) << (2 * c + 1));
        b.qs[32 * c + l] = (uint8_t)((lo & 0xF) | ((hi & 0xF) << 4));
      }
    }
    memcpy((uint8_t *)dst + i * (int64_t)sizeof b, &b, sizeof b);
  }
}

void tp_k4_levels(const uint8_t qs[TP_QK_K / 2], const uint8_t *qh_or_null, uint8_t q[TP_QK_K]) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      int lo = qs[32 * c + l] & 0xF, hi = qs[32 * c + l] >> 4;
      if (qh_or_null) {
        lo |= ((qh_or_null[l] >> (2 * c)) & 1) << 4;
        hi |= ((qh_or_null[l] >> (2 * c + 1)) & 1) << 4;
      }
      q[64 * c + l] = (uint8_t)lo;
      q[64 * c + 32 + l] = (uint8_t)hi;
    }
}

/* One decoder for both: `qh` NULL for Q4_K. */
static void tp_k4_dequantize_superblock(uint16_t d16, uint16_t dmin16, const uint8_t scales[12],
                                        const uint8_t qs[TP_QK_K / 2], const uint8_t *qh,
                                        float *y) {
  uint8_t q[TP_QK_K];
  tp_k4_levels(qs, qh, q);
  const float d = tp_h2f(d16), dmin = tp_h2f(dmin16);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    tp_k4_scale_min(j, scales, &sc, &m);
    const float dj = d * (float)sc, mj = dmin * (float)m;
    for (int l = 0; l < 32; ++l) y[32 * j + l] = dj * (float)q[32 * j + l] - mj;
  }
}

void tp_dequantize_q4_K(const void *src, float *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q4_K b;
    memcpy(&b, (const uint8_t *)src + i * (int64_t)sizeof b, sizeof b);
    tp_k4_dequantize_superblock(b.d, b.dmin, b.scales, b.qs, NULL, dst + i * TP_QK_K);
  }
}

void tp_dequantize_q5_K(const void *src, float *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q5_K b;
    memcpy(&b, (const uint8_t *)src + i * (int64_t)sizeof b, sizeof b);
    tp_k4_dequantize_superblock(b.d, b.dmin, b.scales, b.qs, b.qh, dst + i * TP_QK_K);
  }
}
