/* topos_qmatmul: fast kernels against the reference path and against the f32
 * product of dequantized weights, thread-count and run-to-run bit identity,
 * Unsupported answers, bad arguments, every available ISA level.
 *
 * Stated bounds (eps = 2^-24, a_q = the activations after partner
 * quantization, both paths use the same a_q):
 *   fast vs reference:  |fast - ref| <= (k/8 + 32) * eps * S,
 *     S = sum_i (|w_i| + max_block|w|) * |a_q_i|
 *   (both paths form exact integer block sums; only the float scaling and
 *   summation order differ; the max_block|w| term covers the separately
 *   rounded min / bias terms). Not bitwise in general; bitwise when each
 *   output has a single nonzero term (one-hot weights), which pins the
 *   activation quantization of the fast path to the reference quantizer.
 *   float weights:      |fast - ref| <= (k/8 + 32) * eps * sum |w||a|;
 *     on the AMX-BF16 route (F16 / BF16, m >= TP_QK_AMXF_MIN_M, where the
 *     CPU has it: bf16 splits of both operands, qk_amx_float.h) add
 *     (2^-14 + 2k * eps) * sum |w||a|.
 *   fast vs dequantized f32 product (f64 sums of w_deq * a):
 *     |fast - deq| <= sum_i |w_i| * h_i + tol_fast, h_i = half a quantization
 *     step of a_i's partner block (amax/254 rounded up), 0 for float weights. */
#include <stdlib.h>

#include "quant/qk_internal.h"
#include "quant/qk_shim.h"
#include "quant/quant_internal.h"
#include "quant_test_util.h"
#include "test.h"

static const topos_dtype qm_all_types[] = {TOPOS_F32,  TOPOS_F16,  TOPOS_BF16, TOPOS_Q8_0, TOPOS_Q4_0,
                                           TOPOS_Q4_1, TOPOS_Q5_0, TOPOS_Q5_1, TOPOS_Q2_K, TOPOS_Q3_K,
                                           TOPOS_Q4_K, TOPOS_Q5_K, TOPOS_Q6_K, TOPOS_MXFP4};
#define QM_NTYPES ((int)(sizeof qm_all_types / sizeof qm_all_types[0]))

