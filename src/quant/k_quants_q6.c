/* Q6_K: super-blocks of 256 = 16 sub-blocks of 16 with int8 scales and one
 * f16 d; 6-bit levels q in 0..63, y = d*sc*(q-32).
 *
 * Quantization (ggml quantize_row_q6_K_ref): per sub-block a symmetric fit
 * (tp_fit_symmetric, nmax 32); iscale = -128/max_scale (the signed scale of
 * largest magnitude); sc = min(127, nearest(iscale*scale)); d = f16(1/iscale);
 * then every element is re-quantized with the stored d*sc:
 * q = clamp(nearest(x/(d*sc)), -32, 31) + 32. An all-zero block is all zero.
 * Layout per 128-half (ql +64 bytes, qh +32, scales +8): for l in 0..31,
 * elements l, l+32, l+64, l+96 take the low nibble of ql[l], low of ql[l+32],
 * high of ql[l], high of ql[l+32], and bits 0-1, 2-3, 4-5, 6-7 of qh[l]. */
#include "quant/quant_internal.h"

void tp_quantize_q6_K(const float *src, void *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    const float *x = src + i * TP_QK_K;
    tp_block_q6_K b;
    int8_t L[TP_QK_K];
    float sub_scale[16];
    float max_scale = 0.0f, max_abs_scale = 0.0f;
    memset(&b, 0, sizeof b);
    for (int j = 0; j < 16; ++j) {
      sub_scale[j] = tp_fit_symmetric(16, 32, x + 16 * j, L + 16 * j);
      if (fabsf(sub_scale[j]) > max_abs_scale) {
        max_abs_scale = fabsf(sub_scale[j]);
        max_scale = sub_scale[j];
      }
    }
    if (max_abs_scale >= 1e-15f) {
      const float iscale = -128.0f / max_scale;
      b.d = tp_f2h(1.0f / iscale);
      for (int j = 0; j < 16; ++j)
        b.scales[j] = (int8_t)tp_clamp_int(tp_nearest_int(iscale * sub_scale[j]), -128, 127);
      const float d_all = tp_h2f(b.d);
      for (int j = 0; j < 16; ++j) {
        const float d = d_all * (float)b.scales[j];
        if (d == 0.0f) continue;
        for (int l = 0; l < 16; ++l)
          L[16 * j + l] = (int8_t)(tp_clamp_int(tp_nearest_int(x[16 * j + l] / d), -32, 31) + 32);
      }
      for (int half = 0; half < 2; ++half) {
        const int8_t *Lh = L + 128 * half;
        uint8_t *ql = b.ql + 64 * half, *qh = b.qh + 32 * half;
        for (int l = 0; l < 32; ++l) {
          ql[l] = (uint8_t)((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
          ql[l + 32] = (uint8_t)((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
          qh[l] = (uint8_t)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                            ((Lh[l + 96] >> 4) << 6));
        }
      }
    }
    memcpy((uint8_t *)dst + i * (int64_t)sizeof b, &b, sizeof b);
  }
}

void tp_q6_k_levels(const tp_block_q6_K *b, int8_t q[TP_QK_K]) {
  for (int half = 0; half < 2; ++half) {
    const uint8_t *ql = b->ql + 64 * half, *qh = b->qh + 32 * half;
    int8_t *y = q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      y[l] = (int8_t)(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
      y[l + 32] = (int8_t)(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
      y[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      y[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
  }
}

void tp_dequantize_q6_K(const void *src, float *dst, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q6_K b;
    int8_t q[TP_QK_K];
    memcpy(&b, (const uint8_t *)src + i * (int64_t)sizeof b, sizeof b);
    tp_q6_k_levels(&b, q);
    const float d = tp_h2f(b.d);
    for (int j = 0; j < TP_QK_K; ++j)
      dst[i * TP_QK_K + j] = d * (float)b.scales[j / 16] * (float)q[j];
  }
}
