/* Optimizer steps against the same formulas evaluated by hand in f64
 * (bitwise), initializer golden bits (splitmix64, seeded) and fans. */
#include "nn_util.h"

/* loss = sum(p * c): the gradient is c, whatever p is. */
typedef struct {
  topos_network *net;
  topos_params *params;
  topos_sym p, loss;
} tn_linear_problem;

static topos_status tn_problem(tn_linear_problem *pr, int rank, const int64_t *shape,
                               const double *p0, const double *c) {
  topos_tape *tape = NULL;
  topos_status s = topos_tape_new(&tape);
  if (s != TOPOS_OK) return s;
  pr->p = tn_param(tape, "p", TOPOS_F64, rank, shape, p0);
  pr->loss = topos_tape_sum(tape, topos_tape_mul(tape, pr->p, tn_const(tape, TOPOS_F64, rank, shape, c)));
  s = topos_tape_seal(&tape, &pr->net);
  if (s == TOPOS_OK) s = topos_params_from_network(pr->net, &pr->params);
  return s;
}

static topos_status tn_step(tn_linear_problem *pr, topos_optimizer *opt) {
  topos_run *run = NULL;
  topos_field *grads = NULL;
  topos_status s = topos_network_forward(pr->net, pr->params, NULL, 0, NULL, &run);
  if (s == TOPOS_OK) s = topos_run_backward(run, pr->loss, &grads);
  if (s == TOPOS_OK) s = topos_optimizer_step(opt, pr->params, grads);
  topos_field_free(grads);
  topos_run_free(run);
  return s;
}

static void tn_read_p(tn_linear_problem *pr, double *out, int64_t n) {
  topos_tensor *t = NULL;
  if (topos_params_get(pr->params, pr->p, &t) == TOPOS_OK) topos_tensor_read_f64(t, out, n);
  topos_tensor_release(t);
}

static void tn_problem_free(tn_linear_problem *pr) {
  topos_params_free(pr->params);
  topos_network_free(pr->net);
}

TEST(nn_sgd_momentum_steps_by_hand) {
  const int64_t shape[1] = {2};
  const double p0[2] = {1, -2}, c[2] = {0.5, 3};
  tn_linear_problem pr = {0};
  CHECK_OK(tn_problem(&pr, 1, shape, p0, c));
  topos_optimizer *opt = NULL;
  topos_optimizer_options oo = {.kind = TOPOS_OPT_SGD, .lr = 0.1, .momentum = 0.9};
  CHECK_OK(topos_optimizer_new(pr.net, &oo, &opt));
  double p[2] = {p0[0], p0[1]}, v[2] = {0, 0}, got[2];
  for (int step = 0; step < 3; ++step) {
    CHECK_OK(tn_step(&pr, opt));
    for (int i = 0; i < 2; ++i) {
      v[i] = v[i] * 0.9 + c[i];
      p[i] = p[i] - v[i] * 0.1;
    }
    tn_read_p(&pr, got, 2);
    CHECK_BITS_F64(got[0], p[0]);
    CHECK_BITS_F64(got[1], p[1]);
  }
  CHECK(topos_optimizer_steps(opt) == 3);
  topos_optimizer_free(opt);
  tn_problem_free(&pr);
}

TEST(nn_sgd_plain_step) {
  const int64_t shape[1] = {2};
  const double p0[2] = {1, -2}, c[2] = {0.5, 3};
  tn_linear_problem pr = {0};
  CHECK_OK(tn_problem(&pr, 1, shape, p0, c));
  topos_optimizer *opt = NULL;
  topos_optimizer_options oo = {.kind = TOPOS_OPT_SGD, .lr = 0.25};
  CHECK_OK(topos_optimizer_new(pr.net, &oo, &opt));
  CHECK_OK(tn_step(&pr, opt));
  double got[2];
  tn_read_p(&pr, got, 2);
  CHECK(got[0] == 1 - 0.125 && got[1] == -2 - 0.75);
  topos_optimizer_free(opt);
  tn_problem_free(&pr);
}

