/* nn layers forward against hand computations: Linear, Conv2d (bitwise
 * against a direct loop in the documented order), pooling, norms, losses,
 * dropout, embedding, activations and the causality of attention. */
#include "nn_util.h"

TEST(nn_linear_forward_by_hand) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  const int64_t xs[2] = {2, 3}, ws[2] = {3, 2}, bs[1] = {2};
  const double x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 0, 0, 1, 1, 1}, b[2] = {0.5, -1};
  topos_linear layer = {tn_param(tape, "w", TOPOS_F64, 2, ws, w),
                        tn_param(tape, "b", TOPOS_F64, 1, bs, b)};
  topos_sym y = topos_linear_apply(tape, &layer, tn_const(tape, TOPOS_F64, 2, xs, x));
  double out[4];
  CHECK_OK(tn_eval(&tape, y, out, 4));
  CHECK(out[0] == 4.5 && out[1] == 4 && out[2] == 10.5 && out[3] == 10);
}

TEST(nn_linear_rank3_and_init_bounds) {
  topos_tape *tape = NULL;
  topos_rng rng = topos_rng_seed(11);
  CHECK_OK(topos_tape_new(&tape));
  topos_linear layer;
  CHECK_OK(topos_linear_new(tape, "fc", 4, 3, 1, TOPOS_F32, &rng, &layer));
  const int64_t xs[3] = {2, 5, 4};
  double x[40];
  for (int i = 0; i < 40; ++i) x[i] = i * 0.25 - 3;
  topos_sym y = topos_linear_apply(tape, &layer, tn_const(tape, TOPOS_F32, 3, xs, x));
  topos_tensor_desc d;
  CHECK_OK(topos_tape_describe(tape, y, &d));
  CHECK(d.rank == 3 && d.shape[0] == 2 && d.shape[1] == 5 && d.shape[2] == 3);
  topos_network *net = NULL;
  topos_params *params = NULL;
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_params_from_network(net, &params));
  CHECK(topos_params_count(params) == 2);
  topos_sym w;
  CHECK_OK(topos_network_find(net, "fc.weight", &w));
  topos_tensor *wt = NULL;
  CHECK_OK(topos_params_get(params, w, &wt));
  float wv[12];
  CHECK_OK(topos_tensor_read_f32(wt, wv, 12));
  for (int i = 0; i < 12; ++i) CHECK(fabsf(wv[i]) <= 0.5f); /* U(+-1/sqrt(4)) */
  topos_tensor_release(wt);
  topos_params_free(params);
  topos_network_free(net);
}

/* Direct convolution in the reference order: products over (c, kh, kw)
 * ascending, seeded by the first product (padding contributes 0 * w), then
 * + bias: the composed formula must give these bits. */
