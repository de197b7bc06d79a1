/* The softmax pattern (patterns_softmax.c): exp(log_softmax(x, last axis))
 * as one threaded step. Exact: the interpreter's bits — masked (-inf) keys,
 * rows of only -inf, +inf and NaN included — at 1, 2 and 3 threads. Fast:
 * within the stated envelope of the Exact result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/softmax_rows.h"
#include "test.h"

/* A rows x n f32 input: scores like attention's, a causal -inf tail per row,
 * and a few special rows at the end. */
static topos_tensor *tsm_input(int64_t rows, int64_t n, int specials) {
  float *v = malloc((size_t)(rows * n) * sizeof *v);
  if (!v) return NULL;
  uint32_t state = 12345u;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < n; ++k) {
      state = state * 1664525u + 1013904223u;
      float u = (float)(state >> 8) / 16777216.0f; /* [0, 1) */
      v[r * n + k] = k > (r * 7) % n ? -INFINITY : (u - 0.5f) * 24.0f;
    }
  if (specials && rows >= 4) {
    for (int64_t k = 0; k < n; ++k) v[(rows - 1) * n + k] = -INFINITY; /* no key: NaN */
    v[(rows - 2) * n + n / 2] = INFINITY;
    v[(rows - 3) * n + n - 1] = NAN;
    v[(rows - 4) * n] = -0.0f;
  }
  int64_t shape[2] = {rows, n};
  topos_tensor *t = NULL;
  if (topos_tensor_from_f32(TOPOS_F32, 2, shape, v, &t) != TOPOS_OK) t = NULL;
  free(v);
  return t;
}

/* exp(log_softmax(x)) over [heads, rows/heads, n] (rank 3, like the llama graph). */
static topos_status tsm_plan(topos_tensor *x, int64_t heads, topos_numerics num, uint32_t *fused,
                             topos_tensor **out, topos_tensor **ref) {
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_plan *plan = NULL;
  topos_run *run = NULL, *rr = NULL;
  topos_status st = topos_tape_new(&tape);
  if (st != TOPOS_OK) return st;
  const int64_t *s = topos_tensor_shape(x);
  int64_t shape[3] = {heads, s[0] / heads, s[1]};
  topos_sym in = topos_tape_reshape(tape, topos_tape_input(tape, x, "x"), 3, shape);
  topos_sym root = topos_tape_exp(tape, topos_tape_log_softmax(tape, in, 2));
  st = topos_tape_seal(&tape, &net);
  topos_request r = {.roots = &root, .n_roots = 1, .numerics = num};
  if (st == TOPOS_OK) st = topos_plan_compile(net, &r, &plan);
  topos_plan_stats stats;
  if (st == TOPOS_OK) st = topos_plan_stats_get(plan, &stats);
  if (st == TOPOS_OK) *fused = stats.fused;
  if (st == TOPOS_OK) st = topos_plan_forward(plan, NULL, NULL, 0, &run);
  if (st == TOPOS_OK) st = topos_run_read(run, root, out);
  if (st == TOPOS_OK && ref) { /* the interpreter, under Exact */
    topos_numerics saved = topos_numerics_enter(TOPOS_NUMERICS_EXACT);
    st = topos_network_forward(net, NULL, NULL, 0, NULL, &rr);
    topos_numerics_restore(saved);
    if (st == TOPOS_OK) st = topos_run_read(rr, root, ref);
  }
  topos_run_free(run);
  topos_run_free(rr);
  topos_plan_free(plan);
  topos_network_free(net);
  if (tape) topos_tape_free(tape);
  return st;
}

TEST(plan_softmax_fuses_with_the_composed_bits_at_every_thread_count) {
  static const int64_t ns[] = {1, 7, 33, 640};
  int saved = topos_threads();
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; ++i) {
    topos_tensor *x = tsm_input(32, ns[i], 1);
    CHECK(x != NULL);
    if (!x) continue;
    topos_tensor *first = NULL;
    for (int threads = 1; threads <= 3; ++threads) {
      CHECK_OK(topos_set_threads(threads));
      topos_tensor *y = NULL, *ref = NULL;
      uint32_t fused = 0;
      CHECK_OK(tsm_plan(x, 4, TOPOS_NUMERICS_EXACT, &fused, &y, &ref));
      CHECK_EQ_INT(fused, 1);
      if (y && ref) CHECK_MSG(topos_tensor_bits_equal(y, ref), "n %lld threads %d",
                              (long long)ns[i], threads);
      if (y && first) CHECK(topos_tensor_bits_equal(y, first));
      if (!first) first = topos_tensor_retain(y);
      topos_tensor_release(y);
      topos_tensor_release(ref);
    }
    topos_tensor_release(first);
    topos_tensor_release(x);
  }
  CHECK_OK(topos_set_threads(saved));
}

