/* Per-op gradient checks in f64: central finite differences against the
 * engine route, and the engine route against the recorded route bit for bit
 * (tg_gradcheck). Inputs keep away from kinks (maximum, relu, step) and from
 * the edges of ln/sqrt/pow domains. */
#include "graph_util.h"

#define P(k) (params[k])
#define UNUSED_CTX (void)ctx

static const int64_t S23[] = {2, 3};
static const int64_t S234[] = {2, 3, 4};

/* ---- elementwise */
#define BINARY_BUILDER(name, call)                                                  \
  static topos_sym name(topos_tape *tape, const topos_sym *params, void *ctx) {     \
    UNUSED_CTX;                                                                     \
    return tg_weighted_sum(tape, call(tape, P(0), P(1)), 101);                      \
  }
BINARY_BUILDER(build_add, topos_tape_add)
BINARY_BUILDER(build_sub, topos_tape_sub)
BINARY_BUILDER(build_mul, topos_tape_mul)
BINARY_BUILDER(build_div, topos_tape_div)
BINARY_BUILDER(build_pow, topos_tape_pow)
BINARY_BUILDER(build_maximum, topos_tape_maximum)
BINARY_BUILDER(build_matmul, topos_tape_matmul)

#define UNARY_BUILDER(name, call)                                               \
  static topos_sym name(topos_tape *tape, const topos_sym *params, void *ctx) { \
    UNUSED_CTX;                                                                 \
    return tg_weighted_sum(tape, call(tape, P(0)), 202);                        \
  }
UNARY_BUILDER(build_neg, topos_tape_neg)
UNARY_BUILDER(build_exp, topos_tape_exp)
UNARY_BUILDER(build_ln, topos_tape_ln)
UNARY_BUILDER(build_sqrt, topos_tape_sqrt)
UNARY_BUILDER(build_tanh, topos_tape_tanh)
UNARY_BUILDER(build_relu, topos_tape_relu)
UNARY_BUILDER(build_transpose, topos_tape_transpose)
UNARY_BUILDER(build_sum, topos_tape_sum)

TEST(grad_add_sub_mul) {
  topos_tensor *a[2] = {tg_random(TOPOS_F64, 2, S23, 1, -2, 2), tg_random(TOPOS_F64, 2, S23, 2, -2, 2)};
  CHECK_GRADS(2, a, build_add, NULL);
  topos_tensor *b[2] = {tg_random(TOPOS_F64, 2, S23, 3, -2, 2), tg_random(TOPOS_F64, 2, S23, 4, -2, 2)};
  CHECK_GRADS(2, b, build_sub, NULL);
  topos_tensor *c[2] = {tg_random(TOPOS_F64, 2, S23, 5, -2, 2), tg_random(TOPOS_F64, 2, S23, 6, -2, 2)};
  CHECK_GRADS(2, c, build_mul, NULL);
}

TEST(grad_div_pow) {
  topos_tensor *a[2] = {tg_random(TOPOS_F64, 2, S23, 7, -2, 2), tg_random(TOPOS_F64, 2, S23, 8, 0.5, 2)};
  CHECK_GRADS(2, a, build_div, NULL);
  topos_tensor *b[2] = {tg_random(TOPOS_F64, 2, S23, 9, 0.5, 2), tg_random(TOPOS_F64, 2, S23, 10, -1.5, 2.5)};
  CHECK_GRADS(2, b, build_pow, NULL);
}

TEST(grad_unary_elementwise) {
  topos_tensor *a[1] = {tg_random(TOPOS_F64, 2, S23, 11, -2, 2)};
  CHECK_GRADS(1, a, build_neg, NULL);
  topos_tensor *b[1] = {tg_random(TOPOS_F64, 2, S23, 12, -2, 2)};
  CHECK_GRADS(1, b, build_exp, NULL);
  topos_tensor *c[1] = {tg_random(TOPOS_F64, 2, S23, 13, 0.3, 3)};
  CHECK_GRADS(1, c, build_ln, NULL);
  topos_tensor *d[1] = {tg_random(TOPOS_F64, 2, S23, 14, 0.3, 3)};
  CHECK_GRADS(1, d, build_sqrt, NULL);
  topos_tensor *e[1] = {tg_random(TOPOS_F64, 2, S23, 15, -2, 2)};
  CHECK_GRADS(1, e, build_tanh, NULL);
}

