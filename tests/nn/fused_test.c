/* The plan's fused nn patterns (conv_im2col, max_pool, relu_permuted on the
 * conv's permuted product; f32/f64) give the composed
 * formula's bits: forward plans (where they engage) against the interpreter,
 * across dtypes, strides, paddings and overlapping windows; backward plans
 * (where the compiler leaves them out) still match. */
#include <stdio.h>

#include "nn_util.h"

typedef struct {
  int64_t stride, padding, pool, pool_stride;
  topos_dtype dtype;
} tn_cfg;

/* conv -> relu -> max-pool -> conv -> max-pool, logits via a Linear. */
static topos_status tn_build(const tn_cfg *cfg, topos_network **net, topos_sym *root,
                             topos_sym *loss, topos_sym *x) {
  topos_tape *tape = NULL;
  topos_rng rng = topos_rng_seed(31);
  topos_status s = topos_tape_new(&tape);
  if (s != TOPOS_OK) return s;
  topos_conv2d c1, c2;
  topos_conv2d_new(tape, "c1", 2, 4, 3, cfg->stride, cfg->padding, 1, cfg->dtype, &rng, &c1);
  topos_conv2d_new(tape, "c2", 4, 3, 3, 1, 1, 1, cfg->dtype, &rng, &c2);
  topos_tensor *input = NULL;
  const int64_t xs[4] = {3, 2, 12, 11};
  topos_init_normal(&rng, cfg->dtype, 4, xs, 0, 1, &input);
  *x = topos_tape_input(tape, input, "x");
  topos_tensor_release(input);
  topos_sym h = topos_tape_relu(tape, topos_conv2d_apply(tape, &c1, *x));
  h = topos_max_pool2d(tape, h, cfg->pool, cfg->pool_stride);
  h = topos_max_pool2d(tape, topos_conv2d_apply(tape, &c2, h), 2, 2);
  *root = h;
  *loss = topos_tape_sum(tape, topos_tape_mul(tape, h, h));
  return topos_tape_seal(&tape, net);
}

/* NULL when every check holds, else what failed. */
#define TN_EXPECT(cond, what) \
  do {                        \
    if (!(cond)) {            \
      reason = (what);        \
      goto done;              \
    }                         \
  } while (0)

static const char *tn_fused_case(const tn_cfg *cfg, uint32_t expect_fused) {
  const char *reason = "setup failed";
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_plan *fwd = NULL, *bwd = NULL;
  topos_run *ref = NULL, *run = NULL, *run_b = NULL;
  topos_field *g_ref = NULL, *g_plan = NULL;
  topos_tensor *a = NULL, *b = NULL;
  topos_sym root, loss, x;
  if (tn_build(cfg, &net, &root, &loss, &x) != TOPOS_OK) goto done;
  if (topos_params_from_network(net, &params) != TOPOS_OK) goto done;
  topos_request fr = {.roots = &root, .n_roots = 1, .numerics = TOPOS_NUMERICS_EXACT};
  topos_request br = {.roots = &loss, .n_roots = 1, .backward = 1,
                      .numerics = TOPOS_NUMERICS_EXACT};
  if (topos_plan_compile(net, &fr, &fwd) != TOPOS_OK) goto done;
  if (topos_plan_compile(net, &br, &bwd) != TOPOS_OK) goto done;
  topos_plan_stats st;
  topos_plan_stats_get(fwd, &st);
  TN_EXPECT(st.fused == expect_fused, "unexpected number of fused steps");
  char text[16384];
  topos_plan_describe(fwd, text, sizeof text);
  TN_EXPECT(!expect_fused || strstr(text, "fused:conv_im2col") != NULL, "describe lacks fused:conv_im2col");
  /* The plans are Exact, so the oracle must be too: under the ambient Fast
   * posture an envelope GEMM (SIMD builds) would serve the interpreter. */
  topos_forward_options all = {NULL, 0, NULL, 0, 1};
  topos_numerics saved = topos_numerics_enter(TOPOS_NUMERICS_EXACT);
  topos_status ref_status = topos_network_forward(net, params, NULL, 0, &all, &ref);
  topos_numerics_restore(saved);
  if (ref_status != TOPOS_OK) goto done;
  if (topos_plan_forward(fwd, params, NULL, 0, &run) != TOPOS_OK) goto done;
  if (topos_run_read(ref, root, &a) != TOPOS_OK || topos_run_read(run, root, &b) != TOPOS_OK)
    goto done;
  TN_EXPECT(topos_tensor_bits_equal(a, b), "fused forward differs from the interpreter");
  /* run the plan twice: pooled contexts give the same bits */
  topos_run_free(run);
  run = NULL;
  topos_tensor_release(b);
  b = NULL;
  if (topos_plan_forward(fwd, params, NULL, 0, &run) != TOPOS_OK) goto done;
  if (topos_run_read(run, root, &b) != TOPOS_OK) goto done;
  TN_EXPECT(topos_tensor_bits_equal(a, b), "second run differs");
  /* backward plan: same gradients as the interpreter */
  if (topos_plan_forward(bwd, params, NULL, 0, &run_b) != TOPOS_OK) goto done;
  if (topos_run_backward(ref, loss, &g_ref) != TOPOS_OK) goto done;
  if (topos_run_backward(run_b, loss, &g_plan) != TOPOS_OK) goto done;
  for (size_t i = 0; i < topos_params_count(params); ++i) {
    topos_tensor *ga = NULL, *gb = NULL;
    topos_sym p = topos_params_symbol(params, i);
    topos_field_get(g_ref, p, &ga);
    topos_field_get(g_plan, p, &gb);
    int same = ga && gb && topos_tensor_bits_equal(ga, gb);
    topos_tensor_release(ga);
    topos_tensor_release(gb);
    TN_EXPECT(same, "backward plan gradient differs from the interpreter");
  }
  reason = NULL;
done:
  topos_tensor_release(a);
  topos_tensor_release(b);
  topos_field_free(g_ref);
  topos_field_free(g_plan);
  topos_run_free(ref);
  topos_run_free(run);
  topos_run_free(run_b);
  topos_plan_free(fwd);
  topos_plan_free(bwd);
  topos_params_free(params);
  topos_network_free(net);
  return reason;
}