static uint64_t qm_rng = 12345;
static float qm_uniform(void) { /* splitmix64 -> [-1, 1) */
  uint64_t z = (qm_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)((double)(z >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static const char *qm_name(topos_dtype t) {
#define QM_NAME_ROW(e, nm, be, bb, gg, kind) \
  if (t == e) return nm;
  TOPOS_DTYPE_LIST(QM_NAME_ROW)
#undef QM_NAME_ROW
  return "?";
}

static int64_t qm_block(topos_dtype t) {
  int64_t e, b;
  qt_geometry(t, &e, &b);
  return e;
}

/* Random f32 weights quantized to t with the reference quantizer. */
static uint8_t *qm_weights(topos_dtype t, int64_t n, int64_t k) {
  size_t rb = qt_row_bytes(t, k);
  uint8_t *w = malloc(rb * (size_t)n);
  float *row = malloc((size_t)k * sizeof(float));
  if (!w || !row) {
    free(w), free(row);
    return NULL;
  }
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < k; ++i) row[i] = qm_uniform() * (1.0f + (float)(j % 3));
    if (topos_quantize_row(t, row, w + (size_t)j * rb, k) != TOPOS_OK) {
      free(w), free(row);
      return NULL;
    }
  }
  free(row);
  return w;
}

static float *qm_floats(int64_t count, float scale) {
  float *a = malloc((size_t)count * sizeof(float));
  if (a)
    for (int64_t i = 0; i < count; ++i) a[i] = qm_uniform() * scale;
  return a;
}

static topos_dtype qm_partner(topos_dtype t) {
  topos_dtype p = TOPOS_F32;
  if (topos_quant_vec_dot_type(t, &p) != TOPOS_OK) return TOPOS_F32;
  return p == TOPOS_F16 || p == TOPOS_BF16 ? TOPOS_F32 : p; /* float weights meet f32 activations */
}

/* Quantized-then-dequantized activations (the a_q both paths use). */
static int qm_act_q(topos_dtype t, const float *a, int64_t m, int64_t k, float *aq) {
  topos_dtype p = qm_partner(t);
  if (p == TOPOS_F32) {
    memcpy(aq, a, (size_t)(m * k) * sizeof(float));
    return 1;
  }
  uint8_t *buf = malloc(qt_row_bytes(p, k));
  if (!buf) return 0;
  int ok = 1;
  for (int64_t r = 0; r < m && ok; ++r)
    ok = topos_quantize_row(p, a + r * k, buf, k) == TOPOS_OK &&
         topos_dequantize_row(p, buf, aq + r * k, k) == TOPOS_OK;
  free(buf);
  return ok;
}

/* Whether FAST takes float weights of type t through the AMX-BF16 tiles. */
static int qm_amxf_route(topos_dtype t, int64_t m) {
  return (t == TOPOS_F16 || t == TOPOS_BF16) && m >= TP_QK_AMXF_MIN_M && tp_qk_amx_bf16_usable();
}

/* Checks FAST against REFERENCE and the dequantized product for one case. */
static void qm_check_case(topos_dtype t, int64_t m, int64_t k, int64_t n, int with_bias) {
  uint8_t *w = qm_weights(t, n, k);
  float *a = qm_floats(m * k, 2.0f), *bias = qm_floats(n, 1.0f);
  float *ref = malloc((size_t)(m * n) * 4), *fast = malloc((size_t)(m * n) * 4);
  float *deq = malloc((size_t)(m * n) * 4), *wd = malloc((size_t)(n * k) * 4);
  float *aq = malloc((size_t)(m * k) * 4);
  int ok = w && a && bias && ref && fast && deq && wd && aq;
  const float *b = with_bias ? bias : NULL;
  size_t rb = qt_row_bytes(t, k);
  if (ok) {
    ok = tp_qmatmul_threads(a, m, k, w, t, n, b, ref, TOPOS_QMATMUL_REFERENCE, 1) == TOPOS_OK;
    ok = ok && tp_qmatmul_threads(a, m, k, w, t, n, b, fast, TOPOS_QMATMUL_FAST, 2) == TOPOS_OK;
    ok = ok && tp_qmatmul_ref_dequant(t, w, rb, n, a, m, k, deq) == TOPOS_OK;
    for (int64_t j = 0; ok && j < n; ++j) ok = topos_dequantize_row(t, w + (size_t)j * rb, wd + j * k, k) == TOPOS_OK;
    ok = ok && qm_act_q(t, a, m, k, aq);
  }
  const int64_t ablock = qm_partner(t) == TOPOS_Q8_K ? 256 : 32, wblock = qm_block(t);
  const int quant_w = t != TOPOS_F32 && t != TOPOS_F16 && t != TOPOS_BF16;
  const double eps = 1.0 / 16777216.0;
  /* per element: the largest |w| of its weight block, half an activation step */
  double *wmax = malloc((size_t)(n * k) * sizeof(double)), *half = malloc((size_t)(m * k) * sizeof(double));
  ok = ok && wmax && half;
  for (int64_t i0 = 0; ok && i0 < n * k; i0 += wblock) {
    double mx = 0;
    for (int64_t u = i0; u < i0 + wblock; ++u) mx = fabs(wd[u]) > mx ? fabs(wd[u]) : mx;
    for (int64_t u = i0; u < i0 + wblock; ++u) wmax[u] = quant_w ? mx : 0.0;
  }
  for (int64_t i0 = 0; ok && i0 < m * k; i0 += ablock) {
    double mx = 0;
    for (int64_t u = i0; u < i0 + ablock && u < m * k; ++u) mx = fabs(a[u]) > mx ? fabs(a[u]) : mx;
    for (int64_t u = i0; u < i0 + ablock && u < m * k; ++u) half[u] = qm_partner(t) != TOPOS_F32 ? mx / 254.0 * 1.001 : 0.0;
  }
  int bad = 0;
  for (int64_t r = 0; ok && r < m && !bad; ++r)
    for (int64_t j = 0; j < n && !bad; ++j) {
      double s = 0, sq = 0;
      for (int64_t i = 0; i < k; ++i) {
        s += (fabs(wd[j * k + i]) + wmax[j * k + i]) * fabs(aq[r * k + i]);
        sq += fabs(wd[j * k + i]) * half[r * k + i];
      }
      double bv = b ? b[j] : 0.0;
      double tol = ((double)k / 8 + 32) * eps * s + (b ? eps * fabs(bv) * 2 : 0);
      if (qm_amxf_route(t, m)) tol += (1.0 / 16384 + 2.0 * (double)k * eps) * s;
      double e1 = fabs((double)fast[r * n + j] - ref[r * n + j]);
      double e2 = fabs((double)fast[r * n + j] - (deq[r * n + j] + bv));
      if (e1 > tol || e2 > sq + tol + eps * fabs(bv) * 2) bad = 1;
      if (bad)
        tt_fail_at(__FILE__, __LINE__,
                   "%s m=%lld k=%lld n=%lld out[%lld,%lld]: fast %.9g ref %.9g deq %.9g (tol %.3g, quant tol %.3g)",
                   qm_name(t), (long long)m, (long long)k, (long long)n, (long long)r,
                   (long long)j, fast[r * n + j], ref[r * n + j], deq[r * n + j] + bv, tol, sq);
    }
  if (!ok) tt_fail_at(__FILE__, __LINE__, "%s: setup or product failed: %s", qm_name(t), topos_last_error());
  free(w), free(a), free(bias), free(ref), free(fast), free(deq), free(wd), free(aq), free(wmax), free(half);
}

static int qm_have_fast(void) { return topos_qmatmul_fast_isa(TOPOS_Q8_0) != NULL; }

TEST(qmatmul_fast_matches_reference_every_type) {
  if (!qm_have_fast()) SKIP("no fast kernel on this CPU");
  for (int ti = 0; ti < QM_NTYPES; ++ti) {
    topos_dtype t = qm_all_types[ti];
    qm_check_case(t, 1, 256, 13, 0);
    qm_check_case(t, 6, 512, 9, 1);
    qm_check_case(t, 26, 256, 21, 1); /* the AMX route (m >= 4) for every type where the CPU has it */
    if (qm_block(t) <= 32) qm_check_case(t, 5, 96, 7, 1);  /* k not a multiple of 64 */
    if (qm_block(t) == 32) qm_check_case(t, 9, 96, 17, 0); /* ... on the AMX route */
    if (qm_block(t) == 1) qm_check_case(t, 3, 37, 5, 0);  /* vector tail */
  }
}

TEST(qmatmul_every_isa_level_matches_reference) {
  const int levels[] = {TP_QK_ISA_GENERIC, TP_QK_ISA_AVX2, TP_QK_ISA_AVX2, TP_QK_ISA_AVX512VNNI, TP_QK_ISA_AMX};
  const char *names[] = {"generic", "avx2", "neon-dotprod", "avx512vnni", "avx512vnni+amx"};
  int ran = 0;
  for (int l = 0; l < 5; ++l) {
    tp_qk_set_isa_cap(levels[l]);
    const char *isa = topos_qmatmul_fast_isa(TOPOS_Q4_K);
    if (!isa || strcmp(isa, names[l]) != 0) continue; /* level not available here */
    ++ran;
    const topos_dtype some[] = {TOPOS_F16,  TOPOS_Q8_0, TOPOS_Q4_0, TOPOS_Q4_K, TOPOS_Q6_K,
                                TOPOS_Q5_1, TOPOS_Q3_K, TOPOS_Q2_K, TOPOS_MXFP4};
    for (size_t i = 0; i < sizeof some / sizeof some[0]; ++i) {
      qm_check_case(some[i], 5, 256, 6, 1);
      qm_check_case(some[i], 26, 256, 18, 0);
    }
  }
  tp_qk_set_isa_cap(TP_QK_ISA_ANY);
  if (!ran) SKIP("no SIMD level available");
}

/* One-hot weights: out[r, j] = a_q[r, j] exactly on both paths, so the fast
 * path's activation quantization is the reference quantizer bit for bit,
 * ties included. */
TEST(qmatmul_fast_activation_quantization_is_reference) {
  if (!qm_have_fast()) SKIP("no fast kernel on this CPU");
  const int64_t k = 256, n = 256, m = 3;
  float *a = qm_floats(m * k, 3.0f);
  float *ref = malloc((size_t)(m * n) * 4), *fast = malloc((size_t)(m * n) * 4);
  uint8_t *w8 = calloc((size_t)n, qt_row_bytes(TOPOS_Q8_0, k)), *w6 = calloc((size_t)n, qt_row_bytes(TOPOS_Q6_K, k));
  CHECK(a && ref && fast && w8 && w6);
  /* ties: a block with amax 127 has d = 1 and rounds x.5 (Q8_0 away from zero, Q8_K to even) */
  const float ties[] = {127.0f, 2.5f, -3.5f, 0.5f, -0.5f, 1.5f, 100.5f, -126.5f};
  for (int i = 0; i < 8; ++i) a[k + i] = ties[i], a[k + 32 + i] = ties[i] * (i ? 1.0f : -1.0f);
  for (int i = 8; i < 32; ++i) a[k + i] = (float)(i % 7) - 3.0f;
  /* row 2: NaNs after the largest element, and last in the super-block and
   * in a 32-block: skipped by the maxima (Q8_0 and Q8_K alike), level 0 */
  a[2 * k + 1] = 9.0f, a[2 * k + 5] = NAN, a[2 * k + 63] = NAN, a[2 * k + 247] = NAN, a[2 * k + 255] = NAN;
  size_t rb8 = qt_row_bytes(TOPOS_Q8_0, k), rb6 = qt_row_bytes(TOPOS_Q6_K, k);
  for (int64_t j = 0; j < n; ++j) {
    uint8_t *r8 = w8 + (size_t)j * rb8, *r6 = w6 + (size_t)j * rb6;
    uint16_t one = topos_f32_to_f16(1.0f);
    for (int64_t b = 0; b < k / 32; ++b) memcpy(r8 + 34 * b, &one, 2);
    r8[34 * (j / 32) + 2 + j % 32] = 1;
    /* Q6_K: d = 1, scales 1, level 32 (value 0) everywhere except 33 at j */
    memcpy(r6 + 208, &one, 2);
    for (int g = 0; g < 16; ++g) r6[192 + g] = 1;
    for (int e = 0; e < 256; ++e) {
      int h = e / 128, l = e % 128, lvl = e == j ? 33 : 32;
      int qlpos = 64 * h + (l % 64), shift = l < 64 ? 0 : 4, qhpos = 128 + 32 * h + (l % 32), hs = 2 * (l / 32);
      r6[qlpos] = (uint8_t)((r6[qlpos] & ~(0xF << shift)) | ((lvl & 0xF) << shift));
      r6[qhpos] = (uint8_t)((r6[qhpos] & ~(3 << hs)) | ((lvl >> 4) << hs));
    }
  }
  CHECK_OK(tp_qmatmul_threads(a, m, k, w8, TOPOS_Q8_0, n, NULL, ref, TOPOS_QMATMUL_REFERENCE, 1));
  CHECK_OK(tp_qmatmul_threads(a, m, k, w8, TOPOS_Q8_0, n, NULL, fast, TOPOS_QMATMUL_FAST, 1));
  for (int64_t i = 0; i < m * n; ++i) CHECK_BITS_F32(fast[i], ref[i]);
  CHECK(fabsf(ref[2 * n + 1] - 9.0f) < 0.01f && ref[2 * n + 5] == 0.0f); /* the block's scale from 9, not NaN */
  CHECK_OK(tp_qmatmul_threads(a, m, k, w6, TOPOS_Q6_K, n, NULL, ref, TOPOS_QMATMUL_REFERENCE, 1));
  CHECK_OK(tp_qmatmul_threads(a, m, k, w6, TOPOS_Q6_K, n, NULL, fast, TOPOS_QMATMUL_FAST, 1));
  for (int64_t i = 0; i < m * n; ++i) CHECK_BITS_F32(fast[i], ref[i]);
  CHECK(ref[n + 1] == 2.0f && ref[n + 2] == -4.0f); /* Q8_K: 2.5 -> 2 and -3.5 -> -4 (half to even) */ /* the tie row did produce values */
  CHECK(fabsf(ref[2 * n + 1] - 9.0f) < 0.01f && ref[2 * n + 255] == 0.0f); /* row 2's scale from its numbers only */
  free(a), free(ref), free(fast), free(w8), free(w6);
}

/* The same for rows of 19 Q8_0 / Q8_1 blocks (the fast quantizer takes 16
 * blocks at a time, then one by one), on the tiles (m = 20) and the
 * matrix-vector kernels (m = 2): one-hot Q8_0 weights give a_q exactly, and
 * one-hot Q4_1 weights (d = m = 1 in the hot element's block, 0 elsewhere)
 * give a_q + s, so Q8_1's s is checked too. Ties in a block of the first
 * group and in the last block, an all-zero block (scale 0), and blocks
 * holding NaNs and infinities. */
TEST(qmatmul_fast_activation_quantization_is_reference_long_rows) {
  if (!qm_have_fast()) SKIP("no fast kernel on this CPU");
  const int64_t k = 19 * 32, n = k;
  const topos_dtype types[] = {TOPOS_Q8_0, TOPOS_Q4_1};
  const float ties[] = {127.0f, 2.5f, -3.5f, 0.5f, -0.5f, 1.5f, 100.5f, -126.5f};
  const int64_t ms[] = {20, 2};
  for (int mi = 0; mi < 2; ++mi) {
    const int64_t m = ms[mi];
    float *a = qm_floats(m * k, 3.0f), *ref = malloc((size_t)(m * n) * 4), *fast = malloc((size_t)(m * n) * 4);
    CHECK(a && ref && fast);
    for (int i = 0; i < 8; ++i) a[k + 32 * 3 + i] = ties[i], a[k + 32 * 18 + i] = -ties[i];
    for (int i = 0; i < 32; ++i) a[32 * 5 + i] = 0.0f;
    /* non-finite activations. Row 0: a NaN after its block's largest
     * element and a NaN last in a block: a block's scale is the maximum of
     * its numbers (a NaN skipped, whatever lane it falls in) and a NaN's
     * level is 0 (the reference rounds a NaN to 0), so every output stays
     * finite. Row 1: an infinity makes its block's scale infinite and its
     * levels 0 * inf = NaN: every output of the row is NaN. */
    a[32 * 7 + 1] = 5.0f, a[32 * 7 + 4] = NAN;
    a[32 * 8 + 31] = NAN;
    a[k + 32 * 9 + 30] = INFINITY;
    a[k + 32 * 10 + 1] = -INFINITY, a[k + 32 * 10 + 2] = NAN;
    a[k + 32 * 11 + 31] = NAN; /* the block's last element: its scale NaN */
    for (int ti = 0; ti < 2; ++ti) {
      const topos_dtype t = types[ti];
      const size_t rb = qt_row_bytes(t, k), bb = t == TOPOS_Q8_0 ? 34 : 20;
      uint8_t *w = calloc((size_t)n, rb);
      CHECK(w != NULL);
      const uint16_t one = topos_f32_to_f16(1.0f);
      for (int64_t j = 0; j < n; ++j) {
        uint8_t *blk = w + (size_t)j * rb + bb * (size_t)(j / 32);
        memcpy(blk, &one, 2);
        if (t == TOPOS_Q8_0) {
          blk[2 + j % 32] = 1;
        } else { /* Q4_1: m = 1, element j % 32 at level 1 (low nibbles: 0..15, high: 16..31) */
          memcpy(blk + 2, &one, 2);
          blk[4 + j % 16] = (uint8_t)(j % 32 < 16 ? 1 : 0x10);
        }
      }
      CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, ref, TOPOS_QMATMUL_REFERENCE, 1));
      CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, fast, TOPOS_QMATMUL_FAST, 1));
      int64_t nans = 0;
      for (int64_t i = 0; i < m * n; ++i) {
        if (isnan(ref[i])) { /* NaN outputs agree as NaNs (their sign is the operations' order) */
          CHECK(isnan(fast[i]));
          ++nans;
        } else {
          CHECK_BITS_F32(fast[i], ref[i]);
        }
      }
      /* row 1's every output (its infinite block's scale times the other
       * weight rows' zero scales is NaN in each sum), and no other row's */
      CHECK_MSG(nans == n, "%lld NaN outputs", (long long)nans);
      for (int64_t j = 0; j < n; ++j) CHECK(isnan(ref[n + j]) && isfinite(ref[j]));
      if (t == TOPOS_Q8_0) /* the NaN block's scale from its largest number: 5 at level 127 */
        CHECK_MSG(fabsf(ref[32 * 7 + 1] - 5.0f) < 0.01f, "%g", ref[32 * 7 + 1]);
      CHECK(ref[k + 32 * 3 + 1] != 0.0f); /* the tie row produced values */
      free(w);
    }
    free(a), free(ref), free(fast);
  }
}

