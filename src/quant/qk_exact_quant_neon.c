/* The reference dot products of the block-quantized weights (dot_ref.c,
 * ggml's *_generic order) on baseline NEON, with their bits: the integer
 * sums (exact in any order) on the vector unit, every float step as the
 * reference takes it. The x86 twin is qk_exact_quant_avx2.c.
 *
 * - 32-element formats: one block's integer sum (vmull_s8 + pairwise adds
 *   of signed levels and activations, 16 bits per product: exact), then the
 *   block's float term added to the single f32 sum, block by block.
 * - Q3_K .. Q6_K: the reference's eight f32 lanes (lane l takes elements
 *   8g + l) are NEON's eight 16-bit products of 8 elements: elements l and
 *   l + 8 of each 16 meet in one 16-bit lane (a 16-element group shares a
 *   scale), vmlal_n_s16 scales them into two int32x4 (lanes 0-3, 4-7).
 * - Q2_K: one integer sum per super-block, the float step as the reference's.
 * Float steps never fuse: separate vmulq / vaddq, -ffp-contract=off. */
#include <arm_neon.h>
#include <stddef.h>
#include <string.h>

#include "quant/qk_exact_quant.h"
#include "quant/qk_internal.h"

/* ---- integer pieces ------------------------------------------------------ */

/* Sum of the 32 products of two signed 32-byte rows (two halves each). */
static inline int qn_dot32(int8x16_t w0, int8x16_t w1, const int8_t *a) {
  const int8x16_t a0 = vld1q_s8(a), a1 = vld1q_s8(a + 16);
  int32x4_t acc = vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(a0)));
  acc = vpadalq_s16(acc, vmull_high_s8(w0, a0));
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w1), vget_low_s8(a1)));
  acc = vpadalq_s16(acc, vmull_high_s8(w1, a1));
  return vaddvq_s32(acc);
}

/* Low and high nibbles of 16 bytes: elements 0..15 and 16..31. */
static inline void qn_nibbles(const uint8_t *qs, uint8x16_t *lo, uint8x16_t *hi) {
  const uint8x16_t b = vld1q_u8(qs);
  *lo = vandq_u8(b, vdupq_n_u8(0x0F));
  *hi = vshrq_n_u8(b, 4);
}

