/* The op table and the public entry points over it: names, arity, parse,
 * the record-time rule (topos_op_infer) and the reference forward
 * (topos_op_forward). Everything is derived from TOPOS_OP_LIST by name. */
#include <string.h>

#include "base/error.h"
#include "ops/op_table.h"
#include "tensor/tensor_internal.h"

/* Whether the reference forward returns a view. One constant per row: a row
 * added to TOPOS_OP_LIST without one here fails to compile. */
enum {
  tp_view_add = 0, tp_view_sub = 0, tp_view_mul = 0, tp_view_div = 0, tp_view_neg = 0,
  tp_view_exp = 0, tp_view_ln = 0, tp_view_sqrt = 0, tp_view_tanh = 0, tp_view_pow = 0,
  tp_view_maximum = 0, tp_view_relu = 0, tp_view_step = 0, tp_view_matmul = 0,
  tp_view_transpose = 1, tp_view_permute = 1,
  tp_view_reshape = 1, /* a view when the layout allows; otherwise a copy */
  tp_view_narrow = 1, tp_view_pad = 0, tp_view_broadcast = 1, tp_view_broadcast_along = 1,
  tp_view_sum = 0, tp_view_sum_along = 0, tp_view_unfold = 1, tp_view_fold = 0,
  tp_view_gather = 0, tp_view_scatter = 0, tp_view_log_softmax = 0, tp_view_log_sum_exp = 0,
  tp_view_qlinear = 0, tp_view_top_k = 0, tp_view_qlinear_id = 0, tp_view_ssm_scan = 0, tp_view_delta_scan = 0,
};