static int qm_same_bits(const float *x, const float *y, int64_t count) {
  return memcmp(x, y, (size_t)count * sizeof(float)) == 0;
}

/* Float tiles copy activations that are not vector-aligned (qk_engine_body.h
 * run): the same bits from a buffer 4 bytes off as from an aligned one. */
TEST(qmatmul_float_tiles_same_bits_from_misaligned_activations) {
  if (!qm_have_fast()) SKIP("no fast kernel on this CPU");
  const topos_dtype types[] = {TOPOS_F32, TOPOS_F16, TOPOS_BF16};
  const int64_t m = 9, k = 64, n = 12;
  for (int ti = 0; ti < 3; ++ti) {
    uint8_t *w = qm_weights(types[ti], n, k);
    float *a = qm_floats(m * k, 1.0f), *off = malloc((size_t)(m * k + 1) * 4);
    float *aligned = aligned_alloc(64, (size_t)(m * k) * 4), *o1 = malloc((size_t)(m * n) * 4),
          *o2 = malloc((size_t)(m * n) * 4);
    CHECK(w && a && off && aligned && o1 && o2);
    memcpy(aligned, a, (size_t)(m * k) * 4);
    memcpy(off + 1, a, (size_t)(m * k) * 4);
    CHECK_OK(tp_qmatmul_threads(aligned, m, k, w, types[ti], n, NULL, o1, TOPOS_QMATMUL_FAST, 1));
    CHECK_OK(tp_qmatmul_threads(off + 1, m, k, w, types[ti], n, NULL, o2, TOPOS_QMATMUL_FAST, 2));
    CHECK_MSG(qm_same_bits(o1, o2, m * n), "%s: misaligned activations changed bits", qm_name(types[ti]));
    free(w), free(a), free(off), free(aligned), free(o1), free(o2);
  }
}

