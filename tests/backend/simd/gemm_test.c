/* The SIMD backend's packed GEMM against a plain reference (long double
 * accumulation), over many shapes, strides and every ISA this machine can
 * run; plus the promises that make it usable in the Fast posture: the bits do
 * not depend on threads, tile partition, cache blocking or ISA, and
 * unsupported inputs are declined. */
#include <stdlib.h>

#include "backend/simd/gemm.h"
#include "backend/simd/gemm_kernels.h"
#include "test.h"

static uint64_t tg_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}
static double tg_uniform(uint64_t *state) { /* [-1, 1) */
  return (double)(tg_next(state) >> 11) * 0x1p-53 * 2.0 - 1.0;
}

/* How an operand is laid out: transposed storage, a step between used
 * elements along the contiguous axis, and padding at the end of each line. */
typedef struct {
  int trans, step, pad;
} tg_layout;

typedef struct {
  int64_t m, n, k;
  tg_layout a, b;
  int64_t c_pad;
} tg_case;

/* Strides of a rows x cols operand stored per layout; returns elements needed. */
static int64_t tg_strides(int64_t rows, int64_t cols, tg_layout l, int64_t *rs, int64_t *cs) {
  int step = l.step > 0 ? l.step : 1;
  if (!l.trans) {
    *cs = step;
    *rs = cols * step + l.pad;
  } else {
    *rs = step;
    *cs = rows * step + l.pad;
  }
  return (rows - 1) * *rs + (cols - 1) * *cs + 1;
}