TEST(nn_conv2d_bitwise_direct_loop) {
  enum { B = 2, C = 3, H = 6, W = 5, F = 4, K = 3, S = 2, P = 1 };
  const int OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
  float x[B * C * H * W], w[F * C * K * K], b[F];
  topos_rng rng = topos_rng_seed(5);
  for (int i = 0; i < B * C * H * W; ++i) x[i] = (float)(topos_rng_unit(&rng) * 2 - 1);
  for (int i = 0; i < F * C * K * K; ++i) w[i] = (float)(topos_rng_unit(&rng) - 0.5);
  for (int i = 0; i < F; ++i) b[i] = (float)(topos_rng_unit(&rng) - 0.5);
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  const int64_t xs[4] = {B, C, H, W}, ws[4] = {F, C, K, K}, bs[1] = {F};
  topos_tensor *xt = NULL, *wt = NULL, *bt = NULL;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 4, xs, x, &xt));
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 4, ws, w, &wt));
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 1, bs, b, &bt));
  topos_conv2d layer = {topos_tape_parameter(tape, wt, "w"), topos_tape_parameter(tape, bt, "b"),
                        S, P};
  topos_sym y = topos_conv2d_apply(tape, &layer, topos_tape_constant(tape, xt));
  topos_tensor_release(xt);
  topos_tensor_release(wt);
  topos_tensor_release(bt);
  topos_tensor_desc d;
  CHECK_OK(topos_tape_describe(tape, y, &d));
  CHECK(d.rank == 4 && d.shape[0] == B && d.shape[1] == F && d.shape[2] == OH &&
        d.shape[3] == OW);
  double out[B * F * 3 * 3];
  CHECK_OK(tn_eval(&tape, y, out, B * F * OH * OW));
  for (int n = 0; n < B; ++n)
    for (int f = 0; f < F; ++f)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          float acc = 0;
          int first = 1;
          for (int c = 0; c < C; ++c)
            for (int kh = 0; kh < K; ++kh)
              for (int kw = 0; kw < K; ++kw) {
                int ih = oh * S + kh - P, iw = ow * S + kw - P;
                float xv = ih >= 0 && ih < H && iw >= 0 && iw < W
                               ? x[((n * C + c) * H + ih) * W + iw]
                               : 0.0f;
                float prod = xv * w[((f * C + c) * K + kh) * K + kw];
                acc = first ? prod : acc + prod;
                first = 0;
              }
          acc = acc + b[f];
          CHECK_BITS_F32((float)out[((n * F + f) * OH + oh) * OW + ow], acc);
        }
}

TEST(nn_pooling_by_hand) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  const int64_t xs[4] = {1, 1, 4, 4};
  const double x[16] = {1, 5, 2, 0, -1, 3, 7, 8, 4, 4, -2, -3, 9, 0, -5, -4};
  topos_sym xc = tn_const(tape, TOPOS_F64, 4, xs, x);
  topos_sym mx = topos_max_pool2d(tape, xc, 2, 2);
  topos_sym av = topos_avg_pool2d(tape, xc, 2, 2);
  topos_sym ov = topos_max_pool2d(tape, xc, 3, 1); /* overlapping windows */
  topos_sym all[3] = {mx, av, ov};
  topos_network *net = NULL;
  topos_run *run = NULL;
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_network_forward(net, NULL, NULL, 0, NULL, &run));
  double m[4], a[4], o[4];
  double *outs[3] = {m, a, o};
  for (int k = 0; k < 3; ++k) {
    topos_tensor *t = NULL;
    CHECK_OK(topos_run_read(run, all[k], &t));
    CHECK(topos_tensor_rank(t) == 4 && topos_tensor_shape(t)[2] == 2 &&
          topos_tensor_shape(t)[3] == 2);
    CHECK_OK(topos_tensor_read_f64(t, outs[k], 4));
    topos_tensor_release(t);
  }
  CHECK(m[0] == 5 && m[1] == 8 && m[2] == 9 && m[3] == -2);
  CHECK(a[0] == 2 && a[1] == 4.25 && a[2] == 17.0 / 4 && a[3] == -14.0 / 4);
  CHECK(o[0] == 7 && o[1] == 8 && o[2] == 9 && o[3] == 8);
  topos_run_free(run);
  topos_network_free(net);
}