TEST(qmatmul_bitwise_across_threads_runs_and_m) {
  const topos_dtype some[] = {TOPOS_F32,  TOPOS_BF16, TOPOS_Q8_0, TOPOS_Q4_0, TOPOS_Q4_K,
                              TOPOS_Q5_K, TOPOS_Q2_K, TOPOS_Q6_K, TOPOS_Q4_1, TOPOS_MXFP4};
  const int64_t k = 512, n = 37;
  for (size_t ti = 0; ti < 2 * sizeof some / sizeof some[0]; ++ti) {
    /* m = 7 on the VNNI route, m = 30 on the AMX route where present (it
     * serves m >= 4 and rounds all but Q8_0 its own way; m = 1 is VNNI) */
    const int64_t m = ti % 2 ? 30 : 7;
    tp_qk_set_isa_cap(m < 8 ? TP_QK_ISA_AVX512VNNI : TP_QK_ISA_ANY);
    topos_dtype t = some[ti / 2];
    uint8_t *w = qm_weights(t, n, k);
    float *a = qm_floats(m * k, 1.0f), *o1 = malloc(m * n * 4), *o2 = malloc(m * n * 4);
    CHECK(w && a && o1 && o2);
    for (int p = 0; p < 2; ++p) {
      topos_qmatmul_path path = p ? TOPOS_QMATMUL_REFERENCE : TOPOS_QMATMUL_FAST;
      if (path == TOPOS_QMATMUL_FAST && !qm_have_fast()) continue;
      CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, o1, path, 1));
      for (int th = 1; th <= 3; ++th) {
        memset(o2, 0xFF, (size_t)(m * n) * 4);
        CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, o2, path, th));
        CHECK_MSG(qm_same_bits(o1, o2, m * n), "%s path %d: %d threads differ", qm_name(t), p, th);
      }
      /* rows computed in another product (m = 1, or m = 25 on the AMX route:
       * other tiles, same route) give the same bits */
      const int64_t sub = m < 8 ? 1 : 25;
      float *part = malloc((size_t)(sub * n) * 4);
      CHECK(part);
      CHECK_OK(tp_qmatmul_threads(a + 5 * k, sub, k, w, t, n, NULL, part, path, 2));
      int same = qm_same_bits(part, o1 + 5 * n, sub * n);
      free(part);
      CHECK_MSG(same, "%s path %d m %lld: rows 5.. differ when computed with m = %lld", qm_name(t), p,
                (long long)m, (long long)sub);
    }
    free(w), free(a), free(o1), free(o2);
  }
  tp_qk_set_isa_cap(TP_QK_ISA_ANY);
}

/* The AMX-BF16 route for float weights (qk_amx_float.h): within its
 * stated bound and NMSE 1e-8 of the reference (dropping the lo part or the
 * a2 part of the split lands near 1e-5), the same bits at every thread
 * count, really taken (its bits differ from the vector route's), and a
 * non-finite weight spoils only its own output column. Shapes: one group,
 * k not a multiple of 32, n not a multiple of 16, five groups (two passes
 * of the four C tiles). */
TEST(qmatmul_amx_bf16_float_route) {
  if (!tp_qk_amx_bf16_usable()) SKIP("no AMX-BF16 on this CPU (or masked): the float tiles do not run here");
  const int64_t cases[][3] = {{24, 96, 17}, {37, 100, 33}, {70, 2048, 16}, {80, 33, 50}};
  const topos_dtype types[] = {TOPOS_F16, TOPOS_BF16};
  for (int ti = 0; ti < 2; ++ti)
    for (int ci = 0; ci < 4; ++ci) {
      const topos_dtype t = types[ti];
      const int64_t m = cases[ci][0], k = cases[ci][1], n = cases[ci][2];
      qm_check_case(t, m, k, n, 1); /* the per-output bound */
      uint8_t *w = qm_weights(t, n, k);
      float *a = qm_floats(m * k, 2.0f), *ref = malloc((size_t)(m * n) * 4), *fast = malloc((size_t)(m * n) * 4);
      float *other = malloc((size_t)(m * n) * 4);
      CHECK(w && a && ref && fast && other);
      CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, ref, TOPOS_QMATMUL_REFERENCE, 1));
      CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, fast, TOPOS_QMATMUL_FAST, 1));
      double num = 0, den = 0;
      for (int64_t i = 0; i < m * n; ++i) {
        const double d = (double)fast[i] - ref[i];
        num += d * d, den += (double)ref[i] * ref[i];
      }
      CHECK_MSG(den > 0 && num / den < 1e-8, "%s m=%lld k=%lld n=%lld: NMSE %.3g", qm_name(t), (long long)m,
                (long long)k, (long long)n, num / den);
      for (int th = 2; th <= 3; ++th) {
        CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, other, TOPOS_QMATMUL_FAST, th));
        CHECK_MSG(qm_same_bits(fast, other, m * n), "%s m=%lld: %d threads differ", qm_name(t), (long long)m, th);
      }
      tp_qk_set_isa_cap(TP_QK_ISA_AVX512VNNI);
      CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, other, TOPOS_QMATMUL_FAST, 1));
      tp_qk_set_isa_cap(TP_QK_ISA_ANY);
      if (k >= 96) CHECK_MSG(!qm_same_bits(fast, other, m * n), "%s m=%lld: the vector route's bits (tiles not taken?)",
                             qm_name(t), (long long)m);
      free(w), free(a), free(ref), free(fast), free(other);
    }
  /* non-finite weights: NaN at (row 3, element 5), +inf at (row 7, element 0) */
  const int64_t m = 30, k = 64, n = 20;
  uint8_t *w = qm_weights(TOPOS_F16, n, k);
  float *a = qm_floats(m * k, 1.0f), *out = malloc((size_t)(m * n) * 4);
  CHECK(w && a && out);
  uint16_t *h = (uint16_t *)(void *)w;
  h[3 * k + 5] = 0x7E00, h[7 * k] = 0x7C00;
  CHECK_OK(tp_qmatmul_threads(a, m, k, w, TOPOS_F16, n, NULL, out, TOPOS_QMATMUL_FAST, 2));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      const float v = out[r * n + j];
      if (j == 3) CHECK_MSG(isnan(v), "row %lld: NaN weight gave %g", (long long)r, v);
      else if (j == 7) CHECK_MSG(!isfinite(v), "row %lld: inf weight gave %g", (long long)r, v);
      else CHECK_MSG(isfinite(v), "out[%lld, %lld] = %g: a non-finite weight leaked", (long long)r, (long long)j, v);
    }
  free(w), free(a), free(out);
}

TEST(qmatmul_bias_is_added_last) {
  /* n = 21: full 8-row matrix-vector panels (stored whole) and a short one
   * (stored lane by lane), full 4-row tiles and a short one; m = 1, 2:
   * matrix-vector kernels, 6: tiles with a part-filled group of 8
   * activation rows, 19: two full groups (stored by transposing the tile)
   * and a part-filled one */
  const topos_dtype types[] = {TOPOS_Q8_0, TOPOS_Q4_0, TOPOS_Q4_1, TOPOS_Q4_K, TOPOS_Q6_K};
  const int64_t ms[] = {1, 2, 6, 19}, k = 256, n = 21;
  float *a = qm_floats(19 * k, 1.0f), *bias = qm_floats(n, 4.0f), o[19 * 21], ob[19 * 21];
  CHECK(a && bias);
  for (size_t ti = 0; a && bias && ti < sizeof types / sizeof types[0]; ++ti) {
    uint8_t *w = qm_weights(types[ti], n, k);
    CHECK(w);
    for (size_t mi = 0; w && mi < sizeof ms / sizeof ms[0]; ++mi) {
      const int64_t m = ms[mi];
      for (int path = 0; path <= 2; ++path) {
        CHECK_OK(topos_qmatmul(a, m, k, w, types[ti], n, NULL, o, (topos_qmatmul_path)path));
        CHECK_OK(topos_qmatmul(a, m, k, w, types[ti], n, bias, ob, (topos_qmatmul_path)path));
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < n; ++j) CHECK_BITS_F32(ob[r * n + j], o[r * n + j] + bias[j]);
      }
    }
    free(w);
  }
  free(a), free(bias);
}

TEST(qmatmul_unsupported_and_auto_fallback) {
  const int64_t m = 3, k = 256, n = 6;
  uint8_t *w = qm_weights(TOPOS_Q4_K, n, k);
  float *a = qm_floats(m * k, 1.0f), ref[18], out[18];
  CHECK(w && a);
  CHECK_OK(topos_qmatmul(a, m, k, w, TOPOS_Q4_K, n, NULL, ref, TOPOS_QMATMUL_REFERENCE));
  tp_qk_set_isa_cap(TP_QK_ISA_NONE);
  CHECK(topos_qmatmul_fast_isa(TOPOS_Q4_K) == NULL);
  topos_status st = topos_qmatmul(a, m, k, w, TOPOS_Q4_K, n, NULL, out, TOPOS_QMATMUL_FAST);
  topos_status st_auto = topos_qmatmul(a, m, k, w, TOPOS_Q4_K, n, NULL, out, TOPOS_QMATMUL_AUTO);
  tp_qk_set_isa_cap(TP_QK_ISA_ANY);
  CHECK_EQ_INT(st, TOPOS_UNSUPPORTED);
  CHECK_EQ_INT(st_auto, TOPOS_OK);
  CHECK(qm_same_bits(out, ref, m * n)); /* AUTO fell back to the reference */
  free(w), free(a);
}