#define TG_DEFINE(T, S, UNIT, NMSE_MAX)                                                          \
  typedef struct {                                                                               \
    tg_case cs;                                                                                  \
    T *a, *b, *c;                                                                                \
    int64_t ars, acs, brs, bcs, ldc, c_elems;                                                    \
  } tg_problem_##S;                                                                              \
                                                                                                 \
  static int tg_make_##S(tg_problem_##S *p, tg_case cs, uint64_t seed) {                         \
    memset(p, 0, sizeof *p);                                                                     \
    p->cs = cs;                                                                                  \
    int64_t na = tg_strides(cs.m, cs.k, cs.a, &p->ars, &p->acs);                                 \
    int64_t nb = tg_strides(cs.k, cs.n, cs.b, &p->brs, &p->bcs);                                 \
    p->ldc = cs.n + cs.c_pad;                                                                    \
    p->c_elems = cs.m * p->ldc;                                                                  \
    p->a = malloc((size_t)na * sizeof(T));                                                       \
    p->b = malloc((size_t)nb * sizeof(T));                                                       \
    p->c = malloc((size_t)(p->c_elems ? p->c_elems : 1) * sizeof(T));                            \
    if (!p->a || !p->b || !p->c) return 0;                                                       \
    uint64_t state = seed;                                                                       \
    /* Unused elements hold NaN: reading one would poison the result. */                        \
    for (int64_t i = 0; i < na; ++i) p->a[i] = (T)NAN;                                           \
    for (int64_t i = 0; i < nb; ++i) p->b[i] = (T)NAN;                                           \
    for (int64_t i = 0; i < cs.m; ++i)                                                           \
      for (int64_t q = 0; q < cs.k; ++q) p->a[i * p->ars + q * p->acs] = (T)tg_uniform(&state);  \
    for (int64_t q = 0; q < cs.k; ++q)                                                           \
      for (int64_t j = 0; j < cs.n; ++j) p->b[q * p->brs + j * p->bcs] = (T)tg_uniform(&state);  \
    return 1;                                                                                    \
  }                                                                                              \
                                                                                                 \
  static void tg_free_##S(tg_problem_##S *p) {                                                   \
    free(p->a), free(p->b), free(p->c);                                                          \
  }                                                                                              \
                                                                                                 \
  /* Fills C (padding included) with a sentinel, runs the GEMM. */                              \
  static topos_status tg_run_##S(tg_problem_##S *p, tp_simd_isa isa) {                           \
    for (int64_t i = 0; i < p->c_elems; ++i) p->c[i] = (T)-777.0;                                \
    return tp_simd_gemm_##S##_isa(isa, p->cs.m, p->cs.n, p->cs.k, p->a, p->ars, p->acs, p->b,    \
                                  p->brs, p->bcs, p->c, p->ldc);                                 \
  }                                                                                              \
                                                                                                 \
  /* 0 when C matches the reference: per element within (k+2) units of     \
   * sum|a||b| (the FMA-chain bound), NMSE within NMSE_MAX, padding intact. */                   \
  static int tg_verify_##S(const tg_problem_##S *p, char *why, size_t why_size) {                \
    const tg_case *cs = &p->cs;                                                                  \
    long double err2 = 0, ref2 = 0;                                                              \
    for (int64_t i = 0; i < cs->m; ++i) {                                                        \
      for (int64_t j = 0; j < p->ldc; ++j) {                                                     \
        T got = p->c[i * p->ldc + j];                                                            \
        if (j >= cs->n) {                                                                        \
          if (got != (T)-777.0) {                                                                \
            snprintf(why, why_size, "padding C[%lld][%lld] overwritten", (long long)i,          \
                     (long long)j);                                                              \
            return 1;                                                                            \
          }                                                                                      \
          continue;                                                                              \
        }                                                                                        \
        long double ref = 0, mag = 0;                                                            \
        for (int64_t q = 0; q < cs->k; ++q) {                                                    \
          long double x = (long double)p->a[i * p->ars + q * p->acs];                            \
          long double y = (long double)p->b[q * p->brs + j * p->bcs];                            \
          ref += x * y;                                                                          \
          mag += fabsl(x * y);                                                                   \
        }                                                                                        \
        long double diff = (long double)got - ref;                                               \
        if (!(fabsl(diff) <= (long double)(cs->k + 2) * (UNIT) * mag)) {                         \
          snprintf(why, why_size, "C[%lld][%lld] = %.17g, reference %.17Lg (bound %.3Lg)",       \
                   (long long)i, (long long)j, (double)got, ref,                                 \
                   (long double)(cs->k + 2) * (UNIT) * mag);                                     \
          return 1;                                                                              \
        }                                                                                        \
        err2 += diff * diff;                                                                     \
        ref2 += ref * ref;                                                                       \
      }                                                                                          \
    }                                                                                            \
    if (ref2 > 0 && !(err2 / ref2 <= (NMSE_MAX))) {                                              \
      snprintf(why, why_size, "NMSE %.3Lg above %.3g", err2 / ref2, (double)(NMSE_MAX));         \
      return 1;                                                                                  \
    }                                                                                            \
    return 0;                                                                                    \
  }                                                                                              \
                                                                                                 \
  static int tg_same_bits_##S(const T *x, const T *y, int64_t count) {                           \
    return count == 0 || memcmp(x, y, (size_t)count * sizeof(T)) == 0;                           \
  }                                                                                              \
                                                                                                 \
  /* Every available ISA on one case: reference match, and all ISAs give the \
   * scalar kernel's bits. Returns 0 on success (failure already reported). */                   \
  static int tg_check_case_##S(tg_case cs, const char *file, int line) {                         \
    tg_problem_##S p;                                                                            \
    char why[256];                                                                               \
    T *first = NULL;                                                                             \
    int bad = 0;                                                                                 \
    if (!tg_make_##S(&p, cs, (uint64_t)(cs.m * 1000003 + cs.n * 1009 + cs.k))) {                 \
      tt_fail_at(file, line, "out of memory");                                                   \
      bad = 1;                                                                                   \
    }                                                                                            \
    for (int isa = 0; isa < TP_SIMD_ISA_COUNT && !bad; ++isa) {                                  \
      if (!tp_simd_isa_available((tp_simd_isa)isa)) continue;                                    \
      topos_status st = tg_run_##S(&p, (tp_simd_isa)isa);                                        \
      if (st != TOPOS_OK) {                                                                      \
        tt_fail_at(file, line, "%s %s %lldx%lldx%lld: %s", #S, tp_simd_isa_name(isa),            \
                   (long long)cs.m, (long long)cs.n, (long long)cs.k, topos_last_error());       \
        bad = 1;                                                                                 \
      } else if (tg_verify_##S(&p, why, sizeof why)) {                                           \
        tt_fail_at(file, line, "%s %s m=%lld n=%lld k=%lld (A trans %d step %d pad %d, B trans " \
                   "%d step %d pad %d, c_pad %lld): %s",                                         \
                   #S, tp_simd_isa_name(isa), (long long)cs.m, (long long)cs.n, (long long)cs.k, \
                   cs.a.trans, cs.a.step, cs.a.pad, cs.b.trans, cs.b.step, cs.b.pad,             \
                   (long long)cs.c_pad, why);                                                    \
        bad = 1;                                                                                 \
      } else if (!first) {                                                                       \
        first = malloc((size_t)(p.c_elems ? p.c_elems : 1) * sizeof(T));                         \
        if (first) memcpy(first, p.c, (size_t)p.c_elems * sizeof(T));                           \
      } else if (!tg_same_bits_##S(first, p.c, p.c_elems)) {                                     \
        tt_fail_at(file, line, "%s %s m=%lld n=%lld k=%lld: bits differ from the scalar kernel", \
                   #S, tp_simd_isa_name(isa), (long long)cs.m, (long long)cs.n, (long long)cs.k); \
        bad = 1;                                                                                 \
      }                                                                                          \
    }                                                                                            \
    free(first);                                                                                 \
    tg_free_##S(&p);                                                                             \
    return bad;                                                                                  \
  }