static void tn_adam_reference(double *p, double *m, double *v, const double *g, int n, int t,
                              double lr, double b1, double b2, double eps, double decay) {
  double b1t = 1, b2t = 1;
  for (int k = 0; k < t; ++k) b1t *= b1, b2t *= b2;
  for (int i = 0; i < n; ++i) {
    m[i] = m[i] * b1 + g[i] * (1 - b1);
    v[i] = v[i] * b2 + g[i] * g[i] * (1 - b2);
    double dir = (m[i] / (1 - b1t)) / (sqrt(v[i] / (1 - b2t)) + eps);
    double old = p[i];
    p[i] = p[i] - dir * lr;
    if (decay != 0) p[i] = p[i] - old * (decay * lr);
  }
}

TEST(nn_adam_and_adamw_steps_by_hand) {
  const int64_t shape[2] = {2, 2};
  const double p0[4] = {1, -2, 0.5, 4}, c[4] = {0.5, 3, -1, 1e-3};
  for (int w = 0; w < 2; ++w) {
    tn_linear_problem pr = {0};
    CHECK_OK(tn_problem(&pr, 2, shape, p0, c));
    topos_optimizer *opt = NULL;
    topos_optimizer_options oo = {.kind = w ? TOPOS_OPT_ADAMW : TOPOS_OPT_ADAM, .lr = 0.01,
                                  .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6,
                                  .weight_decay = 0.1};
    CHECK_OK(topos_optimizer_new(pr.net, &oo, &opt));
    double p[4], m[4] = {0}, v[4] = {0}, got[4];
    memcpy(p, p0, sizeof p);
    for (int t = 1; t <= 3; ++t) {
      CHECK_OK(tn_step(&pr, opt));
      tn_adam_reference(p, m, v, c, 4, t, 0.01, 0.8, 0.99, 1e-6, w ? 0.1 : 0);
      tn_read_p(&pr, got, 4);
      for (int i = 0; i < 4; ++i) CHECK_BITS_F64(got[i], p[i]);
    }
    topos_optimizer_free(opt);
    tn_problem_free(&pr);
  }
}

TEST(nn_adamw_skips_decay_on_vectors) {
  const int64_t shape[1] = {2};
  const double p0[2] = {1, -2}, c[2] = {0.5, 3};
  tn_linear_problem a = {0}, b = {0};
  CHECK_OK(tn_problem(&a, 1, shape, p0, c));
  CHECK_OK(tn_problem(&b, 1, shape, p0, c));
  topos_optimizer *oa = NULL, *ob = NULL;
  topos_optimizer_options adam = {.kind = TOPOS_OPT_ADAM, .lr = 0.01};
  topos_optimizer_options adamw = {.kind = TOPOS_OPT_ADAMW, .lr = 0.01, .weight_decay = 0.5};
  CHECK_OK(topos_optimizer_new(a.net, &adam, &oa));
  CHECK_OK(topos_optimizer_new(b.net, &adamw, &ob));
  CHECK_OK(tn_step(&a, oa));
  CHECK_OK(tn_step(&b, ob));
  double ga[2], gb[2];
  tn_read_p(&a, ga, 2);
  tn_read_p(&b, gb, 2);
  CHECK_BITS_F64(ga[0], gb[0]);
  CHECK_BITS_F64(ga[1], gb[1]);
  topos_optimizer_free(oa);
  topos_optimizer_free(ob);
  tn_problem_free(&a);
  tn_problem_free(&b);
  topos_optimizer_options bad = {.kind = (topos_optimizer_kind)9};
  topos_optimizer *o = NULL;
  CHECK_STATUS(topos_optimizer_new(NULL, &bad, &o), TOPOS_ERR_INVALID_ARGUMENT);
}

static uint32_t tn_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* Golden bits computed independently (Python: splitmix64, unit = (z>>11)*2^-53,
 * Box-Muller cos half, f64 then rounded to f32). */
