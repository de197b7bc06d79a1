/* Finite-difference gradient checks (f64) of composed nn layers, plus
 * engine == recorded route parity (graph_util's CHECK_GRADS). */
#include "graph/graph_util.h"
#include "topos/nn.h"

static const int64_t IMG[4] = {2, 2, 5, 4};
static const int64_t CONV_W[4] = {3, 2, 3, 3};
static const int64_t THREE[1] = {3};

static topos_sym build_conv(topos_tape *tape, const topos_sym *p, void *ctx) {
  int64_t *sp = ctx; /* stride, padding */
  return tg_weighted_sum(tape, topos_conv2d_of(tape, p[0], p[1], p[2], sp[0], sp[1]), 801);
}

TEST(nn_grad_conv2d) {
  int64_t configs[3][2] = {{1, 1}, {2, 1}, {1, 0}};
  for (int c = 0; c < 3; ++c) {
    topos_tensor *a[3] = {tg_random(TOPOS_F64, 4, IMG, 810 + (uint64_t)c, -1, 1),
                          tg_random(TOPOS_F64, 4, CONV_W, 820 + (uint64_t)c, -1, 1),
                          tg_random(TOPOS_F64, 1, THREE, 830 + (uint64_t)c, -1, 1)};
    CHECK_GRADS(3, a, build_conv, configs[c]);
  }
}

static topos_sym build_max_pool(topos_tape *tape, const topos_sym *p, void *ctx) {
  int64_t *ss = ctx;
  return tg_weighted_sum(tape, topos_max_pool2d(tape, p[0], ss[0], ss[1]), 802);
}
static topos_sym build_avg_pool(topos_tape *tape, const topos_sym *p, void *ctx) {
  int64_t *ss = ctx;
  return tg_weighted_sum(tape, topos_avg_pool2d(tape, p[0], ss[0], ss[1]), 803);
}

TEST(nn_grad_pooling) {
  int64_t configs[2][2] = {{2, 2}, {3, 1}};
  for (int c = 0; c < 2; ++c) {
    /* values spread apart so the FD step never crosses a tie */
    topos_tensor *a[1] = {tg_signed_away(4, IMG, 840 + (uint64_t)c, 0.05, 3)};
    CHECK_GRADS(1, a, build_max_pool, configs[c]);
    topos_tensor *b[1] = {tg_random(TOPOS_F64, 4, IMG, 850 + (uint64_t)c, -1, 1)};
    CHECK_GRADS(1, b, build_avg_pool, configs[c]);
  }
}

static topos_sym build_batch_norm(topos_tape *tape, const topos_sym *p, void *ctx) {
  (void)ctx;
  topos_batch_norm bn = {p[1], p[2], 1e-3};
  topos_batch_norm_result r;
  topos_batch_norm_train(tape, &bn, p[0], &r);
  return tg_weighted_sum(tape, r.output, 804);
}

TEST(nn_grad_batch_norm) {
  static const int64_t rows[2] = {5, 3};
  topos_tensor *a[3] = {tg_random(TOPOS_F64, 2, rows, 860, -2, 2),
                        tg_random(TOPOS_F64, 1, THREE, 861, 0.5, 1.5),
                        tg_random(TOPOS_F64, 1, THREE, 862, -1, 1)};
  CHECK_GRADS(3, a, build_batch_norm, NULL);
  static const int64_t img[4] = {2, 3, 2, 3};
  topos_tensor *b[3] = {tg_random(TOPOS_F64, 4, img, 863, -2, 2),
                        tg_random(TOPOS_F64, 1, THREE, 864, 0.5, 1.5),
                        tg_random(TOPOS_F64, 1, THREE, 865, -1, 1)};
  CHECK_GRADS(3, b, build_batch_norm, NULL);
}

static topos_sym build_layer_norm(topos_tape *tape, const topos_sym *p, void *ctx) {
  topos_layer_norm ln = {p[1], p[2], 1e-5};
  if (ctx) {
    ln.shift = TOPOS_SYM_INVALID;
    return tg_weighted_sum(tape, topos_rms_norm_apply(tape, &ln, p[0]), 806);
  }
  return tg_weighted_sum(tape, topos_layer_norm_apply(tape, &ln, p[0]), 805);
}

