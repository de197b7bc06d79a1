/* topos_qmatmul on MXFP4 weights: the reference path is ggml's dot per
 * output (tp_vec_dot_ref over Q8_0 activations), the fast path stays within
 * the envelope the other 32-element types meet (qmatmul_test.c) on every
 * ISA level this CPU has, every path gives the same bits at 1..3 threads,
 * and on AVX-512 VNNI (and AMX) and on AVX2 the fast path is the block-sum
 * definition (qk_mxfp4_avx512vnni.h, qk_mxfp4_avx2.h) for decoding and
 * prompts alike. */
#include <stdlib.h>

#include "quant/qk_internal.h"
#include "quant/qk_shim.h"
#include "quant/quant_internal.h"
#include "quant_test_util.h"

enum { MQ_N = 37, MQ_MMAX = 67 };

/* MXFP4 weights [n][k] from the reference quantizer (rows of different
 * magnitudes) and activations [MQ_MMAX][k]. */
static int mq_data(int64_t k, uint64_t seed, uint8_t **w, float **a) {
  const size_t rb = qt_row_bytes(TOPOS_MXFP4, k);
  float *row = malloc((size_t)k * sizeof(float));
  *w = malloc(rb * MQ_N), *a = malloc((size_t)(MQ_MMAX * k) * sizeof(float));
  int ok = row && *w && *a;
  for (int64_t j = 0; ok && j < MQ_N; ++j) {
    qt_fill_gaussian(row, k, seed + (uint64_t)j);
    for (int64_t i = 0; i < k; ++i) row[i] *= (float)(1 + j % 5) * 0.3f;
    ok = topos_quantize_row(TOPOS_MXFP4, row, *w + (size_t)j * rb, k) == TOPOS_OK;
  }
  if (ok) qt_fill_uniform(*a, MQ_MMAX * k, seed ^ 0x55, 2.0f);
  free(row);
  return ok;
}

static int mq_same(const float *x, const float *y, int64_t count) {
  return memcmp(x, y, (size_t)count * sizeof(float)) == 0;
}

/* The fast path's bits at 2 and 3 threads are those of 1 thread. */
static int mq_threads_agree(const float *a, int64_t m, int64_t k, const uint8_t *w, topos_qmatmul_path path,
                            const float *bias, float *one, float *other) {
  if (tp_qmatmul_threads(a, m, k, w, TOPOS_MXFP4, MQ_N, bias, one, path, 1) != TOPOS_OK) return 0;
  for (int th = 2; th <= 3; ++th) {
    memset(other, 0xFF, (size_t)(m * MQ_N) * sizeof(float));
    if (tp_qmatmul_threads(a, m, k, w, TOPOS_MXFP4, MQ_N, bias, other, path, th) != TOPOS_OK ||
        !mq_same(one, other, m * MQ_N))
      return 0;
  }
  return 1;
}

TEST(qmatmul_mxfp4_reference_is_the_ggml_dot) {
  const int64_t ks[] = {96, 1056}, ms[] = {1, 4, MQ_MMAX};
  for (int kk = 0; kk < 2; ++kk) {
    const int64_t k = ks[kk];
    uint8_t *w = NULL, *aq = malloc(qt_row_bytes(TOPOS_Q8_0, k));
    float *a = NULL, *ref = malloc(MQ_MMAX * MQ_N * 4), *other = malloc(MQ_MMAX * MQ_N * 4), bias[MQ_N];
    CHECK(mq_data(k, 7 + (uint64_t)kk, &w, &a) && aq && ref && other);
    qt_fill_uniform(bias, MQ_N, 3, 1.0f);
    for (int mi = 0; mi < 3; ++mi) {
      const int64_t m = ms[mi];
      CHECK_MSG(mq_threads_agree(a, m, k, w, TOPOS_QMATMUL_REFERENCE, bias, ref, other), "k %lld m %lld: threads differ",
                (long long)k, (long long)m);
      for (int64_t r = 0; r < m; ++r) {
        CHECK_OK(topos_quantize_row(TOPOS_Q8_0, a + r * k, aq, k));
        for (int64_t j = 0; j < MQ_N; ++j) {
          float dot = 0;
          CHECK_OK(tp_vec_dot_ref(TOPOS_MXFP4, k, w + (size_t)j * qt_row_bytes(TOPOS_MXFP4, k), aq, &dot));
          CHECK_BITS_F32(ref[r * MQ_N + j], dot + bias[j]);
        }
      }
    }
    free(w), free(aq), free(a), free(ref), free(other);
  }
}

