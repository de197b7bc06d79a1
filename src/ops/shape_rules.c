/* The shape and dtype rule of every op (tp_shape_<name>). These run at
 * record time (topos_op_infer) and before every reference kernel, so the
 * kernels can assume well-formed operands.
 *
 * Dtype policy:
 *   - arithmetic (elementwise, matmul, reductions, fold, scatter, log_softmax,
 *     log_sum_exp) takes float dtypes only (f32, f64, bf16, f16); integer
 *     tensors have no arithmetic in topos (they are indices and views);
 *   - binary ops need equal dtypes (no promotion) and equal shapes (no
 *     implicit broadcast);
 *   - views, pad and gather (pure data movement) take every plain dtype;
 *   - block-quantized dtypes are refused by every op except views that keep
 *     the packed last axis intact (outer axes only): the quantized product
 *     and dequantization read them. */
#include <string.h>

#include "base/error.h"
#include "ops/op_table.h"
#include "tensor/tensor_internal.h"

/* A shape rendered for a message; the array lives until the end of the full
 * expression that called tp_str (C11 temporary lifetime). */
typedef struct tp_str_buf {
  char s[160];
} tp_str_buf;

static tp_str_buf tp_str(const topos_tensor_desc *d) {
  tp_str_buf b;
  tp_desc_string(d, b.s, sizeof b.s);
  return b;
}

static topos_status tp_set(topos_tensor_desc *out, topos_dtype dtype, int rank,
                           const int64_t *shape) {
  memset(out, 0, sizeof *out);
  out->dtype = dtype;
  out->rank = rank;
  for (int axis = 0; axis < rank; ++axis) out->shape[axis] = shape[axis];
  return TOPOS_OK;
}

static topos_status tp_need_float(const char *op, const topos_tensor_desc *d) {
  if (topos_dtype_is_float(d->dtype)) return TOPOS_OK;
  if (topos_dtype_is_quantized(d->dtype))
    return tp_fail(TOPOS_ERR_DTYPE,
                   "%s: operand %s of dtype %s is block-quantized; use the quantized product "
                   "or dequantize",
                   op, tp_str(d).s, topos_dtype_name(d->dtype));
  return tp_fail(TOPOS_ERR_DTYPE,
                 "%s: operand %s of dtype %s: integer tensors have no arithmetic (they serve "
                 "as indices and views)",
                 op, tp_str(d).s, topos_dtype_name(d->dtype));
}

static topos_status tp_need_plain(const char *op, const topos_tensor_desc *d) {
  if (!topos_dtype_is_quantized(d->dtype)) return TOPOS_OK;
  return tp_fail(TOPOS_ERR_DTYPE,
                 "%s: operand %s of dtype %s is block-quantized; use the quantized product or "
                 "dequantize",
                 op, tp_str(d).s, topos_dtype_name(d->dtype));
}

/* Quantized operands may be viewed only along outer axes. */
static topos_status tp_quant_outer(const char *op, const topos_tensor_desc *d, int keeps_last) {
  if (!topos_dtype_is_quantized(d->dtype) || keeps_last) return TOPOS_OK;
  return tp_fail(TOPOS_ERR_DTYPE,
                 "%s: operand %s of dtype %s is block-quantized: only outer axes can be viewed; "
                 "use the quantized product or dequantize",
                 op, tp_str(d).s, topos_dtype_name(d->dtype));
}

static topos_status tp_need_axis(const char *op, const topos_tensor_desc *d, int axis) {
  if (axis >= 0 && axis < d->rank) return TOPOS_OK;
  return tp_fail(TOPOS_ERR_SHAPE, "%s: axis %d outside 0..%d of operand %s", op, axis,
                 d->rank - 1, tp_str(d).s);
}

static int tp_same_shape(const topos_tensor_desc *a, const topos_tensor_desc *b) {
  if (a->rank != b->rank) return 0;
  for (int axis = 0; axis < a->rank; ++axis)
    if (a->shape[axis] != b->shape[axis]) return 0;
  return 1;
}