TEST(grad_maximum_relu_away_from_ties) {
  /* b = a + offsets of magnitude >= 0.1: never a tie within h */
  topos_tensor *a = tg_random(TOPOS_F64, 2, S23, 16, -1, 1);
  topos_tensor *off = tg_signed_away(2, S23, 17, 0.1, 1), *b = NULL;
  CHECK(a && off);
  CHECK_OK(topos_add(a, off, &b));
  topos_tensor_release(off);
  topos_tensor *m[2] = {a, b};
  CHECK_GRADS(2, m, build_maximum, NULL);
  topos_tensor *r[1] = {tg_signed_away(2, S23, 18, 0.1, 2)};
  CHECK_GRADS(1, r, build_relu, NULL);
}

/* loss = sum(step(a, b) * a): the step edge carries nothing, a's gradient is step */
static topos_sym build_step(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  topos_sym s = topos_tape_step(tape, P(0), P(1));
  return tg_weighted_sum(tape, topos_tape_mul(tape, s, P(0)), 303);
}

TEST(grad_step_is_locally_constant) {
  topos_tensor *a = tg_random(TOPOS_F64, 2, S23, 19, -1, 1);
  topos_tensor *off = tg_signed_away(2, S23, 20, 0.1, 1), *b = NULL;
  CHECK(a && off);
  CHECK_OK(topos_add(a, off, &b));
  topos_tensor_release(off);
  topos_tensor *m[2] = {a, b};
  CHECK_GRADS(2, m, build_step, NULL);
}

/* ---- products and views */
TEST(grad_matmul_2d_and_batched) {
  int64_t sa[] = {3, 4}, sb[] = {4, 2};
  topos_tensor *a[2] = {tg_random(TOPOS_F64, 2, sa, 21, -1, 1), tg_random(TOPOS_F64, 2, sb, 22, -1, 1)};
  CHECK_GRADS(2, a, build_matmul, NULL);
  int64_t ba[] = {2, 3, 4}, bb[] = {2, 4, 2};
  topos_tensor *b[2] = {tg_random(TOPOS_F64, 3, ba, 23, -1, 1), tg_random(TOPOS_F64, 3, bb, 24, -1, 1)};
  CHECK_GRADS(2, b, build_matmul, NULL);
}

TEST(grad_transpose_sum) {
  topos_tensor *a[1] = {tg_random(TOPOS_F64, 2, S23, 25, -1, 1)};
  CHECK_GRADS(1, a, build_transpose, NULL);
  topos_tensor *b[1] = {tg_random(TOPOS_F64, 3, S234, 26, -1, 1)};
  CHECK_GRADS(1, b, build_sum, NULL);
}

static topos_sym build_permute(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  static const int order[] = {2, 0, 1};
  return tg_weighted_sum(tape, topos_tape_permute(tape, P(0), order), 404);
}
static topos_sym build_reshape(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  static const int64_t shape[] = {4, 6};
  /* a permuted (strided) operand makes reshape copy */
  static const int order[] = {1, 0, 2};
  topos_sym x = topos_tape_permute(tape, P(0), order);
  return tg_weighted_sum(tape, topos_tape_reshape(tape, x, 2, shape), 405);
}
static topos_sym build_narrow(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  return tg_weighted_sum(tape, topos_tape_narrow(tape, P(0), 2, 1, 2), 406);
}
static topos_sym build_pad(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  return tg_weighted_sum(tape, topos_tape_pad(tape, P(0), 1, 2, 6), 407);
}
static topos_sym build_broadcast(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  return tg_weighted_sum(tape, topos_tape_broadcast(tape, P(0), 3, S234), 408);
}
static topos_sym build_broadcast_along(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  return tg_weighted_sum(tape, topos_tape_broadcast_along(tape, P(0), 1, 4), 409);
}
static topos_sym build_sum_along(topos_tape *tape, const topos_sym *params, void *ctx) {
  int axis = *(int *)ctx;
  return tg_weighted_sum(tape, topos_tape_sum_along(tape, P(0), axis), 410);
}

