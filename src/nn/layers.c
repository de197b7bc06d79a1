/* Dense layers: activations, Linear, Embedding, Dropout. */
#include <math.h>
#include <string.h>

#include "base/error.h"
#include "nn/nn_internal.h"

topos_sym topos_nn_activate(topos_tape *tape, topos_activation kind, topos_sym x) {
  switch (kind) {
    case TOPOS_ACT_IDENTITY: return x;
    case TOPOS_ACT_RELU: return topos_tape_relu(tape, x);
    case TOPOS_ACT_TANH: return topos_tape_tanh(tape, x);
    case TOPOS_ACT_SIGMOID: return topos_tape_sigmoid(tape, x);
    case TOPOS_ACT_SILU: return topos_tape_silu(tape, x);
    case TOPOS_ACT_GELU: return topos_tape_gelu(tape, x);
  }
  return tp_nn_fail(tape, TOPOS_ERR_INVALID_ARGUMENT, "activate: unknown activation %d",
                    (int)kind);
}

topos_status topos_linear_new(topos_tape *tape, const char *name, int64_t in, int64_t out,
                              int with_bias, topos_dtype dtype, topos_rng *rng,
                              topos_linear *layer) {
  if (!tape || !layer || !rng) return TOPOS_ERR_INVALID_ARGUMENT;
  layer->weight = layer->bias = TOPOS_SYM_INVALID;
  if (in <= 0 || out <= 0) {
    tp_nn_fail(tape, TOPOS_ERR_SHAPE, "linear: extents in=%lld out=%lld must be positive",
               (long long)in, (long long)out);
    return topos_tape_status(tape);
  }
  double bound = 1.0 / sqrt((double)in);
  topos_tensor *w = NULL, *b = NULL;
  int64_t wshape[2] = {in, out};
  topos_status s = topos_init_uniform(rng, dtype, 2, wshape, -bound, bound, &w);
  if (s != TOPOS_OK) return tp_nn_status(tape, s);
  layer->weight = tp_nn_parameter(tape, name, "weight", w);
  if (with_bias) {
    s = topos_init_uniform(rng, dtype, 1, &out, -bound, bound, &b);
    if (s != TOPOS_OK) return tp_nn_status(tape, s);
    layer->bias = tp_nn_parameter(tape, name, "bias", b);
  }
  return topos_tape_status(tape);
}

topos_sym topos_linear_apply(topos_tape *tape, const topos_linear *layer, topos_sym x) {
  topos_tensor_desc dx, dw;
  if (!layer) return tp_nn_fail(tape, TOPOS_ERR_INVALID_ARGUMENT, "linear: no layer");
  if (!tp_nn_describe(tape, x, "linear input", &dx) ||
      !tp_nn_describe(tape, layer->weight, "linear weight", &dw))
    return TOPOS_SYM_INVALID;
  if (dx.rank < 2)
    return tp_nn_fail(tape, TOPOS_ERR_SHAPE, "linear: input of rank %d (needs [N,in])", dx.rank);
  topos_sym flat = x;
  int64_t rows = 1;
  for (int i = 0; i + 1 < dx.rank; ++i) rows *= dx.shape[i];
  if (dx.rank > 2) {
    int64_t shape[2] = {rows, dx.shape[dx.rank - 1]};
    flat = topos_tape_reshape(tape, x, 2, shape);
  }
  topos_sym y = topos_tape_matmul(tape, flat, layer->weight);
  if (topos_sym_is_valid(layer->bias))
    y = topos_tape_add(tape, y, topos_tape_broadcast_along(tape, layer->bias, 0, rows));
  if (dx.rank > 2) {
    int64_t shape[TOPOS_MAX_RANK];
    memcpy(shape, dx.shape, sizeof shape);
    shape[dx.rank - 1] = dw.shape[1];
    y = topos_tape_reshape(tape, y, dx.rank, shape);
  }
  return y;
}

topos_status topos_embedding_new(topos_tape *tape, const char *name, int64_t count, int64_t dim,
                                 topos_dtype dtype, topos_rng *rng, topos_embedding *layer) {
  if (!tape || !layer || !rng) return TOPOS_ERR_INVALID_ARGUMENT;
  layer->table = TOPOS_SYM_INVALID;
  topos_tensor *t = NULL;
  int64_t shape[2] = {count, dim};
  topos_status s = topos_init_normal(rng, dtype, 2, shape, 0.0, 1.0, &t);
  if (s != TOPOS_OK) return tp_nn_status(tape, s);
  layer->table = tp_nn_parameter(tape, name, "weight", t);
  return topos_tape_status(tape);
}

topos_sym topos_embedding_apply(topos_tape *tape, const topos_embedding *layer, topos_sym indices) {
  if (!layer) return tp_nn_fail(tape, TOPOS_ERR_INVALID_ARGUMENT, "embedding: no layer");
  return topos_tape_gather(tape, layer->table, indices);
}

topos_sym topos_dropout(topos_tape *tape, const char *mask_name, topos_sym x,
                        topos_sym *mask_input) {
  topos_tensor_desc d;
  if (mask_input) *mask_input = TOPOS_SYM_INVALID;
  if (!tp_nn_describe(tape, x, "dropout", &d)) return TOPOS_SYM_INVALID;
  topos_tensor *ones = NULL;
  topos_status s = topos_tensor_full(d.dtype, d.rank, d.shape, 1.0, &ones);
  if (s != TOPOS_OK) return tp_nn_fail(tape, s, "dropout: %s", topos_last_error());
  topos_sym mask = topos_tape_input(tape, ones, mask_name);
  topos_tensor_release(ones);
  if (mask_input) *mask_input = mask;
  return topos_tape_mul(tape, x, mask);
}

topos_status topos_dropout_mask(topos_rng *rng, double keep, topos_dtype dtype, int rank,
                                const int64_t *shape, topos_tensor **out) {
  if (out) *out = NULL;
  if (!(keep > 0.0 && keep <= 1.0))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "dropout_mask: keep %g is outside (0, 1]", keep);
  /* draw units into the tensor, then map each to 1/keep or 0 */
  topos_status s = topos_init_uniform(rng, TOPOS_F64, rank, shape, 0.0, 1.0, out);
  if (s != TOPOS_OK) return s;
  double *v = topos_tensor_data_mut(*out);
  int64_t n = topos_tensor_volume(*out);
  for (int64_t i = 0; i < n; ++i) v[i] = v[i] < keep ? 1.0 / keep : 0.0;
  if (dtype == TOPOS_F64) return TOPOS_OK;
  topos_tensor *converted = NULL;
  s = topos_tensor_convert(*out, dtype, &converted);
  topos_tensor_release(*out);
  *out = converted;
  return s;
}
