/* Elementwise reference kernels on hand-computed cases in f32, f64 and bf16
 * (f16 where rounding matters), and the edge rules of maximum, step, relu. */
#include "ops_util.h"

static const topos_dtype kDtypes[] = {TOPOS_F32, TOPOS_F64, TOPOS_BF16};
#define FOR_DTYPES(dt) for (size_t dt##_i = 0; dt##_i < 3 && ((dt = kDtypes[dt##_i]), 1); ++dt##_i)

TEST(ops_binary_hand_cases) {
  ot_pool p = {{0}, 0};
  int64_t s[] = {2, 3};
  const double a[6] = {1, -2, 0.5, 3, -0.75, 8}, b[6] = {2, 4, -0.25, 3, 0.5, -16};
  const double pa[6] = {2, 3, 4, 0.5, 9, 2}, pb[6] = {2, -1, 0.5, 3, 0.5, 10};
  topos_dtype dt;
  FOR_DTYPES(dt) {
    topos_tensor *x = ot_make(&p, dt, 2, s, a), *y = ot_make(&p, dt, 2, s, b), *r = NULL;
    CHECK(x && y);
    CHECK_OK(topos_add(x, y, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 2, s, 3, 2, 0.25, 6, -0.25, -8);
    CHECK_OK(topos_sub(x, y, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 2, s, -1, -6, 0.75, 0, -1.25, 24);
    CHECK_OK(topos_mul(x, y, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 2, s, 2, -8, -0.125, 9, -0.375, -128);
    CHECK_OK(topos_div(x, y, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 2, s, 0.5, -0.5, -2, 1, -1.5, -0.5);
    CHECK_OK(topos_maximum(x, y, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 2, s, 2, 4, 0.5, 3, 0.5, 8);
    CHECK_OK(topos_step(x, y, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 2, s, 0, 0, 1, 1, 0, 1);
    CHECK_OK(topos_neg(x, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 2, s, -1, 2, -0.5, -3, 0.75, -8);
    CHECK_OK(topos_relu(x, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 2, s, 1, 0, 0.5, 3, 0, 8);
    topos_tensor *u = ot_make(&p, dt, 2, s, pa), *v = ot_make(&p, dt, 2, s, pb);
    CHECK(u && v);
    CHECK_OK(topos_pow(u, v, &r));
    CHECK_VALUES(&p, ot_keep(&p, r), 2, s, 4, 1.0 / 3.0, 2, 0.125, 3, 1024);
    CHECK(topos_tensor_dtype(r) == dt);
  }
  ot_free(&p);
}

/* The result of fn on x as the dtype computes it: f64 in f64, f32 in f32,
 * bf16/f16 widened to f32, computed, rounded to nearest even. */
static double expect_unary(topos_dtype dt, float (*ff)(float), double (*fd)(double), double x) {
  if (dt == TOPOS_F64) return fd(x);
  float in = (float)ot_round(dt, x);
  return ot_round(dt, ff(in));
}

static float neg_f(float x) { return -x; }
static double neg_d(double x) { return -x; }

TEST(ops_unary_follow_libm_per_dtype) {
  ot_pool p = {{0}, 0};
  int64_t s[] = {6};
  struct {
    topos_op op;
    float (*ff)(float);
    double (*fd)(double);
    double x[6];
  } cases[] = {
      {TOPOS_OP_EXP, expf, exp, {0, 1, 0.5, -2, 3, 10}},
      {TOPOS_OP_LN, logf, log, {1, 2, 0.5, 10, 1e-3, 7}},
      {TOPOS_OP_SQRT, sqrtf, sqrt, {4, 2, 0.25, 9, 1e-3, 7}},
      {TOPOS_OP_TANH, tanhf, tanh, {0, 1, -0.5, 3, -20, 0.1}},
      {TOPOS_OP_NEG, neg_f, neg_d, {0, 1, -0.5, 3, -20, 0.1}},
  };
  topos_dtype dt;
  FOR_DTYPES(dt) {
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
      topos_tensor *x = ot_make(&p, dt, 1, s, cases[c].x);
      CHECK(x);
      topos_tensor *y = ot_run(&p, cases[c].op, x, NULL, NULL);
      CHECK_MSG(y, "%s: %s", topos_op_name(cases[c].op), topos_last_error());
      double e[6];
      for (int i = 0; i < 6; ++i) e[i] = expect_unary(dt, cases[c].ff, cases[c].fd, cases[c].x[i]);
      topos_tensor *want = ot_make(&p, dt, 1, s, e);
      CHECK(want);
      CHECK_TENSOR_BITS(y, want);
    }
  }
  /* exact anchors */
  double x0[6] = {0, 1, 4, 0, 0, 0};
  topos_tensor *x = ot_make(&p, TOPOS_F32, 1, s, x0), *r;
  CHECK_OK(topos_exp(x, &r));
  CHECK_BITS_F32((float)ot_at(ot_keep(&p, r), 0), 1.0f);
  CHECK_OK(topos_sqrt(x, &r));
  CHECK_BITS_F32((float)ot_at(ot_keep(&p, r), 2), 2.0f);
  CHECK_OK(topos_ln(x, &r));
  CHECK_BITS_F32((float)ot_at(ot_keep(&p, r), 1), 0.0f);
  ot_free(&p);
}

TEST(ops_16bit_round_once_per_op) {
  ot_pool p = {{0}, 0};
  int64_t s[] = {2};
  const double a[2] = {1, 1}, b[2] = {0x1p-8, 3 * 0x1p-8};
  topos_tensor *x = ot_make(&p, TOPOS_BF16, 1, s, a), *y = ot_make(&p, TOPOS_BF16, 1, s, b), *r;
  CHECK(x && y);
  CHECK_OK(topos_add(x, y, &r));
  /* 1 + 2^-8 is a tie -> even (1.0); 1 + 3*2^-8 is a tie -> even (1 + 2^-6) */
  CHECK_VALUES(&p, ot_keep(&p, r), 1, s, 1.0, 1.015625);
  const double hb[2] = {0x1p-11, 3 * 0x1p-11};
  x = ot_make(&p, TOPOS_F16, 1, s, a);
  y = ot_make(&p, TOPOS_F16, 1, s, hb);
  CHECK(x && y);
  CHECK_OK(topos_add(x, y, &r));
  CHECK_VALUES(&p, ot_keep(&p, r), 1, s, 1.0, 1 + 0x1p-9);
  ot_free(&p);
}

TEST(ops_edge_rules_maximum_step_relu) {
  ot_pool p = {{0}, 0};
  int64_t s[] = {8};
  const double a[8] = {-0.0, 0.0, NAN, 1, -0.0, 2, NAN, -INFINITY};
  const double b[8] = {0.0, -0.0, 1, NAN, -0.0, 2, NAN, -INFINITY};
  topos_dtype dt;
  FOR_DTYPES(dt) {
    topos_tensor *x = ot_make(&p, dt, 1, s, a), *y = ot_make(&p, dt, 1, s, b), *r;
    CHECK(x && y);
    CHECK_OK(topos_maximum(x, y, &r));
    /* maximum(-0,+0) = maximum(+0,-0) = +0; NaN in either gives NaN */
    CHECK_VALUES(&p, ot_keep(&p, r), 1, s, 0.0, 0.0, NAN, NAN, -0.0, 2, NAN, -INFINITY);
    CHECK(!signbit(ot_at(r, 0)) && !signbit(ot_at(r, 1)) && signbit(ot_at(r, 4)));
    CHECK_OK(topos_step(x, y, &r));
    /* ties (including -0 vs +0 and -inf vs -inf) give 1; NaN gives 0 */
    CHECK_VALUES(&p, ot_keep(&p, r), 1, s, 1, 1, 0, 0, 1, 1, 0, 1);
    CHECK_OK(topos_relu(x, &r));
    /* relu(-0) = +0, relu(NaN) = NaN */
    CHECK_VALUES(&p, ot_keep(&p, r), 1, s, 0.0, 0.0, NAN, 1, 0.0, 2, NAN, 0.0);
    CHECK(!signbit(ot_at(r, 0)) && !signbit(ot_at(r, 4)));
  }
  ot_free(&p);
}

/* add and mul of two NaNs give the first operand's NaN, quieted — in every
 * kernel, whatever order the compiler put the operands in (clang swaps the
 * operands of a commutative multiply; the bits then depended on the
 * compiler). One NaN comes out whichever side it is on. The default rung and
 * the reference kernels, slices and a held (broadcast) operand, f32 and f64. */
static uint64_t nan_case_bits(const topos_tensor *t, int64_t i) {
  const uint8_t *d = topos_tensor_data(t);
  if (topos_tensor_dtype(t) == TOPOS_F32) {
    uint32_t u;
    memcpy(&u, d + 4 * i, 4);
    return u;
  }
  uint64_t u;
  memcpy(&u, d + 8 * i, 8);
  return u;
}

TEST(ops_add_mul_return_the_first_nan) {
  /* a quiet positive NaN with payload 1, a quiet negative one with payload
   * 2, a signalling one (payload 3, quieted on the way through) */
  const uint32_t qa = 0x7fc00001u, qb = 0xffc00002u, sn = 0x7f800003u;
  const uint32_t a32[5] = {qa, qb, sn, 0x3f800000u /* 1 */, qa};
  const uint32_t b32[5] = {qb, qa, qb, qb, 0x40000000u /* 2 */};
  const uint32_t want32[5] = {qa, qb, sn | 0x00400000u, qb, qa};
  int64_t s[1] = {5};
  for (int dflt = 1; dflt >= 0; --dflt) {
    topos_backend_set_enabled(TOPOS_BACKEND_DEFAULT, dflt);
    for (int wide = 0; wide < 2; ++wide) {
      topos_dtype dt = wide ? TOPOS_F64 : TOPOS_F32;
      uint8_t abuf[40], bbuf[40];
      uint64_t want[5];
      for (int i = 0; i < 5; ++i) {
        if (wide) { /* the same NaNs widened: payload bits shift up by 29 */
          double da, db;
          float fa, fb;
          memcpy(&fa, &a32[i], 4), memcpy(&fb, &b32[i], 4);
          uint64_t ua = ((uint64_t)(a32[i] & 0x80000000u) << 32) | 0x7ff0000000000000ull |
                        ((uint64_t)(a32[i] & 0x007fffffu) << 29);
          uint64_t ub = ((uint64_t)(b32[i] & 0x80000000u) << 32) | 0x7ff0000000000000ull |
                        ((uint64_t)(b32[i] & 0x007fffffu) << 29);
          da = fa == fa ? (double)fa : 0, db = fb == fb ? (double)fb : 0;
          if (fa != fa) memcpy(&da, &ua, 8);
          if (fb != fb) memcpy(&db, &ub, 8);
          memcpy(abuf + 8 * i, &da, 8), memcpy(bbuf + 8 * i, &db, 8);
          want[i] = ((uint64_t)(want32[i] & 0x80000000u) << 32) | 0x7ff0000000000000ull |
                    ((uint64_t)(want32[i] & 0x007fffffu) << 29);
        } else {
          memcpy(abuf + 4 * i, &a32[i], 4), memcpy(bbuf + 4 * i, &b32[i], 4);
          want[i] = want32[i];
        }
      }
      const size_t bytes = wide ? 40 : 20;
      topos_tensor *a = NULL, *b = NULL, *r = NULL;
      CHECK_OK(topos_tensor_from_data(dt, 1, s, abuf, bytes, &a));
      CHECK_OK(topos_tensor_from_data(dt, 1, s, bbuf, bytes, &b));
      for (int op = 0; op < 2; ++op) {
        CHECK_OK((op ? topos_mul : topos_add)(a, b, &r));
        for (int64_t i = 0; i < 5; ++i) {
          if (i == 3 && !op) continue; /* 1 + NaN: b's NaN, checked below for mul */
          CHECK_MSG(nan_case_bits(r, i) == want[i], "%s %s, default rung %s: element %lld is %llx, want %llx",
                    op ? "mul" : "add", topos_dtype_name(dt), dflt ? "on" : "off", (long long)i,
                    (unsigned long long)nan_case_bits(r, i), (unsigned long long)want[i]);
        }
        CHECK(op || nan_case_bits(r, 3) == want[3]);
        topos_tensor_release(r);
        r = NULL;
      }
      /* b's NaN held across a (a broadcast view of one element) */
      topos_tensor *b1 = NULL, *held = NULL;
      CHECK_OK(topos_tensor_narrow(b, 0, 0, 1, &b1)); /* qb */
      CHECK_OK(topos_tensor_broadcast(b1, 1, s, &held));
      CHECK_OK(topos_mul(a, held, &r));
      for (int64_t i = 0; i < 5; ++i) {
        /* a's NaN where a has one (as in the slice case), else b's */
        const uint64_t w = i == 3 ? nan_case_bits(b, 0) : want[i];
        CHECK_MSG(nan_case_bits(r, i) == w, "mul by a held NaN, %s, default rung %s: element %lld",
                  topos_dtype_name(dt), dflt ? "on" : "off", (long long)i);
      }
      topos_tensor_release(r), topos_tensor_release(held), topos_tensor_release(b1);
      topos_tensor_release(a), topos_tensor_release(b);
    }
  }
  topos_backend_set_enabled(TOPOS_BACKEND_DEFAULT, 1);
}
