/* The fused patterns of a recorded-route training step (gradients recorded on
 * the tape, loss and gradients in one forward plan — as `topos train mnist`
 * runs): a small LeNet (conv, relu, max-pool, conv, relu, max-pool, linear,
 * cross-entropy) whose plan with every pattern gives the same bits as the
 * plan with none and as the interpreter, at 1 and 3 threads, f32 and f64,
 * with odd image sizes (windows that miss a row), exact zeros and -0 in the
 * images (ties in the pools), and the expected groups in the plan.
 * conv_forward / conv_wgrad (the convs without their patch matrix), col2im,
 * relu_grad and matmul_bias are this plan's conv products, conv input
 * gradient, relu gradients and the linear layer's bias add; a 42-wide image
 * gives rows of 21 and 42 (two and three vectors). */
#include <math.h>
#include <stdio.h>

#include "plan_util.h"
#include "engine/pattern.h"

typedef struct {
  topos_dtype dtype;
  int64_t batch, h, w, pad, pool;
  int64_t c1, c2; /* channels of the two convs; 0: 4 and 5 */
} tt_lenet_cfg;

typedef struct {
  topos_network *net;
  topos_params *params;
  topos_sym roots[8];
  size_t n_roots;
} tt_lenet;

static topos_status tt_lenet_build(const tt_lenet_cfg *cfg, tt_lenet *m) {
  topos_tape *tape = NULL;
  topos_rng rng = topos_rng_seed(7);
  TP_TRY(topos_tape_new(&tape));
  topos_conv2d c1, c2;
  topos_linear fc;
  int64_t k1 = cfg->c1 ? cfg->c1 : 4, k2 = cfg->c2 ? cfg->c2 : 5;
  topos_conv2d_new(tape, "c1", 1, k1, 3, 1, cfg->pad, 1, cfg->dtype, &rng, &c1);
  topos_conv2d_new(tape, "c2", k1, k2, 3, 1, 1, 1, cfg->dtype, &rng, &c2);
  int64_t h1 = (cfg->h + 2 * cfg->pad - 2) / cfg->pool, w1 = (cfg->w + 2 * cfg->pad - 2) / cfg->pool;
  int64_t h2 = h1 / cfg->pool, w2 = w1 / cfg->pool, flat = k2 * h2 * w2;
  topos_linear_new(tape, "fc", flat, 3, 1, cfg->dtype, &rng, &fc);
  /* images: normal values with every fifth pixel 0 and every seventh -0 */
  const int64_t xs[4] = {cfg->batch, 1, cfg->h, cfg->w};
  int64_t count = cfg->batch * cfg->h * cfg->w;
  double *pixels = malloc((size_t)count * sizeof *pixels);
  if (!pixels) return TOPOS_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < count; ++i) {
    double u = (double)(topos_rng_next(&rng) % 2001) / 1000.0 - 1.0;
    pixels[i] = i % 5 == 0 ? 0.0 : i % 7 == 0 ? -0.0 : u;
  }
  topos_tensor *img = NULL;
  topos_status s = topos_tensor_from_f64(cfg->dtype, 4, xs, pixels, &img);
  free(pixels);
  if (s != TOPOS_OK) return s;
  topos_sym x = topos_tape_input(tape, img, "x");
  topos_tensor_release(img);
  int32_t labels[8];
  for (int64_t i = 0; i < cfg->batch; ++i) labels[i] = (int32_t)(i % 3);
  topos_tensor *lt = NULL;
  const int64_t ls[1] = {cfg->batch};
  TP_TRY(topos_tensor_from_data(TOPOS_I32, 1, ls, labels, (size_t)cfg->batch * sizeof *labels, &lt));
  topos_sym t = topos_tape_input(tape, lt, "t");
  topos_tensor_release(lt);
  topos_sym h = topos_tape_relu(tape, topos_conv2d_apply(tape, &c1, x));
  h = topos_max_pool2d(tape, h, cfg->pool, cfg->pool);
  h = topos_tape_relu(tape, topos_conv2d_apply(tape, &c2, h));
  h = topos_max_pool2d(tape, h, cfg->pool, cfg->pool);
  int64_t fs[2] = {cfg->batch, flat};
  topos_sym loss =
      topos_cross_entropy(tape, topos_linear_apply(tape, &fc, topos_tape_reshape(tape, h, 2, fs)), t);
  topos_sym ps[6] = {c1.weight, c1.bias, c2.weight, c2.bias, fc.weight, fc.bias};
  m->roots[0] = loss;
  TP_TRY(topos_tape_differentiate(tape, loss, 6, ps, m->roots + 1));
  m->n_roots = 7;
  TP_TRY(topos_tape_seal(&tape, &m->net));
  return topos_params_from_network(m->net, &m->params);
}

