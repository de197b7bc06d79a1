/* Causal multi-head self-attention over [B,T,D], composed of Linear,
 * reshape/permute views, batched matmul and a softmax with an additive
 * causal mask constant. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "nn/nn_internal.h"

topos_status topos_attention_new(topos_tape *tape, const char *name, int64_t dim, int64_t heads,
                                 topos_dtype dtype, topos_rng *rng, topos_attention *layer) {
  if (!tape || !layer || !rng) return TOPOS_ERR_INVALID_ARGUMENT;
  layer->heads = heads;
  if (dim <= 0 || heads <= 0 || dim % heads != 0) {
    tp_nn_fail(tape, TOPOS_ERR_SHAPE,
               "attention: dim %lld is not a positive multiple of %lld heads", (long long)dim,
               (long long)heads);
    return topos_tape_status(tape);
  }
  static const char *parts[4] = {"query", "key", "value", "output"};
  topos_linear *slots[4] = {&layer->query, &layer->key, &layer->value, &layer->output};
  for (int i = 0; i < 4; ++i) {
    char sub[256];
    const char *prefix = NULL;
    if (name) {
      snprintf(sub, sizeof sub, "%s.%s", name, parts[i]);
      prefix = sub;
    }
    topos_status s = topos_linear_new(tape, prefix, dim, dim, 0, dtype, rng, slots[i]);
    if (s != TOPOS_OK) return s;
  }
  return topos_tape_status(tape);
}

/* [B,T,D] -> [B,H,T,D/H] */
static topos_sym tp_split_heads(topos_tape *tape, topos_sym x, const int64_t shape[4]) {
  static const int order[4] = {0, 2, 1, 3};
  return topos_tape_permute(tape, topos_tape_reshape(tape, x, 4, shape), order);
}

topos_sym topos_attention_apply(topos_tape *tape, const topos_attention *layer, topos_sym x) {
  topos_tensor_desc d;
  if (!layer) return tp_nn_fail(tape, TOPOS_ERR_INVALID_ARGUMENT, "attention: no layer");
  if (!tp_nn_describe(tape, x, "attention input", &d)) return TOPOS_SYM_INVALID;
  if (d.rank != 3 || d.shape[2] % layer->heads != 0)
    return tp_nn_fail(tape, TOPOS_ERR_SHAPE, "attention: input must be [B,T,D] with D %% %lld == 0",
                      (long long)layer->heads);
  int64_t B = d.shape[0], T = d.shape[1], D = d.shape[2], H = layer->heads, hd = D / H;
  int64_t split[4] = {B, T, H, hd};
  topos_sym q = tp_split_heads(tape, topos_linear_apply(tape, &layer->query, x), split);
  topos_sym k = tp_split_heads(tape, topos_linear_apply(tape, &layer->key, x), split);
  topos_sym v = tp_split_heads(tape, topos_linear_apply(tape, &layer->value, x), split);
  topos_sym scores = topos_tape_matmul(tape, q, topos_tape_transpose(tape, k)); /* [B,H,T,T] */
  topos_tensor_desc ds;
  if (!tp_nn_describe(tape, scores, "attention scores", &ds)) return TOPOS_SYM_INVALID;
  scores = topos_tape_mul(tape, scores, tp_nn_filled(tape, &ds, 1.0 / sqrt((double)hd)));
  /* causal mask [T,T]: 0 on and below the diagonal, -inf above */
  double *mask = calloc((size_t)(T * T), sizeof *mask);
  if (!mask) return tp_nn_fail(tape, TOPOS_ERR_OUT_OF_MEMORY, "attention: mask of %lld",
                               (long long)(T * T));
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = i + 1; j < T; ++j) mask[i * T + j] = -INFINITY;
  topos_tensor *mask_tensor = NULL;
  int64_t mshape[2] = {T, T};
  topos_status s = topos_tensor_from_f64(d.dtype, 2, mshape, mask, &mask_tensor);
  free(mask);
  if (s != TOPOS_OK) return tp_nn_fail(tape, s, "attention: %s", topos_last_error());
  topos_sym mask_sym = topos_tape_constant(tape, mask_tensor);
  topos_tensor_release(mask_tensor);
  scores = topos_tape_add(tape, scores, topos_tape_broadcast_to(tape, mask_sym, 4, ds.shape));
  topos_sym weights = topos_tape_softmax(tape, scores, 3);
  topos_sym mixed = topos_tape_matmul(tape, weights, v); /* [B,H,T,hd] */
  static const int order[4] = {0, 2, 1, 3};
  int64_t joined[3] = {B, T, D};
  mixed = topos_tape_reshape(tape, topos_tape_permute(tape, mixed, order), 3, joined);
  return topos_linear_apply(tape, &layer->output, mixed);
}