/* topos_op_forward describes operands in a fixed array. */
#define TP_MAX_ARITY 3
#define TP_ARITY_CHECK(E, lower, arity) \
  _Static_assert(arity >= 1 && arity <= TP_MAX_ARITY, #lower ": arity outside 1..3");
TOPOS_OP_LIST(TP_ARITY_CHECK)
#undef TP_ARITY_CHECK

#define TP_TABLE_ROW(E, lower, arity) \
  [TOPOS_OP_##E] = {#lower, arity, tp_view_##lower, tp_shape_##lower, tp_forward_##lower},
const tp_op_info tp_op_table[TOPOS_OP_COUNT] = {TOPOS_OP_LIST(TP_TABLE_ROW)};
#undef TP_TABLE_ROW

static int tp_op_valid(topos_op op) { return (unsigned)op < (unsigned)TOPOS_OP_COUNT; }

const char *topos_op_name(topos_op op) {
  return tp_op_valid(op) ? tp_op_table[op].name : "unknown";
}

int topos_op_arity(topos_op op) { return tp_op_valid(op) ? tp_op_table[op].arity : 0; }

int topos_op_is_view(topos_op op) { return tp_op_valid(op) ? tp_op_table[op].is_view : 0; }

topos_status topos_op_parse(const char *name, topos_op *out) {
  if (!name || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "op_parse: NULL argument");
  for (int op = 0; op < TOPOS_OP_COUNT; ++op) {
    if (strcmp(name, tp_op_table[op].name) == 0) {
      *out = (topos_op)op;
      return TOPOS_OK;
    }
  }
  return tp_fail(TOPOS_ERR_NOT_FOUND, "op_parse: no op named \"%s\"", name);
}

const char *tp_desc_string(const topos_tensor_desc *d, char *buf, size_t size) {
  int rank = d->rank < 0 ? 0 : d->rank > TOPOS_MAX_RANK ? TOPOS_MAX_RANK : d->rank;
  return tp_shape_string(rank, d->shape, buf, size);
}

topos_tensor_desc topos_tensor_describe(const topos_tensor *t) {
  topos_tensor_desc d;
  memset(&d, 0, sizeof d);
  if (!t) return d;
  d.dtype = t->dtype;
  d.rank = t->rank;
  for (int axis = 0; axis < t->rank; ++axis) d.shape[axis] = t->shape[axis];
  return d;
}

/* Operands described by callers of topos_op_infer may be anything. */
static topos_status tp_check_desc(const char *op, int which, const topos_tensor_desc *d) {
  if ((unsigned)d->dtype >= (unsigned)TOPOS_DTYPE_COUNT)
    return tp_fail(TOPOS_ERR_DTYPE, "%s: operand %d has unknown dtype %d", op, which,
                   (int)d->dtype);
  if (d->rank < 0 || d->rank > TOPOS_MAX_RANK)
    return tp_fail(TOPOS_ERR_SHAPE, "%s: operand %d has rank %d outside 0..%d", op, which,
                   d->rank, TOPOS_MAX_RANK);
  for (int axis = 0; axis < d->rank; ++axis) {
    if (d->shape[axis] <= 0) {
      char buf[160];
      return tp_fail(TOPOS_ERR_SHAPE, "%s: operand %d has shape %s: extents must be > 0", op,
                     which, tp_desc_string(d, buf, sizeof buf));
    }
  }
  return TOPOS_OK;
}

topos_status topos_op_infer(topos_op op, const topos_tensor_desc *inputs,
                            const topos_op_attrs *attrs, topos_tensor_desc *out) {
  if (!tp_op_valid(op)) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "op_infer: unknown op %d", (int)op);
  const tp_op_info *info = &tp_op_table[op];
  if (!inputs || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "%s: NULL inputs or output", info->name);
  for (int i = 0; i < info->arity; ++i) TP_TRY(tp_check_desc(info->name, i, &inputs[i]));
  topos_op_attrs none;
  if (!attrs) {
    memset(&none, 0, sizeof none);
    attrs = &none;
  }
  topos_tensor_desc result;
  memset(&result, 0, sizeof result);
  TP_TRY(info->shape(inputs, attrs, &result));
  *out = result;
  return TOPOS_OK;
}

static int tp_desc_matches(const topos_tensor *t, const topos_tensor_desc *d) {
  if (t->dtype != d->dtype || t->rank != d->rank) return 0;
  for (int axis = 0; axis < d->rank; ++axis)
    if (t->shape[axis] != d->shape[axis]) return 0;
  return 1;
}

topos_status tp_op_forward_view(topos_op op, topos_tensor *const *inputs, const topos_op_attrs *attrs,
                                const topos_tensor_desc *desc, topos_tensor **out) {
  topos_op_attrs none;
  if (!attrs) {
    memset(&none, 0, sizeof none);
    attrs = &none;
  }
  *out = NULL;
  return tp_op_table[op].forward(inputs, attrs, desc, out);
}

topos_status topos_op_forward(topos_op op, topos_tensor *const *inputs,
                              const topos_op_attrs *attrs, topos_tensor **out) {
  return tp_op_forward_into(op, inputs, attrs, NULL, out);
}

topos_status tp_op_forward_into(topos_op op, topos_tensor *const *inputs,
                                const topos_op_attrs *attrs, topos_tensor *dst,
                                topos_tensor **out) {
  if (!tp_op_valid(op))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "op_forward: unknown op %d", (int)op);
  const tp_op_info *info = &tp_op_table[op];
  if (!inputs || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "%s: NULL inputs or output", info->name);
  *out = NULL;
  topos_tensor_desc descs[TP_MAX_ARITY];
  for (int i = 0; i < info->arity; ++i) {
    if (!inputs[i]) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "%s: operand %d is NULL", info->name, i);
    descs[i] = topos_tensor_describe(inputs[i]);
  }
  topos_op_attrs none;
  if (!attrs) {
    memset(&none, 0, sizeof none);
    attrs = &none;
  }
  topos_tensor_desc desc;
  TP_TRY(topos_op_infer(op, descs, attrs, &desc));
  topos_tensor *result = NULL;
  if (dst && !tp_desc_matches(dst, &desc))
    return tp_fail(TOPOS_ERR_INTERNAL, "%s: destination does not match the result", info->name);
  topos_tensor *previous = dst ? tp_tensor_destination_arm(dst) : NULL;
  topos_status status = info->forward(inputs, attrs, &desc, &result);
  if (dst) tp_tensor_destination_arm(previous);
  if (status != TOPOS_OK) return status;
  if (dst && !info->is_view && result != dst) {
    /* the path allocated its own result: the plan's buffer still gets the bits */
    if (!tp_desc_matches(result, &desc)) {
      topos_tensor_release(result);
      return tp_fail(TOPOS_ERR_INTERNAL, "%s: kernel result disagrees with the shape rule",
                     info->name);
    }
    tp_tensor_pack_into(result, tp_tensor_base(dst));
    topos_tensor_release(result);
    result = topos_tensor_retain(dst);
  }
  /* The kernel must produce what the rule promised: plans and the graph rely on it. */
  if (!tp_desc_matches(result, &desc)) {
    topos_tensor_release(result);
    return tp_fail(TOPOS_ERR_INTERNAL, "%s: kernel result disagrees with the shape rule", info->name);
  }
  *out = result;
  return TOPOS_OK;
}
