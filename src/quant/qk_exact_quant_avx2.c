/* The reference dot products of the block-quantized weights (dot_ref.c,
 * ggml's *_generic order) on AVX2, with their bits. A dot product's bits are
 * fixed by its float steps alone: every integer sum is exact, so the
 * integers are formed here in whatever order the vector units like, and
 * every float step is taken as the reference takes it.
 *
 * - 32-element formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4): the reference
 *   adds one term per block to a single f32 sum, in block order. Here eight
 *   blocks' integer sums are formed side by side, their terms computed as
 *   eight lanes (each the reference's expression for its block, the same
 *   operations in the same order), and then added to the sum one by one.
 * - Q3_K .. Q6_K: the reference is itself eight f32 lanes, lane l taking the
 *   scaled products of elements 8g + l; the lanes here are those lanes.
 *   vpmaddubsw adds neighbouring bytes, so each 32 elements are reordered
 *   (vpermd + vpshufb, the same order for weights and activations) to put
 *   elements l and l + 8 side by side, and elements l + 16 and l + 24: one
 *   vpmaddwd then applies the two 16-element scales and leaves lane l's sum.
 * - Q2_K: one integer sum per super-block (any order), the float step as
 *   the reference's.
 *
 * Levels enter vpmaddubsw as unsigned bytes: a signed level is stored
 * biased (Q4_0: q, level q - 8), and the bias's products are subtracted in
 * 16 bits (exact: no pair sum reaches 2^15). Q8_0's signed weights are
 * widened to 16 bits instead. Call only after tp_qk_cpu_avx2(). */
#include <immintrin.h>
#include <string.h>

#include "quant/qk_exact_quant.h"
#include "quant/qk_internal.h"

/* ---- integer pieces ------------------------------------------------------ */

/* The 32 nibbles of a 16-byte Q4_0-order block: byte j low is element j,
 * byte j high is element j + 16. */
static inline __m256i qx_nibbles(const uint8_t *qs) {
  const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)qs), m = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

/* 0x10 in byte j where bit j of the little-endian 32 bits at qh is set. */
static inline __m256i qx_fifth_bits(const uint8_t *qh) {
  uint32_t bits;
  memcpy(&bits, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32((int)bits), _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                                     2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i mask = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, mask), mask), _mm256_set1_epi8(0x10));
}

/* 16-bit pair sums of (u - bias) * a for unsigned levels u: exact, as
 * |u| < 64 and |bias| <= 32 keep every pair under 2^15. */
static inline __m256i qx_pairs(__m256i u, __m256i a, int bias) {
  __m256i p = _mm256_maddubs_epi16(u, a);
  if (bias) p = _mm256_sub_epi16(p, _mm256_maddubs_epi16(_mm256_set1_epi8((char)bias), a));
  return p;
}

/* Eight 32-bit partial sums of one block's products. */
static inline __m256i qx_block_unsigned(__m256i u, __m256i a, int bias) {
  return _mm256_madd_epi16(qx_pairs(u, a, bias), _mm256_set1_epi16(1));
}

static inline __m256i qx_block_signed(const int8_t *w, const int8_t *a) {
  const __m128i w0 = _mm_loadu_si128((const __m128i *)(const void *)w);
  const __m128i w1 = _mm_loadu_si128((const __m128i *)(const void *)(w + 16));
  const __m128i a0 = _mm_loadu_si128((const __m128i *)(const void *)a);
  const __m128i a1 = _mm_loadu_si128((const __m128i *)(const void *)(a + 16));
  return _mm256_add_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(w0), _mm256_cvtepi8_epi16(a0)),
                          _mm256_madd_epi16(_mm256_cvtepi8_epi16(w1), _mm256_cvtepi8_epi16(a1)));
}

/* The totals of eight vectors of 32-bit sums, lane i the total of v[i]. */
static inline __m256i qx_totals8(const __m256i v[8]) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]), h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]), h67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i q0 = _mm256_hadd_epi32(h01, h23), q1 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20), _mm256_permute2x128_si256(q0, q1, 0x31));
}

/* ---- 32-element formats -------------------------------------------------- */

/* One row's dot product for format f (a constant at every call, so each
 * wrapper below is its own specialised loop). */