/* |fast - ref| <= (k/8 + 32) eps S, S = sum (|w| + max_block |w|) |a_q|:
 * qmatmul_test.c's bound for every quantized type. */
static int mq_within_envelope(const float *fast, const float *ref, const uint8_t *w, const float *a, int64_t m,
                              int64_t k, double *worst) {
  float *wd = malloc((size_t)k * 4), *aq = malloc((size_t)k * 4);
  uint8_t *buf = malloc(qt_row_bytes(TOPOS_Q8_0, k));
  int ok = wd && aq && buf;
  *worst = 0;
  for (int64_t r = 0; ok && r < m; ++r) {
    ok = topos_quantize_row(TOPOS_Q8_0, a + r * k, buf, k) == TOPOS_OK &&
         topos_dequantize_row(TOPOS_Q8_0, buf, aq, k) == TOPOS_OK;
    for (int64_t j = 0; ok && j < MQ_N; ++j) {
      ok = topos_dequantize_row(TOPOS_MXFP4, w + (size_t)j * qt_row_bytes(TOPOS_MXFP4, k), wd, k) == TOPOS_OK;
      double s = 0;
      for (int64_t b = 0; b < k; b += 32) {
        double mx = 0;
        for (int i = 0; i < 32; ++i) mx = fabs(wd[b + i]) > mx ? fabs(wd[b + i]) : mx; /* not fmax: aarch64 gcc 12 fails to vectorise it (an internal error) */
        for (int i = 0; i < 32; ++i) s += (fabs(wd[b + i]) + mx) * fabs(aq[b + i]);
      }
      const double tol = ((double)k / 8 + 32) * 0x1p-24 * s, err = fabs((double)fast[r * MQ_N + j] - ref[r * MQ_N + j]);
      *worst = fmax(*worst, err / tol);
      ok = err <= tol;
    }
  }
  free(wd), free(aq), free(buf);
  return ok;
}

TEST(qmatmul_mxfp4_fast_within_the_envelope_on_every_isa) {
  const int levels[] = {TP_QK_ISA_GENERIC, TP_QK_ISA_AVX2, TP_QK_ISA_AVX2, TP_QK_ISA_AVX512VNNI, TP_QK_ISA_AMX};
  const char *names[] = {"generic", "avx2", "neon-dotprod", "avx512vnni", "avx512vnni+amx"};
  const int64_t ks[] = {96, 1056}, ms[] = {1, 3, 4, MQ_MMAX};
  int ran = 0;
  for (int l = 0; l < 5; ++l) {
    tp_qk_set_isa_cap(levels[l]);
    const char *isa = topos_qmatmul_fast_isa(TOPOS_MXFP4);
    if (!isa || strcmp(isa, names[l]) != 0) continue;
    ++ran;
    for (int kk = 0; kk < 2; ++kk) {
      const int64_t k = ks[kk];
      uint8_t *w = NULL;
      float *a = NULL, *ref = malloc(MQ_MMAX * MQ_N * 4), *fast = malloc(MQ_MMAX * MQ_N * 4),
            *other = malloc(MQ_MMAX * MQ_N * 4);
      int ok = mq_data(k, 70 + (uint64_t)kk, &w, &a) && ref && fast && other;
      for (int mi = 0; ok && mi < 4; ++mi) {
        const int64_t m = ms[mi];
        double worst = 0;
        ok = tp_qmatmul_threads(a, m, k, w, TOPOS_MXFP4, MQ_N, NULL, ref, TOPOS_QMATMUL_REFERENCE, 1) == TOPOS_OK;
        if (!ok || !mq_threads_agree(a, m, k, w, TOPOS_QMATMUL_FAST, NULL, fast, other)) {
          tt_fail_at(__FILE__, __LINE__, "%s k %lld m %lld: failed or threads differ", isa, (long long)k, (long long)m);
          ok = 0;
        } else if (!mq_within_envelope(fast, ref, w, a, m, k, &worst)) {
          tt_fail_at(__FILE__, __LINE__, "%s k %lld m %lld: outside the envelope (%.2f of it)", isa, (long long)k,
                     (long long)m, worst);
          ok = 0;
        }
      }
      free(w), free(a), free(ref), free(fast), free(other);
      if (!ok) break;
    }
  }
  tp_qk_set_isa_cap(TP_QK_ISA_ANY);
  if (!ran) SKIP("no fast kernel on this CPU");
}