static int64_t tp_volume(const topos_tensor_desc *d) {
  int64_t v = 1;
  for (int axis = 0; axis < d->rank; ++axis) {
    if (d->shape[axis] > INT64_MAX / v) return -1;
    v *= d->shape[axis];
  }
  return v;
}

/* ---- elementwise */

static topos_status tp_shape_binary(const char *op, const topos_tensor_desc *in,
                                    topos_tensor_desc *out) {
  if (in[0].dtype != in[1].dtype)
    return tp_fail(TOPOS_ERR_DTYPE, "%s: dtypes %s and %s differ (shapes %s and %s)", op,
                   topos_dtype_name(in[0].dtype), topos_dtype_name(in[1].dtype),
                   tp_str(&in[0]).s, tp_str(&in[1]).s);
  TP_TRY(tp_need_float(op, &in[0]));
  if (!tp_same_shape(&in[0], &in[1]))
    return tp_fail(TOPOS_ERR_SHAPE, "%s: shapes %s and %s differ", op, tp_str(&in[0]).s,
                   tp_str(&in[1]).s);
  return tp_set(out, in[0].dtype, in[0].rank, in[0].shape);
}

static topos_status tp_shape_unary(const char *op, const topos_tensor_desc *in,
                                   topos_tensor_desc *out) {
  TP_TRY(tp_need_float(op, &in[0]));
  return tp_set(out, in[0].dtype, in[0].rank, in[0].shape);
}

