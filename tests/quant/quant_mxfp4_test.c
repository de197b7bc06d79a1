/* MXFP4 beyond the goldens: the dtype's table row, every exponent and nibble
 * decoded against the E2M1 / E8M0 definitions (derived here from the bit
 * fields, not from the library's table), the quantizer's choices as
 * properties (octave of the scale, nearest level, first index on ties), the
 * edge blocks where ggml's exponent conversion is undefined, and the
 * refusal of rows that are not whole blocks. */
#include <float.h>
#include <stdlib.h>

#include "quant/quant_internal.h"
#include "quant_test_util.h"
#include "tests/quant/golden/quant_goldens.h"

TEST(quant_mxfp4_dtype_row) {
  topos_dtype t = TOPOS_F32;
  CHECK_OK(topos_dtype_parse("MXFP4", &t));
  CHECK_EQ_INT(t, TOPOS_MXFP4);
  CHECK_EQ_INT(TOPOS_MXFP4, TOPOS_I64 + 1); /* appended: the released values keep their numbers */
  CHECK(strcmp(topos_dtype_name(TOPOS_MXFP4), "mxfp4") == 0);
  CHECK(topos_dtype_block_size(TOPOS_MXFP4) == 32 && topos_dtype_block_bytes(TOPOS_MXFP4) == 17);
  CHECK(topos_dtype_is_quantized(TOPOS_MXFP4) && !topos_dtype_is_float(TOPOS_MXFP4));
  CHECK_EQ_INT(topos_dtype_ggml_id(TOPOS_MXFP4), 39);
  CHECK_OK(topos_dtype_from_ggml_id(39, &t));
  CHECK_EQ_INT(t, TOPOS_MXFP4);
  CHECK_OK(topos_quant_vec_dot_type(TOPOS_MXFP4, &t));
  CHECK_EQ_INT(t, TOPOS_Q8_0);
  size_t bytes = 0;
  CHECK_OK(topos_dtype_bytes(TOPOS_MXFP4, 64, &bytes));
  CHECK(bytes == 34);
}

/* E2M1 of nibble n (sign, 2 exponent bits with bias 1, 1 mantissa bit) and
 * E8M0 (2^(e - 127)), straight from the OCP definitions. */
static double qt_e2m1(unsigned n) {
  const unsigned ex = (n >> 1) & 3, m = n & 1;
  const double mag = ex == 0 ? 0.5 * m : ldexp(1.0 + 0.5 * m, (int)ex - 1);
  return n & 8 ? -mag : mag;
}

TEST(quant_mxfp4_dequantize_every_exponent_and_nibble) {
  tp_block_mxfp4 b;
  float y[32];
  for (int e = 0; e < 256; ++e) {
    b.e = (uint8_t)e;
    for (int j = 0; j < 16; ++j) b.qs[j] = (uint8_t)(j | (15 - j) << 4);
    CHECK_OK(topos_dequantize_row(TOPOS_MXFP4, &b, y, 32));
    for (int i = 0; i < 32; ++i) {
      const unsigned n = i < 16 ? (unsigned)i : 31u - (unsigned)i;
      /* e = 0..1 give denormal scales, e = 255 overflows the larger levels to inf */
      const float want = (float)ldexp(qt_e2m1(n), e - 127);
      if (want == 0.0f) /* nibble 8 (-0) decodes to +0, as ggml's integer table has it */
        CHECK_MSG(tt_f32_bits(y[i]) == 0, "e %d nibble %u: %g", e, n, y[i]);
      else
        CHECK_MSG(tt_f32_bits(y[i]) == tt_f32_bits(want), "e %d nibble %u: %.9g, want %.9g", e, n, y[i], want);
    }
  }
}

/* For finite input with a maximum of at least 2^-125: the scale 2^(e-128)
 * puts amax in the octave [2^(e-125), 2^(e-124)) (log2f may round up by
 * one just below a power of two, as in ggml), and each value decodes to a
 * nearest level, the first nibble among equals (so 0 before -0). */