TEST(nn_norms_by_hand) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  const int64_t xs[2] = {2, 4}, fs[1] = {4};
  const double x[8] = {1, 2, 3, 6, -1, 0, 4, 1};
  const double scale[4] = {1, 2, 0.5, -1}, shift[4] = {0, 1, -1, 0.25};
  topos_sym xc = tn_const(tape, TOPOS_F64, 2, xs, x);
  topos_layer_norm ln = {tn_param(tape, "s", TOPOS_F64, 1, fs, scale),
                         tn_param(tape, "h", TOPOS_F64, 1, fs, shift), 1e-5};
  topos_layer_norm rms = {ln.scale, TOPOS_SYM_INVALID, 1e-6};
  topos_sym l = topos_layer_norm_apply(tape, &ln, xc);
  topos_sym r = topos_rms_norm_apply(tape, &rms, xc);
  topos_batch_norm bn = {ln.scale, ln.shift, 1e-3};
  topos_batch_norm_result br;
  CHECK_OK(topos_batch_norm_train(tape, &bn, xc, &br));
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_run *run = NULL;
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_params_from_network(net, &params));
  CHECK_OK(topos_network_forward(net, params, NULL, 0, NULL, &run));
  double lo[8], ro[8], bo[8], bm[4], bv[4];
  topos_sym syms[5] = {l, r, br.output, br.mean, br.variance};
  double *outs[5] = {lo, ro, bo, bm, bv};
  int64_t counts[5] = {8, 8, 8, 4, 4};
  for (int k = 0; k < 5; ++k) {
    topos_tensor *t = NULL;
    CHECK_OK(topos_run_read(run, syms[k], &t));
    CHECK_OK(topos_tensor_read_f64(t, outs[k], counts[k]));
    topos_tensor_release(t);
  }
  for (int i = 0; i < 2; ++i) {
    double mean = 0, var = 0, ms = 0;
    for (int j = 0; j < 4; ++j) mean += x[i * 4 + j] / 4, ms += x[i * 4 + j] * x[i * 4 + j] / 4;
    for (int j = 0; j < 4; ++j) var += (x[i * 4 + j] - mean) * (x[i * 4 + j] - mean) / 4;
    for (int j = 0; j < 4; ++j) {
      double e = (x[i * 4 + j] - mean) / sqrt(var + 1e-5) * scale[j] + shift[j];
      CHECK_NEAR(lo[i * 4 + j], e, 1e-12);
      CHECK_NEAR(ro[i * 4 + j], x[i * 4 + j] / sqrt(ms + 1e-6) * scale[j], 1e-12);
    }
  }
  for (int j = 0; j < 4; ++j) {
    double mean = (x[j] + x[4 + j]) / 2;
    double var = ((x[j] - mean) * (x[j] - mean) + (x[4 + j] - mean) * (x[4 + j] - mean)) / 2;
    CHECK_NEAR(bm[j], mean, 1e-15);
    CHECK_NEAR(bv[j], var, 1e-15);
    for (int i = 0; i < 2; ++i)
      CHECK_NEAR(bo[i * 4 + j], (x[i * 4 + j] - mean) / sqrt(var + 1e-3) * scale[j] + shift[j],
                 1e-12);
  }
  topos_run_free(run);
  topos_params_free(params);
  topos_network_free(net);
}

/* [N,C,H,W] batch norm: statistics per channel over N,H,W; inference with
 * the batch statistics fed back gives the training output. */
TEST(nn_batch_norm_images_and_inference) {
  topos_tape *tape = NULL;
  topos_rng rng = topos_rng_seed(3);
  CHECK_OK(topos_tape_new(&tape));
  const int64_t xs[4] = {2, 3, 2, 2};
  double x[24];
  for (int i = 0; i < 24; ++i) x[i] = topos_rng_normal(&rng);
  topos_batch_norm bn;
  CHECK_OK(topos_batch_norm_new(tape, "bn", 3, 1e-5, TOPOS_F64, &bn));
  topos_sym xc = tn_const(tape, TOPOS_F64, 4, xs, x);
  topos_batch_norm_result r;
  CHECK_OK(topos_batch_norm_train(tape, &bn, xc, &r));
  topos_sym inf = topos_batch_norm_infer(tape, &bn, xc, r.mean, r.variance);
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_run *run = NULL;
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_params_from_network(net, &params));
  CHECK_OK(topos_network_forward(net, params, NULL, 0, NULL, &run));
  topos_tensor *a = NULL, *b = NULL, *m = NULL;
  CHECK_OK(topos_run_read(run, r.output, &a));
  CHECK_OK(topos_run_read(run, inf, &b));
  CHECK_OK(topos_run_read(run, r.mean, &m));
  CHECK(topos_tensor_bits_equal(a, b));
  double out[24], mean[3];
  CHECK_OK(topos_tensor_read_f64(a, out, 24));
  CHECK_OK(topos_tensor_read_f64(m, mean, 3));
  for (int c = 0; c < 3; ++c) {
    double e = 0, s = 0;
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 4; ++k) e += x[(n * 3 + c) * 4 + k] / 8, s += out[(n * 3 + c) * 4 + k];
    CHECK_NEAR(mean[c], e, 1e-14);
    CHECK_NEAR(s, 0.0, 1e-12); /* normalized channel has mean 0 (scale 1, shift 0) */
  }
  topos_tensor_release(a);
  topos_tensor_release(b);
  topos_tensor_release(m);
  topos_run_free(run);
  topos_params_free(params);
  topos_network_free(net);
}

