/* Normalization layers: BatchNorm (batch statistics, or caller-held running
 * estimates), LayerNorm and RMSNorm along the last axis. */
#include "nn/nn_internal.h"

static topos_status tp_norm_params(topos_tape *tape, const char *name, int64_t features,
                                   topos_dtype dtype, int with_shift, topos_sym *scale,
                                   topos_sym *shift) {
  topos_tensor *ones = NULL, *zeros = NULL;
  *scale = TOPOS_SYM_INVALID;
  if (shift) *shift = TOPOS_SYM_INVALID;
  topos_status s = topos_tensor_full(dtype, 1, &features, 1.0, &ones);
  if (s != TOPOS_OK) return tp_nn_status(tape, s);
  *scale = tp_nn_parameter(tape, name, "scale", ones);
  if (with_shift) {
    s = topos_tensor_zeros(dtype, 1, &features, &zeros);
    if (s != TOPOS_OK) return tp_nn_status(tape, s);
    *shift = tp_nn_parameter(tape, name, "shift", zeros);
  }
  return topos_tape_status(tape);
}

topos_status topos_batch_norm_new(topos_tape *tape, const char *name, int64_t features, double eps,
                                  topos_dtype dtype, topos_batch_norm *layer) {
  if (!tape || !layer) return TOPOS_ERR_INVALID_ARGUMENT;
  layer->eps = eps;
  return tp_norm_params(tape, name, features, dtype, 1, &layer->scale, &layer->shift);
}

/* [N,C,H,W] -> [N*H*W, C] rows, or a rank-2 input as it is. */
static topos_sym tp_channels_last(topos_tape *tape, topos_sym x, const topos_tensor_desc *d) {
  if (d->rank == 2) return x;
  static const int order[4] = {0, 2, 3, 1};
  int64_t shape[2] = {d->shape[0] * d->shape[2] * d->shape[3], d->shape[1]};
  return topos_tape_reshape(tape, topos_tape_permute(tape, x, order), 2, shape);
}

static topos_sym tp_channels_first(topos_tape *tape, topos_sym rows, const topos_tensor_desc *d) {
  if (d->rank == 2) return rows;
  int64_t shape[4] = {d->shape[0], d->shape[2], d->shape[3], d->shape[1]};
  static const int order[4] = {0, 3, 1, 2};
  return topos_tape_permute(tape, topos_tape_reshape(tape, rows, 4, shape), order);
}

/* centered / sqrt(variance + eps) * scale + shift over rows [N,F]. */
static topos_sym tp_bn_tail(topos_tape *tape, const topos_batch_norm *layer, topos_sym centered,
                            topos_sym variance, int64_t rows) {
  topos_tensor_desc dv;
  if (!tp_nn_describe(tape, variance, "batch_norm variance", &dv)) return TOPOS_SYM_INVALID;
  topos_sym spread =
      topos_tape_sqrt(tape, topos_tape_add(tape, variance, tp_nn_filled(tape, &dv, layer->eps)));
  topos_sym y = topos_tape_div(tape, centered, topos_tape_broadcast_along(tape, spread, 0, rows));
  y = topos_tape_mul(tape, y, topos_tape_broadcast_along(tape, layer->scale, 0, rows));
  return topos_tape_add(tape, y, topos_tape_broadcast_along(tape, layer->shift, 0, rows));
}

static int tp_bn_check(topos_tape *tape, topos_sym x, topos_tensor_desc *d) {
  if (!tp_nn_describe(tape, x, "batch_norm input", d)) return 0;
  if (d->rank != 2 && d->rank != 4) {
    tp_nn_fail(tape, TOPOS_ERR_SHAPE, "batch_norm: input of rank %d (needs [N,F] or [N,C,H,W])",
               d->rank);
    return 0;
  }
  return 1;
}

topos_status topos_batch_norm_train(topos_tape *tape, const topos_batch_norm *layer, topos_sym x,
                                    topos_batch_norm_result *out) {
  topos_tensor_desc d;
  if (!tape || !layer || !out) return TOPOS_ERR_INVALID_ARGUMENT;
  out->output = out->mean = out->variance = TOPOS_SYM_INVALID;
  if (!tp_bn_check(tape, x, &d)) return topos_tape_status(tape);
  topos_sym rows = tp_channels_last(tape, x, &d);
  topos_tensor_desc dr;
  if (!tp_nn_describe(tape, rows, "batch_norm", &dr)) return topos_tape_status(tape);
  int64_t n = dr.shape[0];
  topos_sym mean = topos_tape_mean_along(tape, rows, 0);
  topos_sym centered = topos_tape_sub(tape, rows, topos_tape_broadcast_along(tape, mean, 0, n));
  topos_sym variance = topos_tape_mean_along(tape, topos_tape_mul(tape, centered, centered), 0);
  out->output = tp_channels_first(tape, tp_bn_tail(tape, layer, centered, variance, n), &d);
  out->mean = mean;
  out->variance = variance;
  return topos_tape_status(tape);
}

