/* topos_qmatmul on MXFP4 weights: the reference path is ggml's dot per
 * output (tp_vec_dot_ref over Q8_0 activations), the fast path stays within
 * the envelope the other 32-element types meet (qmatmul_test.c) on every
 * ISA level this CPU has, every path gives the same bits at 1..3 threads,
 * and on AVX-512 VNNI (and AMX) the fast path is the block-sum definition
 * (qk_mxfp4_avx512vnni.h) for decoding and prompts alike. */
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
        for (int i = 0; i < 32; ++i) mx = fmax(mx, fabs(wd[b + i]));
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
