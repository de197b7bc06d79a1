/* The simd rung's vectorized maps: the stated ulp bounds hold over dense
 * sweeps, special values follow the reference, AVX-512 and AVX2 give the
 * same bits, and buffer offsets / thread splits never change a lane. */
#include <math.h>

#include "backend/simd/vmath.h"
#include "backend/backend_util.h"

/* Distance in ulps between a float result and the exactly rounded one. */
static double bt_ulps(float got, double exact) {
  if (isnan(exact)) return isnan(got) ? 0 : INFINITY;
  if (isinf(exact) || fabs(exact) > 3.4028234663852886e38) {
    float r = (float)exact;
    return got == r ? 0 : INFINITY;
  }
  float r = (float)exact;
  if (got == r) return 0;
  double ulp = fabs((double)nextafterf(r, INFINITY) - (double)r);
  if (ulp == 0 || !isfinite(ulp)) ulp = fabs((double)r - (double)nextafterf(r, -INFINITY));
  return fabs((double)got - exact) / ulp;
}

typedef double (*bt_ref_fn)(double);

/* Sweeps every `step`-th float bit pattern in [lo, hi] (as floats). */
static double bt_sweep(topos_map_op op, bt_ref_fn ref, float lo, float hi, int64_t count, int isa) {
  float *x = malloc((size_t)count * 4), *y = malloc((size_t)count * 4);
  if (!x || !y) {
    free(x), free(y);
    return INFINITY;
  }
  for (int64_t i = 0; i < count; ++i) x[i] = lo + (hi - lo) * (float)((double)i / (double)(count - 1));
  /* plus a bit-pattern sweep over positive floats in range */
  double worst = 0;
  if (tp_vmath_map_f32(op, x, y, count, isa) != TOPOS_OK) worst = INFINITY;
  for (int64_t i = 0; i < count && worst < INFINITY; ++i) {
    double u = bt_ulps(y[i], ref((double)x[i]));
    if (u > worst) worst = u;
  }
  free(x), free(y);
  return worst;
}

static double bt_bits_sweep(topos_map_op op, bt_ref_fn ref, uint32_t from, uint32_t to,
                            uint32_t step, int sign, int isa) {
  int64_t count = (int64_t)((to - from) / step) + 1;
  float *x = malloc((size_t)count * 4), *y = malloc((size_t)count * 4);
  if (!x || !y) {
    free(x), free(y);
    return INFINITY;
  }
  for (int64_t i = 0; i < count; ++i) {
    uint32_t b = (from + (uint32_t)i * step) | (sign ? 0x80000000u : 0);
    memcpy(&x[i], &b, 4);
  }
  double worst = 0;
  if (tp_vmath_map_f32(op, x, y, count, isa) != TOPOS_OK) worst = INFINITY;
  for (int64_t i = 0; i < count && worst < INFINITY; ++i) {
    double u = bt_ulps(y[i], ref((double)x[i]));
    if (u > worst) worst = u;
  }
  free(x), free(y);
  return worst;
}

static int bt_have_vector_maps(void) { return tp_vector_isa_best() >= TP_VECTOR_AVX2; }

TEST(vmath_ulp_bounds_hold_over_dense_sweeps) {
  if (!bt_have_vector_maps()) SKIP("no AVX2: the simd maps decline on this CPU");
  enum { N = 1 << 20 };
  double e1 = bt_sweep(TOPOS_MAP_EXP, exp, -104.0f, 89.0f, N, 0);
  double e2 = bt_bits_sweep(TOPOS_MAP_EXP, exp, 0x00000001u, 0x42b20000u, 997, 0, 0);
  double e3 = bt_bits_sweep(TOPOS_MAP_EXP, exp, 0x00000001u, 0x42d00000u, 997, 1, 0);
  double l1 = bt_bits_sweep(TOPOS_MAP_LN, log, 0x00000001u, 0x7f7fffffu, 1999, 0, 0);
  double l2 = bt_sweep(TOPOS_MAP_LN, log, 0.5f, 2.0f, N, 0);
  double t1 = bt_sweep(TOPOS_MAP_TANH, tanh, -10.0f, 10.0f, N, 0);
  double t2 = bt_bits_sweep(TOPOS_MAP_TANH, tanh, 0x00000001u, 0x41200000u, 997, 0, 0);
  double t3 = bt_bits_sweep(TOPOS_MAP_TANH, tanh, 0x00000001u, 0x41200000u, 997, 1, 0);
  double s1 = bt_bits_sweep(TOPOS_MAP_SQRT, sqrt, 0x00000000u, 0x7f7fffffu, 1999, 0, 0);
  printf("  vmath max ulp: exp %.2f/%.2f/%.2f ln %.2f/%.2f tanh %.2f/%.2f/%.2f sqrt %.2f\n", e1, e2,
         e3, l1, l2, t1, t2, t3, s1);
  CHECK(fmax(e1, fmax(e2, e3)) <= TP_VMATH_ULP_EXP);
  CHECK(fmax(l1, l2) <= TP_VMATH_ULP_LN);
  CHECK(fmax(t1, fmax(t2, t3)) <= TP_VMATH_ULP_TANH);
  CHECK(s1 <= TP_VMATH_ULP_SQRT);
}

