/* Composites: built only from the public recording API (topos/graph.h), with
 * no access to the tape's internals, so user layers can do the same. Each
 * composite's gradient follows from its primitives' rules. */
#include <stdio.h>
#include <string.h>

#include "topos/graph.h"

/* The operand's descriptor; a bad operand becomes the tape's sticky error. */
static int describe(topos_tape *tape, topos_sym x, const char *what, topos_tensor_desc *desc) {
  if (topos_tape_status(tape) != TOPOS_OK) return 0;
  topos_status s = topos_tape_describe(tape, x, desc);
  if (s == TOPOS_OK) return 1;
  char message[600];
  snprintf(message, sizeof message, "%s: %s", what, topos_last_error());
  topos_tape_fail(tape, s, message);
  return 0;
}

static topos_sym fail(topos_tape *tape, topos_status status, const char *message) {
  topos_tape_fail(tape, status, message);
  return TOPOS_SYM_INVALID;
}

static topos_sym filled(topos_tape *tape, const topos_tensor_desc *like, double value) {
  topos_sym s = topos_tape_scalar(tape, like->dtype, value);
  return like->rank > 0 ? topos_tape_broadcast(tape, s, like->rank, like->shape) : s;
}

topos_sym topos_tape_fill_like(topos_tape *tape, topos_sym like, double value) {
  topos_tensor_desc d;
  if (!describe(tape, like, "fill_like", &d)) return TOPOS_SYM_INVALID;
  return filled(tape, &d, value);
}

topos_sym topos_tape_softmax(topos_tape *tape, topos_sym a, int axis) {
  return topos_tape_exp(tape, topos_tape_log_softmax(tape, a, axis));
}

topos_sym topos_tape_mean(topos_tape *tape, topos_sym a) {
  topos_tensor_desc d;
  if (!describe(tape, a, "mean", &d)) return TOPOS_SYM_INVALID;
  double count = 1;
  for (int i = 0; i < d.rank; ++i) count *= (double)d.shape[i];
  return topos_tape_div(tape, topos_tape_sum(tape, a), topos_tape_scalar(tape, d.dtype, count));
}

topos_sym topos_tape_mean_along(topos_tape *tape, topos_sym a, int axis) {
  topos_tensor_desc d, r;
  if (!describe(tape, a, "mean_along", &d)) return TOPOS_SYM_INVALID;
  topos_sym total = topos_tape_sum_along(tape, a, axis);
  if (!describe(tape, total, "mean_along", &r)) return TOPOS_SYM_INVALID;
  return topos_tape_div(tape, total, filled(tape, &r, (double)d.shape[axis]));
}

topos_sym topos_tape_variance_along(topos_tape *tape, topos_sym a, int axis) {
  topos_tensor_desc d;
  if (!describe(tape, a, "variance_along", &d)) return TOPOS_SYM_INVALID;
  topos_sym mean = topos_tape_mean_along(tape, a, axis);
  if (!topos_sym_is_valid(mean)) return mean;
  topos_sym centered =
      topos_tape_sub(tape, a, topos_tape_broadcast_along(tape, mean, axis, d.shape[axis]));
  return topos_tape_mean_along(tape, topos_tape_mul(tape, centered, centered), axis);
}

topos_sym topos_tape_broadcast_to(topos_tape *tape, topos_sym a, int rank, const int64_t *shape) {
  topos_tensor_desc d;
  char message[256];
  if (!describe(tape, a, "broadcast_to", &d)) return TOPOS_SYM_INVALID;
  if (rank < d.rank || rank > TOPOS_MAX_RANK || (rank > 0 && !shape)) {
    snprintf(message, sizeof message, "broadcast_to: cannot broadcast rank %d to rank %d", d.rank,
             rank);
    return fail(tape, TOPOS_ERR_SHAPE, message);
  }
  int lead = rank - d.rank;
  int64_t volume = 1;
  int same = rank == d.rank;
  for (int i = 0; i < d.rank; ++i) {
    volume *= d.shape[i];
    if (d.shape[i] != 1 && d.shape[i] != shape[lead + i]) {
      snprintf(message, sizeof message, "broadcast_to: axis %d has extent %lld, target %lld "
               "(must be equal or 1)", i, (long long)d.shape[i], (long long)shape[lead + i]);
      return fail(tape, TOPOS_ERR_SHAPE, message);
    }
    if (d.shape[i] != shape[lead + i]) same = 0;
  }
  if (same) return a;
  if (volume == 1) return topos_tape_broadcast(tape, a, rank, shape);
  /* keep the axes that already match, drop the unit ones that spread, then
   * insert every spread axis in increasing target order */
  int kept_target[TOPOS_MAX_RANK] = {0};
  int64_t kept_shape[TOPOS_MAX_RANK];
  int n_kept = 0;
  for (int i = 0; i < d.rank; ++i) {
    if (d.shape[i] == shape[lead + i]) {
      kept_target[lead + i] = 1;
      kept_shape[n_kept++] = d.shape[i];
    }
  }
  topos_sym x = n_kept == d.rank ? a : topos_tape_reshape(tape, a, n_kept, kept_shape);
  for (int t = 0; t < rank; ++t)
    if (!kept_target[t]) x = topos_tape_broadcast_along(tape, x, t, shape[t]);
  return x;
}