TEST(qmatmul_rejects_bad_arguments) {
  float a[512] = {0}, out[64];
  uint8_t w[4096] = {0};
  CHECK_STATUS(topos_qmatmul(a, 1, 100, w, TOPOS_Q4_K, 1, NULL, out, TOPOS_QMATMUL_AUTO), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("k = 100");
  CHECK_ERROR_HAS("256");
  CHECK_STATUS(topos_qmatmul(a, 1, 48, w, TOPOS_Q8_0, 1, NULL, out, TOPOS_QMATMUL_REFERENCE), TOPOS_ERR_SHAPE);
  CHECK_STATUS(topos_qmatmul(NULL, 1, 32, w, TOPOS_Q8_0, 1, NULL, out, TOPOS_QMATMUL_AUTO), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_qmatmul(a, 1, 32, NULL, TOPOS_Q8_0, 1, NULL, out, TOPOS_QMATMUL_AUTO), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_qmatmul(a, 1, 32, w, TOPOS_Q8_0, 1, NULL, NULL, TOPOS_QMATMUL_AUTO), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_qmatmul(a, 0, 32, w, TOPOS_Q8_0, 1, NULL, out, TOPOS_QMATMUL_AUTO), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_qmatmul(a, 1, 32, w, TOPOS_Q8_0, -3, NULL, out, TOPOS_QMATMUL_AUTO), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_qmatmul(a, 1, 256, w, TOPOS_Q8_K, 1, NULL, out, TOPOS_QMATMUL_AUTO), TOPOS_ERR_DTYPE);
  CHECK_STATUS(topos_qmatmul(a, 1, 32, w, TOPOS_I32, 1, NULL, out, TOPOS_QMATMUL_AUTO), TOPOS_ERR_DTYPE);
  CHECK_STATUS(topos_qmatmul(a, 1, 32, w, (topos_dtype)999, 1, NULL, out, TOPOS_QMATMUL_AUTO), TOPOS_ERR_DTYPE);
  CHECK_STATUS(topos_qmatmul(a, 1, 32, w, TOPOS_Q8_0, 1, NULL, out, (topos_qmatmul_path)7), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_qmatmul(a, INT64_MAX / 2, 64, w, TOPOS_F32, INT64_MAX / 2, NULL, out, TOPOS_QMATMUL_AUTO),
               TOPOS_ERR_OVERFLOW);
}

/* The fused matrix-vector kernels (m < 4 on AVX-512 VNNI, and products of
 * m < 9 as row groups of at most 3) against the tile route: every row of an
 * m = 11 product (the tiles) computed alone (m = 1), in products of m = 2
 * and 3 and in one of m = 7 (three row groups) gives the same bits. n = 37 leaves a short last panel; k = 768 is three
 * K super-blocks, k = 96 (legacy types) is not a multiple of 64 and takes
 * the tile route. The VNNI route only: AMX tiles, where present, take
 * m >= 4 and round all but Q8_0 their own way. */
TEST(qmatmul_small_m_same_bits_as_tiles) {
  const topos_dtype types[] = {TOPOS_Q8_0, TOPOS_Q4_0, TOPOS_Q4_1, TOPOS_Q5_0, TOPOS_Q5_1,
                               TOPOS_Q4_K, TOPOS_Q6_K, TOPOS_Q5_K, TOPOS_MXFP4};
  const int64_t n = 37, m = 11;
  if (!qm_have_fast()) SKIP("no fast kernels on this CPU");
  tp_qk_set_isa_cap(TP_QK_ISA_AVX512VNNI);
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ++ti)
    for (int kk = 0; kk < 2; ++kk) {
      const topos_dtype t = types[ti];
      const int64_t k = kk ? 768 : (qm_block(t) == 256 ? 256 : 96);
      uint8_t *w = qm_weights(t, n, k);
      float *a = qm_floats(m * k, 1.5f), *full = malloc(m * n * 4), *part = malloc(7 * n * 4);
      CHECK(w && a && full && part);
      CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, full, TOPOS_QMATMUL_FAST, 1));
      for (int64_t sub = 1; sub <= 7; sub += sub == 3 ? 4 : 1)
        for (int64_t r0 = 0; r0 + sub <= m; r0 += sub == 7 ? 4 : 1) {
          memset(part, 0xFF, (size_t)(sub * n) * 4);
          CHECK_OK(tp_qmatmul_threads(a + r0 * k, sub, k, w, t, n, NULL, part, TOPOS_QMATMUL_FAST, 2));
          CHECK_MSG(qm_same_bits(part, full + r0 * n, sub * n), "%s k %lld: rows %lld..%lld differ with m = %lld",
                    qm_name(t), (long long)k, (long long)r0, (long long)(r0 + sub - 1), (long long)sub);
        }
      free(w), free(a), free(full), free(part);
    }
  tp_qk_set_isa_cap(TP_QK_ISA_ANY);
}

/* Prompt-sized products take the ISA's own tiles where it has them (AVX-512
 * VNNI: 2 x 8 for Q2_K, the super-block kernels for Q4_K / Q5_K / Q6_K, the
 * block-sum kernels for Q8_0), then 4-row tiles, then single rows,
 * over groups of decoded panels:
 * every row must get the bits it gets alone (m = 1: the fused matrix-vector
 * kernel or the single-row tile) and inside other products (m = 4, 9, 13 at
 * other offsets), at any thread count. n = 37 leaves a short last panel; k
 * covers one and several super-blocks and, for 32-blocks, k not a multiple
 * of 64. */
static void qm_prompt_tile_cases(void) {
  const topos_dtype types[] = {TOPOS_Q4_K, TOPOS_Q6_K, TOPOS_Q5_K, TOPOS_Q2_K, TOPOS_Q3_K, TOPOS_Q8_0, TOPOS_Q4_0,
                               TOPOS_Q5_0, TOPOS_Q4_1, TOPOS_Q5_1, TOPOS_F16, TOPOS_F32, TOPOS_BF16, TOPOS_MXFP4};
  const int64_t n = 37, m = 21;
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ++ti)
    for (int kk = 0; kk < 2; ++kk) {
      const topos_dtype t = types[ti];
      const int64_t blk = qm_block(t);
      const int64_t k = blk == 256 ? (kk ? 1280 : 256) : blk == 32 ? (kk ? 1056 : 96) : (kk ? 1031 : 77);
      uint8_t *w = qm_weights(t, n, k);
      float *a = qm_floats(m * k, 1.5f), *full = malloc(m * n * 4), *part = malloc(m * n * 4);
      CHECK(w && a && full && part);
      CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, full, TOPOS_QMATMUL_FAST, 1));
      for (int th = 2; th <= 3; ++th) {
        memset(part, 0xFF, (size_t)(m * n) * 4);
        CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, part, TOPOS_QMATMUL_FAST, th));
        CHECK_MSG(qm_same_bits(part, full, m * n), "%s k %lld: %d threads differ", qm_name(t), (long long)k, th);
      }
      const int64_t subs[][2] = {{0, 1}, {8, 1}, {16, 1}, {20, 1}, {3, 4}, {1, 9}, {5, 13}, {8, 8}};
      for (size_t si = 0; si < sizeof subs / sizeof subs[0]; ++si) {
        const int64_t r0 = subs[si][0], sub = subs[si][1];
        memset(part, 0xFF, (size_t)(sub * n) * 4);
        CHECK_OK(tp_qmatmul_threads(a + r0 * k, sub, k, w, t, n, NULL, part, TOPOS_QMATMUL_FAST, 2));
        CHECK_MSG(qm_same_bits(part, full + r0 * n, sub * n), "%s k %lld: rows %lld..%lld differ with m = %lld",
                  qm_name(t), (long long)k, (long long)r0, (long long)(r0 + sub - 1), (long long)sub);
      }
      free(w), free(a), free(full), free(part);
    }
}