static inline __attribute__((always_inline)) float qx_legacy_dot(tp_qe_legacy f, int64_t blocks,
                                                                 const uint8_t *w, const uint8_t *a) {
  const int with_min = tp_qe_with_min(f);
  const size_t wbytes = tp_qe_weight_bytes(f), abytes = tp_qe_act_bytes(f), aq = tp_qe_act_qs(f);
  const __m256i mx_levels = _mm256_setr_epi8(TP_MXFP4_LEVELS, TP_MXFP4_LEVELS);
  float sumf = 0.0f;
  for (int64_t b0 = 0; b0 < blocks; b0 += 8) {
    const int count = blocks - b0 < 8 ? (int)(blocks - b0) : 8;
    __m256i v[8];
    uint16_t dx[8] = {0}, mx[8] = {0}, dy[8] = {0}, sy[8] = {0};
    float ex[8] = {0};
    for (int i = 0; i < 8; ++i) {
      if (i >= count) {
        v[i] = _mm256_setzero_si256();
        continue;
      }
      const uint8_t *wb = w + (size_t)(b0 + i) * wbytes, *ab = a + (size_t)(b0 + i) * abytes;
      const int8_t *qa = (const int8_t *)(ab + aq);
      const __m256i av = _mm256_loadu_si256((const __m256i *)(const void *)qa);
      memcpy(&dy[i], ab, 2);
      if (with_min) memcpy(&sy[i], ab + offsetof(tp_block_q8_1, s), 2);
      switch (f) {
      case TP_QE_Q4_0:
        memcpy(&dx[i], wb, 2);
        v[i] = qx_block_unsigned(qx_nibbles(wb + offsetof(tp_block_q4_0, qs)), av, 8);
        break;
      case TP_QE_Q4_1:
        memcpy(&dx[i], wb, 2), memcpy(&mx[i], wb + offsetof(tp_block_q4_1, m), 2);
        v[i] = qx_block_unsigned(qx_nibbles(wb + offsetof(tp_block_q4_1, qs)), av, 0);
        break;
      case TP_QE_Q5_0:
        memcpy(&dx[i], wb, 2);
        v[i] = qx_block_unsigned(_mm256_or_si256(qx_nibbles(wb + offsetof(tp_block_q5_0, qs)),
                                                 qx_fifth_bits(wb + offsetof(tp_block_q5_0, qh))),
                                 av, 16);
        break;
      case TP_QE_Q5_1:
        memcpy(&dx[i], wb, 2), memcpy(&mx[i], wb + offsetof(tp_block_q5_1, m), 2);
        v[i] = qx_block_unsigned(_mm256_or_si256(qx_nibbles(wb + offsetof(tp_block_q5_1, qs)),
                                                 qx_fifth_bits(wb + offsetof(tp_block_q5_1, qh))),
                                 av, 0);
        break;
      case TP_QE_Q8_0:
        memcpy(&dx[i], wb, 2);
        v[i] = qx_block_signed((const int8_t *)(wb + offsetof(tp_block_q8_0, qs)), qa);
        break;
      case TP_QE_MXFP4: {
        ex[i] = tp_e8m0_half(wb[offsetof(tp_block_mxfp4, e)]);
        const __m256i u = _mm256_add_epi8(_mm256_shuffle_epi8(mx_levels, qx_nibbles(wb + offsetof(tp_block_mxfp4, qs))),
                                          _mm256_set1_epi8(TP_MXFP4_BIAS));
        v[i] = qx_block_unsigned(u, av, TP_MXFP4_BIAS);
        break;
      }
      }
    }
    /* each block's term as dot_ref.c writes it (operand order kept) */
    const __m256 s = _mm256_cvtepi32_ps(qx_totals8(v));
    const __m256 fdy = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)dy));
    const __m256 fdx = f == TP_QE_MXFP4 ? _mm256_loadu_ps(ex) : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)dx));
    __m256 term;
    switch (f) {
    case TP_QE_Q8_0: term = _mm256_mul_ps(s, _mm256_mul_ps(fdx, fdy)); break;        /* s * (dx*dy) */
    case TP_QE_Q4_0: term = _mm256_mul_ps(_mm256_mul_ps(s, fdx), fdy); break;        /* s * dx * dy */
    case TP_QE_Q5_0: term = _mm256_mul_ps(_mm256_mul_ps(fdx, fdy), s); break;        /* (dx*dy) * s */
    case TP_QE_MXFP4: term = _mm256_mul_ps(_mm256_mul_ps(fdy, fdx), s); break;       /* (dy*dx) * s */
    default: {                                                                    /* (dx*dy)*s + mx*sy */
      const __m256 fmx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)mx));
      const __m256 fsy = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)sy));
      term = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(fdx, fdy), s), _mm256_mul_ps(fmx, fsy));
    }
    }
    float t[8];
    _mm256_storeu_ps(t, term);
    for (int i = 0; i < count; ++i) sumf += t[i]; /* the reference's single sum, in block order */
  }
  return sumf;
}