static void tt_lenet_free(tt_lenet *m) {
  topos_params_free(m->params);
  topos_network_free(m->net);
}

/* every root of `plan` against `ref` (bits) */
static int tt_same_roots(const tt_lenet *m, topos_run *ref, const topos_plan *plan) {
  topos_run *run = NULL;
  if (topos_plan_forward(plan, m->params, NULL, 0, &run) != TOPOS_OK) return 0;
  int same = 1;
  for (size_t k = 0; k < m->n_roots && same; ++k) {
    topos_tensor *a = NULL, *b = NULL;
    same = topos_run_read(ref, m->roots[k], &a) == TOPOS_OK &&
           topos_run_read(run, m->roots[k], &b) == TOPOS_OK && topos_tensor_bits_equal(a, b);
    if (!same) fprintf(stderr, "root %zu differs\n", k);
    topos_tensor_release(a);
    topos_tensor_release(b);
  }
  topos_run_free(run);
  return same;
}

static void tt_lenet_case(const tt_lenet_cfg *cfg, const char *const *expect, int n_expect) {
  tt_lenet m = {0};
  CHECK_OK(tt_lenet_build(cfg, &m));
  topos_request req = {.roots = m.roots, .n_roots = m.n_roots, .numerics = TOPOS_NUMERICS_EXACT};
  topos_plan *fused = NULL, *plain = NULL;
  CHECK_OK(topos_plan_compile(m.net, &req, &fused));
  CHECK_OK(tp_plan_compile_with(m.net, &req, NULL, 0, &plain));
  static char text[1 << 17];
  topos_plan_describe(fused, text, sizeof text);
  for (int k = 0; k < n_expect; ++k)
    CHECK_MSG(strstr(text, expect[k]) != NULL, "plan lacks %s (dtype %d, %lldx%lld)", expect[k],
              (int)cfg->dtype, (long long)cfg->h, (long long)cfg->w);
  topos_run *ref = NULL;
  CHECK_OK(tp_oracle_run(m.net, m.params, NULL, 0, 1, &ref));
  int threads[3] = {1, 3, 2};
  for (int t = 0; t < 3; ++t) {
    CHECK_OK(topos_set_threads(threads[t]));
    CHECK_MSG(tt_same_roots(&m, ref, fused), "fused plan differs (threads %d, dtype %d)",
              threads[t], (int)cfg->dtype);
    CHECK_MSG(tt_same_roots(&m, ref, plain), "plain plan differs (threads %d)", threads[t]);
  }
  topos_set_threads(1);
  topos_run_free(ref);
  topos_plan_free(fused);
  topos_plan_free(plain);
  tt_lenet_free(&m);
}

TEST(plan_training_patterns_lenet_f32) {
  static const char *const expect[] = {"fused:pool_backward", "fused:max_pool", "fused:conv_forward",
                                       "fused:conv_wgrad", "fused:col2im", "fused:relu_grad",
                                       "fused:matmul_bias", "fused:relu_permuted"};
  tt_lenet_cfg a = {TOPOS_F32, 3, 14, 18, 1, 2, 0, 0}; /* the vector path: rows of >= 4 windows */
  tt_lenet_case(&a, expect, 8);
  tt_lenet_cfg b = {TOPOS_F32, 2, 9, 7, 0, 2, 0, 0}; /* odd sizes: windows miss a row and column */
  tt_lenet_case(&b, expect, 8);
  tt_lenet_cfg c = {TOPOS_F32, 2, 8, 42, 1, 2, 0, 0}; /* rows of 42 and 21: several vectors */
  tt_lenet_case(&c, expect, 8);
  /* the bench's channels (8 -> 16: the kernels' 16-wide blocks) and 12 -> 20
   * (a second, partial block of output channels; conv2's weight gradient
   * is wider than conv_wgrad takes and stays a product) */
  tt_lenet_cfg d = {TOPOS_F32, 2, 12, 10, 1, 2, 8, 16};
  tt_lenet_case(&d, expect, 8);
  tt_lenet_cfg e = {TOPOS_F32, 2, 10, 10, 1, 2, 12, 20};
  tt_lenet_case(&e, expect, 8);
}

