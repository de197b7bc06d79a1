/* Views: new handles over the same storage with another layout. Nothing here
 * copies except reshape of a layout that cannot be viewed (see tensor.h). */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tensor/tensor_internal.h"

#define TP_SHAPE(t, buf) tp_shape_string((t)->rank, (t)->shape, buf, sizeof buf)

static topos_status tp_view_args(const char *fn, const topos_tensor *t, topos_tensor **out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "%s: NULL out", fn);
  *out = NULL;
  if (!t) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "%s: NULL tensor", fn);
  return TOPOS_OK;
}

static topos_status tp_check_axis(const char *fn, const topos_tensor *t, int axis) {
  char text[128];
  if (axis < 0 || axis >= t->rank)
    return tp_fail(TOPOS_ERR_RANGE, "%s: axis %d out of range for shape %s (rank %d)", fn, axis,
                   TP_SHAPE(t, text), t->rank);
  return TOPOS_OK;
}

/* Block-quantized tensors keep their last axis contiguous in whole blocks. */
static topos_status tp_check_block_axis(const char *fn, const topos_tensor *t, int axis) {
  char text[128];
  if (topos_dtype_is_quantized(t->dtype) && axis == t->rank - 1)
    return tp_fail(TOPOS_ERR_DTYPE,
                   "%s: the last axis of %s tensor %s holds packed blocks and cannot be "
                   "re-laid; dequantize first",
                   fn, topos_dtype_name(t->dtype), TP_SHAPE(t, text));
  return TOPOS_OK;
}

/* ---- reshape */

/* Strides that show t's elements in row-major order under `shape`, without
 * copying; false if the layout does not allow it. Groups old and new non-unit
 * axes into runs of equal volume; each old run must be internally contiguous
 * (stride of an axis = stride of the next * its extent). */
static bool tp_reshape_strides(const topos_tensor *t, int rank, const int64_t *shape,
                               int64_t *strides) {
  int64_t od[TOPOS_MAX_RANK], os[TOPOS_MAX_RANK], nd[TOPOS_MAX_RANK], ns[TOPOS_MAX_RANK];
  int on = 0, nn = 0;
  for (int axis = 0; axis < t->rank; ++axis)
    if (t->shape[axis] != 1) od[on] = t->shape[axis], os[on++] = t->strides[axis];
  for (int axis = 0; axis < rank; ++axis)
    if (shape[axis] != 1) nd[nn++] = shape[axis];
  int oi = 0, ni = 0;
  while (oi < on && ni < nn) {
    int oj = oi + 1, nj = ni + 1;
    int64_t op = od[oi], np = nd[ni]; /* partial volumes never exceed the total */
    while (op != np) {
      if (np < op)
        np *= nd[nj++];
      else
        op *= od[oj++];
    }
    for (int k = oi; k < oj - 1; ++k)
      if (os[k] != od[k + 1] * os[k + 1]) return false;
    ns[nj - 1] = os[oj - 1];
    for (int k = nj - 1; k > ni; --k) ns[k - 1] = ns[k] * nd[k];
    oi = oj, ni = nj;
  }
  /* Unit axes get the stride a contiguous layout would give them. */
  int64_t next = 1;
  for (int axis = rank - 1, k = nn - 1; axis >= 0; --axis) {
    if (shape[axis] == 1) {
      strides[axis] = next;
    } else {
      strides[axis] = ns[k--];
      next = strides[axis] * shape[axis];
    }
  }
  return true;
}

topos_status topos_tensor_reshape(topos_tensor *t, int rank, const int64_t *shape,
                                  topos_tensor **out) {
  char from[128], to[128];
  TP_TRY(tp_view_args("reshape", t, out));
  if (rank < 0 || rank > TOPOS_MAX_RANK)
    return tp_fail(TOPOS_ERR_SHAPE, "reshape: rank %d outside 0..%d", rank, TOPOS_MAX_RANK);
  if (rank > 0 && !shape) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "reshape: NULL shape");
  int64_t resolved[TOPOS_MAX_RANK];
  int infer = -1;
  int64_t known = 1;
  for (int axis = 0; axis < rank; ++axis) {
    resolved[axis] = shape[axis];
    if (shape[axis] == -1 && infer < 0) {
      infer = axis;
      continue;
    }
    if (shape[axis] <= 0 || __builtin_mul_overflow(known, shape[axis], &known) ||
        known > t->volume)
      return tp_fail(TOPOS_ERR_SHAPE, "reshape: cannot reshape %s (volume %lld) into %s",
                     TP_SHAPE(t, from), (long long)t->volume,
                     tp_shape_string(rank, shape, to, sizeof to));
  }
  if (infer >= 0) resolved[infer] = t->volume / known;
  if ((infer >= 0 ? t->volume % known : t->volume - known) != 0)
    return tp_fail(TOPOS_ERR_SHAPE, "reshape: cannot reshape %s (volume %lld) into %s",
                   TP_SHAPE(t, from), (long long)t->volume,
                   tp_shape_string(rank, shape, to, sizeof to));
  int64_t strides[TOPOS_MAX_RANK];
  topos_status s;
  if (tp_reshape_strides(t, rank, resolved, strides)) {
    s = tp_tensor_view(t, rank, resolved, strides, t->offset, out);
  } else {
    /* The documented copy: the layout cannot show these elements in row-major order. */
    topos_tensor *copy;
    TP_TRY(topos_tensor_contiguous(t, 1, &copy));
    tp_contiguous_strides(rank, resolved, strides);
    s = tp_tensor_view(copy, rank, resolved, strides, copy->offset, out);
    topos_tensor_release(copy);
  }
  if (s != TOPOS_OK)
    return tp_fail_context(s, "reshape %s into %s", TP_SHAPE(t, from),
                           tp_shape_string(rank, resolved, to, sizeof to));
  return TOPOS_OK;
}