/* The definition written out in scalar C from the blocks: per output,
 * acc = fma(float(isum_b), 2^(e_b - 128) * da_b, acc) over the blocks. */
static void mq_block_sums(const uint8_t *w, const float *a, int64_t m, int64_t k, float *want) {
  const int64_t nb = k / 32;
  uint8_t *aq = malloc((size_t)nb * 34);
  for (int64_t c = 0; aq && c < m; ++c) {
    if (topos_quantize_row(TOPOS_Q8_0, a + c * k, aq, k) != TOPOS_OK) break;
    for (int64_t r = 0; r < MQ_N; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t *wb = w + (size_t)((r * nb + b) * 17), *ab = aq + b * 34;
        int32_t isum = 0;
        for (int i = 0; i < 32; ++i) {
          const unsigned n = i < 16 ? wb[1 + i] & 15u : (unsigned)wb[1 + i - 16] >> 4;
          const int mag = (int)(2.0 * ldexp(1.0 + 0.5 * (n & 1), (int)((n >> 1) & 3) - 1)); /* doubled E2M1 */
          const int level = ((n >> 1) & 3) == 0 ? (int)(n & 1) : mag;
          isum += (n & 8 ? -level : level) * (int8_t)ab[2 + i];
        }
        const float da = topos_f16_to_f32((uint16_t)(ab[0] | ab[1] << 8));
        acc = fmaf((float)isum, ldexpf(1.0f, wb[0] - 128) * da, acc);
      }
      want[c * MQ_N + r] = acc;
    }
  }
  free(aq);
}

TEST(qmatmul_mxfp4_avx512_is_the_block_sum_definition) {
  const char *isa = topos_qmatmul_fast_isa(TOPOS_MXFP4);
  if (!isa || strncmp(isa, "avx512vnni", 10) != 0) SKIP("the block-sum kernels need AVX-512 VNNI");
  /* blocks: 2, 3, 4, 33, 35 (steps of four with none to three left; k a multiple of 64 or not, which
   * the AMX tiles decode two ways), then 32 of every exponent */
  const int64_t ks[] = {64, 96, 128, 1056, 1120, 1024}, ms[] = {1, 2, 3, 4, 21, 40, MQ_MMAX};
  for (int kk = 0; kk < 6; ++kk) {
    const int64_t k = ks[kk];
    uint8_t *w = NULL;
    float *a = NULL, *want = malloc(MQ_MMAX * MQ_N * 4), *got = malloc(MQ_MMAX * MQ_N * 4);
    CHECK(mq_data(k, 300 + (uint64_t)kk, &w, &a) && want && got);
    if (kk == 5) /* exponents 0..199, so every path of the widening runs; rows 0..3 all denormal scales */
      for (int64_t i = 0; i < MQ_N * (k / 32); ++i) w[17 * i] = (uint8_t)(i < 4 * (k / 32) ? i / (k / 32) % 2 : i * 37 % 200);
    mq_block_sums(w, a, MQ_MMAX, k, want);
    for (int cap = 0; cap < 2; ++cap) { /* the VNNI tile, then the AMX tiles where present */
      tp_qk_set_isa_cap(cap ? TP_QK_ISA_ANY : TP_QK_ISA_AVX512VNNI);
      for (int mi = 0; mi < 7; ++mi)
        for (int th = 1; th <= 3; th += 2) {
          const int64_t m = ms[mi];
          memset(got, 0xFF, (size_t)(m * MQ_N) * 4);
          CHECK_OK(tp_qmatmul_threads(a, m, k, w, TOPOS_MXFP4, MQ_N, NULL, got, TOPOS_QMATMUL_FAST, th));
          int at = 0;
          while (at < m * MQ_N && tt_f32_bits(got[at]) == tt_f32_bits(want[at])) ++at;
          tp_qk_set_isa_cap(TP_QK_ISA_ANY);
          CHECK_MSG(at == m * MQ_N, "k %lld m %lld threads %d cap %d: out[%d] %.9g, definition %.9g", (long long)k,
                    (long long)m, th, cap, at, got[at], want[at]);
          tp_qk_set_isa_cap(cap ? TP_QK_ISA_ANY : TP_QK_ISA_AVX512VNNI);
        }
    }
    tp_qk_set_isa_cap(TP_QK_ISA_ANY);
    free(w), free(a), free(want), free(got);
  }
}

