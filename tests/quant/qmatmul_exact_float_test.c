/* The REFERENCE path of float weights (f32, f16, bf16; the Exact posture's
 * products) is the chain written out here: per output, each w * a formed
 * in f32 from the exactly widened weight, summed in f64 in ascending k from
 * +0, rounded to f32 once, the bias added in f32. Its vector kernel
 * (qk_exact_avx2.c: lanes are outputs) and its scalar loop (the ISA cap
 * below AVX2) give those bits at every m, k, n, thread count and row
 * stride, partial panels and k tails included, with infinities, NaNs,
 * signed zeros and subnormals among the values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/qk_internal.h"
#include "quant/qk_shim.h"
#include "quant_test_util.h"
#include "test.h"

static uint64_t qe_state = 77;
static float qe_uniform(void) { /* [-1, 1) */
  return (float)((double)(qt_splitmix64_next(&qe_state) >> 11) * 0x1p-52 - 1.0);
}

static float qe_widen(topos_dtype t, const uint8_t *row, int64_t i) {
  if (t == TOPOS_F32) {
    float v;
    memcpy(&v, row + 4 * i, 4);
    return v;
  }
  uint16_t h;
  memcpy(&h, row + 2 * i, 2);
  return t == TOPOS_F16 ? topos_f16_to_f32(h) : topos_bf16_to_f32(h);
}

/* n rows of k elements at a stride of `stride` bytes; a few specials
 * where `specials` (one infinity per matrix at most, so most outputs stay
 * finite; the NaN and infinity rows show propagation) */
static uint8_t *qe_weights(topos_dtype t, int64_t n, int64_t k, size_t stride, int specials) {
  uint8_t *w = malloc((size_t)n * stride);
  if (!w) return NULL;
  memset(w, 0xA5, (size_t)n * stride);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < k; ++i) {
      float v = qe_uniform() * 4.0f;
      if (specials && i % 13 == 5) v = -0.0f;
      if (specials && i % 17 == 3) v = ldexpf(v, -130); /* subnormal in f32 (zero in f16) */
      if (specials && r == 2 && i == k / 2) v = INFINITY;
      if (specials && r == 3 && i == k - 1) v = NAN;
      uint8_t *p = w + (size_t)r * stride;
      if (t == TOPOS_F32) memcpy(p + 4 * i, &v, 4);
      else {
        const uint16_t h = t == TOPOS_F16 ? topos_f32_to_f16(v) : topos_f32_to_bf16(v);
        memcpy(p + 2 * i, &h, 2);
      }
    }
  return w;
}

static void qe_case(topos_dtype t, int64_t m, int64_t k, int64_t n, size_t pad, int with_bias, int specials) {
  const size_t es = t == TOPOS_F32 ? 4 : 2, stride = (size_t)k * es + pad * es;
  uint8_t *w = qe_weights(t, n, k, stride, specials);
  float *a = malloc((size_t)(m * k) * sizeof *a), *bias = malloc((size_t)n * sizeof *bias);
  float *want = malloc((size_t)(m * n) * sizeof *want), *got = malloc((size_t)(m * n) * sizeof *got);
  CHECK(w && a && bias && want && got);
  if (!w || !a || !bias || !want || !got) goto done;
  for (int64_t i = 0; i < m * k; ++i) a[i] = qe_uniform() * (i % 11 == 4 ? 1e-38f : 2.0f);
  for (int64_t j = 0; j < n; ++j) bias[j] = qe_uniform();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t e = 0; e < k; ++e) sum += (double)(qe_widen(t, w + (size_t)j * stride, e) * a[i * k + e]);
      want[i * n + j] = with_bias ? (float)sum + bias[j] : (float)sum;
    }
  const int caps[2] = {TP_QK_ISA_ANY, TP_QK_ISA_GENERIC}; /* the vector kernel where AVX2 runs; the scalar loop */
  for (int c = 0; c < 2; ++c)
    for (int threads = 1; threads <= 3; ++threads) {
      tp_qk_set_isa_cap(caps[c]);
      memset(got, 0xFF, (size_t)(m * n) * sizeof *got);
      const topos_status st = tp_qmatmul_rows(a, m, k, w, pad ? stride : 0, t, n, with_bias ? bias : NULL, got,
                                              TOPOS_QMATMUL_REFERENCE, threads);
      tp_qk_set_isa_cap(TP_QK_ISA_ANY);
      CHECK_OK(st);
      CHECK_MSG(memcmp(got, want, (size_t)(m * n) * sizeof *got) == 0,
                "%s m=%lld k=%lld n=%lld pad=%zu cap=%d threads=%d: not the reference chain's bits",
                t == TOPOS_F32 ? "f32" : t == TOPOS_F16 ? "f16" : "bf16", (long long)m, (long long)k,
                (long long)n, pad, caps[c], threads);
    }
done:
  free(w), free(a), free(bias), free(want), free(got);
}

TEST(qmatmul_float_reference_is_the_f64_chain_on_every_kernel) {
  const topos_dtype types[3] = {TOPOS_F32, TOPOS_F16, TOPOS_BF16};
  const int64_t ms[3] = {1, 3, 21}, ks[5] = {1, 7, 8, 77, 264}, ns[4] = {1, 15, 16, 37};
  for (int ti = 0; ti < 3; ++ti)
    for (int mi = 0; mi < 3; ++mi)
      for (int ki = 0; ki < 5; ++ki)
        for (int ni = 0; ni < 4; ++ni)
          qe_case(types[ti], ms[mi], ks[ki], ns[ni], 0, (mi + ni) % 2, ki >= 3);
  /* strided rows (a view of wider rows, as a cache's) */
  for (int ti = 0; ti < 3; ++ti) qe_case(types[ti], 2, 40, 19, 9, 1, 1);
}