/* The VNNI tiles and kernels only: where AMX is usable its tiles take m >=
 * 4 and round all but Q8_0 their own way, so m = 21 and its sub-products
 * would meet two definitions (qmatmul_bitwise_across_threads_runs_and_m
 * checks the AMX route against itself). */
TEST(qmatmul_prompt_tiles_same_bits_across_m) {
  if (!qm_have_fast()) SKIP("no fast kernels on this CPU");
  tp_qk_set_isa_cap(TP_QK_ISA_AVX512VNNI);
  qm_prompt_tile_cases();
  tp_qk_set_isa_cap(TP_QK_ISA_ANY);
}

/* The 32-element block types on the AVX-512 VNNI engine
 * (qk_block32_avx512vnni.h) are defined block by block: acc =
 * fma(float(isum_b), dw_b * da_b, acc) over the blocks in order from 0,
 * isum_b the exact integer dot of the weight's values (Q8_0: q; Q4_0 / Q5_0:
 * q - 8 / q - 16; Q4_1 / Q5_1: q, then acc = fma(m_b, s_b, acc) with the
 * weight's min and the Q8_1 activation's s) and the quantized activation's
 * 32 values (the AMX tiles' definition for Q8_0). Written out here in scalar
 * C from the reference quantizer's blocks, it must give the fast path's bits
 * for the matrix-vector kernel (m < 4) and the tile (m >= 4), an even and an
 * odd block count, a short last panel, any thread count (AMX capped off for
 * all but Q8_0, whose AMX tiles round their own way). */
/* The fast path's bits against want[qm_rows(t)][n] for m = 1, 3 (the matrix-vector
 * kernels), 4, 21, 40 (Q8_0: 130) (the tiles: one and several activation groups, a
 * part-filled last one) at 1 and 2 threads. */
/* Q8_0 also m = 130: 9 groups of 16, the last part-filled (its AMX tiles
 * copy the weights' A tiles for the other groups from 8 groups on); want
 * holds qm_rows(t) rows. */
#define QM_ROWS 130
static int64_t qm_rows(topos_dtype t) { return t == TOPOS_Q8_0 ? QM_ROWS : 40; }

static void qm_fast_is(topos_dtype t, const float *a, int64_t k, const uint8_t *w, int64_t n, const float *want,
                       float *got, const char *what) {
  const int64_t ms[] = {1, 3, 4, 6, 21, 40, QM_ROWS}; /* 4, 6: row groups of 2 and 3 (tp_qk_row_groups) */
  for (size_t mi = 0; mi < sizeof ms / sizeof ms[0] && ms[mi] <= qm_rows(t); ++mi)
    for (int th = 1; th <= 2; ++th) {
      const int64_t m = ms[mi];
      memset(got, 0xFF, (size_t)(m * n) * 4);
      CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, got, TOPOS_QMATMUL_FAST, th));
      CHECK_MSG(qm_same_bits(got, want, m * n), "%s k %lld m %lld threads %d: not the %s", qm_name(t), (long long)k,
                (long long)m, th, what);
    }
}

static int qm_b32_weight(topos_dtype t, const uint8_t *blk, int i) {
  if (t == TOPOS_Q8_0) return (int8_t)blk[2 + i];
  const int five = t == TOPOS_Q5_0 || t == TOPOS_Q5_1, at = t == TOPOS_Q5_1 ? 4 : 2; /* fifth bits' offset */
  const uint8_t *qs = blk + (t == TOPOS_Q4_0 ? 2 : t == TOPOS_Q4_1 || t == TOPOS_Q5_0 ? 4 + 2 * five : 8);
  int q = i < 16 ? qs[i] & 15 : qs[i - 16] >> 4;
  if (five) {
    const uint32_t qh = (uint32_t)blk[at] | (uint32_t)blk[at + 1] << 8 | (uint32_t)blk[at + 2] << 16 |
                        (uint32_t)blk[at + 3] << 24;
    q |= ((qh >> i) & 1) << 4;
  }
  return t == TOPOS_Q4_0 ? q - 8 : t == TOPOS_Q5_0 ? q - 16 : q; /* Q4_1 / Q5_1: w = d * q + m */
}

static void qm_b32_cases(topos_dtype t) {
  const int64_t n = 37;
  /* blocks: 2, 4, 33, 35 (the decode kernels' steps of four, and none, one or three left),
   * then 33 blocks of extremes */
  const int64_t ks[] = {64, 128, 1056, 1120, 1056};
  for (int kk = 0; kk < 5; ++kk) {
    const int minned = t == TOPOS_Q4_1 || t == TOPOS_Q5_1, ab = minned ? 36 : 34; /* Q8_1 or Q8_0 activations */
    const int64_t k = ks[kk], nb = k / 32;
    const int64_t wb = t == TOPOS_Q8_0 ? 34 : t == TOPOS_Q5_0 ? 22 : t == TOPOS_Q4_0 ? 18 : t == TOPOS_Q4_1 ? 20 : 24;
    const int64_t rows = qm_rows(t);
    uint8_t *w = qm_weights(t, n, k), *aq = malloc((size_t)(rows * nb * ab));
    float *a = qm_floats(rows * k, 1.5f), *want = malloc(rows * n * 4), *got = malloc(rows * n * 4);
    CHECK(w && aq && a && want && got);
    if (kk == 4) { /* every q at its top (Q8_0: -128), d and min 1; qa = +127 or -127 across a row: the
                      AVX2 tile's 16-bit pair sums at their largest */
      for (int64_t i = 0; i < n * nb; ++i) {
        uint8_t *blk = w + (size_t)(i * wb);
        memset(blk + 2, t == TOPOS_Q8_0 ? 0x80 : 0xFF, (size_t)(wb - 2));
        blk[0] = 0x00, blk[1] = 0x3C;
        if (minned) blk[2] = 0x00, blk[3] = 0x3C;
      }
      for (int64_t i = 0; i < rows * k; ++i) a[i] = (i / k) % 2 ? 1.0f : -1.0f;
    }
    for (int64_t c = 0; c < rows; ++c)
      CHECK_OK(topos_quantize_row(minned ? TOPOS_Q8_1 : TOPOS_Q8_0, a + c * k, aq + c * nb * ab, k));
    for (int64_t c = 0; c < rows; ++c)
      for (int64_t r = 0; r < n; ++r) {
        float acc = 0.0f;
        for (int64_t b = 0; b < nb; ++b) {
          const uint8_t *wblk = w + (size_t)((r * nb + b) * wb), *ablk = aq + (size_t)((c * nb + b) * ab);
          int32_t isum = 0;
          for (int i = 0; i < 32; ++i) isum += qm_b32_weight(t, wblk, i) * (int8_t)ablk[ab - 32 + i];
          const float dw = topos_f16_to_f32((uint16_t)(wblk[0] | wblk[1] << 8));
          const float da = topos_f16_to_f32((uint16_t)(ablk[0] | ablk[1] << 8));
          acc = fmaf((float)isum, dw * da, acc);
          if (minned) /* + m * s: the weight's f16 min, the Q8_1 activation's f16 s */
            acc = fmaf(topos_f16_to_f32((uint16_t)(wblk[2] | wblk[3] << 8)),
                       topos_f16_to_f32((uint16_t)(ablk[2] | ablk[3] << 8)), acc);
        }
        want[c * n + r] = acc;
      }
    qm_fast_is(t, a, k, w, n, want, got, "block-sum definition");
    free(w), free(aq), free(a), free(want), free(got);
  }
}

TEST(qmatmul_32_blocks_avx512_are_the_block_sum_definition) {
  const char *isa = topos_qmatmul_fast_isa(TOPOS_Q8_0);
  if (!isa || strncmp(isa, "avx512vnni", 10) != 0) SKIP("the block-sum kernels need AVX-512 VNNI");
  qm_b32_cases(TOPOS_Q8_0); /* through the AMX tiles at m = 21, 40, 130 where present: the same definition */
  tp_qk_set_isa_cap(TP_QK_ISA_AVX512VNNI);
  qm_b32_cases(TOPOS_Q4_0);
  qm_b32_cases(TOPOS_Q5_0);
  qm_b32_cases(TOPOS_Q4_1);
  qm_b32_cases(TOPOS_Q5_1);
  tp_qk_set_isa_cap(TP_QK_ISA_ANY);
}