TEST(nn_losses_by_hand) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  const int64_t ls[2] = {2, 3}, ts[1] = {2};
  const double logits[6] = {1, 2, 3, -1, 0.5, 0};
  topos_sym lg = tn_const(tape, TOPOS_F64, 2, ls, logits);
  int32_t targets[2] = {2, 0};
  topos_tensor *tt = NULL;
  CHECK_OK(topos_tensor_from_data(TOPOS_I32, 1, ts, targets, sizeof targets, &tt));
  topos_sym ce = topos_cross_entropy(tape, lg, topos_tape_constant(tape, tt));
  topos_tensor_release(tt);
  const double other[6] = {0, 2, 1, -1, 1.5, 2};
  topos_sym mse = topos_mse(tape, lg, tn_const(tape, TOPOS_F64, 2, ls, other));
  topos_network *net = NULL;
  topos_run *run = NULL;
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_network_forward(net, NULL, NULL, 0, NULL, &run));
  double ce_v, mse_v;
  topos_tensor *t = NULL;
  CHECK_OK(topos_run_read(run, ce, &t));
  CHECK_OK(topos_tensor_get(t, NULL, &ce_v));
  topos_tensor_release(t);
  CHECK_OK(topos_run_read(run, mse, &t));
  CHECK_OK(topos_tensor_get(t, NULL, &mse_v));
  topos_tensor_release(t);
  double l0 = log(exp(1) + exp(2) + exp(3)) - 3, l1 = log(exp(-1) + exp(0.5) + exp(0)) + 1;
  CHECK_NEAR(ce_v, (l0 + l1) / 2, 1e-14);
  CHECK_NEAR(mse_v, (1 + 0 + 4 + 0 + 1 + 4) / 6.0, 1e-15);
  topos_run_free(run);
  topos_network_free(net);
}

TEST(nn_loss_shape_errors) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  const int64_t ls[2] = {2, 3};
  const double logits[6] = {0};
  topos_sym lg = tn_const(tape, TOPOS_F64, 2, ls, logits);
  topos_sym bad = topos_cross_entropy(tape, lg, lg); /* f64 targets */
  CHECK(!topos_sym_is_valid(bad));
  CHECK_STATUS(topos_tape_status(tape), TOPOS_ERR_SHAPE);
  CHECK(strstr(topos_tape_error(tape), "cross_entropy") != NULL);
  topos_tape_free(tape);
}

