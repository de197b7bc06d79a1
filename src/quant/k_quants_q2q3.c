/* Q2_K and Q3_K: super-blocks of 256 = 16 sub-blocks of 16, 2-bit level
 * planes in qs: per 128-half (32 bytes), byte l holds elements l, l+32, l+64,
 * l+96 of the half in bits 0-1, 2-3, 4-5, 6-7.
 *
 * Q2_K: 4-bit scale (low nibble) and 4-bit min (high nibble) per sub-block,
 * y = f16(d)*sc*q - f16(dmin)*m. Quantization (ggml quantize_row_q2_K_ref):
 * asymmetric fit per sub-block with weights |x| and absolute error
 * (tp_fit_scale_min: nmax 3, rmin -0.5, rdelta 0.1, nstep 15); scales and mins
 * to 4 bits against their maxima (nearest(15/max*v), d = f16(max/15)); then
 * q = clamp(nearest((x + dmin*m)/(d*sc)), 0, 3) with the stored values.
 *
 * Q3_K: signed 6-bit scales (biased by 32, packed in 12 bytes) and 3-bit
 * levels: 2 bits in qs plus a high bit in hmask (element j: bit j/32 of
 * hmask[j%32]; a clear bit subtracts 4): y = f16(d)*(sc-32)*(q - 4*!h).
 * Quantization (ggml quantize_row_q3_K_ref): symmetric fit with coordinate
 * descent per sub-block (tp_fit_symmetric_descent, nmax 4); iscale =
 * -32/max_scale (signed scale of largest magnitude), sc = clamp(nearest(
 * iscale*scale), -32, 31) + 32, d = f16(1/iscale); then q = clamp(nearest(
 * x/(d*sc)), -4, 3) + 4 with the stored values. */
#include "quant/quant_internal.h"

static void tp_pack_2bit_planes(const uint8_t L[TP_QK_K], uint8_t qs[TP_QK_K / 4]) {
  for (int half = 0; half < 2; ++half)
    for (int l = 0; l < 32; ++l) {
      const uint8_t *Lh = L + 128 * half;
      qs[32 * half + l] =
          (uint8_t)(Lh[l] | (Lh[l + 32] << 2) | (Lh[l + 64] << 4) | (Lh[l + 96] << 6));
    }
}

/* 2-bit levels (0..3) in element order. */
static void tp_unpack_2bit_planes(const uint8_t qs[TP_QK_K / 4], uint8_t q[TP_QK_K]) {
  for (int half = 0; half < 2; ++half)
    for (int plane = 0; plane < 4; ++plane)
      for (int l = 0; l < 32; ++l)
        q[128 * half + 32 * plane + l] = (uint8_t)((qs[32 * half + l] >> (2 * plane)) & 3);
}

void tp_quantize_q2_K(const float *src, void *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    const float *x = src + i * TP_QK_K;
    tp_block_q2_K b;
    uint8_t L[TP_QK_K], scratch[16];
    float weights[16], sub_scale[16], sub_min[16];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = fabsf(x[16 * j + l]);
      sub_scale[j] = tp_fit_scale_min(16, 3, x + 16 * j, weights, L + 16 * j, &sub_min[j],
                                      scratch, -0.5f, 0.1f, 15, 1);
      if (sub_scale[j] > max_scale) max_scale = sub_scale[j];
      if (sub_min[j] > max_min) max_min = sub_min[j];
    }
    /* int -> uint8_t conversions below wrap like ggml's stores do */
    if (max_scale > 0) {
      const float iscale = 15.0f / max_scale;
      for (int j = 0; j < 16; ++j) b.scales[j] = (uint8_t)tp_nearest_int(iscale * sub_scale[j]);
      b.d = tp_f2h(max_scale / 15.0f);
    } else {
      memset(b.scales, 0, sizeof b.scales);
      b.d = tp_f2h(0.0f);
    }
    if (max_min > 0) {
      const float iscale = 15.0f / max_min;
      for (int j = 0; j < 16; ++j)
        b.scales[j] |= (uint8_t)((unsigned)tp_nearest_int(iscale * sub_min[j]) << 4);
      b.dmin = tp_f2h(max_min / 15.0f);
    } else {
      b.dmin = tp_f2h(0.0f);
    }
    const float d_all = tp_h2f(b.d), dmin_all = tp_h2f(b.dmin);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * (float)(b.scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = dmin_all * (float)(b.scales[j] >> 4);
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = (uint8_t)tp_clamp_int(tp_nearest_int((x[16 * j + l] + dm) / d), 0, 3);
    }
    tp_pack_2bit_planes(L, b.qs);
    memcpy((uint8_t *)dst + i * (int64_t)sizeof b, &b, sizeof b);
  }
}

