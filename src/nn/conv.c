/* Convolution and pooling over [B,C,H,W], composed of views and one matmul:
 * the formulas the plan's fused kernels must reproduce bit for bit. */
#include <math.h>

#include "nn/nn_internal.h"

topos_status topos_conv2d_new(topos_tape *tape, const char *name, int64_t in_channels,
                              int64_t out_channels, int64_t kernel, int64_t stride,
                              int64_t padding, int with_bias, topos_dtype dtype, topos_rng *rng,
                              topos_conv2d *layer) {
  if (!tape || !layer || !rng) return TOPOS_ERR_INVALID_ARGUMENT;
  layer->weight = layer->bias = TOPOS_SYM_INVALID;
  layer->stride = stride;
  layer->padding = padding;
  if (in_channels <= 0 || out_channels <= 0 || kernel <= 0 || stride <= 0 || padding < 0) {
    tp_nn_fail(tape, TOPOS_ERR_SHAPE,
               "conv2d: channels %lld->%lld, kernel %lld, stride %lld, padding %lld are invalid",
               (long long)in_channels, (long long)out_channels, (long long)kernel,
               (long long)stride, (long long)padding);
    return topos_tape_status(tape);
  }
  double bound = 1.0 / sqrt((double)(in_channels * kernel * kernel));
  int64_t wshape[4] = {out_channels, in_channels, kernel, kernel};
  topos_tensor *w = NULL, *b = NULL;
  topos_status s = topos_init_uniform(rng, dtype, 4, wshape, -bound, bound, &w);
  if (s != TOPOS_OK) return tp_nn_status(tape, s);
  layer->weight = tp_nn_parameter(tape, name, "weight", w);
  if (with_bias) {
    s = topos_init_uniform(rng, dtype, 1, &out_channels, -bound, bound, &b);
    if (s != TOPOS_OK) return tp_nn_status(tape, s);
    layer->bias = tp_nn_parameter(tape, name, "bias", b);
  }
  return topos_tape_status(tape);
}

topos_sym topos_conv2d_apply(topos_tape *tape, const topos_conv2d *layer, topos_sym x) {
  if (!layer) return tp_nn_fail(tape, TOPOS_ERR_INVALID_ARGUMENT, "conv2d: no layer");
  return topos_conv2d_of(tape, x, layer->weight, layer->bias, layer->stride, layer->padding);
}

topos_sym topos_conv2d_of(topos_tape *tape, topos_sym x, topos_sym weight, topos_sym bias,
                             int64_t stride, int64_t padding) {
  topos_tensor_desc dx, dw;
  if (!tp_nn_describe(tape, x, "conv2d input", &dx) ||
      !tp_nn_describe(tape, weight, "conv2d weight", &dw))
    return TOPOS_SYM_INVALID;
  if (dx.rank != 4 || dw.rank != 4 || dx.shape[1] != dw.shape[1])
    return tp_nn_fail(tape, TOPOS_ERR_SHAPE,
                      "conv2d: input [B,C,H,W] and weight [F,C,KH,KW] needed, got rank %d and "
                      "rank %d with channels %lld vs %lld",
                      dx.rank, dw.rank, (long long)(dx.rank > 1 ? dx.shape[1] : 0),
                      (long long)(dw.rank > 1 ? dw.shape[1] : 0));
  if (stride <= 0 || padding < 0)
    return tp_nn_fail(tape, TOPOS_ERR_INVALID_ARGUMENT, "conv2d: stride %lld, padding %lld",
                      (long long)stride, (long long)padding);
  int64_t B = dx.shape[0], C = dx.shape[1], H = dx.shape[2], W = dx.shape[3];
  int64_t F = dw.shape[0], KH = dw.shape[2], KW = dw.shape[3];
  int64_t PH = H + 2 * padding, PW = W + 2 * padding;
  if (PH < KH || PW < KW)
    return tp_nn_fail(tape, TOPOS_ERR_SHAPE,
                      "conv2d: kernel %lldx%lld larger than the padded input %lldx%lld",
                      (long long)KH, (long long)KW, (long long)PH, (long long)PW);
  int64_t OH = (PH - KH) / stride + 1, OW = (PW - KW) / stride + 1;
  topos_sym p = x;
  if (padding > 0) {
    p = topos_tape_pad(tape, p, 2, padding, PH);
    p = topos_tape_pad(tape, p, 3, padding, PW);
  }
  topos_sym windows = topos_tape_unfold(tape, p, 2, KH, stride, 1); /* [B,C,OH,KH,PW] */
  windows = topos_tape_unfold(tape, windows, 4, KW, stride, 1);     /* [B,C,OH,KH,OW,KW] */
  static const int patch_order[6] = {0, 2, 4, 1, 3, 5};             /* [B,OH,OW,C,KH,KW] */
  topos_sym patches = topos_tape_permute(tape, windows, patch_order);
  int64_t pshape[2] = {B * OH * OW, C * KH * KW};
  patches = topos_tape_reshape(tape, patches, 2, pshape);
  static const int kernel_order[4] = {1, 2, 3, 0}; /* [C,KH,KW,F] */
  int64_t kshape[2] = {C * KH * KW, F};
  topos_sym kernel =
      topos_tape_reshape(tape, topos_tape_permute(tape, weight, kernel_order), 2, kshape);
  topos_sym y = topos_tape_matmul(tape, patches, kernel); /* [B*OH*OW, F] */
  if (topos_sym_is_valid(bias))
    y = topos_tape_add(tape, y, topos_tape_broadcast_along(tape, bias, 0, B * OH * OW));
  int64_t yshape[4] = {B, OH, OW, F};
  y = topos_tape_reshape(tape, y, 4, yshape);
  static const int back_order[4] = {0, 3, 1, 2};
  return topos_tape_permute(tape, y, back_order);
}

