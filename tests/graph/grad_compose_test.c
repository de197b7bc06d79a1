/* Gradient checks of composites (built from the public recording API) and of
 * compositions: an MLP, a convolution from pad + unfold + matmul, a
 * log_softmax cross-entropy, a gradient of a gradient; plus engine == recorded
 * bit parity in f32 and bf16. */
#include "graph_util.h"

#define P(k) (params[k])
#define UNUSED_CTX (void)ctx

static const int64_t S234[] = {2, 3, 4};

#define AXIS_BUILDER(name, call, seed)                                          \
  static topos_sym name(topos_tape *tape, const topos_sym *params, void *ctx) { \
    return tg_weighted_sum(tape, call(tape, P(0), *(int *)ctx), seed);          \
  }
AXIS_BUILDER(build_softmax, topos_tape_softmax, 501)
AXIS_BUILDER(build_mean_along, topos_tape_mean_along, 502)
AXIS_BUILDER(build_variance_along, topos_tape_variance_along, 503)

#define UNARY_BUILDER(name, call, seed)                                         \
  static topos_sym name(topos_tape *tape, const topos_sym *params, void *ctx) { \
    UNUSED_CTX;                                                                 \
    return tg_weighted_sum(tape, call(tape, P(0)), seed);                       \
  }
UNARY_BUILDER(build_sigmoid, topos_tape_sigmoid, 504)
UNARY_BUILDER(build_silu, topos_tape_silu, 505)
UNARY_BUILDER(build_gelu, topos_tape_gelu, 506)
UNARY_BUILDER(build_abs, topos_tape_abs, 507)
UNARY_BUILDER(build_mean, topos_tape_mean, 508)

TEST(grad_composite_reductions) {
  for (int axis = 0; axis < 3; ++axis) {
    topos_tensor *a[1] = {tg_random(TOPOS_F64, 3, S234, 60 + (uint64_t)axis, -2, 2)};
    CHECK_GRADS(1, a, build_softmax, &axis);
    topos_tensor *b[1] = {tg_random(TOPOS_F64, 3, S234, 63 + (uint64_t)axis, -2, 2)};
    CHECK_GRADS(1, b, build_mean_along, &axis);
    topos_tensor *c[1] = {tg_random(TOPOS_F64, 3, S234, 66 + (uint64_t)axis, -2, 2)};
    CHECK_GRADS(1, c, build_variance_along, &axis);
  }
  topos_tensor *d[1] = {tg_random(TOPOS_F64, 3, S234, 69, -2, 2)};
  CHECK_GRADS(1, d, build_mean, NULL);
}

TEST(grad_composite_activations) {
  topos_tensor *a[1] = {tg_random(TOPOS_F64, 3, S234, 70, -3, 3)};
  CHECK_GRADS(1, a, build_sigmoid, NULL);
  topos_tensor *b[1] = {tg_random(TOPOS_F64, 3, S234, 71, -3, 3)};
  CHECK_GRADS(1, b, build_silu, NULL);
  topos_tensor *c[1] = {tg_random(TOPOS_F64, 3, S234, 72, -3, 3)};
  CHECK_GRADS(1, c, build_gelu, NULL);
  topos_tensor *d[1] = {tg_signed_away(3, S234, 73, 0.1, 2)};
  CHECK_GRADS(1, d, build_abs, NULL);
}

static topos_sym build_broadcast_to(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  return tg_weighted_sum(tape, topos_tape_broadcast_to(tape, P(0), 3, S234), 509);
}
static topos_sym build_concat(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  return tg_weighted_sum(tape, topos_tape_concat(tape, 3, params, 1), 510);
}
static topos_sym build_squeeze(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  topos_sym x = topos_tape_squeeze(tape, P(0), 1);
  return tg_weighted_sum(tape, topos_tape_unsqueeze(tape, x, 2), 511);
}

TEST(grad_composite_shapes) {
  int64_t col[] = {3, 1}, row[] = {4}, unit[] = {1, 1, 1};
  topos_tensor *a[1] = {tg_random(TOPOS_F64, 2, col, 74, -1, 1)};
  CHECK_GRADS(1, a, build_broadcast_to, NULL);
  topos_tensor *b[1] = {tg_random(TOPOS_F64, 1, row, 75, -1, 1)};
  CHECK_GRADS(1, b, build_broadcast_to, NULL);
  topos_tensor *c[1] = {tg_random(TOPOS_F64, 3, unit, 76, -1, 1)};
  CHECK_GRADS(1, c, build_broadcast_to, NULL);
  int64_t s1[] = {2, 1, 3}, s2[] = {2, 3, 3}, s3[] = {2, 2, 3};
  topos_tensor *d[3] = {tg_random(TOPOS_F64, 3, s1, 77, -1, 1), tg_random(TOPOS_F64, 3, s2, 78, -1, 1),
                        tg_random(TOPOS_F64, 3, s3, 79, -1, 1)};
  CHECK_GRADS(3, d, build_concat, NULL);
  int64_t sq[] = {2, 1, 3};
  topos_tensor *e[1] = {tg_random(TOPOS_F64, 3, sq, 80, -1, 1)};
  CHECK_GRADS(1, e, build_squeeze, NULL);
}