TEST(quant_mxfp4_quantizer_picks_the_nearest_level) {
  enum { N = 4096 };
  static float x[N], y[N];
  static uint8_t q[N / 32 * 17];
  const float scales[] = {1e-30f, 0.02f, 1.0f, 3e4f, 1e37f};
  for (int s = 0; s < 5; ++s) {
    qt_fill_gaussian(x, N, 100 + (uint64_t)s);
    for (int i = 0; i < N; ++i) x[i] *= scales[s];
    for (int i = 0; i < 32; ++i) /* midpoints of levels at d = scale / 4 (0.625: 0.5 | 0.75), both signs */
      x[32 * 7 + i] = (float)(i % 5) * (i % 2 ? -0.625f : 0.625f) * scales[s];
    x[32 * 9 + 3] = nextafterf(ldexpf(1.0f, ilogbf(scales[s]) + 3), 0.0f); /* log2f rounds up to the power */
    CHECK_OK(topos_quantize_row(TOPOS_MXFP4, x, q, N));
    CHECK_OK(topos_dequantize_row(TOPOS_MXFP4, q, y, N));
    for (int b = 0; b < N / 32; ++b) {
      const uint8_t e = q[17 * b];
      double amax = 0;
      for (int i = 0; i < 32; ++i) amax = fabs(x[32 * b + i]) > amax ? fabs(x[32 * b + i]) : amax; /* not fmax: see qmatmul_mxfp4_test.c */
      const double lo = ldexp(1.0, e - 125), hi = ldexp(1.0, e - 124);
      CHECK_MSG((amax >= lo && amax < hi) || (amax < lo && amax >= lo * (1 - 0x1p-20)),
                "scale %g block %d: amax %g, e %d", scales[s], b, amax, e);
      const double d = ldexp(1.0, e - 128);
      for (int i = 0; i < 32; ++i) {
        const double v = x[32 * b + i];
        double best = INFINITY;
        unsigned first = 0;
        for (unsigned n = 0; n < 16; ++n) {
          const double err = fabs(2.0 * qt_e2m1(n) * d - v);
          if (err < best) best = err, first = n;
        }
        const unsigned got = i < 16 ? q[17 * b + 1 + i] & 15u : (unsigned)q[17 * b + 1 + i - 16] >> 4;
        CHECK_MSG(fabs(y[32 * b + i] - v) == best, "scale %g element %d: %g -> %g, nearest error %g", scales[s],
                  32 * b + i, v, y[32 * b + i], best);
        CHECK_MSG(got == first, "scale %g element %d: nibble %u, first nearest %u", scales[s], 32 * b + i, got, first);
      }
    }
  }
}

/* ggml's float -> uint8_t exponent is undefined below 2^-125 and for inf;
 * topos writes what ggml's x86-64 build writes (goldens from ggml C, gguf-py
 * agreeing but for the NaN block), and those blocks decode to zeros. */
TEST(quant_mxfp4_edge_blocks_match_ggml) {
  size_t in_size = 0, want_size = 0;
  uint8_t *in = qt_from_hex(tg_mxfp4_edge_inputs_hex, &in_size), *want = qt_from_hex(tg_mxfp4_edge_quantized, &want_size);
  uint8_t got[8 * 17];
  float x[256], y[256];
  int ok = in && want && in_size == sizeof x && want_size == sizeof got;
  if (ok) memcpy(x, in, sizeof x);
  free(in);
  ok = ok && topos_quantize_row(TOPOS_MXFP4, x, got, 256) == TOPOS_OK && memcmp(got, want, sizeof got) == 0;
  int at = 0;
  while (at < (int)sizeof got && want && got[at] == want[at]) ++at;
  free(want);
  CHECK_MSG(ok, "edge blocks differ from ggml at byte %d (block %d)", at, at / 17);
  CHECK(got[0] >= 232 && got[17] == 255); /* wrapped exponents: tiny blocks */
  CHECK_OK(topos_dequantize_row(TOPOS_MXFP4, got, y, 256));
  for (int i = 0; i < 64; ++i) CHECK(y[i] == 0.0f); /* the tiny blocks */
  for (int i = 96; i < 160; ++i) CHECK(fabsf(y[i]) <= 0x1p-124f); /* blocks holding +-inf: e = 0 */
  for (int i = 160; i < 192; ++i) CHECK(isfinite(y[i]) && (x[i] == x[i] || y[i] == 0.0f)); /* NaN: 0 */
  /* +-FLT_MAX at e = 253: levels 8 and 12 overflow, so level 6 is nearest */
  CHECK(y[6 * 32 + 9] == 0x1.8p127f && y[6 * 32 + 20] == -0x1.8p127f);
}

TEST(quant_mxfp4_rows_must_be_whole_blocks) {
  float x[64] = {0}, out[4];
  uint8_t buf[64] = {0};
  CHECK_STATUS(topos_quantize_row(TOPOS_MXFP4, x, buf, 48), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("48 elements");
  CHECK_ERROR_HAS("mxfp4 blocks of 32");
  CHECK_STATUS(topos_dequantize_row(TOPOS_MXFP4, buf, x, 40), TOPOS_ERR_SHAPE);
  float dot = 0;
  CHECK_STATUS(tp_vec_dot_ref(TOPOS_MXFP4, 48, buf, buf, &dot), TOPOS_ERR_SHAPE);
  CHECK_STATUS(topos_qmatmul(x, 1, 48, buf, TOPOS_MXFP4, 1, NULL, out, TOPOS_QMATMUL_AUTO), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("k = 48 is not a multiple of the mxfp4 block size 32");
  int64_t shape[2] = {2, 48};
  topos_tensor *f = NULL, *q = NULL;
  CHECK_OK(topos_tensor_zeros(TOPOS_F32, 2, shape, &f));
  CHECK(topos_quantize(f, TOPOS_MXFP4, &q) != TOPOS_OK && q == NULL);
  topos_tensor_release(f);
}