/* 0x10 in byte j (0..15 in lo, 16..31 in hi) where bit j of the 32 bits at qh is set. */
static inline void qn_fifth_bits(const uint8_t *qh, uint8x16_t *lo, uint8x16_t *hi) {
  uint32_t bits;
  memcpy(&bits, qh, 4);
  const uint8x16_t bytes = vreinterpretq_u8_u32(vdupq_n_u32(bits));
  static const uint8_t idx_lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  static const uint8_t idx_hi[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
  static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t mask = vld1q_u8(bit), tenth = vdupq_n_u8(0x10);
  *lo = vandq_u8(vtstq_u8(vqtbl1q_u8(bytes, vld1q_u8(idx_lo)), mask), tenth);
  *hi = vandq_u8(vtstq_u8(vqtbl1q_u8(bytes, vld1q_u8(idx_hi)), mask), tenth);
}

static inline int8x16_t qn_less(uint8x16_t u, int bias) {
  return vsubq_s8(vreinterpretq_s8_u8(u), vdupq_n_s8((int8_t)bias));
}

/* ---- 32-element formats -------------------------------------------------- */

static inline __attribute__((always_inline)) float qn_legacy_dot(tp_qe_legacy f, int64_t blocks,
                                                                 const uint8_t *w, const uint8_t *a) {
  const size_t wbytes = tp_qe_weight_bytes(f), abytes = tp_qe_act_bytes(f), aq = tp_qe_act_qs(f);
  static const int8_t mx_table[16] = {TP_MXFP4_LEVELS};
  const int8x16_t mx_levels = vld1q_s8(mx_table);
  float sumf = 0.0f;
  for (int64_t i = 0; i < blocks; ++i) {
    const uint8_t *wb = w + (size_t)i * wbytes, *ab = a + (size_t)i * abytes;
    uint16_t dy16, d16 = 0;
    memcpy(&dy16, ab, 2);
    if (f != TP_QE_MXFP4) memcpy(&d16, wb, 2);
    const float dx = f == TP_QE_MXFP4 ? tp_e8m0_half(wb[offsetof(tp_block_mxfp4, e)]) : tp_h2f(d16);
    const float dy = tp_h2f(dy16);
    uint8x16_t lo, hi, h0, h1;
    int8x16_t w0, w1;
    switch (f) {
    case TP_QE_Q4_0: qn_nibbles(wb + offsetof(tp_block_q4_0, qs), &lo, &hi), w0 = qn_less(lo, 8), w1 = qn_less(hi, 8); break;
    case TP_QE_Q4_1: qn_nibbles(wb + offsetof(tp_block_q4_1, qs), &lo, &hi), w0 = qn_less(lo, 0), w1 = qn_less(hi, 0); break;
    case TP_QE_Q5_0:
      qn_nibbles(wb + offsetof(tp_block_q5_0, qs), &lo, &hi), qn_fifth_bits(wb + offsetof(tp_block_q5_0, qh), &h0, &h1);
      w0 = qn_less(vorrq_u8(lo, h0), 16), w1 = qn_less(vorrq_u8(hi, h1), 16);
      break;
    case TP_QE_Q5_1:
      qn_nibbles(wb + offsetof(tp_block_q5_1, qs), &lo, &hi), qn_fifth_bits(wb + offsetof(tp_block_q5_1, qh), &h0, &h1);
      w0 = qn_less(vorrq_u8(lo, h0), 0), w1 = qn_less(vorrq_u8(hi, h1), 0);
      break;
    case TP_QE_Q8_0:
      w0 = vld1q_s8((const int8_t *)(wb + offsetof(tp_block_q8_0, qs)));
      w1 = vld1q_s8((const int8_t *)(wb + offsetof(tp_block_q8_0, qs) + 16));
      break;
    default:
      qn_nibbles(wb + offsetof(tp_block_mxfp4, qs), &lo, &hi);
      w0 = vqtbl1q_s8(mx_levels, lo), w1 = vqtbl1q_s8(mx_levels, hi);
      break;
    }
    const float s = (float)qn_dot32(w0, w1, (const int8_t *)(ab + aq));
    switch (f) { /* dot_ref.c's expressions, operand order kept */
    case TP_QE_Q8_0: sumf += s * (dx * dy); break;
    case TP_QE_Q4_0: sumf += s * dx * dy; break;
    case TP_QE_Q5_0: sumf += (dx * dy) * s; break;
    case TP_QE_MXFP4: sumf += (dy * dx) * s; break;
    default: {
      uint16_t m16, s16;
      memcpy(&m16, wb + offsetof(tp_block_q4_1, m), 2); /* Q5_1's m sits there too */
      memcpy(&s16, ab + offsetof(tp_block_q8_1, s), 2);
      sumf += (dx * dy) * s + tp_h2f(m16) * tp_h2f(s16);
    }
    }
  }
  return sumf;
}

_Static_assert(offsetof(tp_block_q4_1, m) == offsetof(tp_block_q5_1, m), "Q4_1 and Q5_1 keep m at one offset");

#define QN_LEGACY(suffix, F) \
  static float qn_dot_##suffix(int64_t blocks, const void *w, const void *a) { return qn_legacy_dot(F, blocks, w, a); }
QN_LEGACY(q4_0, TP_QE_Q4_0)
QN_LEGACY(q4_1, TP_QE_Q4_1)
QN_LEGACY(q5_0, TP_QE_Q5_0)
QN_LEGACY(q5_1, TP_QE_Q5_1)
QN_LEGACY(q8_0, TP_QE_Q8_0)
QN_LEGACY(mxfp4, TP_QE_MXFP4)
#undef QN_LEGACY

/* ---- K formats ----------------------------------------------------------- */

/* Eight int32 lanes (lo: 0-3, hi: 4-7) of a super-block's scaled sums. */
typedef struct {
  int32x4_t lo, hi;
} qn_lanes;

/* lanes += scale * (elements l and l + 8 of the 16 levels at q16 times
 * the 16 activations at a), lane by lane. */
static inline void qn_group16(qn_lanes *acc, int8x16_t q16, const int8_t *a, int scale) {
  const int8x16_t a16 = vld1q_s8(a);
  const int16x8_t p = vaddq_s16(vmull_s8(vget_low_s8(q16), vget_low_s8(a16)), vmull_high_s8(q16, a16));
  acc->lo = vmlal_n_s16(acc->lo, vget_low_s16(p), (int16_t)scale);
  acc->hi = vmlal_high_n_s16(acc->hi, p, (int16_t)scale);
}

/* lanes_f += d * (float)lanes (tp_k_lanes_accumulate's last step). */
static inline void qn_lanes_scale(float32x4_t lanes_f[2], float d, qn_lanes l) {
  lanes_f[0] = vaddq_f32(lanes_f[0], vmulq_f32(vdupq_n_f32(d), vcvtq_f32_s32(l.lo)));
  lanes_f[1] = vaddq_f32(lanes_f[1], vmulq_f32(vdupq_n_f32(d), vcvtq_f32_s32(l.hi)));
}

static inline float qn_lanes_finish(float sumf, const float32x4_t lanes_f[2]) {
  float l[8];
  vst1q_f32(l, lanes_f[0]);
  vst1q_f32(l + 4, lanes_f[1]);
  return tp_qe_lanes_finish(sumf, l);
}

/* Bytes shifted right by a run-time count. */
static inline uint8x16_t qn_shr(uint8x16_t x, int count) { return vshlq_u8(x, vdupq_n_s8((int8_t)-count)); }

static inline __attribute__((always_inline)) float qn_k4_dot(int five, int64_t blocks, const uint8_t *w,
                                                             const uint8_t *a) {
  const size_t wbytes = five ? sizeof(tp_block_q5_K) : sizeof(tp_block_q4_K);
  const uint8x16_t low4 = vdupq_n_u8(0x0F), one = vdupq_n_u8(1);
  float32x4_t lanes_f[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  float sumf = 0.0f;
  for (int64_t i = 0; i < blocks; ++i) {
    const tp_qe_q8k ab = tp_qe_q8k_at(a, i);
    const uint8_t *wb = w + (size_t)i * wbytes;
    uint16_t d16, dmin16;
    uint8_t scales[12];
    memcpy(&d16, wb + offsetof(tp_block_q4_K, d), 2);
    memcpy(&dmin16, wb + offsetof(tp_block_q4_K, dmin), 2);
    memcpy(scales, wb + offsetof(tp_block_q4_K, scales), 12);
    const uint8_t *qs = wb + (five ? offsetof(tp_block_q5_K, qs) : offsetof(tp_block_q4_K, qs));
    const uint8_t *qh = five ? wb + offsetof(tp_block_q5_K, qh) : NULL;
    qn_lanes lanes = {vdupq_n_s32(0), vdupq_n_s32(0)};
    int min_sum = 0;
    for (int j = 0; j < 8; ++j) { /* sub-block j: elements 32 j .. 32 j + 31 */
      uint8_t sc, m;
      tp_k4_scale_min(j, scales, &sc, &m);
      min_sum += (ab.bsums[2 * j] + ab.bsums[2 * j + 1]) * m;
      for (int h = 0; h < 2; ++h) {
        const uint8x16_t q = vld1q_u8(qs + 32 * (j / 2) + 16 * h);
        uint8x16_t u = j % 2 ? vshrq_n_u8(q, 4) : vandq_u8(q, low4);
        if (five) u = vorrq_u8(u, vshlq_n_u8(vandq_u8(qn_shr(vld1q_u8(qh + 16 * h), j), one), 4));
        qn_group16(&lanes, vreinterpretq_s8_u8(u), ab.qs + 32 * j + 16 * h, sc);
      }
    }
    qn_lanes_scale(lanes_f, tp_h2f(d16) * ab.d, lanes);
    sumf -= (tp_h2f(dmin16) * ab.d) * (float)min_sum;
  }
  return qn_lanes_finish(sumf, lanes_f);
}

static float qn_dot_q4_K(int64_t blocks, const void *w, const void *a) { return qn_k4_dot(0, blocks, w, a); }
static float qn_dot_q5_K(int64_t blocks, const void *w, const void *a) { return qn_k4_dot(1, blocks, w, a); }

static float qn_dot_q6_K(int64_t blocks, const void *w, const void *a) {
  const uint8x16_t low4 = vdupq_n_u8(0x0F), three = vdupq_n_u8(3);
  float32x4_t lanes_f[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q6_K wb;
    memcpy(&wb, (const uint8_t *)w + (size_t)i * sizeof wb, sizeof wb);
    const tp_qe_q8k ab = tp_qe_q8k_at(a, i);
    qn_lanes lanes = {vdupq_n_s32(0), vdupq_n_s32(0)};
    for (int half = 0; half < 2; ++half)
      for (int c = 0; c < 4; ++c) /* elements 128 half + 32 c + l: nibble of ql[32 (c % 2) + l], bits 2c of qh[l] */
        for (int h = 0; h < 2; ++h) {
          const uint8x16_t ql = vld1q_u8(wb.ql + 64 * half + 32 * (c % 2) + 16 * h);
          const uint8x16_t lo = c < 2 ? vandq_u8(ql, low4) : vshrq_n_u8(ql, 4);
          const uint8x16_t hi = vandq_u8(qn_shr(vld1q_u8(wb.qh + 32 * half + 16 * h), 2 * c), three);
          const int g = 8 * half + 2 * c + h; /* the 16-element group */
          qn_group16(&lanes, qn_less(vorrq_u8(lo, vshlq_n_u8(hi, 4)), 32), ab.qs + 16 * g, wb.scales[g]);
        }
    qn_lanes_scale(lanes_f, tp_h2f(wb.d) * ab.d, lanes);
  }
  return qn_lanes_finish(0.0f, lanes_f);
}

static float qn_dot_q3_K(int64_t blocks, const void *w, const void *a) {
  const uint8x16_t three = vdupq_n_u8(3), one = vdupq_n_u8(1);
  float32x4_t lanes_f[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q3_K wb;
    memcpy(&wb, (const uint8_t *)w + (size_t)i * sizeof wb, sizeof wb);
    const tp_qe_q8k ab = tp_qe_q8k_at(a, i);
    int scales[16];
    tp_q3_k_scales(wb.scales, scales);
    qn_lanes lanes = {vdupq_n_s32(0), vdupq_n_s32(0)};
    for (int c = 0; c < 8; ++c) /* level = low - (bit c of hmask ? 0 : 4): u = low + 4 * bit, less 4 */
      for (int h = 0; h < 2; ++h) {
        const uint8x16_t low = vandq_u8(qn_shr(vld1q_u8(wb.qs + 32 * (c / 4) + 16 * h), 2 * (c % 4)), three);
        const uint8x16_t high = vshlq_n_u8(vandq_u8(qn_shr(vld1q_u8(wb.hmask + 16 * h), c), one), 2);
        qn_group16(&lanes, qn_less(vorrq_u8(low, high), 4), ab.qs + 32 * c + 16 * h, scales[2 * c + h]);
      }
    qn_lanes_scale(lanes_f, tp_h2f(wb.d) * ab.d, lanes);
  }
  return qn_lanes_finish(0.0f, lanes_f);
}

static float qn_dot_q2_K(int64_t blocks, const void *w, const void *a) {
  const uint8x16_t three = vdupq_n_u8(3);
  float sumf = 0.0f;
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q2_K wb;
    memcpy(&wb, (const uint8_t *)w + (size_t)i * sizeof wb, sizeof wb);
    const tp_qe_q8k ab = tp_qe_q8k_at(a, i);
    int summs = 0;
    for (int j = 0; j < 16; ++j) summs += ab.bsums[j] * (wb.scales[j] >> 4);
    qn_lanes acc = {vdupq_n_s32(0), vdupq_n_s32(0)};
    for (int c = 0; c < 8; ++c)
      for (int h = 0; h < 2; ++h) { /* group 2c + h: elements 32 c + 16 h .. + 15 */
        const uint8x16_t u = vandq_u8(qn_shr(vld1q_u8(wb.qs + 32 * (c / 4) + 16 * h), 2 * (c % 4)), three);
        qn_group16(&acc, vreinterpretq_s8_u8(u), ab.qs + 32 * c + 16 * h, wb.scales[2 * c + h] & 0xF);
      }
    const int isum = vaddvq_s32(vaddq_s32(acc.lo, acc.hi));
    const float dall = ab.d * tp_h2f(wb.d);
    const float dmin = ab.d * tp_h2f(wb.dmin);
    sumf += dall * (float)isum - dmin * (float)summs;
  }
  return sumf;
}

tp_vec_dot_fn tp_qk_exact_dot_neon(topos_dtype wtype) { TP_QE_DOT_OF(wtype, qn) }