TG_DEFINE(float, f32, 0x1p-24L, 1e-6)
TG_DEFINE(double, f64, 0x1p-53L, 1e-24)

#define TG_CHECK_CASE(S, ...)                                      \
  do {                                                             \
    if (tg_check_case_##S((tg_case)__VA_ARGS__, __FILE__, __LINE__)) return; \
  } while (0)

#define TG_PLAIN {0, 1, 0}

/* Shapes: trivial, primes, vectors, tall/skinny, and both sides of every
 * kernel's MR / NR (4, 6, 8, 12 / 4, 6, 8, 12, 16, 32). */
static const int64_t tg_shapes[][3] = {
    {1, 1, 1},    {7, 13, 29},  {1, 37, 45},  {41, 1, 33},  {1, 1, 300},  {300, 5, 17},
    {3, 300, 40}, {13, 37, 300}, {2, 3, 1},   {5, 4, 3},    {11, 31, 9},  {12, 32, 16},
    {13, 33, 17}, {23, 15, 8},  {24, 16, 7},  {25, 17, 6},  {6, 8, 64},   {7, 9, 65},
    {36, 64, 5},  {37, 65, 4},  {48, 96, 33}, {97, 61, 131}, {128, 129, 127},
};

#define TG_SHAPES_TEST(S)                                                             \
  TEST(simd_gemm_##S##_shapes_match_reference_on_every_isa) {                          \
    for (size_t i = 0; i < sizeof tg_shapes / sizeof tg_shapes[0]; ++i)               \
      TG_CHECK_CASE(S, {tg_shapes[i][0], tg_shapes[i][1], tg_shapes[i][2], TG_PLAIN, TG_PLAIN, 0}); \
  }
TG_SHAPES_TEST(f32)
TG_SHAPES_TEST(f64)

/* Transposed, narrowed (step), padded operands and ldc > n — views are read
 * through their strides, never copied. */
#define TG_STRIDES_TEST(S)                                                                      \
  TEST(simd_gemm_##S##_strided_views_match_reference) {                                         \
    static const tg_layout layouts[] = {{0, 1, 0}, {1, 1, 0}, {0, 1, 5}, {1, 1, 3},             \
                                        {0, 2, 0}, {1, 3, 1}};                                  \
    const size_t count = sizeof layouts / sizeof layouts[0];                                    \
    for (size_t ia = 0; ia < count; ++ia)                                                       \
      for (size_t ib = 0; ib < count; ++ib) {                                                   \
        TG_CHECK_CASE(S, {29, 37, 23, layouts[ia], layouts[ib], (int64_t)(ia + ib) % 3 * 4});   \
        TG_CHECK_CASE(S, {1, 17, 5, layouts[ia], layouts[ib], 1});                              \
      }                                                                                         \
    TG_CHECK_CASE(S, {70, 90, 150, {1, 1, 7}, {1, 2, 3}, 11});                                  \
  }
TG_STRIDES_TEST(f32)
TG_STRIDES_TEST(f64)

/* Cache blocks much smaller than the problem: several mc, kc and nc blocks,
 * ragged last blocks — and still the default blocking's bits. */
#define TG_BLOCKING_TEST(S, T)                                                                   \
  TEST(simd_gemm_##S##_small_blocks_same_bits) {                                                 \
    static const tp_simd_gemm_tuning tunings[] = {{1, 1, 1, 0, 0}, {24, 7, 64, 0, 0}, {36, 50, 40, 0, 0}}; \
    tg_problem_##S p;                                                                            \
    tg_case cs = {53, 71, 103, {1, 1, 2}, TG_PLAIN, 3};                                          \
    CHECK(tg_make_##S(&p, cs, 7));                                                               \
    T *want = malloc((size_t)p.c_elems * sizeof(T));                                             \
    if (!want) tg_free_##S(&p);                                                                  \
    CHECK(want);                                                                                 \
    int ok = 1;                                                                                  \
    char why[256] = "";                                                                          \
    for (int isa = 0; isa < TP_SIMD_ISA_COUNT && ok; ++isa) {                                    \
      if (!tp_simd_isa_available((tp_simd_isa)isa)) continue;                                    \
      tp_simd_gemm_set_tuning(NULL);                                                             \
      ok = tg_run_##S(&p, (tp_simd_isa)isa) == TOPOS_OK;                                         \
      if (ok) memcpy(want, p.c, (size_t)p.c_elems * sizeof(T));                                  \
      for (size_t t = 0; t < sizeof tunings / sizeof tunings[0] && ok; ++t) {                    \
        tp_simd_gemm_set_tuning(&tunings[t]);                                                    \
        ok = tg_run_##S(&p, (tp_simd_isa)isa) == TOPOS_OK && !tg_verify_##S(&p, why, sizeof why) && \
             tg_same_bits_##S(want, p.c, p.c_elems);                                             \
        if (!ok)                                                                                 \
          snprintf(why + strlen(why), sizeof why - strlen(why), " [%s, tuning %zu]",             \
                   tp_simd_isa_name(isa), t);                                                    \
      }                                                                                          \
    }                                                                                            \
    tp_simd_gemm_set_tuning(NULL);                                                               \
    free(want);                                                                                  \
    tg_free_##S(&p);                                                                             \
    CHECK_MSG(ok, "small blocks changed the result: %s", why);                                   \
  }
TG_BLOCKING_TEST(f32, float)
TG_BLOCKING_TEST(f64, double)

/* 1, 2 and 3 threads (and a rerun) give the same bits, and more than one
 * rectangle is really used. */
#define TG_THREADS_TEST(S, T)                                                                   \
  TEST(simd_gemm_##S##_threads_same_bits) {                                                     \
    /* Split even small problems; the others also make many depth panels and \
     * column blocks, with shared B packing and without. */                   \
    static const tp_simd_gemm_tuning tunings[] = {{0, 0, 0, 1, 0}, {96, 7, 64, 1, 2},           \
                                                  {96, 7, 64, 1, 1}};                           \
    static const tg_case cases[] = {{150, 170, 90, TG_PLAIN, TG_PLAIN, 2},                      \
                                    {37, 300, 20, {1, 1, 0}, TG_PLAIN, 0},                      \
                                    {200, 9, 33, TG_PLAIN, {1, 1, 1}, 0},                       \
                                    {120, 600, 20, TG_PLAIN, TG_PLAIN, 1}};                     \
    int ok = 1;                                                                                 \
    char why[256] = "";                                                                         \
    int saved_threads = topos_threads();                                                        \
    for (size_t ti = 0; ti < 3 * sizeof cases / sizeof cases[0] && ok; ++ti) {                 \
      size_t ci = ti / 3;                                                                       \
      tp_simd_gemm_set_tuning(&tunings[ti % 3]);                                                \
      tg_problem_##S p;                                                                         \
      T *want = NULL;                                                                           \
      ok = tg_make_##S(&p, cases[ci], 11 + ti);                                                 \
      if (ok) want = malloc((size_t)p.c_elems * sizeof(T));                                     \
      ok = ok && want;                                                                          \
      static const int threads[] = {1, 2, 3, 2, 1};                                             \
      for (size_t t = 0; t < sizeof threads / sizeof threads[0] && ok; ++t) {                   \
        ok = topos_set_threads(threads[t]) == TOPOS_OK;                                         \
        if (!ok) break;                                                                         \
        ok = tg_run_##S(&p, tp_simd_isa_best()) == TOPOS_OK;                                    \
        if (ok && threads[t] > 1 && tp_simd_gemm_last_rectangles() < 2) {                       \
          snprintf(why, sizeof why, "case %zu: %d threads used 1 rectangle", ti, threads[t]);   \
          ok = 0;                                                                               \
        }                                                                                       \
        if (!ok) break;                                                                         \
        if (t == 0) {                                                                           \
          ok = !tg_verify_##S(&p, why, sizeof why);                                             \
          memcpy(want, p.c, (size_t)p.c_elems * sizeof(T));                                     \
        } else if (!tg_same_bits_##S(want, p.c, p.c_elems)) {                                   \
          snprintf(why, sizeof why, "case %zu: %d threads changed bits", ti, threads[t]);       \
          ok = 0;                                                                               \
        }                                                                                       \
      }                                                                                         \
      free(want);                                                                               \
      tg_free_##S(&p);                                                                          \
    }                                                                                           \
    topos_set_threads(saved_threads);                                                           \
    tp_simd_gemm_set_tuning(NULL);                                                              \
    CHECK_MSG(ok, "%s", why[0] ? why : "setup or run failed");                                  \
  }
TG_THREADS_TEST(f32, float)
TG_THREADS_TEST(f64, double)

TEST(simd_gemm_declines_broadcast_and_overflow) {
  float a[64], b[64], c[64];
  for (int i = 0; i < 64; ++i) a[i] = b[i] = 1.0f, c[i] = 5.0f;
  CHECK_STATUS(tp_simd_gemm_f32(4, 4, 4, a, 0, 1, b, 4, 1, c, 4), TOPOS_UNSUPPORTED);
  CHECK_ERROR_HAS("stride");
  CHECK_STATUS(tp_simd_gemm_f32(4, 4, 4, a, 4, 0, b, 4, 1, c, 4), TOPOS_UNSUPPORTED);
  CHECK_STATUS(tp_simd_gemm_f32(4, 4, 4, a, 4, 1, b, 0, 1, c, 4), TOPOS_UNSUPPORTED);
  CHECK_STATUS(tp_simd_gemm_f32(4, 4, 4, a, 4, 1, b, 4, 0, c, 4), TOPOS_UNSUPPORTED);
  CHECK_STATUS(tp_simd_gemm_f32(4, 4, 4, a, 4, -1, b, 4, 1, c, 4), TOPOS_UNSUPPORTED);
  double da[16] = {0}, db[16] = {0}, dc[16];
  CHECK_STATUS(tp_simd_gemm_f64(2, 2, 2, da, 0, 0, db, 2, 1, dc, 2), TOPOS_UNSUPPORTED);
  /* Index arithmetic that would overflow int64 is declined before any read. */
  CHECK_STATUS(tp_simd_gemm_f32(3, 4, 4, a, INT64_MAX / 2, 1, b, 4, 1, c, 4), TOPOS_UNSUPPORTED);
  CHECK_ERROR_HAS("overflow");
  CHECK_STATUS(tp_simd_gemm_f32(4, 4, 3, a, 4, 1, b, INT64_MAX / 4, 1, c, 4), TOPOS_UNSUPPORTED);
  CHECK_STATUS(tp_simd_gemm_f64(INT64_MAX / 2, 2, 2, da, 2, 1, db, 2, 1, dc, 2), TOPOS_UNSUPPORTED);
  for (int i = 0; i < 64; ++i) CHECK_BITS_F32(c[i], 5.0f); /* C untouched */
  /* Bad arguments are errors, not declines. */
  CHECK_STATUS(tp_simd_gemm_f32(-1, 4, 4, a, 4, 1, b, 4, 1, c, 4), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tp_simd_gemm_f32(4, 4, 4, a, 4, 1, b, 4, 1, c, 3), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tp_simd_gemm_f32(4, 4, 4, NULL, 4, 1, b, 4, 1, c, 4), TOPOS_ERR_INVALID_ARGUMENT);
}

TEST(simd_gemm_empty_extents) {
  float a[12], b[12], c[12];
  for (int i = 0; i < 12; ++i) a[i] = b[i] = 2.0f, c[i] = 9.0f;
  CHECK_OK(tp_simd_gemm_f32(0, 3, 4, a, 4, 1, b, 3, 1, c, 3)); /* nothing to do */
  CHECK_OK(tp_simd_gemm_f32(3, 0, 4, a, 4, 1, b, 3, 1, c, 3));
  for (int i = 0; i < 12; ++i) CHECK_BITS_F32(c[i], 9.0f);
  CHECK_OK(tp_simd_gemm_f32(3, 3, 0, a, 4, 1, b, 3, 1, c, 4)); /* empty sum: zeros */
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) CHECK_BITS_F32(c[i * 4 + j], 0.0f);
    CHECK_BITS_F32(c[i * 4 + 3], 9.0f); /* ldc padding kept */
  }
}