TEST(nn_init_golden_bits) {
  const int64_t four[1] = {4}, x35[2] = {3, 5}, k42[2] = {4, 2};
  topos_tensor *t = NULL;
  float v[15];
  topos_rng rng = topos_rng_seed(1);
  CHECK_OK(topos_init_uniform(&rng, TOPOS_F32, 1, four, -0.5, 0.5, &t));
  CHECK_OK(topos_tensor_read_f32(t, v, 4));
  topos_tensor_release(t);
  static const uint32_t uniform[4] = {0x3d88516f, 0x3e7bae37, 0x3ef12746, 0xbd63e797};
  for (int i = 0; i < 4; ++i) CHECK_EQ_INT(tn_f32_bits(v[i]), uniform[i]);
  rng = topos_rng_seed(2);
  CHECK_OK(topos_init_normal(&rng, TOPOS_F32, 1, four, 0, 1, &t));
  CHECK_OK(topos_tensor_read_f32(t, v, 4));
  topos_tensor_release(t);
  static const uint32_t normal[4] = {0xbbb37f5b, 0x3dc9a934, 0xbf5f076d, 0xbd606746};
  for (int i = 0; i < 4; ++i) CHECK_EQ_INT(tn_f32_bits(v[i]), normal[i]);
  rng = topos_rng_seed(3);
  CHECK_OK(topos_init_xavier(&rng, TOPOS_F32, 2, x35, &t));
  CHECK_OK(topos_tensor_read_f32(t, v, 15));
  topos_tensor_release(t);
  static const uint32_t xavier[3] = {0xbf2b65e7, 0x3eb19f4f, 0x3e485fc9};
  for (int i = 0; i < 3; ++i) CHECK_EQ_INT(tn_f32_bits(v[i]), xavier[i]);
  rng = topos_rng_seed(4);
  CHECK_OK(topos_init_kaiming(&rng, TOPOS_F32, 2, k42, &t));
  CHECK_OK(topos_tensor_read_f32(t, v, 8));
  topos_tensor_release(t);
  static const uint32_t kaiming[3] = {0x3f3716d0, 0xbec73fd9, 0xbf531ef4};
  for (int i = 0; i < 3; ++i) CHECK_EQ_INT(tn_f32_bits(v[i]), kaiming[i]);
}

TEST(nn_init_fans_and_errors) {
  int64_t in, out;
  const int64_t conv[4] = {8, 3, 5, 5}, lin[2] = {784, 10}, vec[1] = {7};
  CHECK_OK(topos_init_fans(4, conv, &in, &out));
  CHECK(in == 75 && out == 200);
  CHECK_OK(topos_init_fans(2, lin, &in, &out));
  CHECK(in == 784 && out == 10);
  CHECK_OK(topos_init_fans(1, vec, &in, &out));
  CHECK(in == 7 && out == 7);
  CHECK_STATUS(topos_init_fans(0, NULL, &in, &out), TOPOS_ERR_INVALID_ARGUMENT);
  topos_rng rng = topos_rng_seed(1);
  topos_tensor *t = NULL;
  const int64_t bad[1] = {0};
  CHECK_STATUS(topos_init_uniform(&rng, TOPOS_F32, 1, bad, 0, 1, &t), TOPOS_ERR_SHAPE);
  CHECK_STATUS(topos_init_normal(&rng, TOPOS_I32, 1, vec, 0, 1, &t), TOPOS_ERR_DTYPE);
  CHECK(t == NULL);
  /* the same seed gives the same tensor in every dtype's rounding */
  topos_tensor *a = NULL, *b = NULL;
  rng = topos_rng_seed(77);
  CHECK_OK(topos_init_normal(&rng, TOPOS_BF16, 2, lin, 0, 0.1, &a));
  rng = topos_rng_seed(77);
  CHECK_OK(topos_init_normal(&rng, TOPOS_BF16, 2, lin, 0, 0.1, &b));
  CHECK(topos_tensor_bits_equal(a, b));
  topos_tensor_release(a);
  topos_tensor_release(b);
}