void tp_q2_k_levels(const tp_block_q2_K *b, uint8_t q[TP_QK_K]) { tp_unpack_2bit_planes(b->qs, q); }

void tp_dequantize_q2_K(const void *src, float *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q2_K b;
    uint8_t q[TP_QK_K];
    memcpy(&b, (const uint8_t *)src + i * (int64_t)sizeof b, sizeof b);
    tp_q2_k_levels(&b, q);
    const float d = tp_h2f(b.d), dmin = tp_h2f(b.dmin);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * (float)(b.scales[j] & 0xF), ml = dmin * (float)(b.scales[j] >> 4);
      for (int l = 0; l < 16; ++l) dst[i * TP_QK_K + 16 * j + l] = dl * (float)q[16 * j + l] - ml;
    }
  }
}

void tp_quantize_q3_K(const float *src, void *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    const float *x = src + i * TP_QK_K;
    tp_block_q3_K b;
    int8_t L[TP_QK_K];
    float sub_scale[16];
    float max_scale = 0.0f, amax = 0.0f;
    for (int j = 0; j < 16; ++j) {
      sub_scale[j] = tp_fit_symmetric_descent(16, 4, x + 16 * j, L + 16 * j);
      if (fabsf(sub_scale[j]) > amax) {
        amax = fabsf(sub_scale[j]);
        max_scale = sub_scale[j];
      }
    }
    memset(b.scales, 0, sizeof b.scales);
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l = tp_clamp_int((int8_t)tp_nearest_int(iscale * sub_scale[j]), -32, 31) + 32;
        if (j < 8)
          b.scales[j] = (uint8_t)(l & 0xF);
        else
          b.scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
        b.scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
      }
      b.d = tp_f2h(1.0f / iscale);
    } else {
      b.d = tp_f2h(0.0f);
    }
    int scales[16];
    tp_q3_k_scales(b.scales, scales);
    const float d_all = tp_h2f(b.d);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * (float)scales[j];
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = (int8_t)(tp_clamp_int(tp_nearest_int(x[16 * j + l] / d), -4, 3) + 4);
    }
    uint8_t low[TP_QK_K];
    memset(b.hmask, 0, sizeof b.hmask);
    for (int j = 0; j < TP_QK_K; ++j) {
      int level = L[j];
      if (level > 3) {
        b.hmask[j % 32] |= (uint8_t)(1u << (j / 32));
        level -= 4;
      }
      low[j] = (uint8_t)level;
    }
    tp_pack_2bit_planes(low, b.qs);
    memcpy((uint8_t *)dst + i * (int64_t)sizeof b, &b, sizeof b);
  }
}

void tp_q3_k_levels(const tp_block_q3_K *b, int8_t q[TP_QK_K]) {
  uint8_t low[TP_QK_K];
  tp_unpack_2bit_planes(b->qs, low);
  for (int j = 0; j < TP_QK_K; ++j)
    q[j] = (int8_t)(low[j] - ((b->hmask[j % 32] >> (j / 32)) & 1 ? 0 : 4));
}

void tp_dequantize_q3_K(const void *src, float *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q3_K b;
    int8_t q[TP_QK_K];
    int scales[16];
    memcpy(&b, (const uint8_t *)src + i * (int64_t)sizeof b, sizeof b);
    tp_q3_k_levels(&b, q);
    tp_q3_k_scales(b.scales, scales);
    const float d = tp_h2f(b.d);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * (float)scales[j];
      for (int l = 0; l < 16; ++l) dst[i * TP_QK_K + 16 * j + l] = dl * (float)q[16 * j + l];
    }
  }
}