TEST(plan_training_patterns_lenet_f64) {
  static const char *const expect[] = {"fused:pool_backward", "fused:max_pool", "fused:im2col",
                                       "fused:col2im", "fused:relu_grad", "fused:matmul_bias",
                                       "fused:relu_permuted"};
  /* f64: the conv products stay im2col + matmul_bias (conv_forward and
   * conv_wgrad are f32) */
  tt_lenet_cfg a = {TOPOS_F64, 2, 11, 12, 1, 2, 0, 0};
  tt_lenet_case(&a, expect, 7);
}

/* The pool's own gradient, observed: x a parameter full of ties (values from
 * {-1, -0, 0, 1, 2}, relu'd so most windows tie at 0), loss = sum(pool(x) * c)
 * with c holding zeros, -0, negatives and an inf — the routing on ties
 * (left wins), the -0 -> +0 of the seeds and inf * 0 = NaN all show in dx. */
static void tt_pool_grad_case(topos_dtype dt, int64_t h, int64_t w, int64_t size, int64_t stride) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  const int64_t xs[4] = {2, 3, h, w};
  int64_t count = 2 * 3 * h * w;
  static const double values[5] = {-1.0, -0.0, 0.0, 1.0, 2.0};
  double *v = malloc((size_t)count * sizeof *v);
  topos_rng rng = topos_rng_seed(3);
  for (int64_t i = 0; i < count; ++i) v[i] = values[topos_rng_next(&rng) % 5];
  topos_tensor *xt = NULL;
  CHECK_OK(topos_tensor_from_f64(dt, 4, xs, v, &xt));
  free(v);
  topos_sym x = topos_tape_parameter(tape, xt, "x");
  topos_tensor_release(xt);
  topos_sym y = topos_max_pool2d(tape, topos_tape_relu(tape, x), size, stride);
  topos_tensor_desc yd;
  CHECK_OK(topos_tape_describe(tape, y, &yd));
  int64_t yc = 1;
  for (int i = 0; i < yd.rank; ++i) yc *= yd.shape[i];
  double *cv = malloc((size_t)yc * sizeof *cv);
  for (int64_t i = 0; i < yc; ++i)
    cv[i] = i % 4 == 0 ? 0.0 : i % 4 == 1 ? -0.0 : i % 4 == 2 ? -1.5 : 0.75;
  cv[yc / 2] = INFINITY;
  topos_tensor *ct = NULL;
  CHECK_OK(topos_tensor_from_f64(dt, yd.rank, yd.shape, cv, &ct));
  free(cv);
  topos_sym c = topos_tape_input(tape, ct, "c");
  topos_tensor_release(ct);
  topos_sym roots[2];
  roots[0] = topos_tape_sum(tape, topos_tape_mul(tape, y, c));
  CHECK_OK(topos_tape_differentiate(tape, roots[0], 1, &x, roots + 1));
  tt_lenet m = {0};
  m.roots[0] = roots[0];
  m.roots[1] = roots[1];
  m.n_roots = 2;
  CHECK_OK(topos_tape_seal(&tape, &m.net));
  CHECK_OK(topos_params_from_network(m.net, &m.params));
  topos_request req = {.roots = m.roots, .n_roots = 2, .numerics = TOPOS_NUMERICS_EXACT};
  topos_plan *fused = NULL;
  CHECK_OK(topos_plan_compile(m.net, &req, &fused));
  char text[1 << 15];
  topos_plan_describe(fused, text, sizeof text);
  CHECK_MSG(strstr(text, "fused:pool_backward") != NULL, "no pool_backward (%lldx%lld, %lld/%lld)",
            (long long)h, (long long)w, (long long)size, (long long)stride);
  topos_run *ref = NULL;
  CHECK_OK(tp_oracle_run(m.net, m.params, NULL, 0, 1, &ref));
  for (int t = 1; t <= 3; t += 2) {
    CHECK_OK(topos_set_threads(t));
    CHECK_MSG(tt_same_roots(&m, ref, fused), "pool gradient differs (%lldx%lld, threads %d)",
              (long long)h, (long long)w, t);
  }
  topos_set_threads(1);
  topos_run_free(ref);
  topos_plan_free(fused);
  tt_lenet_free(&m);
}