#define TP_BINARY_RULE(lower)                                                          \
  topos_status tp_shape_##lower(const topos_tensor_desc *in, const topos_op_attrs *attrs, \
                                topos_tensor_desc *out) {                              \
    (void)attrs;                                                                       \
    return tp_shape_binary(#lower, in, out);                                           \
  }
#define TP_UNARY_RULE(lower)                                                           \
  topos_status tp_shape_##lower(const topos_tensor_desc *in, const topos_op_attrs *attrs, \
                                topos_tensor_desc *out) {                              \
    (void)attrs;                                                                       \
    return tp_shape_unary(#lower, in, out);                                            \
  }
TP_BINARY_RULE(add)
TP_BINARY_RULE(sub)
TP_BINARY_RULE(mul)
TP_BINARY_RULE(div)
TP_BINARY_RULE(pow)
TP_BINARY_RULE(maximum)
TP_BINARY_RULE(step)
TP_UNARY_RULE(neg)
TP_UNARY_RULE(exp)
TP_UNARY_RULE(ln)
TP_UNARY_RULE(sqrt)
TP_UNARY_RULE(tanh)
TP_UNARY_RULE(relu)

/* ---- matmul: [..., m, k] x [..., k, n] -> [..., m, n], identical batch axes */

topos_status tp_shape_matmul(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                             topos_tensor_desc *out) {
  (void)attrs;
  const topos_tensor_desc *a = &in[0], *b = &in[1];
  if (a->dtype != b->dtype)
    return tp_fail(TOPOS_ERR_DTYPE, "matmul: dtypes %s and %s differ: %s x %s",
                   topos_dtype_name(a->dtype), topos_dtype_name(b->dtype), tp_str(a).s,
                   tp_str(b).s);
  TP_TRY(tp_need_float("matmul", a));
  if (a->rank < 2 || b->rank < 2)
    return tp_fail(TOPOS_ERR_SHAPE, "matmul: operands need rank >= 2: %s x %s", tp_str(a).s,
                   tp_str(b).s);
  if (a->rank != b->rank)
    return tp_fail(TOPOS_ERR_SHAPE, "matmul: ranks differ: %s x %s", tp_str(a).s, tp_str(b).s);
  int r = a->rank;
  for (int axis = 0; axis < r - 2; ++axis)
    if (a->shape[axis] != b->shape[axis])
      return tp_fail(TOPOS_ERR_SHAPE, "matmul: batch axes differ: %s x %s", tp_str(a).s,
                     tp_str(b).s);
  if (a->shape[r - 1] != b->shape[r - 2])
    return tp_fail(TOPOS_ERR_SHAPE, "matmul: inner extents differ: %s x %s", tp_str(a).s,
                   tp_str(b).s);
  int64_t shape[TOPOS_MAX_RANK];
  memcpy(shape, a->shape, sizeof shape);
  shape[r - 1] = b->shape[r - 1];
  return tp_set(out, a->dtype, r, shape);
}

/* ---- views */

topos_status tp_shape_transpose(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                                topos_tensor_desc *out) {
  (void)attrs;
  const topos_tensor_desc *a = &in[0];
  TP_TRY(tp_quant_outer("transpose", a, a->rank < 2));
  int64_t shape[TOPOS_MAX_RANK];
  memcpy(shape, a->shape, sizeof shape);
  if (a->rank >= 2) {
    shape[a->rank - 1] = a->shape[a->rank - 2];
    shape[a->rank - 2] = a->shape[a->rank - 1];
  }
  return tp_set(out, a->dtype, a->rank, shape);
}

topos_status tp_shape_permute(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                              topos_tensor_desc *out) {
  const topos_tensor_desc *a = &in[0];
  if (attrs->rank != a->rank)
    return tp_fail(TOPOS_ERR_SHAPE, "permute: order has %d axes, operand %s has %d", attrs->rank,
                   tp_str(a).s, a->rank);
  int seen[TOPOS_MAX_RANK] = {0};
  int64_t shape[TOPOS_MAX_RANK] = {0};
  for (int i = 0; i < a->rank; ++i) {
    int from = attrs->order[i];
    if (from < 0 || from >= a->rank || seen[from])
      return tp_fail(TOPOS_ERR_SHAPE,
                     "permute: order entry %d (= %d) is not a permutation of 0..%d for %s", i,
                     from, a->rank - 1, tp_str(a).s);
    seen[from] = 1;
    shape[i] = a->shape[from];
  }
  TP_TRY(tp_quant_outer("permute", a, a->rank == 0 || attrs->order[a->rank - 1] == a->rank - 1));
  return tp_set(out, a->dtype, a->rank, shape);
}

topos_status tp_shape_reshape(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                              topos_tensor_desc *out) {
  const topos_tensor_desc *a = &in[0];
  if (attrs->rank < 0 || attrs->rank > TOPOS_MAX_RANK)
    return tp_fail(TOPOS_ERR_SHAPE, "reshape: target rank %d outside 0..%d (operand %s)",
                   attrs->rank, TOPOS_MAX_RANK, tp_str(a).s);
  topos_tensor_desc target;
  memset(&target, 0, sizeof target);
  target.dtype = a->dtype;
  target.rank = attrs->rank;
  int free_axis = -1;
  int64_t known = 1;
  for (int axis = 0; axis < attrs->rank; ++axis) {
    int64_t e = attrs->shape[axis];
    target.shape[axis] = e;
    if (e == -1 && free_axis < 0) {
      free_axis = axis;
      continue;
    }
    if (e <= 0 || known > INT64_MAX / e)
      return tp_fail(TOPOS_ERR_SHAPE, "reshape: target %s of operand %s is not a valid shape",
                     tp_str(&target).s, tp_str(a).s);
    known *= e;
  }
  int64_t volume = tp_volume(a);
  if (free_axis >= 0) {
    if (volume % known != 0)
      return tp_fail(TOPOS_ERR_SHAPE, "reshape: operand %s does not fill target %s", tp_str(a).s,
                     tp_str(&target).s);
    target.shape[free_axis] = volume / known;
    known = volume;
  }
  if (known != volume)
    return tp_fail(TOPOS_ERR_SHAPE, "reshape: volumes differ: %s to %s", tp_str(a).s,
                   tp_str(&target).s);
  TP_TRY(tp_quant_outer("reshape", a,
                        a->rank > 0 && target.rank > 0 &&
                            a->shape[a->rank - 1] == target.shape[target.rank - 1]));
  *out = target;
  return TOPOS_OK;
}

topos_status tp_shape_narrow(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                             topos_tensor_desc *out) {
  const topos_tensor_desc *a = &in[0];
  TP_TRY(tp_need_axis("narrow", a, attrs->axis));
  int64_t extent = a->shape[attrs->axis];
  if (attrs->length <= 0 || attrs->start < 0 || attrs->start > extent ||
      attrs->length > extent - attrs->start)
    return tp_fail(TOPOS_ERR_RANGE,
                   "narrow: window [%lld, %lld+%lld) outside axis %d of %s (extent %lld)",
                   (long long)attrs->start, (long long)attrs->start, (long long)attrs->length,
                   attrs->axis, tp_str(a).s, (long long)extent);
  TP_TRY(tp_quant_outer("narrow", a, attrs->axis < a->rank - 1));
  int64_t shape[TOPOS_MAX_RANK];
  memcpy(shape, a->shape, sizeof shape);
  shape[attrs->axis] = attrs->length;
  return tp_set(out, a->dtype, a->rank, shape);
}

topos_status tp_shape_pad(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                          topos_tensor_desc *out) {
  const topos_tensor_desc *a = &in[0];
  TP_TRY(tp_need_plain("pad", a));
  TP_TRY(tp_need_axis("pad", a, attrs->axis));
  int64_t extent = a->shape[attrs->axis];
  if (attrs->start < 0 || attrs->length <= 0 || attrs->start > attrs->length ||
      extent > attrs->length - attrs->start)
    return tp_fail(TOPOS_ERR_RANGE,
                   "pad: axis %d of %s (extent %lld) placed at %lld does not fit extent %lld",
                   attrs->axis, tp_str(a).s, (long long)extent, (long long)attrs->start,
                   (long long)attrs->length);
  topos_tensor_desc target = *a;
  target.shape[attrs->axis] = attrs->length;
  if (tp_volume(&target) < 0)
    return tp_fail(TOPOS_ERR_OVERFLOW, "pad: result %s overflows", tp_str(&target).s);
  *out = target;
  return TOPOS_OK;
}

topos_status tp_shape_broadcast(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                                topos_tensor_desc *out) {
  const topos_tensor_desc *a = &in[0];
  TP_TRY(tp_need_plain("broadcast", a));
  topos_tensor_desc target;
  memset(&target, 0, sizeof target);
  target.dtype = a->dtype;
  if (attrs->rank < 0 || attrs->rank > TOPOS_MAX_RANK)
    return tp_fail(TOPOS_ERR_SHAPE, "broadcast: target rank %d outside 0..%d (operand %s)",
                   attrs->rank, TOPOS_MAX_RANK, tp_str(a).s);
  target.rank = attrs->rank;
  for (int axis = 0; axis < attrs->rank; ++axis) target.shape[axis] = attrs->shape[axis];
  for (int axis = 0; axis < attrs->rank; ++axis)
    if (attrs->shape[axis] <= 0)
      return tp_fail(TOPOS_ERR_SHAPE, "broadcast: target %s of operand %s is not a valid shape",
                     tp_str(&target).s, tp_str(a).s);
  if (tp_volume(&target) < 0)
    return tp_fail(TOPOS_ERR_OVERFLOW, "broadcast: target %s overflows", tp_str(&target).s);
  if (tp_volume(a) != 1)
    return tp_fail(TOPOS_ERR_SHAPE,
                   "broadcast: operand %s must have volume 1 to spread to %s (use "
                   "broadcast_along)",
                   tp_str(a).s, tp_str(&target).s);
  *out = target;
  return TOPOS_OK;
}

topos_status tp_shape_broadcast_along(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                                      topos_tensor_desc *out) {
  const topos_tensor_desc *a = &in[0];
  if (attrs->axis < 0 || attrs->axis > a->rank)
    return tp_fail(TOPOS_ERR_SHAPE, "broadcast_along: insert position %d outside 0..%d of %s",
                   attrs->axis, a->rank, tp_str(a).s);
  if (a->rank >= TOPOS_MAX_RANK)
    return tp_fail(TOPOS_ERR_SHAPE, "broadcast_along: operand %s already has rank %d",
                   tp_str(a).s, TOPOS_MAX_RANK);
  if (attrs->length <= 0)
    return tp_fail(TOPOS_ERR_SHAPE, "broadcast_along: count %lld must be > 0 (operand %s)",
                   (long long)attrs->length, tp_str(a).s);
  TP_TRY(tp_quant_outer("broadcast_along", a, attrs->axis < a->rank));
  int64_t shape[TOPOS_MAX_RANK];
  int r = 0;
  for (int axis = 0; axis <= a->rank; ++axis) {
    if (axis == attrs->axis) shape[r++] = attrs->length;
    if (axis < a->rank) shape[r++] = a->shape[axis];
  }
  topos_tensor_desc target;
  tp_set(&target, a->dtype, r, shape);
  if (tp_volume(&target) < 0)
    return tp_fail(TOPOS_ERR_OVERFLOW, "broadcast_along: result %s overflows", tp_str(&target).s);
  *out = target;
  return TOPOS_OK;
}

/* ---- reductions */

topos_status tp_shape_sum(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                          topos_tensor_desc *out) {
  (void)attrs;
  TP_TRY(tp_need_float("sum", &in[0]));
  return tp_set(out, in[0].dtype, 0, NULL);
}

/* Shape with `axis` removed (reductions along an axis). */
static topos_status tp_remove_axis(const char *op, const topos_tensor_desc *a, int axis,
                                   topos_tensor_desc *out) {
  TP_TRY(tp_need_float(op, a));
  TP_TRY(tp_need_axis(op, a, axis));
  int64_t shape[TOPOS_MAX_RANK];
  int r = 0;
  for (int i = 0; i < a->rank; ++i)
    if (i != axis) shape[r++] = a->shape[i];
  return tp_set(out, a->dtype, r, shape);
}

topos_status tp_shape_sum_along(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                                topos_tensor_desc *out) {
  return tp_remove_axis("sum_along", &in[0], attrs->axis, out);
}

topos_status tp_shape_log_sum_exp(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                                  topos_tensor_desc *out) {
  return tp_remove_axis("log_sum_exp", &in[0], attrs->axis, out);
}

topos_status tp_shape_log_softmax(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                                  topos_tensor_desc *out) {
  TP_TRY(tp_need_float("log_softmax", &in[0]));
  TP_TRY(tp_need_axis("log_softmax", &in[0], attrs->axis));
  return tp_set(out, in[0].dtype, in[0].rank, in[0].shape);
}

/* ---- windows: unfold and its adjoint fold */

/* count = (E - dilation*(size-1) - 1)/step + 1, checked. */
static topos_status tp_window_count(const char *op, const topos_tensor_desc *a,
                                    const topos_op_attrs *attrs, int64_t extent, int64_t *count) {
  if (attrs->size <= 0 || attrs->step <= 0 || attrs->dilation <= 0)
    return tp_fail(TOPOS_ERR_SHAPE,
                   "%s: size %lld, step %lld, dilation %lld must be > 0 (operand %s)", op,
                   (long long)attrs->size, (long long)attrs->step, (long long)attrs->dilation,
                   tp_str(a).s);
  /* span = dilation*(size-1) + 1, without overflow */
  if (attrs->size - 1 > (extent - 1) / attrs->dilation)
    return tp_fail(TOPOS_ERR_RANGE,
                   "%s: window of size %lld, dilation %lld does not fit extent %lld (operand %s)",
                   op, (long long)attrs->size, (long long)attrs->dilation, (long long)extent,
                   tp_str(a).s);
  int64_t span = attrs->dilation * (attrs->size - 1) + 1;
  *count = (extent - span) / attrs->step + 1;
  return TOPOS_OK;
}

topos_status tp_shape_unfold(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                             topos_tensor_desc *out) {
  const topos_tensor_desc *a = &in[0];
  TP_TRY(tp_need_axis("unfold", a, attrs->axis));
  if (a->rank >= TOPOS_MAX_RANK)
    return tp_fail(TOPOS_ERR_SHAPE, "unfold: operand %s already has rank %d", tp_str(a).s,
                   TOPOS_MAX_RANK);
  int64_t count;
  TP_TRY(tp_window_count("unfold", a, attrs, a->shape[attrs->axis], &count));
  TP_TRY(tp_quant_outer("unfold", a, attrs->axis < a->rank - 1));
  int64_t shape[TOPOS_MAX_RANK];
  int r = 0;
  for (int axis = 0; axis < a->rank; ++axis) {
    if (axis == attrs->axis) {
      shape[r++] = count;
      shape[r++] = attrs->size;
    } else {
      shape[r++] = a->shape[axis];
    }
  }
  topos_tensor_desc target;
  tp_set(&target, a->dtype, r, shape);
  if (tp_volume(&target) < 0)
    return tp_fail(TOPOS_ERR_OVERFLOW, "unfold: result %s overflows", tp_str(&target).s);
  *out = target;
  return TOPOS_OK;
}

topos_status tp_shape_fold(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                           topos_tensor_desc *out) {
  const topos_tensor_desc *a = &in[0];
  TP_TRY(tp_need_float("fold", a));
  if (attrs->axis < 0 || attrs->axis + 1 >= a->rank)
    return tp_fail(TOPOS_ERR_SHAPE, "fold: axes (%d, %d) are not both inside operand %s",
                   attrs->axis, attrs->axis + 1, tp_str(a).s);
  if (attrs->length <= 0)
    return tp_fail(TOPOS_ERR_SHAPE, "fold: extent %lld must be > 0 (operand %s)",
                   (long long)attrs->length, tp_str(a).s);
  int64_t count;
  TP_TRY(tp_window_count("fold", a, attrs, attrs->length, &count));
  if (a->shape[attrs->axis] != count || a->shape[attrs->axis + 1] != attrs->size)
    return tp_fail(TOPOS_ERR_SHAPE,
                   "fold: operand %s has (%lld, %lld) at axes (%d, %d); extent %lld with size "
                   "%lld, step %lld, dilation %lld needs (%lld, %lld)",
                   tp_str(a).s, (long long)a->shape[attrs->axis],
                   (long long)a->shape[attrs->axis + 1], attrs->axis, attrs->axis + 1,
                   (long long)attrs->length, (long long)attrs->size, (long long)attrs->step,
                   (long long)attrs->dilation, (long long)count, (long long)attrs->size);
  int64_t shape[TOPOS_MAX_RANK];
  int r = 0;
  for (int axis = 0; axis < a->rank; ++axis) {
    if (axis == attrs->axis) {
      shape[r++] = attrs->length;
      ++axis; /* skip the size axis */
    } else {
      shape[r++] = a->shape[axis];
    }
  }
  return tp_set(out, a->dtype, r, shape);
}

/* ---- rows by index */

/* Indices i32 [B..., N] against data [B..., X, ...]: the indices' leading
 * axes are batch axes the data shares; `lead` counts the extents that must
 * agree (the batch axes for gather's table; those and N for scatter's
 * values). */
static topos_status tp_need_indices(const char *op, const topos_tensor_desc *idx,
                                    const topos_tensor_desc *data, int lead) {
  if (idx->dtype != TOPOS_I32)
    return tp_fail(TOPOS_ERR_DTYPE, "%s: indices %s have dtype %s, need i32 (data %s)", op,
                   tp_str(idx).s, topos_dtype_name(idx->dtype), tp_str(data).s);
  if (idx->rank < 1 || idx->rank > data->rank)
    return tp_fail(TOPOS_ERR_SHAPE, "%s: indices %s need rank 1..%d (data %s)", op,
                   tp_str(idx).s, data->rank, tp_str(data).s);
  for (int i = 0; i < lead; ++i) {
    if (idx->shape[i] == data->shape[i]) continue;
    if (i == idx->rank - 1) /* scatter's N */
      return tp_fail(TOPOS_ERR_SHAPE, "%s: %lld indices %s for %lld value rows %s", op,
                     (long long)idx->shape[i], tp_str(idx).s, (long long)data->shape[i],
                     tp_str(data).s);
    return tp_fail(TOPOS_ERR_SHAPE, "%s: indices %s and data %s differ at batch axis %d", op,
                   tp_str(idx).s, tp_str(data).s, i);
  }
  return TOPOS_OK;
}

/* data's shape with the indexed axis (the indices' last) set to extent */
static topos_status tp_indexed_result(const char *op, const topos_tensor_desc *data,
                                      const topos_tensor_desc *idx, int64_t extent,
                                      topos_tensor_desc *out) {
  int64_t shape[TOPOS_MAX_RANK];
  memcpy(shape, data->shape, sizeof shape);
  shape[idx->rank - 1] = extent;
  topos_tensor_desc target;
  tp_set(&target, data->dtype, data->rank, shape);
  if (tp_volume(&target) < 0)
    return tp_fail(TOPOS_ERR_OVERFLOW, "%s: result %s overflows", op, tp_str(&target).s);
  *out = target;
  return TOPOS_OK;
}

topos_status tp_shape_gather(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                             topos_tensor_desc *out) {
  (void)attrs;
  const topos_tensor_desc *table = &in[0], *idx = &in[1];
  TP_TRY(tp_need_plain("gather", table));
  TP_TRY(tp_need_indices("gather", idx, table, idx->rank - 1));
  return tp_indexed_result("gather", table, idx, idx->shape[idx->rank - 1], out);
}

topos_status tp_shape_scatter(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                              topos_tensor_desc *out) {
  const topos_tensor_desc *values = &in[0], *idx = &in[1];
  TP_TRY(tp_need_float("scatter", values));
  TP_TRY(tp_need_indices("scatter", idx, values, idx->rank));
  if (attrs->length <= 0)
    return tp_fail(TOPOS_ERR_SHAPE, "scatter: rows %lld must be > 0 (values %s)",
                   (long long)attrs->length, tp_str(values).s);
  return tp_indexed_result("scatter", values, idx, attrs->length, out);
}

topos_status tp_shape_top_k(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                            topos_tensor_desc *out) {
  const topos_tensor_desc *a = &in[0];
  TP_TRY(tp_need_float("top_k", a));
  if (a->rank < 1)
    return tp_fail(TOPOS_ERR_SHAPE, "top_k: operand %s needs rank >= 1", tp_str(a).s);
  int64_t n = a->shape[a->rank - 1];
  if (attrs->length < 1 || attrs->length > n)
    return tp_fail(TOPOS_ERR_SHAPE, "top_k: k = %lld outside 1..%lld (operand %s)",
                   (long long)attrs->length, (long long)n, tp_str(a).s);
  if (n > INT32_MAX)
    return tp_fail(TOPOS_ERR_SHAPE, "top_k: lanes of %lld do not fit i32 positions (operand %s)",
                   (long long)n, tp_str(a).s);
  int64_t shape[TOPOS_MAX_RANK];
  memcpy(shape, a->shape, sizeof shape);
  shape[a->rank - 1] = attrs->length;
  return tp_set(out, TOPOS_I32, a->rank, shape);
}