TEST(vmath_special_values) {
  if (!bt_have_vector_maps()) SKIP("no AVX2: the simd maps decline on this CPU");
  float x[12] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -1.0f, 1e-45f, 1e-40f, 89.0f, -104.0f, 1.0f, -0.5f};
  float y[12];
  CHECK_OK(tp_vmath_map_f32(TOPOS_MAP_EXP, x, y, 12, 0));
  CHECK_BITS_F32(y[0], 1.0f);
  CHECK_BITS_F32(y[1], 1.0f);
  CHECK(isinf(y[2]) && y[2] > 0);
  CHECK_BITS_F32(y[3], 0.0f);
  CHECK(isnan(y[4]));
  CHECK(isinf(y[8]));
  CHECK_BITS_F32(y[9], 0.0f);
  CHECK_BITS_F32(y[10], expf(1.0f)); /* e rounds the same here */
  CHECK_OK(tp_vmath_map_f32(TOPOS_MAP_LN, x, y, 12, 0));
  CHECK(isinf(y[0]) && y[0] < 0);
  CHECK(isinf(y[1]) && y[1] < 0);
  CHECK(isinf(y[2]) && y[2] > 0);
  CHECK(isnan(y[3]) && isnan(y[4]) && isnan(y[5]));
  CHECK(bt_ulps(y[6], log((double)x[6])) <= TP_VMATH_ULP_LN);
  CHECK(bt_ulps(y[7], log((double)1e-40f)) <= TP_VMATH_ULP_LN);
  CHECK_BITS_F32(y[10], 0.0f);
  CHECK_OK(tp_vmath_map_f32(TOPOS_MAP_TANH, x, y, 12, 0));
  CHECK_BITS_F32(y[0], 0.0f);
  CHECK_BITS_F32(y[1], -0.0f);
  CHECK_BITS_F32(y[2], 1.0f);
  CHECK_BITS_F32(y[3], -1.0f);
  CHECK(isnan(y[4]));
  CHECK_BITS_F32(y[6], 1e-45f);
  CHECK_OK(tp_vmath_map_f32(TOPOS_MAP_SQRT, x, y, 12, 0));
  for (int i = 0; i < 12; ++i)
    CHECK(tt_f32_bits(y[i]) == tt_f32_bits(sqrtf(x[i])) || (isnan(y[i]) && isnan(sqrtf(x[i]))));
  CHECK(tp_vmath_map_f32(TOPOS_MAP_NEG, x, y, 12, 0) == TOPOS_UNSUPPORTED); /* default serves */
}

TEST(vmath_same_bits_across_isas_offsets_and_threads) {
  if (!bt_have_vector_maps()) SKIP("no AVX2: the simd maps decline on this CPU");
  enum { N = 100003 };
  float *x = malloc(N * 4), *y1 = malloc(N * 4), *y2 = malloc(N * 4);
  double *v = malloc(N * 8);
  CHECK(x && y1 && y2 && v);
  bt_fill_f64(v, N, 51);
  for (int i = 0; i < N; ++i) x[i] = (float)(v[i] * 12.0);
  int ok = 1;
  for (int op = 0; op < 4 && ok; ++op) {
    tp_backend_set_threads(1);
    ok &= tp_vmath_map_f32((topos_map_op)op, x, y1, N, 1) == TOPOS_OK; /* AVX2, one thread */
    if (tp_vector_isa_best() == TP_VECTOR_AVX512) {
      tp_backend_set_threads(3);
      ok &= tp_vmath_map_f32((topos_map_op)op, x, y2, N, 2) == TOPOS_OK;
      ok &= memcmp(y1, y2, N * 4) == 0;
    }
    /* an odd offset changes which lanes and tail each element lands in */
    ok &= tp_vmath_map_f32((topos_map_op)op, x + 3, y2, N - 3, 0) == TOPOS_OK;
    ok &= memcmp(y1 + 3, y2, (N - 3) * 4) == 0;
  }
  tp_backend_set_threads(0);
  free(x), free(y1), free(y2), free(v);
  CHECK(ok);
}

/* Through the op: Fast tanh is within its envelope (NMSE far below 1e-6)
 * and repeatable; Exact tanh is the reference's bits. */
TEST(vmath_fast_map_through_the_op) {
  bt_scope scope = bt_enter();
  int64_t s[1] = {50000};
  topos_tensor *x = bt_random(TOPOS_F32, 1, s, 52), *f1 = NULL, *f2 = NULL;
  CHECK(x);
  topos_numerics_enter(TOPOS_NUMERICS_FAST);
  int ok = topos_tanh(x, &f1) == TOPOS_OK && topos_tanh(x, &f2) == TOPOS_OK;
  topos_backend served = tp_backend_last_served();
  double *ref = malloc(50000 * 8);
  ok &= ref && topos_tensor_read_f64(x, ref, 50000) == TOPOS_OK;
  for (int i = 0; ok && i < 50000; ++i) ref[i] = (double)tanhf((float)ref[i]);
  double nmse = ok ? bt_nmse(f1, ref, 50000) : INFINITY;
  int repeat = ok && topos_tensor_bits_equal(f1, f2);
  free(ref);
  topos_tensor_release(x), topos_tensor_release(f1), topos_tensor_release(f2);
  bt_leave(scope);
  CHECK(ok);
  CHECK(nmse < 1e-12);
  CHECK(repeat);
  if (bt_have_vector_maps()) CHECK_EQ_INT(served, TOPOS_BACKEND_SIMD);
}