/* Fast: one exp per element (the simd rung's when built) over the same sum,
 * times 1 / s. Stated envelope (patterns_softmax.c): |fast - exact| <=
 * (8 + |ln p|) ulp of p, plus 2^-126 absolute (the subnormal range);
 * NaN rows stay NaN. */
TEST(plan_softmax_fast_within_its_envelope) {
  topos_tensor *x = tsm_input(64, 640, 1);
  CHECK(x != NULL);
  if (!x) return;
  topos_tensor *fast = NULL, *exact = NULL;
  uint32_t fused = 0;
  CHECK_OK(tsm_plan(x, 4, TOPOS_NUMERICS_FAST, &fused, &fast, NULL));
  CHECK_EQ_INT(fused, 1);
  CHECK_OK(tsm_plan(x, 4, TOPOS_NUMERICS_EXACT, &fused, &exact, NULL));
  int64_t n = topos_tensor_volume(x);
  float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
  CHECK(a && b);
  if (a && b && fast && exact) {
    CHECK_OK(topos_tensor_read_f32(fast, a, n));
    CHECK_OK(topos_tensor_read_f32(exact, b, n));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (isnan(b[i])) {
        bad += !isnan(a[i]);
        continue;
      }
      float ulps = b[i] > 0.0f ? 8.0f + fabsf(logf(b[i])) : 0.0f;
      bad += !(fabsf(a[i] - b[i]) <= ldexpf(b[i], -23) * ulps + ldexpf(1.0f, -126));
    }
    CHECK_EQ_INT(bad, 0);
  }
  free(a);
  free(b);
  topos_tensor_release(fast);
  topos_tensor_release(exact);
  topos_tensor_release(x);
}

/* The vector row (softmax_rows_template.h) directly: the same bits on AVX2
 * and AVX-512; a causal row cut after its last live key (what decoding
 * sees) gives the bits of the full masked row; within the stated envelope of
 * p computed in double; special rows declined to the scalar path. */
static void tsm_row(uint32_t *state, float *x, int64_t n, int64_t live, float spread) {
  for (int64_t k = 0; k < n; ++k) {
    *state = *state * 1664525u + 1013904223u;
    float u = (float)(*state >> 8) / 16777216.0f;
    x[k] = k < live ? (u - 0.5f) * spread : -INFINITY;
  }
}

TEST(softmax_vector_rows_agree_across_isas_cut_rows_and_the_envelope) {
  if (tp_softmax_row_vector(NULL, NULL, 0, 0, 0, 1) == -1) SKIP("no AVX2 here (or masked): no vector rows");
  const int isas = tp_softmax_row_vector(NULL, NULL, 0, 0, 0, 2) == -1 ? 1 : 2;
  static const int64_t ns[] = {1, 2, 15, 63, 64, 65, 127, 130, 700};
  enum { N = 700 };
  float x[N], y1[N], y2[N], yc[N];
  uint32_t state = 99u;
  int64_t bad = 0, rows = 0;
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; ++i)
    for (int64_t live = 1; live <= ns[i]; live += 1 + live / 8) {
      const int64_t n = ns[i];
      const float spread = live % 2 ? 24.0f : 180.0f; /* 180: terms down to the subnormals */
      tsm_row(&state, x, n, live, spread);
      memset(y1, 0xff, sizeof y1);
      CHECK_EQ_INT(tp_softmax_row_vector(x, y1, n, 0, 0, 1), 1);
      if (isas == 2) {
        memset(y2, 0, sizeof y2);
        CHECK_EQ_INT(tp_softmax_row_vector(x, y2, n, 0, 0, 2), 1);
        bad += memcmp(y1, y2, (size_t)n * sizeof *y1) != 0;
      }
      /* cut after the last live key */
      CHECK_EQ_INT(tp_softmax_row_vector(x, yc, live, 0, 0, isas), 1);
      bad += memcmp(y1, yc, (size_t)live * sizeof *y1) != 0;
      double peak = -INFINITY, sum = 0.0;
      for (int64_t k = 0; k < n; ++k) peak = x[k] > peak ? x[k] : peak;
      for (int64_t k = 0; k < live; ++k) sum += exp((double)x[k] - peak);
      for (int64_t k = 0; k < n; ++k) {
        double p = k < live ? exp((double)x[k] - peak) / sum : 0.0;
        double ulps = p > 0.0 ? 8.0 + fabs(log(p)) : 0.0;
        bad += !(fabs((double)y1[k] - p) <= ldexp(p, -23) * ulps + ldexp(1.0, -126));
      }
      ++rows;
    }
  CHECK_EQ_INT(bad, 0);
  CHECK(rows > 100);
  /* declined: only -inf, a NaN key, an infinite key (the scalar path's
   * special values); an empty cut is never asked for */
  for (int64_t k = 0; k < 70; ++k) x[k] = -INFINITY;
  CHECK_EQ_INT(tp_softmax_row_vector(x, y1, 70, 0, 0, 0), 0);
  x[3] = 1.0f;
  CHECK_EQ_INT(tp_softmax_row_vector(x, y1, 70, 0, 0, 0), 1);
  x[66] = NAN;
  CHECK_EQ_INT(tp_softmax_row_vector(x, y1, 70, 0, 0, 0), 0);
  x[66] = INFINITY;
  CHECK_EQ_INT(tp_softmax_row_vector(x, y1, 70, 0, 0, 0), 0);
}