#define QX_LEGACY(suffix, F) \
  static float qx_dot_##suffix(int64_t blocks, const void *w, const void *a) { return qx_legacy_dot(F, blocks, w, a); }
QX_LEGACY(q4_0, TP_QE_Q4_0)
QX_LEGACY(q4_1, TP_QE_Q4_1)
QX_LEGACY(q5_0, TP_QE_Q5_0)
QX_LEGACY(q5_1, TP_QE_Q5_1)
QX_LEGACY(q8_0, TP_QE_Q8_0)
QX_LEGACY(mxfp4, TP_QE_MXFP4)
#undef QX_LEGACY

/* ---- K formats ----------------------------------------------------------- */

/* 32 elements reordered so that vpmaddubsw's pairs are, per 128-bit half,
 * (l, l+8) and (l+16, l+24) for l = 0..3, then l = 4..7: dwords 0 2 4 6 |
 * 1 3 5 7, then bytes in each half interleaved. */
static inline __m256i qx_lane_order(__m256i x) {
  x = _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
  return _mm256_shuffle_epi8(x, _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8,
                                                 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
}

/* The activations of one super-block in lane order, 8 chunks of 32. */
static inline void qx_q8k_lane_order(const tp_qe_q8k *ab, __m256i a[8]) {
  for (int c = 0; c < 8; ++c) a[c] = qx_lane_order(_mm256_loadu_si256((const __m256i *)(const void *)(ab->qs + 32 * c)));
}

/* lanes += s0 * (chunk elements 0..15 of lane l) + s1 * (16..31 of lane l),
 * for unsigned levels u (natural order) less bias: exact 32-bit sums. */
static inline __m256i qx_chunk_lanes(__m256i lanes, __m256i u, __m256i a_ordered, int bias, int s0, int s1) {
  const __m256i p = qx_pairs(qx_lane_order(u), a_ordered, bias);
  const __m256i sc = _mm256_set1_epi32((int)(((uint32_t)(uint16_t)s1 << 16) | (uint16_t)s0));
  return _mm256_add_epi32(lanes, _mm256_madd_epi16(p, sc));
}

/* lanes_f += d * (float)lanes, as tp_k_lanes_accumulate's last step. */
static inline __m256 qx_lanes_scale(__m256 lanes_f, float d, __m256i lanes) {
  return _mm256_add_ps(lanes_f, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes)));
}

static inline float qx_lanes_finish(float sumf, __m256 lanes_f) {
  float l[8];
  _mm256_storeu_ps(l, lanes_f);
  return tp_qe_lanes_finish(sumf, l);
}

static inline __attribute__((always_inline)) float qx_k4_dot(int five, int64_t blocks, const uint8_t *w,
                                                             const uint8_t *a) {
  const size_t wbytes = five ? sizeof(tp_block_q5_K) : sizeof(tp_block_q4_K);
  const __m256i low4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
  __m256 lanes_f = _mm256_setzero_ps();
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
    const __m256i qh = five ? _mm256_loadu_si256((const __m256i *)(const void *)(wb + offsetof(tp_block_q5_K, qh)))
                            : _mm256_setzero_si256();
    __m256i av[8];
    qx_q8k_lane_order(&ab, av);
    __m256i lanes = _mm256_setzero_si256();
    int min_sum = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      tp_k4_scale_min(j, scales, &sc, &m);
      min_sum += (ab.bsums[2 * j] + ab.bsums[2 * j + 1]) * m;
      const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * (j / 2)));
      __m256i u = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(q, 4) : q, low4);
      if (five) u = _mm256_or_si256(u, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, j), one), 4));
      lanes = qx_chunk_lanes(lanes, u, av[j], 0, sc, sc);
    }
    lanes_f = qx_lanes_scale(lanes_f, tp_h2f(d16) * ab.d, lanes);
    sumf -= (tp_h2f(dmin16) * ab.d) * (float)min_sum;
  }
  return qx_lanes_finish(sumf, lanes_f);
}

static float qx_dot_q4_K(int64_t blocks, const void *w, const void *a) { return qx_k4_dot(0, blocks, w, a); }
static float qx_dot_q5_K(int64_t blocks, const void *w, const void *a) { return qx_k4_dot(1, blocks, w, a); }