/* Infinities and NaN propagate like the reference sum: padding lanes of edge
 * tiles (0 * inf = NaN) must not leak into valid elements. */
TEST(simd_gemm_special_values_propagate) {
  enum { M = 13, N = 35, K = 9 };
  float a[M * K], b[K * N], c[M * N];
  for (int i = 0; i < M * K; ++i) a[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < K * N; ++i) b[i] = (float)(i % 5) - 2.0f;
  a[2 * K + 4] = INFINITY; /* row 2: +-inf or NaN where B[4][j] is nonzero / zero */
  b[1 * N + 33] = NAN;     /* column 33: NaN everywhere */
  for (int isa = 0; isa < TP_SIMD_ISA_COUNT; ++isa) {
    if (!tp_simd_isa_available((tp_simd_isa)isa)) continue;
    CHECK_OK(tp_simd_gemm_f32_isa((tp_simd_isa)isa, M, N, K, a, K, 1, b, N, 1, c, N));
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double ref = 0;
        for (int q = 0; q < K; ++q) ref += (double)a[i * K + q] * (double)b[q * N + j];
        float got = c[i * N + j];
        CHECK_MSG(isnan(ref) == isnan(got) && isinf(ref) == isinf(got) &&
                      (!isfinite(ref) || fabs(got - ref) < 1e-3),
                  "%s C[%d][%d] = %g, reference %g", tp_simd_isa_name(isa), i, j, got, ref);
      }
  }
}