/* The AVX2 kernels (qk_block32_avx2.h) compute the same definition: the
 * matrix-vector kernel below m = 4, the tile of 8-row groups from there. */
TEST(qmatmul_32_blocks_avx2_are_the_block_sum_definition) {
  tp_qk_set_isa_cap(TP_QK_ISA_AVX2);
  const char *isa = topos_qmatmul_fast_isa(TOPOS_Q8_0);
  if (!isa || strcmp(isa, "avx2") != 0) {
    tp_qk_set_isa_cap(TP_QK_ISA_ANY);
    SKIP("the AVX2 block-sum kernels need AVX2");
  }
  const topos_dtype types[] = {TOPOS_Q8_0, TOPOS_Q4_0, TOPOS_Q5_0, TOPOS_Q4_1, TOPOS_Q5_1};
  for (int i = 0; i < 5; ++i) qm_b32_cases(types[i]);
  tp_qk_set_isa_cap(TP_QK_ISA_ANY);
}

/* Q4_K, Q5_K and Q6_K on the AVX-512 VNNI engine (qk_ksum_avx512vnni.h) are
 * defined per super-block: with the Q8_K activation's qa and per sub-block
 * j the exact sums isc = sum_j sc_j * (dot of j's q and qa) and imn = sum_j
 * m_j * (sum of j's qa) (Q6_K: q - 32 in the dot, no imn),
 *     acc = fma(float(isc), d * da, acc);  acc = acc - float(imn) * (dmin * da)
 * over the super-blocks in order from 0. Written out here in scalar C from
 * the reference quantizer's blocks, it must give the fast path's bits for
 * the matrix-vector kernel (m < 4) and the tile (m >= 4: one and several
 * activation groups, a part-filled last one), a short last panel, one and
 * five super-blocks, any thread count; extreme weights and activations
 * (every q and scale at its top, qa at +-127) check the integers' range. */
static void qm_k_fields(topos_dtype t, const uint8_t *blk, int j, int *sc, int *mn, int *q) {
  if (t == TOPOS_Q2_K || t == TOPOS_Q3_K) { /* 16 sub-blocks of 16: element e's 2 bits at qs[32 (e / 128) + e % 32] */
    const uint8_t *qs = blk + (t == TOPOS_Q2_K ? 16 : 32);
    if (t == TOPOS_Q2_K) {
      *sc = blk[j] & 15, *mn = blk[j] >> 4;
    } else { /* 6-bit scales less 32: low 4 bits from the nibbles of s[0..7], top 2 from s[8 + j % 4] */
      const uint8_t *s = blk + 96;
      const int lo = j < 8 ? s[j] & 15 : s[j - 8] >> 4, hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
      *sc = (lo | hi << 4) - 32, *mn = 0;
    }
    for (int l = 0; l < 16; ++l) {
      const int e = 16 * j + l, shift = 2 * ((e % 128) / 32);
      q[l] = (qs[32 * (e / 128) + e % 32] >> shift) & 3;
      if (t == TOPOS_Q3_K) q[l] += ((blk[e % 32] >> (e / 32)) & 1) ? 0 : -4; /* hmask bit e / 32 clear: -4 */
    }
    return;
  }
  if (t == TOPOS_Q6_K) { /* 16 sub-blocks of 16 */
    *sc = (int8_t)blk[192 + j], *mn = 0;
    for (int l = 0; l < 16; ++l) {
      const int e = 16 * j + l, h = e / 128, u = (e % 128) / 32, ll = e % 32;
      const uint8_t lo = blk[64 * h + 32 * (u % 2) + ll], hb = blk[128 + 32 * h + ll];
      q[l] = ((u < 2 ? lo & 15 : lo >> 4) | ((hb >> (2 * u)) & 3) << 4) - 32;
    }
    return;
  }
  const uint8_t *s = blk + 4, *qh = blk + 16, *qs = blk + (t == TOPOS_Q5_K ? 48 : 16);
  if (j < 4) {
    *sc = s[j] & 63, *mn = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
    *mn = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
  }
  for (int l = 0; l < 32; ++l) { /* sub-block j: the low (j even) or high nibbles of 32 bytes j / 2 */
    const int c = j / 2;
    q[l] = j % 2 ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15;
    if (t == TOPOS_Q5_K) q[l] |= ((qh[l] >> j) & 1) << 4;
  }
}

static void qm_k_super_block_cases(const topos_dtype *types, size_t count) {
  const int64_t n = 37;
  for (size_t ti = 0; ti < count; ++ti)
    for (int kk = 0; kk < 4; ++kk) { /* k = 4864: the decode kernel's passes of 16 super-blocks, and 3 more */
      const topos_dtype t = types[ti];
      const int64_t k = kk == 1 ? 1280 : kk == 3 ? 4864 : 256, nsb = k / 256, ab = 292;
      const int64_t wb = t == TOPOS_Q6_K ? 210 : t == TOPOS_Q5_K ? 176 : t == TOPOS_Q3_K ? 110 : t == TOPOS_Q2_K ? 84 : 144;
      uint8_t *w = qm_weights(t, n, k), *aq = malloc((size_t)(40 * nsb * ab));
      float *a = qm_floats(40 * k, 1.5f), *want = malloc(40 * n * 4), *got = malloc(40 * n * 4);
      CHECK(w && aq && a && want && got);
      if (kk == 2) { /* extremes: all q bits set, scales and mins 63 (Q6_K scales -128, Q2_K 15; Q3_K
                        all bits clear: w = -4, scales -32), qa = +-127 */
        for (int64_t r = 0; r < n; ++r) {
          uint8_t *blk = w + (size_t)r * (size_t)wb;
          if (t == TOPOS_Q6_K) memset(blk, 0xFF, 192), memset(blk + 192, 0x80, 16);
          else if (t == TOPOS_Q2_K) memset(blk, 0xFF, 80);
          else if (t == TOPOS_Q3_K) memset(blk, 0x00, 108);
          else memset(blk + 4, 0xFF, (size_t)(wb - 4));
        }
        for (int64_t i = 0; i < 40 * k; ++i) a[i] = (i / 7) % 2 ? 1.0f : -1.0f;
      }
      for (int64_t c = 0; c < 40; ++c) CHECK_OK(topos_quantize_row(TOPOS_Q8_K, a + c * k, aq + c * nsb * ab, k));
      for (int64_t c = 0; c < 40; ++c)
        for (int64_t r = 0; r < n; ++r) {
          float acc = 0.0f;
          for (int64_t sb = 0; sb < nsb; ++sb) {
            const uint8_t *blk = w + (size_t)((r * nsb + sb) * wb), *act = aq + (size_t)((c * nsb + sb) * ab);
            const int8_t *qa = (const int8_t *)(act + 4);
            float da;
            memcpy(&da, act, 4);
            int32_t isc = 0, imn = 0;
            const int len = t == TOPOS_Q4_K || t == TOPOS_Q5_K ? 32 : 16; /* sub-block length */
            for (int j = 0; j < 256 / len; ++j) {
              int sc, mn, q[32];
              qm_k_fields(t, blk, j, &sc, &mn, q);
              int32_t dot = 0, sum = 0;
              for (int l = 0; l < len; ++l) dot += q[l] * qa[len * j + l], sum += qa[len * j + l];
              isc += sc * dot, imn += mn * sum;
            }
            /* d (and dmin after it): Q4_K / Q5_K at 0, Q6_K at 208, Q3_K at 108, Q2_K at 80 */
            const int64_t at = t == TOPOS_Q6_K ? 208 : t == TOPOS_Q3_K ? 108 : t == TOPOS_Q2_K ? 80 : 0;
            const float d = topos_f16_to_f32((uint16_t)(blk[at] | blk[at + 1] << 8));
            acc = fmaf((float)isc, d * da, acc);
            if (t != TOPOS_Q6_K && t != TOPOS_Q3_K)
              acc = fmaf(-(float)imn, topos_f16_to_f32((uint16_t)(blk[at + 2] | blk[at + 3] << 8)) * da, acc);
          }
          want[c * n + r] = acc;
        }
      qm_fast_is(t, a, k, w, n, want, got, kk == 2 ? "super-block definition (extremes)" : "super-block definition");
      free(w), free(aq), free(a), free(want), free(got);
    }
}

