/* Losses: cross-entropy from logits with class indices, mean squared error. */
#include <stdlib.h>

#include "nn/nn_internal.h"

topos_sym topos_cross_entropy(topos_tape *tape, topos_sym logits, topos_sym targets) {
  topos_tensor_desc dl, dt;
  if (!tp_nn_describe(tape, logits, "cross_entropy logits", &dl) ||
      !tp_nn_describe(tape, targets, "cross_entropy targets", &dt))
    return TOPOS_SYM_INVALID;
  if (dl.rank != 2 || dt.rank != 1 || dt.shape[0] != dl.shape[0] || dt.dtype != TOPOS_I32)
    return tp_nn_fail(tape, TOPOS_ERR_SHAPE,
                      "cross_entropy: needs logits [N,C] and i32 targets [N], got rank %d and "
                      "%s rank %d",
                      dl.rank, topos_dtype_name(dt.dtype), dt.rank);
  int64_t C = dl.shape[1];
  /* one-hot rows are gathered from an identity constant: targets are
   * shape-only operands of gather, so they never receive a gradient */
  topos_tensor *eye = NULL;
  int64_t eshape[2] = {C, C};
  topos_status s = topos_tensor_zeros(dl.dtype, 2, eshape, &eye);
  for (int64_t i = 0; s == TOPOS_OK && i < C; ++i) {
    int64_t at[2] = {i, i};
    s = topos_tensor_set(eye, at, 1.0);
  }
  if (s != TOPOS_OK) {
    topos_tensor_release(eye);
    return tp_nn_fail(tape, s, "cross_entropy: %s", topos_last_error());
  }
  topos_sym identity = topos_tape_constant(tape, eye);
  topos_tensor_release(eye);
  topos_sym onehot = topos_tape_gather(tape, identity, targets);
  topos_sym picked = topos_tape_sum(tape, topos_tape_mul(tape, onehot,
                                                         topos_tape_log_softmax(tape, logits, 1)));
  topos_sym rows = topos_tape_scalar(tape, dl.dtype, (double)dl.shape[0]);
  return topos_tape_neg(tape, topos_tape_div(tape, picked, rows));
}

topos_sym topos_mse(topos_tape *tape, topos_sym prediction, topos_sym target) {
  topos_sym diff = topos_tape_sub(tape, prediction, target);
  return topos_tape_mean(tape, topos_tape_mul(tape, diff, diff));
}
