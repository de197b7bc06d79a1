#include <stdlib.h>

#include "base/cpu.h"
#include "base/half.h"
#include "base/half_samples.h"
#include "test.h"

TEST(f16_known_values) {
  CHECK_EQ_INT(topos_f32_to_f16(1.0f), 0x3c00);
  CHECK_EQ_INT(topos_f32_to_f16(-2.0f), 0xc000);
  CHECK_EQ_INT(topos_f32_to_f16(65504.0f), 0x7bff);
  CHECK_EQ_INT(topos_f32_to_f16(65520.0f), 0x7c00); /* tie above max rounds to inf */
  CHECK_EQ_INT(topos_f32_to_f16(0x1p-24f), 0x0001);
  CHECK_EQ_INT(topos_f32_to_f16(0x1p-25f), 0x0000);  /* tie to even (zero) */
  CHECK_EQ_INT(topos_f32_to_f16(-0.0f), 0x8000);
  CHECK_BITS_F32(topos_f16_to_f32(0x0001), 0x1p-24f);
  CHECK(isnan(topos_f16_to_f32(topos_f32_to_f16(NAN))));
}

TEST(bf16_known_values) {
  CHECK_EQ_INT(topos_f32_to_bf16(1.0f), 0x3f80);
  CHECK_EQ_INT(topos_f32_to_bf16(-0.0f), 0x8000);
  CHECK_BITS_F32(topos_bf16_to_f32(0x3f80), 1.0f);
  CHECK(isnan(topos_bf16_to_f32(topos_f32_to_bf16(NAN))));
}

/* Independent reference: the nearest representable value by binary search
 * over the decoded non-negative patterns [0, top] (top = infinity, valued as
 * the next power of two), distances compared in double (exact here), ties to
 * the even pattern. */
static uint16_t tt_reference_narrow(float x, uint32_t top, const double *values) {
  uint32_t sign = signbit(x) ? 0x8000u : 0u;
  double a = fabs((double)x);
  if (a >= values[top]) return (uint16_t)(sign | top);
  uint32_t lo = 0, hi = top; /* values[lo] <= a < values[hi] */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (values[mid] <= a)
      lo = mid;
    else
      hi = mid;
  }
  double below = a - values[lo], above = values[hi] - a;
  uint32_t pick = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
  return (uint16_t)(sign | pick);
}

static double *tt_value_table(uint32_t top, double (*value)(uint32_t)) {
  double *values = malloc(((size_t)top + 1) * sizeof *values);
  if (values)
    for (uint32_t b = 0; b <= top; ++b) values[b] = value(b);
  return values;
}

static int tt_is_quiet_nan16(uint16_t h, uint32_t exponent_mask, uint32_t quiet_bit) {
  return (h & exponent_mask) == exponent_mask && (h & quiet_bit);
}

/* Every 16-bit pattern widens to the value the format defines and narrows
 * back to itself; NaNs stay NaN with their sign. */
#define TT_ROUND_TRIP_TEST(name, widen, narrow, value_fn, exp_mask, quiet)                     \
  TEST(name) {                                                                                 \
    for (uint32_t bits = 0; bits < 65536; ++bits) {                                            \
      uint16_t h = (uint16_t)bits;                                                             \
      float wide = widen(h);                                                                   \
      int is_nan = (h & (exp_mask)) == (exp_mask) && (h & ~(exp_mask) & 0x7fffu) != 0;         \
      if (is_nan) {                                                                            \
        CHECK_MSG(isnan(wide), "pattern 0x%04x did not widen to NaN", bits);                   \
        CHECK((signbit(wide) != 0) == ((bits & 0x8000u) != 0));                                       \
        uint16_t back = narrow(wide);                                                          \
        CHECK_MSG(tt_is_quiet_nan16(back, exp_mask, quiet) && (back & 0x8000u) == (h & 0x8000u), \
                  "NaN 0x%04x came back as 0x%04x", bits, back);                               \
        continue;                                                                              \
      }                                                                                        \
      double magnitude = value_fn(bits & 0x7fffu);                                             \
      if ((bits & 0x7fffu) == (exp_mask)) magnitude = INFINITY;                                \
      float expected = (float)((bits & 0x8000u) ? -magnitude : magnitude);                     \
      CHECK_MSG(tt_f32_bits(wide) == tt_f32_bits(expected), "0x%04x widened to %a, not %a",     \
                bits, (double)wide, (double)expected);                                         \
      CHECK_MSG(narrow(wide) == h, "0x%04x -> %a -> 0x%04x", bits, (double)wide, narrow(wide)); \
    }                                                                                          \
  }

