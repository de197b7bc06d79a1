/* Reference dot products of a weight row with an activation row in the
 * weight's partner format, in exactly ggml's *_generic order (ggml-cpu
 * quants.c and vec.c). Fast kernels are checked against these.
 *
 * Order, per format (dx/dy: the weight/activation block scales as f32):
 *   f32, f16, bf16: products in f32 (exact for the 16-bit types), summed
 *     left to right in f64, rounded to f32 once.
 *   Q8_0 x Q8_0:  sumf += (float)isum * (dx*dy)
 *   Q4_0 x Q8_0:  sumf += (float)isum * dx * dy            (left to right)
 *   Q5_0 x Q8_0:  sumf += (dx*dy) * (float)isum
 *   MXFP4 x Q8_0: sumf += (dy*dx) * (float)isum    (dx = 2^(e-128), the levels doubled E2M1)
 *   Q4_1/Q5_1 x Q8_1: sumf += (dx*dy)*(float)isum + mx*sy   (sy: Q8_1's s)
 *   Q2_K x Q8_K:  per super-block sumf += (dy*d)*(float)isum - (dy*dmin)*(float)summs
 *     with isum = sum_j sc_j * sum(q8*q2) and summs = sum_j bsums_j * m_j.
 *   Q3_K..Q6_K x Q8_K: 8 f32 lanes. Lane l collects, in an int32, the
 *     scaled products of elements 8g+l (g = 0..31) of a super-block; then
 *     lanes[l] += (f16(d)*dy) * (float)lane_int. Q4_K/Q5_K also do, per
 *     super-block, sumf -= (f16(dmin)*dy) * (float)sum_j(bsums_j * m_{j/2}).
 *     At the end sumf += lanes[0], lanes[1], ..., lanes[7] in that order.
 * Integer sums are exact, so only the float steps above fix the bits. */
#include <stdlib.h>

#include "base/error.h"
#include "quant/quant_internal.h"

/* ---- plain float rows */
#define TP_DEFINE_FLOAT_DOT(suffix, elem_t, to_f32)                                      \
  float tp_vec_dot_##suffix(int64_t blocks, const void *weights, const void *activations) { \
    const uint8_t *w = weights, *a = activations;                                        \
    double sum = 0.0;                                                                    \
    for (int64_t i = 0; i < blocks; ++i) {                                               \
      elem_t wi, ai;                                                                     \
      memcpy(&wi, w + i * (int64_t)sizeof wi, sizeof wi);                                \
      memcpy(&ai, a + i * (int64_t)sizeof ai, sizeof ai);                                \
      sum += (double)(to_f32(wi) * to_f32(ai));                                          \
    }                                                                                    \
    return (float)sum;                                                                   \
  }
static inline float tp_identity_f32(float v) { return v; }
TP_DEFINE_FLOAT_DOT(f32, float, tp_identity_f32)
TP_DEFINE_FLOAT_DOT(f16, uint16_t, topos_f16_to_f32)
TP_DEFINE_FLOAT_DOT(bf16, uint16_t, topos_bf16_to_f32)
#undef TP_DEFINE_FLOAT_DOT

/* ---- 32-element formats: integer levels of one weight block, with the
 * symmetric formats' bias removed (Q4_0: q-8, Q5_0: q-16; MXFP4: its
 * doubled E2M1 values). */
static int tp_dot_i32(const int *w, const int8_t *a, int n) {
  int sum = 0;
  for (int j = 0; j < n; ++j) sum += w[j] * a[j];
  return sum;
}

static void tp_biased(int q[TP_QK], int bias) {
  for (int j = 0; j < TP_QK; ++j) q[j] -= bias;
}

#define TP_LEGACY_INTS_q8_0(b, q) \
  for (int j_ = 0; j_ < TP_QK; ++j_) (q)[j_] = (b).qs[j_]
#define TP_LEGACY_INTS_q4_0(b, q) (tp_legacy_levels((b).qs, NULL, q), tp_biased(q, 8))
#define TP_LEGACY_INTS_q5_0(b, q) (tp_legacy_levels((b).qs, (b).qh, q), tp_biased(q, 16))
#define TP_LEGACY_INTS_q4_1(b, q) tp_legacy_levels((b).qs, NULL, q)
#define TP_LEGACY_INTS_q5_1(b, q) tp_legacy_levels((b).qs, (b).qh, q)
#define TP_LEGACY_INTS_mxfp4(b, q) tp_mxfp4_levels((b).qs, q)
#define TP_LEGACY_INTS(suffix, b, q) TP_LEGACY_INTS_##suffix(b, q)