/* [B,C,H,W] -> lanes [B,C,OH,OW,size*size] in row-major window order. */
static topos_sym tp_pool_lanes(topos_tape *tape, topos_sym x, int64_t size, int64_t stride,
                               const char *what, int64_t out_shape[4]) {
  topos_tensor_desc d;
  if (!tp_nn_describe(tape, x, what, &d)) return TOPOS_SYM_INVALID;
  if (d.rank != 4 || size <= 0 || stride <= 0 || d.shape[2] < size || d.shape[3] < size)
    return tp_nn_fail(tape, TOPOS_ERR_SHAPE,
                      "%s: needs [B,C,H,W] with H,W >= size, got rank %d, size %lld, stride %lld",
                      what, d.rank, (long long)size, (long long)stride);
  int64_t OH = (d.shape[2] - size) / stride + 1, OW = (d.shape[3] - size) / stride + 1;
  topos_sym w = topos_tape_unfold(tape, x, 2, size, stride, 1); /* [B,C,OH,s,W] */
  w = topos_tape_unfold(tape, w, 4, size, stride, 1);           /* [B,C,OH,s,OW,s] */
  static const int order[6] = {0, 1, 2, 4, 3, 5};              /* [B,C,OH,OW,s,s] */
  w = topos_tape_permute(tape, w, order);
  int64_t lanes[5] = {d.shape[0], d.shape[1], OH, OW, size * size};
  out_shape[0] = d.shape[0];
  out_shape[1] = d.shape[1];
  out_shape[2] = OH;
  out_shape[3] = OW;
  return topos_tape_reshape(tape, w, 5, lanes);
}

topos_sym topos_max_pool2d(topos_tape *tape, topos_sym x, int64_t size, int64_t stride) {
  int64_t shape[4];
  topos_sym lanes = tp_pool_lanes(tape, x, size, stride, "max_pool2d", shape);
  if (!topos_sym_is_valid(lanes)) return lanes;
  topos_sym m = topos_tape_narrow(tape, lanes, 4, 0, 1);
  for (int64_t k = 1; k < size * size; ++k)
    m = topos_tape_maximum(tape, m, topos_tape_narrow(tape, lanes, 4, k, 1));
  return topos_tape_reshape(tape, m, 4, shape);
}

topos_sym topos_avg_pool2d(topos_tape *tape, topos_sym x, int64_t size, int64_t stride) {
  int64_t shape[4];
  topos_sym lanes = tp_pool_lanes(tape, x, size, stride, "avg_pool2d", shape);
  if (!topos_sym_is_valid(lanes)) return lanes;
  topos_sym total = topos_tape_sum_along(tape, lanes, 4);
  topos_tensor_desc d;
  if (!tp_nn_describe(tape, total, "avg_pool2d", &d)) return TOPOS_SYM_INVALID;
  return topos_tape_div(tape, total, tp_nn_filled(tape, &d, (double)(size * size)));
}