TEST(nn_dropout_mask_and_default) {
  topos_rng rng = topos_rng_seed(99);
  const int64_t shape[1] = {1000};
  topos_tensor *mask = NULL;
  CHECK_OK(topos_dropout_mask(&rng, 0.75, TOPOS_F32, 1, shape, &mask));
  float v[1000];
  CHECK_OK(topos_tensor_read_f32(mask, v, 1000));
  int kept = 0;
  for (int i = 0; i < 1000; ++i) {
    CHECK(v[i] == 0.0f || v[i] == (float)(1.0 / 0.75));
    kept += v[i] != 0;
  }
  CHECK(kept > 700 && kept < 800);
  topos_tensor_release(mask);
  CHECK_STATUS(topos_dropout_mask(&rng, 0.0, TOPOS_F32, 1, shape, &mask), TOPOS_ERR_INVALID_ARGUMENT);
  /* unfed mask input: all ones, the identity */
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  const int64_t xs[2] = {2, 2};
  const double x[4] = {1, -2, 3, 4};
  topos_sym m;
  topos_sym y = topos_dropout(tape, "drop", tn_const(tape, TOPOS_F64, 2, xs, x), &m);
  CHECK(topos_sym_is_valid(m));
  double out[4];
  CHECK_OK(tn_eval(&tape, y, out, 4));
  CHECK(out[0] == 1 && out[1] == -2 && out[2] == 3 && out[3] == 4);
}

TEST(nn_embedding_gathers_rows) {
  topos_tape *tape = NULL;
  topos_rng rng = topos_rng_seed(1);
  CHECK_OK(topos_tape_new(&tape));
  topos_embedding emb;
  CHECK_OK(topos_embedding_new(tape, "emb", 5, 3, TOPOS_F64, &rng, &emb));
  int32_t idx[3] = {4, 0, 4};
  const int64_t is[1] = {3};
  topos_tensor *it = NULL;
  CHECK_OK(topos_tensor_from_data(TOPOS_I32, 1, is, idx, sizeof idx, &it));
  topos_sym rows = topos_embedding_apply(tape, &emb, topos_tape_constant(tape, it));
  topos_tensor_release(it);
  topos_network *net = NULL;
  topos_params *params = NULL;
  topos_run *run = NULL;
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_params_from_network(net, &params));
  CHECK_OK(topos_network_forward(net, params, NULL, 0, NULL, &run));
  topos_tensor *t = NULL, *table = NULL;
  CHECK_OK(topos_run_read(run, rows, &t));
  CHECK_OK(topos_params_get(params, emb.table, &table));
  double r[9], tb[15];
  CHECK_OK(topos_tensor_read_f64(t, r, 9));
  CHECK_OK(topos_tensor_read_f64(table, tb, 15));
  for (int k = 0; k < 3; ++k) {
    CHECK_BITS_F64(r[k], tb[12 + k]);
    CHECK_BITS_F64(r[3 + k], tb[k]);
    CHECK_BITS_F64(r[6 + k], tb[12 + k]);
  }
  topos_tensor_release(t);
  topos_tensor_release(table);
  topos_run_free(run);
  topos_params_free(params);
  topos_network_free(net);
}

TEST(nn_activations_by_hand) {
  topos_tape *tape = NULL;
  CHECK_OK(topos_tape_new(&tape));
  const int64_t xs[1] = {4};
  const double x[4] = {-2, -0.5, 0.25, 3};
  topos_sym xc = tn_const(tape, TOPOS_F64, 1, xs, x);
  topos_activation kinds[6] = {TOPOS_ACT_IDENTITY, TOPOS_ACT_RELU, TOPOS_ACT_TANH,
                               TOPOS_ACT_SIGMOID, TOPOS_ACT_SILU, TOPOS_ACT_GELU};
  topos_sym ys[6];
  for (int k = 0; k < 6; ++k) ys[k] = topos_nn_activate(tape, kinds[k], xc);
  topos_network *net = NULL;
  topos_run *run = NULL;
  CHECK_OK(topos_tape_seal(&tape, &net));
  CHECK_OK(topos_network_forward(net, NULL, NULL, 0, NULL, &run));
  for (int k = 0; k < 6; ++k) {
    topos_tensor *t = NULL;
    double out[4];
    CHECK_OK(topos_run_read(run, ys[k], &t));
    CHECK_OK(topos_tensor_read_f64(t, out, 4));
    topos_tensor_release(t);
    for (int i = 0; i < 4; ++i) {
      double v = x[i], s = 1 / (1 + exp(-v));
      double e[6] = {v, v > 0 ? v : 0, tanh(v), s, v * s,
                     0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))};
      CHECK_NEAR(out[i], e[k], 1e-14);
    }
  }
  topos_run_free(run);
  topos_network_free(net);
}