TT_ROUND_TRIP_TEST(f16_every_pattern_round_trips, topos_f16_to_f32, topos_f32_to_f16, tt_f16_value,
                   0x7c00u, 0x0200u)
TT_ROUND_TRIP_TEST(bf16_every_pattern_round_trips, topos_bf16_to_f32, topos_f32_to_bf16,
                   tt_bf16_value, 0x7f80u, 0x0040u)

/* Narrowing agrees with the reference at every rounding boundary and on a
 * strided sweep over all 2^32 f32 patterns (NaNs included). */
#define TT_NARROW_TEST(name, narrow, top, value_fn, exp_mask, quiet)                             \
  TEST(name) {                                                                                   \
    double *values = tt_value_table(top, value_fn);                                              \
    size_t count = 0;                                                                            \
    float *samples = tt_boundary_samples(top, value_fn, &count);                                 \
    int ok = values && samples && count > 300000;                                                \
    for (size_t i = 0; ok && i < count; ++i) {                                                   \
      uint16_t got = narrow(samples[i]), want = tt_reference_narrow(samples[i], top, values);    \
      if (got != want) {                                                                         \
        tt_fail_at(__FILE__, __LINE__, "%a (0x%08x): got 0x%04x, reference 0x%04x",              \
                   (double)samples[i], tt_f32_bits(samples[i]), got, want);                      \
        ok = 0;                                                                                  \
      }                                                                                          \
    }                                                                                            \
    /* 4093 is odd, so the sweep meets every residue class of the low bits */                    \
    for (uint64_t u = 0; ok && u < (UINT64_C(1) << 32); u += 4093) {                              \
      float x = tt_bits_f32((uint32_t)u);                                                        \
      uint16_t got = narrow(x);                                                                  \
      if (isnan(x)) {                                                                            \
        if (!tt_is_quiet_nan16(got, exp_mask, quiet) || ((got >> 15) != (u >> 31))) {           \
          tt_fail_at(__FILE__, __LINE__, "NaN 0x%08x narrowed to 0x%04x", (uint32_t)u, got);     \
          ok = 0;                                                                                \
        }                                                                                        \
        continue;                                                                                \
      }                                                                                          \
      uint16_t want = tt_reference_narrow(x, top, values);                                       \
      if (got != want) {                                                                         \
        tt_fail_at(__FILE__, __LINE__, "0x%08x: got 0x%04x, reference 0x%04x", (uint32_t)u, got, \
                   want);                                                                        \
        ok = 0;                                                                                  \
      }                                                                                          \
    }                                                                                            \
    free(values);                                                                                \
    free(samples);                                                                               \
    CHECK(ok);                                                                                   \
  }

TT_NARROW_TEST(f32_to_f16_matches_reference_rounding, topos_f32_to_f16, 0x7c00u, tt_f16_value,
               0x7c00u, 0x0200u)
TT_NARROW_TEST(f32_to_bf16_matches_reference_rounding, topos_f32_to_bf16, 0x7f80u, tt_bf16_value,
               0x7f80u, 0x0040u)