TEST(nn_grad_layer_and_rms_norm) {
  static const int64_t x3[3] = {2, 2, 3};
  topos_tensor *a[3] = {tg_random(TOPOS_F64, 3, x3, 870, -2, 2),
                        tg_random(TOPOS_F64, 1, THREE, 871, 0.5, 1.5),
                        tg_random(TOPOS_F64, 1, THREE, 872, -1, 1)};
  CHECK_GRADS(3, a, build_layer_norm, NULL);
  int rms = 1;
  topos_tensor *b[3] = {tg_random(TOPOS_F64, 3, x3, 873, -2, 2),
                        tg_random(TOPOS_F64, 1, THREE, 874, 0.5, 1.5),
                        tg_random(TOPOS_F64, 1, THREE, 875, -1, 1)};
  CHECK_GRADS(3, b, build_layer_norm, &rms);
}

static topos_sym build_attention(topos_tape *tape, const topos_sym *p, void *ctx) {
  (void)ctx;
  topos_attention att = {{p[1], TOPOS_SYM_INVALID}, {p[2], TOPOS_SYM_INVALID},
                         {p[3], TOPOS_SYM_INVALID}, {p[4], TOPOS_SYM_INVALID}, 2};
  return tg_weighted_sum(tape, topos_attention_apply(tape, &att, p[0]), 807);
}

TEST(nn_grad_attention) {
  static const int64_t xs[3] = {2, 3, 4}, ws[2] = {4, 4};
  topos_tensor *a[5] = {tg_random(TOPOS_F64, 3, xs, 880, -1, 1),
                        tg_random(TOPOS_F64, 2, ws, 881, -0.7, 0.7),
                        tg_random(TOPOS_F64, 2, ws, 882, -0.7, 0.7),
                        tg_random(TOPOS_F64, 2, ws, 883, -0.7, 0.7),
                        tg_random(TOPOS_F64, 2, ws, 884, -0.7, 0.7)};
  CHECK_GRADS(5, a, build_attention, NULL);
}

static topos_sym build_cross_entropy(topos_tape *tape, const topos_sym *p, void *ctx) {
  (void)ctx;
  static const int32_t targets[4] = {2, 0, 1, 2};
  topos_linear fc = {p[1], p[2]};
  topos_sym logits = topos_linear_apply(tape, &fc, p[0]);
  return topos_cross_entropy(tape, logits, tg_i32_constant(tape, 4, targets));
}

static topos_sym build_mse_embedding(topos_tape *tape, const topos_sym *p, void *ctx) {
  (void)ctx;
  static const int32_t idx[3] = {1, 1, 0};
  topos_embedding emb = {p[0]};
  topos_sym rows = topos_embedding_apply(tape, &emb, tg_i32_constant(tape, 3, idx));
  return topos_mse(tape, topos_tape_gelu(tape, rows), tg_constant_like(tape, rows, 890, -1, 1));
}

TEST(nn_grad_losses_linear_embedding) {
  static const int64_t xs[2] = {4, 5}, ws[2] = {5, 3};
  topos_tensor *a[3] = {tg_random(TOPOS_F64, 2, xs, 891, -1, 1),
                        tg_random(TOPOS_F64, 2, ws, 892, -1, 1),
                        tg_random(TOPOS_F64, 1, THREE, 893, -1, 1)};
  CHECK_GRADS(3, a, build_cross_entropy, NULL);
  static const int64_t ts[2] = {2, 4};
  topos_tensor *b[1] = {tg_random(TOPOS_F64, 2, ts, 894, -1, 1)};
  CHECK_GRADS(1, b, build_mse_embedding, NULL);
}

/* f32 LeNet-like stack: the engine and recorded routes agree bitwise. */
static topos_sym build_lenet(topos_tape *tape, const topos_sym *p, void *ctx) {
  (void)ctx;
  static const int32_t targets[2] = {1, 0};
  topos_sym h = topos_tape_relu(tape, topos_conv2d_of(tape, p[0], p[1], p[2], 1, 1));
  h = topos_max_pool2d(tape, h, 2, 2);
  int64_t flat[2] = {2, 3 * 2 * 2};
  topos_linear fc = {p[3], TOPOS_SYM_INVALID};
  topos_sym logits = topos_linear_apply(tape, &fc, topos_tape_reshape(tape, h, 2, flat));
  return topos_cross_entropy(tape, logits, tg_i32_constant(tape, 2, targets));
}

TEST(nn_grad_lenet_route_parity_f32) {
  static const int64_t x[4] = {2, 2, 4, 4}, fc[2] = {12, 2};
  topos_tensor *a[4] = {tg_random(TOPOS_F32, 4, x, 895, -1, 1),
                        tg_random(TOPOS_F32, 4, CONV_W, 896, -1, 1),
                        tg_random(TOPOS_F32, 1, THREE, 897, -1, 1),
                        tg_random(TOPOS_F32, 2, fc, 898, -1, 1)};
  CHECK_GRAD_PARITY(4, a, build_lenet, NULL);
}