TEST(plan_pool_backward_ties_and_specials) {
  tt_pool_grad_case(TOPOS_F32, 8, 20, 2, 2); /* vector rows and a scalar tail */
  tt_pool_grad_case(TOPOS_F32, 7, 9, 2, 2);  /* odd: a row and a column no window covers */
  tt_pool_grad_case(TOPOS_F32, 9, 9, 3, 3);  /* 3x3 windows: the general walk */
  tt_pool_grad_case(TOPOS_F64, 8, 12, 2, 2);
}

/* relu over a permuted view with -0, NaN, infinities and ties at 0: the
 * fused step (its tile route for a conv's [.., W, C] rows and its general
 * route for other orders) gives the interpreter's bits at 1, 2 and 3 threads. */
static void tt_relu_permuted_case(topos_dtype dt, const int *order) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  const int64_t xs[4] = {3, 5, 6, 8};
  int64_t count = 3 * 5 * 6 * 8;
  static const double values[8] = {-1.0, -0.0, 0.0, 1.5, NAN, INFINITY, -INFINITY, -2.5};
  double *v = malloc((size_t)count * sizeof *v);
  topos_rng rng = topos_rng_seed(5);
  for (int64_t i = 0; i < count; ++i) v[i] = values[topos_rng_next(&rng) % 8];
  topos_tensor *xt = NULL;
  CHECK_OK(topos_tensor_from_f64(dt, 4, xs, v, &xt));
  free(v);
  topos_sym x = topos_tape_input(tape, xt, "x");
  topos_tensor_release(xt);
  tt_lenet m = {0};
  m.roots[0] = topos_tape_relu(tape, topos_tape_permute(tape, x, order));
  m.n_roots = 1;
  CHECK_OK(topos_tape_seal(&tape, &m.net));
  CHECK_OK(topos_params_from_network(m.net, &m.params));
  topos_request req = {.roots = m.roots, .n_roots = 1, .numerics = TOPOS_NUMERICS_EXACT};
  topos_plan *fused = NULL;
  CHECK_OK(topos_plan_compile(m.net, &req, &fused));
  char text[1 << 14];
  topos_plan_describe(fused, text, sizeof text);
  CHECK_MSG(strstr(text, "fused:relu_permuted") != NULL, "no relu_permuted (order %d%d%d%d)",
            order[0], order[1], order[2], order[3]);
  topos_run *ref = NULL;
  CHECK_OK(tp_oracle_run(m.net, m.params, NULL, 0, 1, &ref));
  for (int t = 1; t <= 3; ++t) {
    CHECK_OK(topos_set_threads(t));
    CHECK_MSG(tt_same_roots(&m, ref, fused), "relu_permuted differs (order %d%d%d%d, threads %d)",
              order[0], order[1], order[2], order[3], t);
  }
  topos_set_threads(1);
  topos_run_free(ref);
  topos_plan_free(fused);
  tt_lenet_free(&m);
}

TEST(plan_relu_permuted_specials) {
  static const int nhwc_to_nchw[4] = {0, 3, 1, 2}; /* the conv's product: the tile route */
  static const int other[4] = {0, 2, 3, 1};
  static const int last_kept[4] = {0, 2, 1, 3};
  tt_relu_permuted_case(TOPOS_F32, nhwc_to_nchw);
  tt_relu_permuted_case(TOPOS_F32, other);
  tt_relu_permuted_case(TOPOS_F32, last_kept);
  tt_relu_permuted_case(TOPOS_F64, nhwc_to_nchw);
}