TEST(f16_reference_sanity) {
  /* the reference itself against hand-checked cases */
  double *values = tt_value_table(0x7c00u, tt_f16_value);
  CHECK(values != NULL);
  int ok = tt_reference_narrow(1.0f, 0x7c00u, values) == 0x3c00 &&
           tt_reference_narrow(65519.99f, 0x7c00u, values) == 0x7bff &&
           tt_reference_narrow(65520.0f, 0x7c00u, values) == 0x7c00 &&
           tt_reference_narrow(-0x1p-25f, 0x7c00u, values) == 0x8000 &&
           tt_reference_narrow(0x1.8p-24f, 0x7c00u, values) == 0x0002 && /* tie to even */
           tt_reference_narrow(1.0f + 0x1p-11f, 0x7c00u, values) == 0x3c00 &&
           tt_reference_narrow(1.0f + 0x1.8p-10f, 0x7c00u, values) == 0x3c02 &&
           tt_reference_narrow(INFINITY, 0x7c00u, values) == 0x7c00;
  free(values);
  CHECK(ok);
}

/* ---- rows: every path gives the scalar bits, at every length and offset */

static int tt_check_rows(void (*widen_row)(const uint16_t *, float *, size_t),
                         void (*narrow_row)(const float *, uint16_t *, size_t),
                         float (*widen)(uint16_t), uint16_t (*narrow)(float)) {
  enum { N = 65536 };
  uint16_t *h = malloc((N + 1) * sizeof *h), *back = malloc((N + 1) * sizeof *back);
  float *f = malloc((N + 1) * sizeof *f);
  int ok = h && back && f;
  for (uint32_t i = 0; ok && i < N; ++i) h[i + 1] = (uint16_t)i;
  /* odd offsets (misaligned) and lengths that leave every tail size */
  for (size_t start = 0; ok && start < 2; ++start)
    for (size_t n = 0; ok && n < 40; ++n) {
      widen_row(h + 1 + start * 31000, f + start, n);
      for (size_t i = 0; i < n; ++i)
        if (tt_f32_bits(f[start + i]) != tt_f32_bits(widen(h[1 + start * 31000 + i]))) ok = 0;
    }
  if (ok) {
    widen_row(h + 1, f + 1, N);
    for (uint32_t i = 0; i < N; ++i)
      if (tt_f32_bits(f[i + 1]) != tt_f32_bits(widen((uint16_t)i))) ok = 0;
  }
  if (ok) { /* narrowing: rounding-relevant inputs from shifting the bit patterns around */
    for (uint32_t i = 0; i < N; ++i) f[i + 1] = tt_bits_f32(i * 65521u + (i << 13));
    narrow_row(f + 1, back + 1, N);
    for (uint32_t i = 0; i < N; ++i)
      if (back[i + 1] != narrow(f[i + 1])) ok = 0;
    for (size_t n = 0; ok && n < 40; ++n) {
      narrow_row(f + 3, back, n);
      for (size_t i = 0; i < n; ++i)
        if (back[i] != narrow(f[3 + i])) ok = 0;
    }
  }
  free(h);
  free(back);
  free(f);
  return ok;
}

TEST(half_rows_match_scalar_conversions) {
  CHECK(tt_check_rows(tp_f16_to_f32_row, tp_f32_to_f16_row, topos_f16_to_f32, topos_f32_to_f16));
  CHECK(tt_check_rows(tp_f16_to_f32_row_scalar, tp_f32_to_f16_row_scalar, topos_f16_to_f32,
                      topos_f32_to_f16));
  CHECK(tt_check_rows(tp_bf16_to_f32_row, tp_f32_to_bf16_row, topos_bf16_to_f32,
                      topos_f32_to_bf16));
#if defined(__x86_64__) || defined(__i386__)
  if (!tp_cpu_has_avx2_set()) SKIP("no AVX2+FMA+F16C: F16C rows not checked");
  CHECK(tt_check_rows(tp_f16_to_f32_row_f16c, tp_f32_to_f16_row_f16c, topos_f16_to_f32,
                      topos_f32_to_f16));
#endif
}