TEST(grad_permute_reshape_narrow_pad) {
  topos_tensor *a[1] = {tg_random(TOPOS_F64, 3, S234, 27, -1, 1)};
  CHECK_GRADS(1, a, build_permute, NULL);
  topos_tensor *b[1] = {tg_random(TOPOS_F64, 3, S234, 28, -1, 1)};
  CHECK_GRADS(1, b, build_reshape, NULL);
  topos_tensor *c[1] = {tg_random(TOPOS_F64, 3, S234, 29, -1, 1)};
  CHECK_GRADS(1, c, build_narrow, NULL);
  topos_tensor *d[1] = {tg_random(TOPOS_F64, 2, S23, 30, -1, 1)};
  CHECK_GRADS(1, d, build_pad, NULL);
}

TEST(grad_broadcasts_and_reductions) {
  int64_t unit[] = {1, 1};
  topos_tensor *a[1] = {tg_random(TOPOS_F64, 2, unit, 31, -1, 1)};
  CHECK_GRADS(1, a, build_broadcast, NULL);
  topos_tensor *b[1] = {tg_random(TOPOS_F64, 2, S23, 32, -1, 1)};
  CHECK_GRADS(1, b, build_broadcast_along, NULL);
  for (int axis = 0; axis < 3; ++axis) {
    topos_tensor *c[1] = {tg_random(TOPOS_F64, 3, S234, 33 + (uint64_t)axis, -1, 1)};
    CHECK_GRADS(1, c, build_sum_along, &axis);
  }
}

/* ---- windows */
typedef struct {
  int axis;
  int64_t size, step, dilation;
} window_ctx;

static topos_sym build_unfold(topos_tape *tape, const topos_sym *params, void *ctx) {
  window_ctx *w = ctx;
  return tg_weighted_sum(tape, topos_tape_unfold(tape, P(0), w->axis, w->size, w->step, w->dilation),
                         411);
}
static topos_sym build_fold(topos_tape *tape, const topos_sym *params, void *ctx) {
  window_ctx *w = ctx;
  return tg_weighted_sum(tape, topos_tape_fold(tape, P(0), w->axis, w->size, w->step, w->dilation, 9),
                         412);
}

TEST(grad_unfold_fold) {
  int64_t s[] = {2, 9, 3};
  window_ctx plain = {1, 3, 1, 1}, strided = {1, 2, 3, 2};
  topos_tensor *a[1] = {tg_random(TOPOS_F64, 3, s, 36, -1, 1)};
  CHECK_GRADS(1, a, build_unfold, &plain);
  topos_tensor *b[1] = {tg_random(TOPOS_F64, 3, s, 37, -1, 1)};
  CHECK_GRADS(1, b, build_unfold, &strided);
  /* fold of [2, count, size, 3] back to extent 9: count = (9 - 2*(2-1) - 1)/3 + 1 = 3 */
  int64_t f[] = {2, 3, 2, 3};
  topos_tensor *c[1] = {tg_random(TOPOS_F64, 4, f, 38, -1, 1)};
  CHECK_GRADS(1, c, build_fold, &strided);
}

/* ---- indexing */
static topos_sym build_gather(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  static const int32_t rows[] = {2, 0, 2, 3, 2};
  topos_sym idx = tg_i32_constant(tape, 5, rows);
  return tg_weighted_sum(tape, topos_tape_gather(tape, P(0), idx), 413);
}
static topos_sym build_scatter(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  static const int32_t rows[] = {1, 3, 1, 0, 1};
  topos_sym idx = tg_i32_constant(tape, 5, rows);
  return tg_weighted_sum(tape, topos_tape_scatter(tape, P(0), idx, 4), 414);
}

TEST(grad_gather_scatter_with_repeats) {
  int64_t table[] = {4, 3}, values[] = {5, 3};
  topos_tensor *a[1] = {tg_random(TOPOS_F64, 2, table, 39, -1, 1)};
  CHECK_GRADS(1, a, build_gather, NULL);
  topos_tensor *b[1] = {tg_random(TOPOS_F64, 2, values, 40, -1, 1)};
  CHECK_GRADS(1, b, build_scatter, NULL);
}

static topos_sym build_log_softmax(topos_tape *tape, const topos_sym *params, void *ctx) {
  return tg_weighted_sum(tape, topos_tape_log_softmax(tape, P(0), *(int *)ctx), 415);
}
static topos_sym build_log_sum_exp(topos_tape *tape, const topos_sym *params, void *ctx) {
  return tg_weighted_sum(tape, topos_tape_log_sum_exp(tape, P(0), *(int *)ctx), 416);
}