static float qx_dot_q6_K(int64_t blocks, const void *w, const void *a) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(3);
  __m256 lanes_f = _mm256_setzero_ps();
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q6_K wb;
    memcpy(&wb, (const uint8_t *)w + (size_t)i * sizeof wb, sizeof wb);
    const tp_qe_q8k ab = tp_qe_q8k_at(a, i);
    __m256i av[8];
    qx_q8k_lane_order(&ab, av);
    __m256i lanes = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const __m256i ql0 = _mm256_loadu_si256((const __m256i *)(const void *)(wb.ql + 64 * half));
      const __m256i ql1 = _mm256_loadu_si256((const __m256i *)(const void *)(wb.ql + 64 * half + 32));
      const __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(wb.qh + 32 * half));
      for (int c = 0; c < 4; ++c) { /* elements 128 half + 32 c + l */
        const __m256i ql = c % 2 ? ql1 : ql0;
        const __m256i lo = _mm256_and_si256(c < 2 ? ql : _mm256_srli_epi16(ql, 4), low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), two);
        const int g = 4 * half + c;
        lanes = qx_chunk_lanes(lanes, _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), av[g], 32, wb.scales[2 * g],
                               wb.scales[2 * g + 1]);
      }
    }
    lanes_f = qx_lanes_scale(lanes_f, tp_h2f(wb.d) * ab.d, lanes);
  }
  return qx_lanes_finish(0.0f, lanes_f);
}

static float qx_dot_q3_K(int64_t blocks, const void *w, const void *a) {
  const __m256i two = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
  __m256 lanes_f = _mm256_setzero_ps();
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q3_K wb;
    memcpy(&wb, (const uint8_t *)w + (size_t)i * sizeof wb, sizeof wb);
    const tp_qe_q8k ab = tp_qe_q8k_at(a, i);
    int scales[16];
    tp_q3_k_scales(wb.scales, scales);
    __m256i av[8];
    qx_q8k_lane_order(&ab, av);
    const __m256i hm = _mm256_loadu_si256((const __m256i *)(const void *)wb.hmask);
    __m256i lanes = _mm256_setzero_si256();
    for (int c = 0; c < 8; ++c) { /* level = low - (bit c of hmask ? 0 : 4): u = low + 4 * bit */
      const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(wb.qs + 32 * (c / 4)));
      const __m256i low = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (c % 4)), two);
      const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, c), one), 2);
      lanes = qx_chunk_lanes(lanes, _mm256_or_si256(low, high), av[c], 4, scales[2 * c], scales[2 * c + 1]);
    }
    lanes_f = qx_lanes_scale(lanes_f, tp_h2f(wb.d) * ab.d, lanes);
  }
  return qx_lanes_finish(0.0f, lanes_f);
}

static float qx_dot_q2_K(int64_t blocks, const void *w, const void *a) {
  const __m256i two = _mm256_set1_epi8(3);
  float sumf = 0.0f;
  for (int64_t i = 0; i < blocks; ++i) {
    tp_block_q2_K wb;
    memcpy(&wb, (const uint8_t *)w + (size_t)i * sizeof wb, sizeof wb);
    const tp_qe_q8k ab = tp_qe_q8k_at(a, i);
    __m256i acc = _mm256_setzero_si256();
    int summs = 0;
    for (int j = 0; j < 16; ++j) summs += ab.bsums[j] * (wb.scales[j] >> 4);
    for (int c = 0; c < 8; ++c) { /* elements 32 c .. 32 c + 31: scales 2c (first 16) and 2c + 1 */
      const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(wb.qs + 32 * (c / 4)));
      const __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (c % 4)), two);
      const __m256i av = _mm256_loadu_si256((const __m256i *)(const void *)(ab.qs + 32 * c));
      const __m256i sc = _mm256_set_m128i(_mm_set1_epi16(wb.scales[2 * c + 1] & 0xF), _mm_set1_epi16(wb.scales[2 * c] & 0xF));
      acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, av), sc));
    }
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    const int isum = _mm_cvtsi128_si32(s);
    const float dall = ab.d * tp_h2f(wb.d);
    const float dmin = ab.d * tp_h2f(wb.dmin);
    sumf += dall * (float)isum - dmin * (float)summs;
  }
  return sumf;
}

tp_vec_dot_fn tp_qk_exact_dot_avx2(topos_dtype wtype) { TP_QE_DOT_OF(wtype, qx) }