/* Changing a later token must not change earlier outputs of attention. */
TEST(nn_attention_is_causal) {
  enum { B = 1, T = 4, D = 4 };
  double out_a[B * T * D], out_b[B * T * D];
  for (int variant = 0; variant < 2; ++variant) {
    topos_tape *tape = NULL;
    topos_rng rng = topos_rng_seed(8);
    CHECK_OK(topos_tape_new(&tape));
    topos_attention att;
    CHECK_OK(topos_attention_new(tape, "att", D, 2, TOPOS_F64, &rng, &att));
    double x[B * T * D];
    topos_rng xr = topos_rng_seed(12);
    for (int i = 0; i < B * T * D; ++i) x[i] = topos_rng_normal(&xr);
    if (variant) x[(T - 1) * D + 1] += 5; /* the last token changes */
    const int64_t xs[3] = {B, T, D};
    topos_sym y = topos_attention_apply(tape, &att, tn_const(tape, TOPOS_F64, 3, xs, x));
    topos_network *net = NULL;
    topos_params *params = NULL;
    topos_run *run = NULL;
    topos_tensor *t = NULL;
    CHECK_OK(topos_tape_seal(&tape, &net));
    CHECK_OK(topos_params_from_network(net, &params));
    CHECK_OK(topos_network_forward(net, params, NULL, 0, NULL, &run));
    CHECK_OK(topos_run_read(run, y, &t));
    CHECK_OK(topos_tensor_read_f64(t, variant ? out_b : out_a, B * T * D));
    topos_tensor_release(t);
    topos_run_free(run);
    topos_params_free(params);
    topos_network_free(net);
  }
  for (int i = 0; i < (T - 1) * D; ++i) CHECK_BITS_F64(out_a[i], out_b[i]);
  int changed = 0;
  for (int i = (T - 1) * D; i < T * D; ++i) changed += out_a[i] != out_b[i];
  CHECK(changed > 0);
  /* the first position attends to itself only: its output is Wo (Wv x0) */
}

TEST(nn_layer_argument_errors) {
  topos_tape *tape = NULL;
  topos_rng rng = topos_rng_seed(1);
  CHECK_OK(topos_tape_new(&tape));
  topos_attention att;
  CHECK_STATUS(topos_attention_new(tape, "a", 5, 2, TOPOS_F32, &rng, &att), TOPOS_ERR_SHAPE);
  topos_tape_free(tape);
  CHECK_OK(topos_tape_new(&tape));
  const int64_t xs[2] = {2, 3};
  const double x[6] = {0};
  topos_sym xc = tn_const(tape, TOPOS_F32, 2, xs, x);
  CHECK(!topos_sym_is_valid(topos_max_pool2d(tape, xc, 2, 2)));
  CHECK_STATUS(topos_tape_status(tape), TOPOS_ERR_SHAPE);
  CHECK(strstr(topos_tape_error(tape), "max_pool2d") != NULL);
  topos_tape_free(tape);
  CHECK_OK(topos_tape_new(&tape));
  topos_conv2d conv;
  CHECK_OK(topos_conv2d_new(tape, "c", 2, 3, 3, 1, 0, 1, TOPOS_F32, &rng, &conv));
  const int64_t is[4] = {1, 3, 5, 5}; /* 3 channels into a 2-channel conv */
  double img[75] = {0};
  CHECK(!topos_sym_is_valid(topos_conv2d_apply(tape, &conv, tn_const(tape, TOPOS_F32, 4, is, img))));
  CHECK(strstr(topos_tape_error(tape), "conv2d") != NULL);
  topos_tape_free(tape);
}