/* The AVX2 kernels (qk_block32_avx2.h with qk_mxfp4_avx2.h, the ISA capped
 * there) compute the same definition: the matrix-vector kernel below m = 8
 * (q32_mv_max_m), the tile of 8-row groups from there (one, several and a
 * part-filled last group), so decoding rows and prompt rows agree bit for bit; at 1..3
 * threads; within the Fast envelope around the reference. k: 3 blocks, 33
 * (none to seven left of a tile's 8-step runs), gpt-oss's 2880 (90); then
 * every exponent from 0 (rows 0..3 all denormal scales); then every level
 * at its top (nibble 7: 12, byte 24) against qa = +-127 across a row: the
 * 16-bit pair sums at their largest (4 steps * 2 * 24 * 127 = 24384). */
static void mq_avx2_cases(void) { /* with the ISA capped at AVX2 (the reference ignores the cap) */
  const int64_t ks[] = {96, 1056, 2880, 1024, 1056}, ms[] = {1, 2, 3, 4, 5, 7, 8, 17, MQ_MMAX};
  for (int kk = 0; kk < 5; ++kk) {
    const int64_t k = ks[kk], nb = k / 32;
    uint8_t *w = NULL;
    float *a = NULL, *want = malloc(MQ_MMAX * MQ_N * 4), *got = malloc(MQ_MMAX * MQ_N * 4),
          *other = malloc(MQ_MMAX * MQ_N * 4), *ref = malloc(MQ_MMAX * MQ_N * 4), *one = malloc(MQ_N * 4);
    CHECK(mq_data(k, 500 + (uint64_t)kk, &w, &a) && want && got && other && ref && one);
    if (kk == 3) /* exponents 0..199; rows 0..3 all denormal scales */
      for (int64_t i = 0; i < MQ_N * nb; ++i) w[17 * i] = (uint8_t)(i < 4 * nb ? i / nb % 2 : i * 37 % 200);
    if (kk == 4) {
      for (int64_t i = 0; i < MQ_N * nb; ++i) memset(w + 17 * i + 1, 0x77, 16);
      for (int64_t i = 0; i < MQ_MMAX * k; ++i) a[i] = (i / k) % 2 ? 1.0f : -1.0f;
    }
    mq_block_sums(w, a, MQ_MMAX, k, want);
    for (int mi = 0; mi < 9; ++mi) {
      const int64_t m = ms[mi];
      CHECK_MSG(mq_threads_agree(a, m, k, w, TOPOS_QMATMUL_FAST, NULL, got, other), "k %lld m %lld: failed or threads differ", (long long)k, (long long)m);
      int at = 0;
      while (at < m * MQ_N && tt_f32_bits(got[at]) == tt_f32_bits(want[at])) ++at;
      CHECK_MSG(at == m * MQ_N, "k %lld m %lld: out[%d] %.9g, definition %.9g", (long long)k, (long long)m, at,
                at < m * MQ_N ? got[at] : 0.0f, at < m * MQ_N ? want[at] : 0.0f);
      double worst = 0;
      CHECK_OK(tp_qmatmul_threads(a, m, k, w, TOPOS_MXFP4, MQ_N, NULL, ref, TOPOS_QMATMUL_REFERENCE, 1));
      CHECK_MSG(mq_within_envelope(got, ref, w, a, m, k, &worst), "k %lld m %lld: outside the envelope (%.2f of it)",
                (long long)k, (long long)m, worst);
      if (m > 4) { /* a prompt's rows are the rows decoded one at a time */
        for (int64_t c = 0; c < m; c += m - 1) {
          CHECK_OK(tp_qmatmul_threads(a + c * k, 1, k, w, TOPOS_MXFP4, MQ_N, NULL, one, TOPOS_QMATMUL_FAST, 1));
          CHECK_MSG(mq_same(one, got + c * MQ_N, MQ_N), "k %lld m %lld: row %lld decoded differs", (long long)k,
                    (long long)m, (long long)c);
        }
      }
    }
    free(w), free(a), free(want), free(got), free(other), free(ref), free(one);
  }
}