/* ---- permute, transpose */

topos_status topos_tensor_permute(topos_tensor *t, const int *order, topos_tensor **out) {
  char text[128], order_text[128];
  TP_TRY(tp_view_args("permute", t, out));
  if (t->rank > 0 && !order) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "permute: NULL order");
  int64_t order64[TOPOS_MAX_RANK], shape[TOPOS_MAX_RANK], strides[TOPOS_MAX_RANK];
  bool seen[TOPOS_MAX_RANK] = {false};
  bool valid = true;
  for (int i = 0; i < t->rank; ++i) {
    order64[i] = order[i];
    if (order[i] < 0 || order[i] >= t->rank || seen[order[i]])
      valid = false;
    else
      seen[order[i]] = true;
  }
  if (!valid)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "permute: order %s is not a permutation of the %d axes of shape %s",
                   tp_shape_string(t->rank, order64, order_text, sizeof order_text), t->rank,
                   TP_SHAPE(t, text));
  if (t->rank > 0 && order[t->rank - 1] != t->rank - 1)
    TP_TRY(tp_check_block_axis("permute", t, t->rank - 1));
  for (int i = 0; i < t->rank; ++i) {
    shape[i] = t->shape[order[i]];
    strides[i] = t->strides[order[i]];
  }
  return tp_tensor_view(t, t->rank, shape, strides, t->offset, out);
}

topos_status topos_tensor_transpose(topos_tensor *t, topos_tensor **out) {
  TP_TRY(tp_view_args("transpose", t, out));
  int order[TOPOS_MAX_RANK];
  for (int i = 0; i < t->rank; ++i) order[i] = i;
  if (t->rank >= 2) {
    order[t->rank - 2] = t->rank - 1;
    order[t->rank - 1] = t->rank - 2;
    TP_TRY(tp_check_block_axis("transpose", t, t->rank - 1));
  }
  return topos_tensor_permute(t, order, out);
}

/* ---- narrow */

topos_status topos_tensor_narrow(topos_tensor *t, int axis, int64_t start, int64_t length,
                                 topos_tensor **out) {
  char text[128];
  TP_TRY(tp_view_args("narrow", t, out));
  TP_TRY(tp_check_axis("narrow", t, axis));
  int64_t extent = t->shape[axis];
  if (length <= 0 || start < 0 || start > extent - length)
    return tp_fail(TOPOS_ERR_RANGE,
                   "narrow: window [%lld, %lld+%lld) exceeds extent %lld of axis %d in shape %s",
                   (long long)start, (long long)start, (long long)length, (long long)extent, axis,
                   TP_SHAPE(t, text));
  if (topos_dtype_is_quantized(t->dtype) && axis == t->rank - 1) {
    int64_t block = topos_dtype_block_size(t->dtype);
    if (start % block != 0 || length % block != 0)
      return tp_fail(TOPOS_ERR_DTYPE,
                     "narrow: window [%lld, %lld+%lld) of the last axis of %s tensor %s is not "
                     "whole blocks of %lld",
                     (long long)start, (long long)start, (long long)length,
                     topos_dtype_name(t->dtype), TP_SHAPE(t, text), (long long)block);
  }
  int64_t shape[TOPOS_MAX_RANK];
  memcpy(shape, t->shape, sizeof shape);
  shape[axis] = length;
  /* start*stride stays inside the storage, which the original layout reaches. */
  return tp_tensor_view(t, t->rank, shape, t->strides, t->offset + start * t->strides[axis], out);
}

/* ---- broadcasts */