/* The weight block's scale as f32: an f16 d, or MXFP4's E8M0 exponent. */
#define TP_WEIGHT_SCALE_q8_0(b) tp_h2f((b).d)
#define TP_WEIGHT_SCALE_q4_0(b) tp_h2f((b).d)
#define TP_WEIGHT_SCALE_q5_0(b) tp_h2f((b).d)
#define TP_WEIGHT_SCALE_mxfp4(b) tp_e8m0_half((b).e)

/* Symmetric weights (partner Q8_0). COMBINE(isum, dx, dy) is ggml's order. */
#define TP_DEFINE_SYMMETRIC_DOT(suffix, COMBINE)                                          \
  float tp_vec_dot_##suffix(int64_t blocks, const void *weights, const void *activations) { \
    float sumf = 0.0f;                                                                   \
    for (int64_t i = 0; i < blocks; ++i) {                                               \
      tp_block_##suffix wb;                                                              \
      tp_block_q8_0 ab;                                                                  \
      int ints[TP_QK];                                                                   \
      memcpy(&wb, (const uint8_t *)weights + i * (int64_t)sizeof wb, sizeof wb);         \
      memcpy(&ab, (const uint8_t *)activations + i * (int64_t)sizeof ab, sizeof ab);     \
      TP_LEGACY_INTS(suffix, wb, ints);                                                  \
      const int isum = tp_dot_i32(ints, ab.qs, TP_QK);                                   \
      const float dx = TP_WEIGHT_SCALE_##suffix(wb), dy = tp_h2f(ab.d);                  \
      sumf += COMBINE((float)isum, dx, dy);                                              \
    }                                                                                    \
    return sumf;                                                                         \
  }
#define TP_COMBINE_Q8_0(s, dx, dy) ((s) * ((dx) * (dy)))
#define TP_COMBINE_Q4_0(s, dx, dy) ((s) * (dx) * (dy))
#define TP_COMBINE_Q5_0(s, dx, dy) (((dx) * (dy)) * (s))
#define TP_COMBINE_MXFP4(s, dx, dy) (((dy) * (dx)) * (s))
TP_DEFINE_SYMMETRIC_DOT(q8_0, TP_COMBINE_Q8_0)
TP_DEFINE_SYMMETRIC_DOT(q4_0, TP_COMBINE_Q4_0)
TP_DEFINE_SYMMETRIC_DOT(q5_0, TP_COMBINE_Q5_0)
TP_DEFINE_SYMMETRIC_DOT(mxfp4, TP_COMBINE_MXFP4)
#undef TP_DEFINE_SYMMETRIC_DOT

/* Weights with a minimum (partner Q8_1, whose s = d*sum(q) carries the min term). */
#define TP_DEFINE_MIN_DOT(suffix)                                                         \
  float tp_vec_dot_##suffix(int64_t blocks, const void *weights, const void *activations) { \
    float sumf = 0.0f;                                                                   \
    for (int64_t i = 0; i < blocks; ++i) {                                               \
      tp_block_##suffix wb;                                                              \
      tp_block_q8_1 ab;                                                                  \
      int ints[TP_QK];                                                                   \
      memcpy(&wb, (const uint8_t *)weights + i * (int64_t)sizeof wb, sizeof wb);         \
      memcpy(&ab, (const uint8_t *)activations + i * (int64_t)sizeof ab, sizeof ab);     \
      TP_LEGACY_INTS(suffix, wb, ints);                                                  \
      const int isum = tp_dot_i32(ints, ab.qs, TP_QK);                                   \
      sumf += (tp_h2f(wb.d) * tp_h2f(ab.d)) * (float)isum + tp_h2f(wb.m) * tp_h2f(ab.s); \
    }                                                                                    \
    return sumf;                                                                         \
  }
TP_DEFINE_MIN_DOT(q4_1)
TP_DEFINE_MIN_DOT(q5_1)
#undef TP_DEFINE_MIN_DOT

/* ---- K formats against Q8_K */

static tp_block_q8_K tp_load_q8_K(const void *activations, int64_t i) {
  tp_block_q8_K b;
  memcpy(&b, (const uint8_t *)activations + i * (int64_t)sizeof b, sizeof b);
  return b;
}