/* The ISA choice follows the CPU and TOPOS_DISABLE_ISA; unavailable ISAs are
 * declined. (Run the suite with TOPOS_DISABLE_ISA=avx512 or =avx2 to force
 * each fallback through every test above.) */
TEST(simd_gemm_isa_selection) {
  CHECK(tp_simd_isa_available(TP_SIMD_ISA_SCALAR));
  tp_simd_isa best = tp_simd_isa_best();
  CHECK(tp_simd_isa_available(best));
  const char *mask = getenv("TOPOS_DISABLE_ISA");
  if (mask && strstr(mask, "avx512")) CHECK(!tp_simd_isa_available(TP_SIMD_ISA_AVX512));
  if (mask && strstr(mask, "avx2")) CHECK(!tp_simd_isa_available(TP_SIMD_ISA_AVX2));
  if (mask && strstr(mask, "avx2")) CHECK(!tp_simd_isa_available(TP_SIMD_ISA_AVX512));
#if defined(__x86_64__)
  float a[1] = {2}, b[1] = {3}, c[1] = {0};
  CHECK_STATUS(tp_simd_gemm_f32_isa(TP_SIMD_ISA_NEON, 1, 1, 1, a, 1, 1, b, 1, 1, c, 1),
               TOPOS_UNSUPPORTED);
  if (!mask) {
    __builtin_cpu_init();
    CHECK_EQ_INT(tp_simd_isa_available(TP_SIMD_ISA_AVX2),
                 __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  }
#endif
  CHECK(strstr(tp_simd_gemm_describe(32), tp_simd_isa_name(best)) != NULL);
  CHECK(strstr(tp_simd_gemm_describe(64), "f64") != NULL);
}
