/* The REFERENCE path of block-quantized weights (the Exact posture's
 * products) has dot_ref.c's bits on its vector dot products
 * (qk_exact_quant_avx2.c, qk_exact_quant_neon.c) as on the scalar ones:
 * every weight type, block counts around the 8-block groups, raw random
 * bytes (every bit pattern of a block decodes: levels, scales and mins at
 * their extremes, activations of -128, infinities and NaNs in a few
 * scales), then whole products with the ISA cap at the vector level and
 * below it. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "quant/qk_internal.h"
#include "quant/qk_shim.h"
#include "quant_test_util.h"
#include "test.h"

static uint64_t xq_state = 1234;

static void xq_bytes(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = (uint8_t)(qt_splitmix64_next(&xq_state) >> 56);
}

/* A random finite scale (f16 bits) of magnitude up to `mag`; raw bits (NaN,
 * infinity, subnormal, anything) once in `raw_every` draws. */
static uint16_t xq_half(float mag, int raw_every) {
  const uint64_t r = qt_splitmix64_next(&xq_state);
  if (raw_every && r % (uint64_t)raw_every == 0) return (uint16_t)(r >> 40);
  return topos_f32_to_f16(((float)((r >> 11) & 0xFFFFF) * 0x1p-20f * 2.0f - 1.0f) * mag);
}

static void xq_put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* Blocks of type t with random bytes and sane scales (raw ones now and then). */
static void xq_weight_blocks(topos_dtype t, uint8_t *w, int64_t blocks, int raw_every) {
  const tp_quant_traits *tr = tp_quant_traits_of(t);
  xq_bytes(w, (size_t)(blocks * tr->block_bytes));
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t *p = w + b * tr->block_bytes;
    switch (t) {
    case TOPOS_Q4_0: case TOPOS_Q5_0: case TOPOS_Q8_0: xq_put16(p, xq_half(0.05f, raw_every)); break;
    case TOPOS_Q4_1: case TOPOS_Q5_1:
      xq_put16(p, xq_half(0.05f, raw_every)), xq_put16(p + 2, xq_half(1.0f, raw_every));
      break;
    case TOPOS_Q2_K: xq_put16(p + offsetof(tp_block_q2_K, d), xq_half(0.05f, raw_every));
      xq_put16(p + offsetof(tp_block_q2_K, dmin), xq_half(0.05f, raw_every));
      break;
    case TOPOS_Q3_K: xq_put16(p + offsetof(tp_block_q3_K, d), xq_half(0.05f, raw_every)); break;
    case TOPOS_Q4_K: case TOPOS_Q5_K:
      xq_put16(p, xq_half(0.05f, raw_every)), xq_put16(p + 2, xq_half(0.05f, raw_every));
      break;
    case TOPOS_Q6_K: xq_put16(p + offsetof(tp_block_q6_K, d), xq_half(0.05f, raw_every)); break;
    case TOPOS_MXFP4: p[0] = (uint8_t)(raw_every && b % 7 == 3 ? p[0] : 110 + p[0] % 30); break;
    default: break;
    }
  }
}

/* Partner blocks (Q8_0, Q8_1, Q8_K) with random integers (-128 included). */
static void xq_act_blocks(topos_dtype partner, uint8_t *a, int64_t blocks, int raw_every) {
  const tp_quant_traits *tr = tp_quant_traits_of(partner);
  xq_bytes(a, (size_t)(blocks * tr->block_bytes));
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t *p = a + b * tr->block_bytes;
    if (partner == TOPOS_Q8_K) {
      const float d = ((float)(qt_splitmix64_next(&xq_state) >> 40) * 0x1p-24f - 0.5f) * 0.02f;
      if (!(raw_every && b % 5 == 2)) memcpy(p, &d, 4);
    } else {
      xq_put16(p, xq_half(0.02f, raw_every));
      if (partner == TOPOS_Q8_1) xq_put16(p + 2, xq_half(4.0f, raw_every));
    }
  }
}

static int xq_same(float a, float b) { return memcmp(&a, &b, 4) == 0 || (isnan(a) && isnan(b)); }

static const topos_dtype xq_types[] = {TOPOS_Q4_0, TOPOS_Q4_1, TOPOS_Q5_0, TOPOS_Q5_1, TOPOS_Q8_0, TOPOS_MXFP4,
                                       TOPOS_Q2_K, TOPOS_Q3_K, TOPOS_Q4_K, TOPOS_Q5_K, TOPOS_Q6_K};
enum { XQ_TYPES = sizeof xq_types / sizeof xq_types[0] };