TEST(nn_fused_patterns_bitwise_f32) {
  tn_cfg a = {1, 1, 2, 2, TOPOS_F32};
  { const char *r = tn_fused_case(&a, 5); CHECK_MSG(!r, "%s", r); }
  tn_cfg b = {2, 0, 2, 1, TOPOS_F32}; /* strided conv, no pad; overlapping pool */
  { const char *r = tn_fused_case(&b, 5); CHECK_MSG(!r, "%s", r); }
}

TEST(nn_fused_patterns_bitwise_f64_and_bf16) {
  tn_cfg a = {1, 2, 2, 2, TOPOS_F64};
  { const char *r = tn_fused_case(&a, 5); CHECK_MSG(!r, "%s", r); }
  tn_cfg b = {1, 1, 2, 2, TOPOS_BF16}; /* conv fuses; bf16 max-pool stays composed */
  { const char *r = tn_fused_case(&b, 2); CHECK_MSG(!r, "%s", r); }
}

/* Signed zeros and NaN in the windows: the direct walk folds like maximum. */
TEST(nn_fused_max_pool_edge_values) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  const int64_t xs[4] = {1, 1, 2, 6};
  const double v[12] = {-0.0, 0.0, 0.0, -0.0, NAN, 1, -1, -2, 3, NAN, 5, -INFINITY};
  topos_tensor *t = tn_tensor(TOPOS_F32, 4, xs, v);
  topos_sym x = topos_tape_input(tape, t, "x");
  topos_tensor_release(t);
  topos_sym y = topos_max_pool2d(tape, x, 2, 2);
  topos_network *net = NULL;
  topos_plan *plan = NULL;
  topos_run *ref = NULL, *run = NULL;
  topos_tensor *a = NULL, *b = NULL;
  CHECK_OK(topos_tape_seal(&tape, &net));
  topos_request r = {.roots = &y, .n_roots = 1};
  CHECK_OK(topos_plan_compile(net, &r, &plan));
  topos_plan_stats st;
  CHECK_OK(topos_plan_stats_get(plan, &st));
  CHECK(st.fused == 1);
  CHECK_OK(topos_network_forward(net, NULL, NULL, 0, NULL, &ref));
  CHECK_OK(topos_plan_forward(plan, NULL, NULL, 0, &run));
  CHECK_OK(topos_run_read(ref, y, &a));
  CHECK_OK(topos_run_read(run, y, &b));
  CHECK(topos_tensor_bits_equal(a, b));
  float out[3];
  CHECK_OK(topos_tensor_read_f32(b, out, 3));
  CHECK(out[0] == 0 && !signbit(out[0])); /* -0 < +0 */
  CHECK(out[1] != out[1]);                /* NaN propagates */
  CHECK(out[2] != out[2]);
  topos_tensor_release(a);
  topos_tensor_release(b);
  topos_run_free(ref);
  topos_run_free(run);
  topos_plan_free(plan);
  topos_network_free(net);
}

/* Batch-norm inference (running estimates fed as inputs) fuses into one pass
 * with the composed bits; the training form stays composed. */