/* x [4,3] -> tanh(x W1 + b1) [4,5] -> h W2 + b2 [4,2] -> mean(y*y) */
static topos_sym build_mlp(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  int64_t xs[] = {4, 3};
  topos_tensor *xv = tg_random(TOPOS_F64, 2, xs, 81, -1, 1);
  topos_tensor_desc d;
  topos_tape_describe(tape, P(0), &d);
  topos_tensor *xc = NULL;
  topos_tensor_convert(xv, d.dtype, &xc);
  topos_tensor_release(xv);
  topos_sym x = topos_tape_constant(tape, xc);
  topos_tensor_release(xc);
  topos_sym h = topos_tape_add(tape, topos_tape_matmul(tape, x, P(0)),
                               topos_tape_broadcast_along(tape, P(1), 0, 4));
  h = topos_tape_tanh(tape, h);
  topos_sym y = topos_tape_add(tape, topos_tape_matmul(tape, h, P(2)),
                               topos_tape_broadcast_along(tape, P(3), 0, 4));
  return topos_tape_mean(tape, topos_tape_mul(tape, y, y));
}

static void mlp_params(topos_dtype dtype, topos_tensor **p) {
  int64_t w1[] = {3, 5}, b1[] = {5}, w2[] = {5, 2}, b2[] = {2};
  p[0] = tg_random(dtype, 2, w1, 82, -1, 1);
  p[1] = tg_random(dtype, 1, b1, 83, -0.5, 0.5);
  p[2] = tg_random(dtype, 2, w2, 84, -1, 1);
  p[3] = tg_random(dtype, 1, b2, 85, -0.5, 0.5);
}

TEST(grad_mlp) {
  topos_tensor *p[4];
  mlp_params(TOPOS_F64, p);
  CHECK_GRADS(4, p, build_mlp, NULL);
}

TEST(grad_routes_agree_bitwise_in_f32_and_bf16) {
  topos_tensor *p[4];
  mlp_params(TOPOS_F32, p);
  CHECK_GRAD_PARITY(4, p, build_mlp, NULL);
  mlp_params(TOPOS_BF16, p);
  CHECK_GRAD_PARITY(4, p, build_mlp, NULL);
}

/* x [1,2,5,5] (B,C,H,W), W [3,2,3,3] (F,C,KH,KW), padding 1, stride 1:
 * pad H and W, unfold both, patches [B*OH*OW, C*KH*KW] times W as [C*KH*KW, F]. */
static topos_sym build_conv(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  topos_sym x = topos_tape_pad(tape, P(0), 2, 1, 7);
  x = topos_tape_pad(tape, x, 3, 1, 7);
  x = topos_tape_unfold(tape, x, 2, 3, 1, 1);   /* [1,2,5,3,7] */
  x = topos_tape_unfold(tape, x, 4, 3, 1, 1);   /* [1,2,5,3,5,3] */
  static const int to_patches[] = {0, 2, 4, 1, 3, 5};
  x = topos_tape_permute(tape, x, to_patches); /* [1,5,5,2,3,3] */
  int64_t patches[] = {25, 18};
  x = topos_tape_reshape(tape, x, 2, patches);
  static const int to_kernel[] = {1, 2, 3, 0};
  int64_t kernel[] = {18, 3};
  topos_sym k = topos_tape_reshape(tape, topos_tape_permute(tape, P(1), to_kernel), 2, kernel);
  return tg_weighted_sum(tape, topos_tape_matmul(tape, x, k), 512);
}

TEST(grad_convolution_from_pad_unfold_matmul) {
  int64_t xs[] = {1, 2, 5, 5}, ws[] = {3, 2, 3, 3};
  topos_tensor *p[2] = {tg_random(TOPOS_F64, 4, xs, 86, -1, 1), tg_random(TOPOS_F64, 4, ws, 87, -1, 1)};
  CHECK_GRADS(2, p, build_conv, NULL);
}

/* mean over rows of -log_softmax(logits)[n, target_n], picked with one gather
 * from the flattened log-probabilities */
static topos_sym build_cross_entropy(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  static const int32_t targets[] = {0 * 5 + 3, 1 * 5 + 0, 2 * 5 + 4, 3 * 5 + 3};
  topos_sym logp = topos_tape_log_softmax(tape, P(0), 1);
  int64_t flat[] = {20, 1};
  topos_sym picked = topos_tape_gather(tape, topos_tape_reshape(tape, logp, 2, flat),
                                       tg_i32_constant(tape, 4, targets));
  return topos_tape_neg(tape, topos_tape_mean(tape, picked));
}

TEST(grad_cross_entropy_log_softmax_gather) {
  int64_t s[] = {4, 5};
  topos_tensor *p[1] = {tg_random(TOPOS_F64, 2, s, 88, -3, 3)};
  CHECK_GRADS(1, p, build_cross_entropy, NULL);
}

/* loss2 = sum(tanh(d/dx sum(x^3 w)) w2): the recorded gradient is an ordinary
 * node and can be differentiated again */
static topos_sym build_second_order(topos_tape *tape, const topos_sym *params, void *ctx) {
  UNUSED_CTX;
  topos_sym cube = topos_tape_mul(tape, topos_tape_mul(tape, P(0), P(0)), P(0));
  topos_sym inner = tg_weighted_sum(tape, cube, 513), g;
  if (topos_tape_differentiate(tape, inner, 1, &params[0], &g) != TOPOS_OK) return TOPOS_SYM_INVALID;
  return tg_weighted_sum(tape, topos_tape_tanh(tape, g), 514);
}

TEST(grad_of_a_recorded_gradient) {
  int64_t s[] = {2, 3};
  topos_tensor *p[1] = {tg_random(TOPOS_F64, 2, s, 89, -1, 1)};
  CHECK_GRADS(1, p, build_second_order, NULL);
}