topos_sym topos_tape_concat(topos_tape *tape, size_t count, const topos_sym *parts, int axis) {
  if (!tape) return TOPOS_SYM_INVALID;
  if (count == 0 || !parts) return fail(tape, TOPOS_ERR_INVALID_ARGUMENT, "concat: no parts");
  topos_tensor_desc first, d;
  if (!describe(tape, parts[0], "concat", &first)) return TOPOS_SYM_INVALID;
  if (axis < 0 || axis >= first.rank) {
    char message[96];
    snprintf(message, sizeof message, "concat: axis %d out of range for rank %d", axis, first.rank);
    return fail(tape, TOPOS_ERR_RANGE, message);
  }
  int64_t total = 0;
  for (size_t k = 0; k < count; ++k) {
    if (!describe(tape, parts[k], "concat", &d)) return TOPOS_SYM_INVALID;
    if (d.rank != first.rank) return fail(tape, TOPOS_ERR_SHAPE, "concat: parts differ in rank");
    total += d.shape[axis];
  }
  if (count == 1) return parts[0];
  /* each part padded into the joined extent at its offset, then summed left to right */
  topos_sym joined = TOPOS_SYM_INVALID;
  int64_t offset = 0;
  for (size_t k = 0; k < count; ++k) {
    topos_tape_describe(tape, parts[k], &d);
    topos_sym placed = topos_tape_pad(tape, parts[k], axis, offset, total);
    joined = k == 0 ? placed : topos_tape_add(tape, joined, placed);
    offset += d.shape[axis];
  }
  return joined;
}

topos_sym topos_tape_squeeze(topos_tape *tape, topos_sym a, int axis) {
  topos_tensor_desc d;
  if (!describe(tape, a, "squeeze", &d)) return TOPOS_SYM_INVALID;
  if (axis < 0 || axis >= d.rank || d.shape[axis] != 1) {
    char message[128];
    snprintf(message, sizeof message, "squeeze: axis %d is not a unit axis of a rank-%d tensor",
             axis, d.rank);
    return fail(tape, TOPOS_ERR_SHAPE, message);
  }
  int64_t shape[TOPOS_MAX_RANK];
  int n = 0;
  for (int i = 0; i < d.rank; ++i)
    if (i != axis) shape[n++] = d.shape[i];
  return topos_tape_reshape(tape, a, n, shape);
}

topos_sym topos_tape_unsqueeze(topos_tape *tape, topos_sym a, int axis) {
  topos_tensor_desc d;
  if (!describe(tape, a, "unsqueeze", &d)) return TOPOS_SYM_INVALID;
  if (axis < 0 || axis > d.rank || d.rank >= TOPOS_MAX_RANK) {
    char message[128];
    snprintf(message, sizeof message, "unsqueeze: axis %d out of range for rank %d", axis, d.rank);
    return fail(tape, TOPOS_ERR_RANGE, message);
  }
  int64_t shape[TOPOS_MAX_RANK];
  int n = 0;
  for (int i = 0; i <= d.rank; ++i) {
    if (i == axis) shape[n++] = 1;
    if (i < d.rank) shape[n++] = d.shape[i];
  }
  return topos_tape_reshape(tape, a, n, shape);
}

topos_sym topos_tape_abs(topos_tape *tape, topos_sym a) {
  return topos_tape_maximum(tape, a, topos_tape_neg(tape, a));
}

/* 1 / (1 + exp(-x)) */
topos_sym topos_tape_sigmoid(topos_tape *tape, topos_sym a) {
  topos_sym one = topos_tape_fill_like(tape, a, 1.0);
  return topos_tape_div(tape, one,
                        topos_tape_add(tape, one, topos_tape_exp(tape, topos_tape_neg(tape, a))));
}

topos_sym topos_tape_silu(topos_tape *tape, topos_sym a) {
  return topos_tape_mul(tape, a, topos_tape_sigmoid(tape, a));
}

topos_sym topos_tape_gelu(topos_tape *tape, topos_sym a) {
  topos_tensor_desc d;
  if (!describe(tape, a, "gelu", &d)) return TOPOS_SYM_INVALID;
  const double sqrt_2_over_pi = 0.79788456080286535587989211986876;
  topos_sym cube = topos_tape_mul(tape, topos_tape_mul(tape, a, a), a);
  topos_sym inner = topos_tape_add(tape, a, topos_tape_mul(tape, filled(tape, &d, 0.044715), cube));
  topos_sym t = topos_tape_tanh(tape, topos_tape_mul(tape, filled(tape, &d, sqrt_2_over_pi), inner));
  topos_sym half_x = topos_tape_mul(tape, filled(tape, &d, 0.5), a);
  return topos_tape_mul(tape, half_x, topos_tape_add(tape, filled(tape, &d, 1.0), t));
}