topos_sym topos_batch_norm_infer(topos_tape *tape, const topos_batch_norm *layer, topos_sym x,
                                 topos_sym mean, topos_sym variance) {
  topos_tensor_desc d, dr;
  if (!layer) return tp_nn_fail(tape, TOPOS_ERR_INVALID_ARGUMENT, "batch_norm: no layer");
  if (!tp_bn_check(tape, x, &d)) return TOPOS_SYM_INVALID;
  topos_sym rows = tp_channels_last(tape, x, &d);
  if (!tp_nn_describe(tape, rows, "batch_norm", &dr)) return TOPOS_SYM_INVALID;
  int64_t n = dr.shape[0];
  topos_sym centered = topos_tape_sub(tape, rows, topos_tape_broadcast_along(tape, mean, 0, n));
  return tp_channels_first(tape, tp_bn_tail(tape, layer, centered, variance, n), &d);
}

topos_status topos_layer_norm_new(topos_tape *tape, const char *name, int64_t features, double eps,
                                  topos_dtype dtype, topos_layer_norm *layer) {
  if (!tape || !layer) return TOPOS_ERR_INVALID_ARGUMENT;
  layer->eps = eps;
  return tp_norm_params(tape, name, features, dtype, 1, &layer->scale, &layer->shift);
}

topos_status topos_rms_norm_new(topos_tape *tape, const char *name, int64_t features, double eps,
                                topos_dtype dtype, topos_layer_norm *layer) {
  if (!tape || !layer) return TOPOS_ERR_INVALID_ARGUMENT;
  layer->eps = eps;
  return tp_norm_params(tape, name, features, dtype, 0, &layer->scale, &layer->shift);
}

/* Spreads a [D] parameter over x's leading axes. */
static topos_sym tp_spread_last(topos_tape *tape, topos_sym p, const topos_tensor_desc *d) {
  return topos_tape_broadcast_to(tape, p, d->rank, d->shape);
}

/* Spreads a statistic (x's shape without its last axis) back along it. */
static topos_sym tp_spread_stat(topos_tape *tape, topos_sym s, const topos_tensor_desc *d) {
  return topos_tape_broadcast_along(tape, s, d->rank - 1, d->shape[d->rank - 1]);
}

topos_sym topos_layer_norm_apply(topos_tape *tape, const topos_layer_norm *layer, topos_sym x) {
  topos_tensor_desc d, ds;
  if (!layer) return tp_nn_fail(tape, TOPOS_ERR_INVALID_ARGUMENT, "layer_norm: no layer");
  if (!tp_nn_describe(tape, x, "layer_norm input", &d)) return TOPOS_SYM_INVALID;
  if (d.rank < 2) return tp_nn_fail(tape, TOPOS_ERR_SHAPE, "layer_norm: input of rank %d", d.rank);
  int last = d.rank - 1;
  topos_sym mean = topos_tape_mean_along(tape, x, last);
  topos_sym centered = topos_tape_sub(tape, x, tp_spread_stat(tape, mean, &d));
  topos_sym variance = topos_tape_mean_along(tape, topos_tape_mul(tape, centered, centered), last);
  if (!tp_nn_describe(tape, variance, "layer_norm", &ds)) return TOPOS_SYM_INVALID;
  topos_sym spread =
      topos_tape_sqrt(tape, topos_tape_add(tape, variance, tp_nn_filled(tape, &ds, layer->eps)));
  topos_sym y = topos_tape_div(tape, centered, tp_spread_stat(tape, spread, &d));
  y = topos_tape_mul(tape, y, tp_spread_last(tape, layer->scale, &d));
  return topos_tape_add(tape, y, tp_spread_last(tape, layer->shift, &d));
}

topos_sym topos_rms_norm_apply(topos_tape *tape, const topos_layer_norm *layer, topos_sym x) {
  topos_tensor_desc d, ds;
  if (!layer) return tp_nn_fail(tape, TOPOS_ERR_INVALID_ARGUMENT, "rms_norm: no layer");
  if (!tp_nn_describe(tape, x, "rms_norm input", &d)) return TOPOS_SYM_INVALID;
  if (d.rank < 2) return tp_nn_fail(tape, TOPOS_ERR_SHAPE, "rms_norm: input of rank %d", d.rank);
  topos_sym power = topos_tape_mean_along(tape, topos_tape_mul(tape, x, x), d.rank - 1);
  if (!tp_nn_describe(tape, power, "rms_norm", &ds)) return TOPOS_SYM_INVALID;
  topos_sym rms =
      topos_tape_sqrt(tape, topos_tape_add(tape, power, tp_nn_filled(tape, &ds, layer->eps)));
  topos_sym y = topos_tape_div(tape, x, tp_spread_stat(tape, rms, &d));
  return topos_tape_mul(tape, y, tp_spread_last(tape, layer->scale, &d));
}