float tp_vec_dot_q2_K(int64_t blocks, const void *weights, const void *activations) {
  float sumf = 0.0f;
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q2_K wb;
    memcpy(&wb, (const uint8_t *)weights + i * (int64_t)sizeof wb, sizeof wb);
    const tp_block_q8_K ab = tp_load_q8_K(activations, i);
    uint8_t q[TP_QK_K];
    tp_q2_k_levels(&wb, q);
    int summs = 0, isum = 0;
    for (int j = 0; j < 16; ++j) {
      summs += ab.bsums[j] * (wb.scales[j] >> 4);
      int partial = 0;
      for (int l = 0; l < 16; ++l) partial += ab.qs[16 * j + l] * q[16 * j + l];
      isum += (wb.scales[j] & 0xF) * partial;
    }
    const float dall = ab.d * tp_h2f(wb.d);
    const float dmin = ab.d * tp_h2f(wb.dmin);
    sumf += dall * (float)isum - dmin * (float)summs;
  }
  return sumf;
}

/* The 8-lane accumulation shared by Q3_K..Q6_K: lanes[l] gains
 * d * sum_g scale[g] * q8[8g+l] * level[8g+l] for one super-block, where
 * group g of 8 elements has scale group_scale[g]. */
static void tp_k_lanes_accumulate(const int *level, const int8_t *q8, const int group_scale[32],
                                  float d, float lanes[8]) {
  int32_t lane_int[8] = {0};
  for (int g = 0; g < 32; ++g)
    for (int l = 0; l < 8; ++l) lane_int[l] += group_scale[g] * (q8[8 * g + l] * level[8 * g + l]);
  for (int l = 0; l < 8; ++l) lanes[l] += d * (float)lane_int[l];
}

static float tp_k_lanes_finish(float sumf, const float lanes[8]) {
  for (int l = 0; l < 8; ++l) sumf += lanes[l];
  return sumf;
}

float tp_vec_dot_q3_K(int64_t blocks, const void *weights, const void *activations) {
  float lanes[8] = {0}, sumf = 0.0f;
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q3_K wb;
    memcpy(&wb, (const uint8_t *)weights + i * (int64_t)sizeof wb, sizeof wb);
    const tp_block_q8_K ab = tp_load_q8_K(activations, i);
    int8_t q[TP_QK_K];
    int level[TP_QK_K], scales[16], group_scale[32];
    tp_q3_k_levels(&wb, q);
    tp_q3_k_scales(wb.scales, scales);
    for (int j = 0; j < TP_QK_K; ++j) level[j] = q[j];
    for (int g = 0; g < 32; ++g) group_scale[g] = scales[g / 2];
    tp_k_lanes_accumulate(level, ab.qs, group_scale, tp_h2f(wb.d) * ab.d, lanes);
  }
  return tp_k_lanes_finish(sumf, lanes);
}

/* Q4_K and Q5_K: `qh` picks the 5-bit variant. */
#define TP_DEFINE_K4_DOT(suffix, QH)                                                      \
  float tp_vec_dot_##suffix(int64_t blocks, const void *weights, const void *activations) { \
    float lanes[8] = {0}, sumf = 0.0f;                                                   \
    for (int64_t i = 0; i < blocks; ++i) {                                               \
      tp_block_##suffix wb;                                                              \
      memcpy(&wb, (const uint8_t *)weights + i * (int64_t)sizeof wb, sizeof wb);         \
      const tp_block_q8_K ab = tp_load_q8_K(activations, i);                             \
      uint8_t q[TP_QK_K];                                                                \
      int level[TP_QK_K], group_scale[32], min_sum = 0;                                  \
      tp_k4_levels(wb.qs, QH(wb), q);                                                    \
      for (int j = 0; j < TP_QK_K; ++j) level[j] = q[j];                                 \
      for (int j = 0; j < 8; ++j) {                                                      \
        uint8_t sc, m;                                                                   \
        tp_k4_scale_min(j, wb.scales, &sc, &m);                                          \
        for (int g = 0; g < 4; ++g) group_scale[4 * j + g] = sc;                         \
        min_sum += (ab.bsums[2 * j] + ab.bsums[2 * j + 1]) * m;                          \
      }                                                                                  \
      tp_k_lanes_accumulate(level, ab.qs, group_scale, tp_h2f(wb.d) * ab.d, lanes);      \
      sumf -= (tp_h2f(wb.dmin) * ab.d) * (float)min_sum;                                 \
    }                                                                                    \
    return tp_k_lanes_finish(sumf, lanes);                                               \
  }