topos_status topos_tensor_broadcast_along(topos_tensor *t, int axis, int64_t count,
                                          topos_tensor **out) {
  char text[128];
  TP_TRY(tp_view_args("broadcast_along", t, out));
  if (t->rank >= TOPOS_MAX_RANK)
    return tp_fail(TOPOS_ERR_SHAPE, "broadcast_along: shape %s already has the maximum rank %d",
                   TP_SHAPE(t, text), TOPOS_MAX_RANK);
  if (axis < 0 || axis > t->rank)
    return tp_fail(TOPOS_ERR_RANGE, "broadcast_along: axis %d outside 0..%d for shape %s", axis,
                   t->rank, TP_SHAPE(t, text));
  if (count <= 0)
    return tp_fail(TOPOS_ERR_SHAPE, "broadcast_along: count %lld must be > 0 (shape %s)",
                   (long long)count, TP_SHAPE(t, text));
  if (axis == t->rank) TP_TRY(tp_check_block_axis("broadcast_along", t, t->rank - 1));
  int64_t shape[TOPOS_MAX_RANK], strides[TOPOS_MAX_RANK];
  for (int i = 0, j = 0; i <= t->rank; ++i) {
    if (i == axis) {
      shape[i] = count;
      strides[i] = 0;
    } else {
      shape[i] = t->shape[j];
      strides[i] = t->strides[j++];
    }
  }
  return tp_tensor_view(t, t->rank + 1, shape, strides, t->offset, out);
}

topos_status topos_tensor_broadcast(topos_tensor *t, int rank, const int64_t *shape,
                                    topos_tensor **out) {
  char text[128], to[128];
  TP_TRY(tp_view_args("broadcast", t, out));
  if (t->volume != 1)
    return tp_fail(TOPOS_ERR_SHAPE,
                   "broadcast: only a volume-1 tensor spreads to any shape; %s has volume %lld",
                   TP_SHAPE(t, text), (long long)t->volume);
  int64_t volume;
  topos_status s = tp_shape_volume(rank, shape, &volume);
  if (s != TOPOS_OK) return tp_fail_context(s, "broadcast %s", TP_SHAPE(t, text));
  int64_t strides[TOPOS_MAX_RANK] = {0};
  s = tp_tensor_view(t, rank, shape, strides, t->offset, out);
  if (s != TOPOS_OK)
    return tp_fail_context(s, "broadcast %s to %s", TP_SHAPE(t, text),
                           tp_shape_string(rank, shape, to, sizeof to));
  return TOPOS_OK;
}

/* ---- unfold */

topos_status topos_tensor_unfold(topos_tensor *t, int axis, int64_t size, int64_t step,
                                 int64_t dilation, topos_tensor **out) {
  char text[128];
  TP_TRY(tp_view_args("unfold", t, out));
  TP_TRY(tp_check_axis("unfold", t, axis));
  if (size < 1 || step < 1 || dilation < 1)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "unfold: size %lld, step %lld and dilation %lld must all be >= 1 (axis %d of "
                   "shape %s)",
                   (long long)size, (long long)step, (long long)dilation, axis, TP_SHAPE(t, text));
  if (t->rank >= TOPOS_MAX_RANK)
    return tp_fail(TOPOS_ERR_SHAPE, "unfold: shape %s already has the maximum rank %d",
                   TP_SHAPE(t, text), TOPOS_MAX_RANK);
  TP_TRY(tp_check_block_axis("unfold", t, axis));
  int64_t extent = t->shape[axis], span;
  if (__builtin_mul_overflow(dilation, size - 1, &span) || span >= extent)
    return tp_fail(TOPOS_ERR_RANGE,
                   "unfold: window of size %lld with dilation %lld spans more than extent %lld "
                   "of axis %d in shape %s",
                   (long long)size, (long long)dilation, (long long)extent, axis,
                   TP_SHAPE(t, text));
  span += 1;
  int64_t count = (extent - span) / step + 1;
  int64_t stride = t->strides[axis], count_stride, window_stride;
  /* Both products address elements the original axis reaches, except
   * step*stride when count == 1, where that stride is never used. */
  if (__builtin_mul_overflow(step, stride, &count_stride)) count_stride = stride;
  if (count == 1) count_stride = stride;
  /* dilation*(size-1) < extent, so this stays in reach unless size == 1 (unused). */
  window_stride = size == 1 ? stride : dilation * stride;
  int64_t shape[TOPOS_MAX_RANK], strides[TOPOS_MAX_RANK];
  for (int i = 0, j = 0; j < t->rank; ++j) {
    if (j == axis) {
      shape[i] = count, strides[i++] = count_stride;
      shape[i] = size, strides[i++] = window_stride;
    } else {
      shape[i] = t->shape[j], strides[i++] = t->strides[j];
    }
  }
  return tp_tensor_view(t, t->rank + 1, shape, strides, t->offset, out);
}