static const char *tn_bn_case(topos_dtype dtype, int images) {
  const char *reason = "setup failed";
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_plan *plan = NULL, *train_plan = NULL;
  topos_run *ref = NULL, *run = NULL, *run_t = NULL;
  topos_tensor *a = NULL, *b = NULL, *x0 = NULL, *m0 = NULL, *v0 = NULL;
  topos_rng rng = topos_rng_seed(44);
  const int64_t rows[2] = {6, 5}, img[4] = {2, 5, 3, 2}, feat[1] = {5};
  if (topos_tape_new(&tape) != TOPOS_OK) goto done;
  topos_batch_norm bn;
  topos_batch_norm_new(tape, "bn", 5, 1e-5, dtype, &bn);
  topos_init_normal(&rng, dtype, images ? 4 : 2, images ? img : rows, 0.5, 2, &x0);
  topos_init_normal(&rng, dtype, 1, feat, 0, 1, &m0);
  topos_init_uniform(&rng, dtype, 1, feat, 0.5, 2, &v0);
  topos_sym x = topos_tape_input(tape, x0, "x");
  topos_sym mean = topos_tape_input(tape, m0, "mean");
  topos_sym var = topos_tape_input(tape, v0, "var");
  topos_sym y = topos_batch_norm_infer(tape, &bn, x, mean, var);
  topos_batch_norm_result tr;
  topos_batch_norm_train(tape, &bn, x, &tr);
  if (topos_tape_seal(&tape, &net) != TOPOS_OK) goto done;
  if (topos_params_from_network(net, &params) != TOPOS_OK) goto done;
  /* non-trivial scale and shift */
  topos_tensor *sc = NULL, *sh = NULL;
  topos_init_uniform(&rng, dtype, 1, feat, 0.5, 1.5, &sc);
  topos_init_uniform(&rng, dtype, 1, feat, -1, 1, &sh);
  topos_params_set(params, bn.scale, sc);
  topos_params_set(params, bn.shift, sh);
  topos_tensor_release(sc);
  topos_tensor_release(sh);
  topos_request r = {.roots = &y, .n_roots = 1, .numerics = TOPOS_NUMERICS_EXACT};
  topos_request rt = {.roots = &tr.output, .n_roots = 1, .numerics = TOPOS_NUMERICS_EXACT};
  if (topos_plan_compile(net, &r, &plan) != TOPOS_OK) goto done;
  if (topos_plan_compile(net, &rt, &train_plan) != TOPOS_OK) goto done;
  topos_plan_stats st;
  topos_plan_stats_get(plan, &st);
  TN_EXPECT(st.fused == 1, "batch-norm inference not fused");
  topos_plan_stats_get(train_plan, &st);
  TN_EXPECT(st.fused == 0, "batch-norm training unexpectedly fused");
  if (topos_network_forward(net, params, NULL, 0, NULL, &ref) != TOPOS_OK) goto done;
  if (topos_plan_forward(plan, params, NULL, 0, &run) != TOPOS_OK) goto done;
  if (topos_run_read(ref, y, &a) != TOPOS_OK || topos_run_read(run, y, &b) != TOPOS_OK) goto done;
  TN_EXPECT(topos_tensor_bits_equal(a, b), "fused batch-norm differs from the interpreter");
  topos_tensor_release(b);
  b = NULL;
  topos_tensor_release(a);
  a = NULL;
  if (topos_plan_forward(train_plan, params, NULL, 0, &run_t) != TOPOS_OK) goto done;
  if (topos_run_read(ref, tr.output, &a) != TOPOS_OK ||
      topos_run_read(run_t, tr.output, &b) != TOPOS_OK)
    goto done;
  TN_EXPECT(topos_tensor_bits_equal(a, b), "training batch-norm plan differs");
  reason = NULL;
done:
  topos_tensor_release(a);
  topos_tensor_release(b);
  topos_tensor_release(x0);
  topos_tensor_release(m0);
  topos_tensor_release(v0);
  topos_run_free(ref);
  topos_run_free(run);
  topos_run_free(run_t);
  topos_plan_free(plan);
  topos_plan_free(train_plan);
  topos_params_free(params);
  topos_network_free(net);
  topos_tape_free(tape);
  return reason;
}

TEST(nn_fused_batch_norm_inference_bitwise) {
  const char *r;
  CHECK_MSG(!(r = tn_bn_case(TOPOS_F32, 0)), "f32 rows: %s", r);
  CHECK_MSG(!(r = tn_bn_case(TOPOS_F64, 0)), "f64 rows: %s", r);
  CHECK_MSG(!(r = tn_bn_case(TOPOS_F32, 1)), "f32 images: %s", r);
}