#define TP_K4_NO_QH(b) NULL
#define TP_K4_QH(b) (b).qh
TP_DEFINE_K4_DOT(q4_K, TP_K4_NO_QH)
TP_DEFINE_K4_DOT(q5_K, TP_K4_QH)
#undef TP_DEFINE_K4_DOT

float tp_vec_dot_q6_K(int64_t blocks, const void *weights, const void *activations) {
  float lanes[8] = {0}, sumf = 0.0f;
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q6_K wb;
    memcpy(&wb, (const uint8_t *)weights + i * (int64_t)sizeof wb, sizeof wb);
    const tp_block_q8_K ab = tp_load_q8_K(activations, i);
    int8_t q[TP_QK_K];
    int level[TP_QK_K], group_scale[32];
    tp_q6_k_levels(&wb, q);
    for (int j = 0; j < TP_QK_K; ++j) level[j] = q[j];
    for (int g = 0; g < 32; ++g) group_scale[g] = wb.scales[g / 2];
    tp_k_lanes_accumulate(level, ab.qs, group_scale, tp_h2f(wb.d) * ab.d, lanes);
  }
  return tp_k_lanes_finish(sumf, lanes);
}

/* ---- entry points */

topos_status tp_vec_dot_ref(topos_dtype wtype, int64_t n, const void *w_row,
                            const void *act_row_in_partner_format, float *out) {
  const tp_quant_traits *traits = NULL;
  int64_t blocks = 0;
  TP_TRY(tp_quant_row_blocks("vec_dot_ref", wtype, n, &traits, &blocks));
  if (!traits->vec_dot)
    return tp_fail(TOPOS_ERR_DTYPE, "vec_dot_ref: %s is an activation format, not a weight format",
                   traits->suffix);
  if (!out || (blocks > 0 && (!w_row || !act_row_in_partner_format)))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "vec_dot_ref: NULL buffer");
  *out = blocks > 0 ? traits->vec_dot(blocks, w_row, act_row_in_partner_format) : 0.0f;
  return TOPOS_OK;
}

topos_status tp_qmatmul_ref_dequant(topos_dtype wtype, const void *w, size_t w_row_bytes,
                                    int64_t cols, const float *x, int64_t rows, int64_t k_dim,
                                    float *out) {
  const tp_quant_traits *traits = NULL;
  int64_t blocks = 0;
  TP_TRY(tp_quant_row_blocks("qmatmul_ref_dequant", wtype, k_dim, &traits, &blocks));
  if (cols < 0 || rows < 0)
    return tp_fail(TOPOS_ERR_SHAPE, "qmatmul_ref_dequant: negative extent (%lld rows, %lld cols)",
                   (long long)rows, (long long)cols);
  if ((uint64_t)blocks > SIZE_MAX / (uint64_t)traits->block_bytes ||
      w_row_bytes < (size_t)blocks * (size_t)traits->block_bytes)
    return tp_fail(TOPOS_ERR_SHAPE,
                   "qmatmul_ref_dequant: weight row stride %zu bytes < %lld blocks of %s",
                   w_row_bytes, (long long)blocks, traits->suffix);
  if (rows == 0 || cols == 0 || k_dim == 0) {
    for (int64_t i = 0; i < rows * cols; ++i) out[i] = 0.0f;
    return TOPOS_OK;
  }
  if (!w || !x || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "qmatmul_ref_dequant: NULL buffer");
  if ((uint64_t)k_dim > SIZE_MAX / sizeof(float))
    return tp_fail(TOPOS_ERR_OVERFLOW, "qmatmul_ref_dequant: row of %lld floats", (long long)k_dim);
  float *row = malloc((size_t)k_dim * sizeof(float));
  if (!row)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qmatmul_ref_dequant: %lld floats", (long long)k_dim);
  for (int64_t c = 0; c < cols; ++c) {
    traits->dequantize((const uint8_t *)w + (size_t)c * w_row_bytes, row, blocks);
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = x + r * k_dim;
      double sum = 0.0;
      for (int64_t k = 0; k < k_dim; ++k) sum += (double)row[k] * (double)xr[k];
      out[r * cols + c] = (float)sum;
    }
  }
  free(row);
  return TOPOS_OK;
}