TEST(grad_log_softmax_log_sum_exp) {
  for (int axis = 0; axis < 3; ++axis) {
    topos_tensor *a[1] = {tg_random(TOPOS_F64, 3, S234, 41 + (uint64_t)axis, -3, 3)};
    CHECK_GRADS(1, a, build_log_softmax, &axis);
    topos_tensor *b[1] = {tg_random(TOPOS_F64, 3, S234, 51 + (uint64_t)axis, -3, 3)};
    CHECK_GRADS(1, b, build_log_sum_exp, &axis);
  }
}

/* Engine route == recorded route, bit for bit, for every op in f32 and bf16
 * (no finite differences: those need f64). */
TEST(grad_routes_agree_bitwise_for_every_op_in_f32_and_bf16) {
  static const topos_dtype dtypes[] = {TOPOS_F32, TOPOS_BF16};
  int64_t sa[] = {3, 4}, sb[] = {4, 2}, unit[] = {1, 1}, table[] = {4, 3}, values[] = {5, 3};
  int64_t ws[] = {2, 9, 3}, fs[] = {2, 3, 2, 3};
  window_ctx strided = {1, 2, 3, 2};
  int axis = 1;
  for (int d = 0; d < 2; ++d) {
    topos_dtype dt = dtypes[d];
    struct {
      tg_build_fn build;
      int n;
      int rank;
      const int64_t *shape[2];
      double lo[2], hi[2];
      void *ctx;
    } cases[] = {
        {build_add, 2, 2, {S23, S23}, {-2, -2}, {2, 2}, NULL},
        {build_sub, 2, 2, {S23, S23}, {-2, -2}, {2, 2}, NULL},
        {build_mul, 2, 2, {S23, S23}, {-2, -2}, {2, 2}, NULL},
        {build_div, 2, 2, {S23, S23}, {-2, 0.5}, {2, 2}, NULL},
        {build_pow, 2, 2, {S23, S23}, {0.5, -1.5}, {2, 2.5}, NULL},
        {build_maximum, 2, 2, {S23, S23}, {-2, -2}, {2, 2}, NULL},
        {build_step, 2, 2, {S23, S23}, {-2, -2}, {2, 2}, NULL},
        {build_neg, 1, 2, {S23}, {-2}, {2}, NULL},
        {build_exp, 1, 2, {S23}, {-2}, {2}, NULL},
        {build_ln, 1, 2, {S23}, {0.3}, {3}, NULL},
        {build_sqrt, 1, 2, {S23}, {0.3}, {3}, NULL},
        {build_tanh, 1, 2, {S23}, {-2}, {2}, NULL},
        {build_relu, 1, 2, {S23}, {-2}, {2}, NULL},
        {build_matmul, 2, 2, {sa, sb}, {-1, -1}, {1, 1}, NULL},
        {build_transpose, 1, 2, {S23}, {-1}, {1}, NULL},
        {build_sum, 1, 3, {S234}, {-1}, {1}, NULL},
        {build_permute, 1, 3, {S234}, {-1}, {1}, NULL},
        {build_reshape, 1, 3, {S234}, {-1}, {1}, NULL},
        {build_narrow, 1, 3, {S234}, {-1}, {1}, NULL},
        {build_pad, 1, 2, {S23}, {-1}, {1}, NULL},
        {build_broadcast, 1, 2, {unit}, {-1}, {1}, NULL},
        {build_broadcast_along, 1, 2, {S23}, {-1}, {1}, NULL},
        {build_sum_along, 1, 3, {S234}, {-1}, {1}, &axis},
        {build_unfold, 1, 3, {ws}, {-1}, {1}, &strided},
        {build_fold, 1, 4, {fs}, {-1}, {1}, &strided},
        {build_gather, 1, 2, {table}, {-1}, {1}, NULL},
        {build_scatter, 1, 2, {values}, {-1}, {1}, NULL},
        {build_log_softmax, 1, 3, {S234}, {-3}, {3}, &axis},
        {build_log_sum_exp, 1, 3, {S234}, {-3}, {3}, &axis},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
      topos_tensor *p[2] = {NULL, NULL};
      for (int k = 0; k < cases[c].n; ++k)
        p[k] = tg_random(dt, k == 1 && cases[c].build == build_matmul ? 2 : cases[c].rank,
                         cases[c].shape[k], 700 + c * 2 + (uint64_t)k, cases[c].lo[k], cases[c].hi[k]);
      CHECK_GRAD_PARITY(cases[c].n, p, cases[c].build, cases[c].ctx);
    }
  }
}