/* A known run of -inf inside the row (an attention row's cache slots past
 * the written positions): the blocks it covers are skipped, with the bits
 * of the whole row and +0 written there, at every alignment of the run. */
TEST(softmax_vector_rows_skip_a_known_run_of_minus_infinity_with_the_same_bits) {
  if (tp_softmax_row_vector(NULL, NULL, 0, 0, 0, 1) == -1) SKIP("no AVX2 here (or masked): no vector rows");
  const int isas = tp_softmax_row_vector(NULL, NULL, 0, 0, 0, 2) == -1 ? 1 : 2;
  enum { N = 600 };
  float x[N], whole[N], gap[N];
  uint32_t state = 7u;
  int64_t bad = 0, cases = 0, skipping = 0;
  static const int64_t starts[] = {0, 1, 63, 64, 65, 100, 128, 200};
  static const int64_t lens[] = {0, 1, 63, 64, 127, 128, 129, 256, 300};
  for (int isa = 1; isa <= isas; ++isa)
    for (size_t a = 0; a < sizeof starts / sizeof starts[0]; ++a)
      for (size_t b = 0; b < sizeof lens / sizeof lens[0]; ++b) {
        const int64_t n = N - (int64_t)(a * 37 % 90), g0 = starts[a], g1 = g0 + lens[b];
        tsm_row(&state, x, n, n - 5, 30.0f); /* the last 5 -inf: a causal row's future */
        if (g0 == 0 && g1 < n - 5) x[g1] = 1.0f; /* keep a live key */
        for (int64_t k = g0; k < g1 && k < n; ++k) x[k] = -INFINITY;
        memset(whole, 0xff, sizeof whole);
        memset(gap, 0xff, sizeof gap);
        const int rw = tp_softmax_row_vector(x, whole, n, 0, 0, isa);
        const int rg = tp_softmax_row_vector(x, gap, n, g0, g1 < n ? g1 : n, isa);
        CHECK_EQ_INT(rg, rw);
        if (rw == 1) bad += memcmp(whole, gap, (size_t)n * sizeof *gap) != 0;
        skipping += lens[b] >= 128;
        ++cases;
      }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(cases, 72 * isas); /* 4 of the 9 runs cover a whole block of 64 wherever they start */
  CHECK_EQ_INT(skipping, 32 * isas);
  /* tp_softmax_row_fast_gap, whichever path serves it, agrees with tp_softmax_row_fast */
  tsm_row(&state, x, N, N, 20.0f);
  for (int64_t k = 70; k < 400; ++k) x[k] = -INFINITY;
  CHECK_OK(tp_softmax_row_fast(x, whole, N));
  CHECK_OK(tp_softmax_row_fast_gap(x, gap, N, 70, 400));
  CHECK(memcmp(whole, gap, sizeof gap) == 0);
  for (int64_t k = 70; k < 400; ++k) bad += gap[k] != 0.0f || signbit(gap[k]);
  CHECK_EQ_INT(bad, 0);
}