TEST(qmatmul_k_types_avx512_are_the_super_block_sum_definition) {
  const char *isa = topos_qmatmul_fast_isa(TOPOS_Q4_K);
  if (!isa || strncmp(isa, "avx512vnni", 10) != 0) SKIP("the K super-block kernels need AVX-512 VNNI");
  tp_qk_set_isa_cap(TP_QK_ISA_AVX512VNNI); /* the VNNI tile at m >= 4 (AMX, where present, takes it otherwise) */
  const topos_dtype types[] = {TOPOS_Q4_K, TOPOS_Q5_K, TOPOS_Q6_K, TOPOS_Q2_K, TOPOS_Q3_K};
  qm_k_super_block_cases(types, 5);
  tp_qk_set_isa_cap(TP_QK_ISA_ANY);
}

/* The AVX2 kernels (qk_ksum_avx2.h) compute the same definition. */
TEST(qmatmul_k_types_avx2_are_the_super_block_sum_definition) {
  tp_qk_set_isa_cap(TP_QK_ISA_AVX2);
  const char *isa = topos_qmatmul_fast_isa(TOPOS_Q4_K);
  if (!isa || strcmp(isa, "avx2") != 0) {
    tp_qk_set_isa_cap(TP_QK_ISA_ANY);
    SKIP("the AVX2 super-block kernels need AVX2");
  }
  const topos_dtype types[] = {TOPOS_Q4_K, TOPOS_Q5_K, TOPOS_Q6_K, TOPOS_Q2_K, TOPOS_Q3_K};
  qm_k_super_block_cases(types, 5);
  tp_qk_set_isa_cap(TP_QK_ISA_ANY);
}

/* The K types on AMX tiles (qk_amx_ksum.h: the sub-block scales folded
 * into byte images of the weights) compute the same definition: the same
 * bits as the VNNI kernels at m = 4, 21 and 40, and m = 1, 3 still
 * decoding through them. */
TEST(qmatmul_k_types_amx_tiles_are_the_super_block_sum_definition) {
  if (!tp_qk_amx_usable()) SKIP("no AMX-INT8 on this CPU (or masked): the K tiles do not run here");
  const char *isa = topos_qmatmul_fast_isa(TOPOS_Q4_K);
  CHECK(isa && strcmp(isa, "avx512vnni+amx") == 0);
  const topos_dtype types[] = {TOPOS_Q4_K, TOPOS_Q5_K, TOPOS_Q6_K, TOPOS_Q2_K, TOPOS_Q3_K};
  qm_k_super_block_cases(types, 5);
}

/* Float weights read through a row stride (topos_qmatmul_rows: a view of a
 * wider matrix, as a KV cache's value rows) give the packed product's bits
 * on every path, at m = 1 (decoding's row kernels) and m = 21 (tiles), at
 * 1-3 threads; a stride shorter than a row, not a whole number of elements,
 * or on block-quantized weights is refused. */
TEST(qmatmul_rows_strided_float_weights_same_bits_as_packed) {
  const topos_dtype types[] = {TOPOS_F32, TOPOS_F16, TOPOS_BF16};
  const int64_t n = 37, k = 77, pad = 13;
  for (size_t ti = 0; ti < 3; ++ti) {
    const topos_dtype t = types[ti];
    const size_t es = t == TOPOS_F32 ? 4 : 2, row = (size_t)k * es, stride = row + (size_t)pad * es;
    uint8_t *w = qm_weights(t, n, k), *wide = malloc((size_t)n * stride);
    float *a = qm_floats(21 * k, 1.5f), *want = malloc(21 * n * 4), *got = malloc(21 * n * 4);
    CHECK(w && wide && a && want && got);
    memset(wide, 0xFF, (size_t)n * stride); /* NaN in the gaps: any read of them shows */
    for (int64_t r = 0; r < n; ++r) memcpy(wide + (size_t)r * stride, w + (size_t)r * row, row);
    const topos_qmatmul_path paths[] = {TOPOS_QMATMUL_REFERENCE, TOPOS_QMATMUL_AUTO};
    for (int pi = 0; pi < 2; ++pi)
      for (int64_t m = 1; m <= 21; m += 20)
        for (int th = 1; th <= 3; ++th) {
          CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, want, paths[pi], th));
          memset(got, 0, (size_t)(m * n) * 4);
          CHECK_OK(tp_qmatmul_rows(a, m, k, wide, stride, t, n, NULL, got, paths[pi], th));
          CHECK_MSG(qm_same_bits(got, want, m * n), "%s path %d m %lld threads %d", qm_name(t), (int)paths[pi],
                    (long long)m, th);
        }
    CHECK_STATUS(topos_qmatmul_rows(a, 1, k, wide, row - es, t, n, NULL, got, TOPOS_QMATMUL_AUTO),
                 TOPOS_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_HAS("shorter");
    if (es == 4)
      CHECK_STATUS(topos_qmatmul_rows(a, 1, k, wide, row + 2, t, n, NULL, got, TOPOS_QMATMUL_AUTO),
                   TOPOS_ERR_INVALID_ARGUMENT);
    free(w), free(wide), free(a), free(want), free(got);
  }
  uint8_t *q = qm_weights(TOPOS_Q8_0, 2, 64);
  float a[64] = {0}, out[2];
  CHECK(q);
  CHECK_STATUS(topos_qmatmul_rows(a, 1, 64, q, 136, TOPOS_Q8_0, 2, NULL, out, TOPOS_QMATMUL_AUTO),
               TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("packed");
  free(q);
}

#if defined(__unix__)
#include <sys/mman.h>
#include <unistd.h>
/* The kernels read only the weights: a matrix whose first byte opens a page
 * and one whose last byte closes one, each beside an inaccessible page,
 * give the bits of the same matrix in ordinary memory — every type, the
 * decode kernels (m = 1, 2) and the tiles (m = 21), 1 and 2 threads. The
 * Q4_0 decode starts its first load 2 bytes before a row (masked) and every
 * kernel fetches ahead (prefetches do not fault; a load would). */
TEST(qmatmul_reads_nothing_outside_the_weights) {
  if (!qm_have_fast()) SKIP("no fast kernel on this CPU");
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const int64_t n = 37, k = 512;
  float *a = qm_floats(21 * k, 1.5f), *want = malloc(21 * n * 4), *got = malloc(21 * n * 4);
  CHECK(a && want && got);
  for (int ti = 0; ti < QM_NTYPES; ++ti) {
    const topos_dtype t = qm_all_types[ti];
    const size_t bytes = qt_row_bytes(t, k) * (size_t)n, span = (bytes + page - 1) / page * page;
    uint8_t *w = qm_weights(t, n, k);
    uint8_t *map = mmap(NULL, span + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(w && map != MAP_FAILED);
    CHECK(mprotect(map, page, PROT_NONE) == 0 && mprotect(map + page + span, page, PROT_NONE) == 0);
    uint8_t *const at[2] = {map + page, map + page + span - bytes}; /* first byte opens, last byte closes a page */
    for (int pl = 0; pl < 2; ++pl) {
      memcpy(at[pl], w, bytes);
      for (int64_t m = 1; m <= 21; m += m == 1 ? 1 : 19)
        for (int th = 1; th <= 2; ++th) {
          CHECK_OK(tp_qmatmul_threads(a, m, k, w, t, n, NULL, want, TOPOS_QMATMUL_FAST, th));
          CHECK_OK(tp_qmatmul_threads(a, m, k, at[pl], t, n, NULL, got, TOPOS_QMATMUL_FAST, th));
          CHECK_MSG(qm_same_bits(got, want, m * n), "%s m %lld threads %d placement %d", qm_name(t), (long long)m,
                    th, pl);
        }
    }
    munmap(map, span + 2 * page);
    free(w);
  }
  free(a), free(want), free(got);
}
#endif