TEST(qmatmul_mxfp4_avx2_is_the_block_sum_definition) {
  tp_qk_set_isa_cap(TP_QK_ISA_AVX2);
  const char *isa = topos_qmatmul_fast_isa(TOPOS_MXFP4);
  if (isa && strcmp(isa, "avx2") == 0) mq_avx2_cases();
  tp_qk_set_isa_cap(TP_QK_ISA_ANY);
  if (!isa || strcmp(isa, "avx2") != 0) SKIP("the AVX2 block-sum kernels need AVX2");
}

/* qlinear_id's decoding on AVX2: MXFP4 parts (with a Q4_0 one between them)
 * go through the one matrix-vector dispatch, not declined, and each part
 * keeps the bits of its product alone. */
#if defined(__x86_64__) || defined(_M_X64) /* the multi-part dispatch exists on x86 only */
static void mq_avx2_multi(void) { /* with the ISA capped at AVX2 */
  const int64_t k = 1056, ns[3] = {MQ_N, 9, 20};
  const topos_dtype types[3] = {TOPOS_MXFP4, TOPOS_Q4_0, TOPOS_MXFP4};
  uint8_t *w = NULL, *w4 = malloc(qt_row_bytes(TOPOS_Q4_0, k) * 9);
  float *a = NULL, *out[3], *alone[3];
  CHECK(mq_data(k, 900, &w, &a) && w4);
  for (int j = 0; j < 9; ++j) CHECK_OK(topos_quantize_row(TOPOS_Q4_0, a + (j + 1) * k, w4 + j * qt_row_bytes(TOPOS_Q4_0, k), k));
  const void *ws[3] = {w, w4, w + 5 * qt_row_bytes(TOPOS_MXFP4, k)};
  for (int th = 1; th <= 3; ++th) {
    tp_qk_task tasks[3];
    for (int i = 0; i < 3; ++i) {
      out[i] = malloc((size_t)ns[i] * 4), alone[i] = malloc((size_t)ns[i] * 4);
      CHECK(out[i] && alone[i]);
      memset(out[i], 0xFF, (size_t)ns[i] * 4);
      CHECK_OK(tp_qmatmul_threads(a, 1, k, ws[i], types[i], ns[i], NULL, alone[i], TOPOS_QMATMUL_FAST, 1));
      tasks[i] = (tp_qk_task){a, 1, k, ws[i], types[i], ns[i], NULL, out[i], qt_row_bytes(types[i], k), th};
    }
    const topos_status st = tp_qk_fast_avx2_multi(tasks, 3);
    CHECK_MSG(st == TOPOS_OK, "threads %d: the dispatch gave %d", th, (int)st);
    for (int i = 0; i < 3; ++i) {
      CHECK_MSG(mq_same(out[i], alone[i], ns[i]), "threads %d: part %d not the bits of its product alone", th, i);
      free(out[i]), free(alone[i]);
    }
  }
  free(w), free(w4), free(a);
}
#endif

TEST(qmatmul_mxfp4_avx2_multi_dispatch_takes_mxfp4) {
  tp_qk_set_isa_cap(TP_QK_ISA_AVX2);
  const char *isa = topos_qmatmul_fast_isa(TOPOS_MXFP4);
#if defined(__x86_64__) || defined(_M_X64)
  if (isa && strcmp(isa, "avx2") == 0) mq_avx2_multi();
#endif
  tp_qk_set_isa_cap(TP_QK_ISA_ANY);
  if (!isa || strcmp(isa, "avx2") != 0) SKIP("the AVX2 block-sum kernels need AVX2");
}