TEST(qmatmul_quant_reference_vector_dots_are_dot_refs) {
  if (!tp_qk_exact_dot(TOPOS_Q8_0)) SKIP("no vector unit for the reference dots here (x86 without AVX2)");
  enum { MAX_BLOCKS = 19 };
  static uint8_t w[MAX_BLOCKS * 300], a[MAX_BLOCKS * 300];
  for (int ti = 0; ti < XQ_TYPES; ++ti) {
    const topos_dtype t = xq_types[ti];
    const tp_quant_traits *tr = tp_quant_traits_of(t);
    const tp_vec_dot_fn fast = tp_qk_exact_dot(t);
    CHECK_MSG(fast != NULL, "%s: no vector reference dot", tr->suffix);
    if (!fast) continue;
    int differ = 0, finite = 0, trials = 0;
    for (int64_t blocks = 1; blocks <= MAX_BLOCKS; ++blocks)
      for (int rep = 0; rep < 24; ++rep) {
        const int raw_every = rep % 3 == 2 ? 5 : 0; /* a third of the draws take raw scales */
        xq_weight_blocks(t, w, blocks, raw_every);
        xq_act_blocks(tr->vec_dot_type, a, blocks, raw_every);
        const float want = tr->vec_dot(blocks, w, a), got = fast(blocks, w, a);
        finite += isfinite(want) != 0;
        ++trials;
        if (!xq_same(got, want) && differ++ < 3)
          CHECK_MSG(0, "%s, %lld blocks, draw %d: %.9g, the reference %.9g", tr->suffix, (long long)blocks, rep,
                    (double)got, (double)want);
      }
    CHECK_MSG(differ == 0, "%s: %d of %d dots differ from dot_ref.c", tr->suffix, differ, trials);
    CHECK_MSG(finite > trials / 2, "%s: only %d of %d dots finite (the draws test too little)", tr->suffix, finite,
              trials);
  }
}

/* Whole products on the REFERENCE path: the ISA cap at AVX2 (the vector
 * dots; NEON's level on arm64) and below it (the scalar ones) give the
 * same bits. */
TEST(qmatmul_quant_reference_is_one_path_with_or_without_vectors) {
  if (!tp_qk_exact_dot(TOPOS_Q8_0)) SKIP("no vector unit for the reference dots here (x86 without AVX2)");
  const int64_t ms[2] = {1, 3}, ns[2] = {1, 21};
  for (int ti = 0; ti < XQ_TYPES; ++ti) {
    const topos_dtype t = xq_types[ti];
    const tp_quant_traits *tr = tp_quant_traits_of(t);
    const int64_t k = tr->block_elements == 256 ? 512 : 320;
    for (int mi = 0; mi < 2; ++mi)
      for (int ni = 0; ni < 2; ++ni) {
        const int64_t m = ms[mi], n = ns[ni];
        float *x = malloc((size_t)(m * k) * sizeof *x), *wf = malloc((size_t)(n * k) * sizeof *wf);
        float *bias = malloc((size_t)n * sizeof *bias), *o[2] = {malloc((size_t)(m * n) * 4), malloc((size_t)(m * n) * 4)};
        uint8_t *wq = malloc(qt_row_bytes(t, k) * (size_t)n);
        CHECK(x && wf && bias && o[0] && o[1] && wq);
        if (x && wf && bias && o[0] && o[1] && wq) {
          qt_fill_uniform(x, m * k, 11 + (uint64_t)ti, 2.0f);
          qt_fill_uniform(wf, n * k, 29 + (uint64_t)ti, 0.5f);
          qt_fill_uniform(bias, n, 5, 1.0f);
          for (int64_t j = 0; j < n; ++j)
            CHECK_OK(topos_quantize_row(t, wf + j * k, wq + (size_t)j * qt_row_bytes(t, k), k));
          const int caps[2] = {TP_QK_ISA_AVX2, TP_QK_ISA_GENERIC};
          for (int c = 0; c < 2; ++c) {
            tp_qk_set_isa_cap(caps[c]);
            CHECK_OK(tp_qmatmul_threads(x, m, k, wq, t, n, ni ? bias : NULL, o[c], TOPOS_QMATMUL_REFERENCE, 1 + c));
            tp_qk_set_isa_cap(TP_QK_ISA_ANY);
          }
          CHECK_MSG(memcmp(o[0], o[1], (size_t)(m * n) * 4) == 0, "%s m=%lld n=%lld: the vector reference differs from the scalar",
                    tr->suffix, (long long)m, (long long)n);
        }
        free(x), free(wf), free(bias), free(o[0]), free(o[1]), free(wq);
      }
  }
}
