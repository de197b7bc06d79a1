/* One-line recording sugar per op over topos_tape_record. Failures are kept
 * on the tape (sticky) and give TOPOS_SYM_INVALID. */
#include <string.h>

#include "graph/graph_internal.h"
#include "ops/attrs.h"

static topos_sym rec(topos_tape *tape, topos_op op, topos_sym a, topos_sym b,
                     const topos_op_attrs *attrs) {
  topos_sym in[2] = {a, b}, out;
  (void)topos_tape_record(tape, op, in, attrs, &out);
  return out;
}

#define TP_BINARY_SUGAR(lower, E)                                         \
  topos_sym topos_tape_##lower(topos_tape *tape, topos_sym a, topos_sym b) { \
    return rec(tape, TOPOS_OP_##E, a, b, NULL);                           \
  }
TP_BINARY_SUGAR(add, ADD)
TP_BINARY_SUGAR(sub, SUB)
TP_BINARY_SUGAR(mul, MUL)
TP_BINARY_SUGAR(div, DIV)
TP_BINARY_SUGAR(pow, POW)
TP_BINARY_SUGAR(maximum, MAXIMUM)
TP_BINARY_SUGAR(step, STEP)
TP_BINARY_SUGAR(matmul, MATMUL)
TP_BINARY_SUGAR(gather, GATHER)
TP_BINARY_SUGAR(qlinear, QLINEAR)
#undef TP_BINARY_SUGAR

#define TP_UNARY_SUGAR(lower, E)                                \
  topos_sym topos_tape_##lower(topos_tape *tape, topos_sym a) { \
    return rec(tape, TOPOS_OP_##E, a, TOPOS_SYM_INVALID, NULL); \
  }
TP_UNARY_SUGAR(neg, NEG)
TP_UNARY_SUGAR(exp, EXP)
TP_UNARY_SUGAR(ln, LN)
TP_UNARY_SUGAR(sqrt, SQRT)
TP_UNARY_SUGAR(tanh, TANH)
TP_UNARY_SUGAR(relu, RELU)
TP_UNARY_SUGAR(transpose, TRANSPOSE)
TP_UNARY_SUGAR(sum, SUM)
#undef TP_UNARY_SUGAR

#define TP_AXIS_SUGAR(lower, E)                                           \
  topos_sym topos_tape_##lower(topos_tape *tape, topos_sym a, int axis) { \
    topos_op_attrs attrs = tp_attrs_axis(axis);                           \
    return rec(tape, TOPOS_OP_##E, a, TOPOS_SYM_INVALID, &attrs);         \
  }
TP_AXIS_SUGAR(sum_along, SUM_ALONG)
TP_AXIS_SUGAR(log_softmax, LOG_SOFTMAX)
TP_AXIS_SUGAR(log_sum_exp, LOG_SUM_EXP)
#undef TP_AXIS_SUGAR

topos_sym topos_tape_permute(topos_tape *tape, topos_sym a, const int *order) {
  topos_op_attrs attrs = tp_attrs_none();
  topos_tensor_desc desc;
  attrs.rank = -1; /* no order: the shape rule rejects it with its message */
  /* the rank is the operand's; an unknown operand fails in the record itself */
  if (order && tape && tape->status == TOPOS_OK && tp_graph_resolve(tape->graph, a, "permute", &(uint32_t){0}) == TOPOS_OK) {
    (void)topos_tape_describe(tape, a, &desc);
    attrs.rank = desc.rank;
    memcpy(attrs.order, order, (size_t)desc.rank * sizeof *order);
  }
  return rec(tape, TOPOS_OP_PERMUTE, a, TOPOS_SYM_INVALID, &attrs);
}

static topos_sym shaped(topos_tape *tape, topos_op op, topos_sym a, int rank,
                        const int64_t *shape) {
  /* A rank outside 0..TOPOS_MAX_RANK stays as given: the shape rule rejects
   * it, naming it. A missing shape reads as rank -1, rejected the same way. */
  topos_op_attrs attrs = tp_attrs_none();
  attrs.rank = rank;
  if (rank > 0 && rank <= TOPOS_MAX_RANK) {
    if (shape) memcpy(attrs.shape, shape, (size_t)rank * sizeof *shape);
    else attrs.rank = -1;
  }
  return rec(tape, op, a, TOPOS_SYM_INVALID, &attrs);
}

topos_sym topos_tape_reshape(topos_tape *tape, topos_sym a, int rank, const int64_t *shape) {
  return shaped(tape, TOPOS_OP_RESHAPE, a, rank, shape);
}

topos_sym topos_tape_broadcast(topos_tape *tape, topos_sym a, int rank, const int64_t *shape) {
  return shaped(tape, TOPOS_OP_BROADCAST, a, rank, shape);
}

topos_sym topos_tape_narrow(topos_tape *tape, topos_sym a, int axis, int64_t start,
                            int64_t length) {
  topos_op_attrs attrs = tp_attrs_axis(axis);
  attrs.start = start;
  attrs.length = length;
  return rec(tape, TOPOS_OP_NARROW, a, TOPOS_SYM_INVALID, &attrs);
}

topos_sym topos_tape_pad(topos_tape *tape, topos_sym a, int axis, int64_t start,
                         int64_t extent) {
  topos_op_attrs attrs = tp_attrs_axis(axis);
  attrs.start = start;
  attrs.length = extent;
  return rec(tape, TOPOS_OP_PAD, a, TOPOS_SYM_INVALID, &attrs);
}

topos_sym topos_tape_broadcast_along(topos_tape *tape, topos_sym a, int axis, int64_t count) {
  topos_op_attrs attrs = tp_attrs_axis(axis);
  attrs.length = count;
  return rec(tape, TOPOS_OP_BROADCAST_ALONG, a, TOPOS_SYM_INVALID, &attrs);
}

topos_sym topos_tape_unfold(topos_tape *tape, topos_sym a, int axis, int64_t size,
                            int64_t step, int64_t dilation) {
  topos_op_attrs attrs = tp_attrs_axis(axis);
  attrs.size = size;
  attrs.step = step;
  attrs.dilation = dilation;
  return rec(tape, TOPOS_OP_UNFOLD, a, TOPOS_SYM_INVALID, &attrs);
}

topos_sym topos_tape_fold(topos_tape *tape, topos_sym a, int axis, int64_t size, int64_t step,
                          int64_t dilation, int64_t extent) {
  topos_op_attrs attrs = tp_attrs_axis(axis);
  attrs.size = size;
  attrs.step = step;
  attrs.dilation = dilation;
  attrs.length = extent;
  return rec(tape, TOPOS_OP_FOLD, a, TOPOS_SYM_INVALID, &attrs);
}

topos_sym topos_tape_scatter(topos_tape *tape, topos_sym values, topos_sym indices,
                             int64_t rows) {
  topos_op_attrs attrs = tp_attrs_none();
  attrs.length = rows;
  return rec(tape, TOPOS_OP_SCATTER, values, indices, &attrs);
}

topos_sym topos_tape_top_k(topos_tape *tape, topos_sym a, int64_t k) {
  topos_op_attrs attrs = tp_attrs_none();
  attrs.length = k;
  return rec(tape, TOPOS_OP_TOP_K, a, TOPOS_SYM_INVALID, &attrs);
}

topos_sym topos_tape_qlinear_id(topos_tape *tape, topos_sym x, topos_sym w, topos_sym ids) {
  topos_sym in[3] = {x, w, ids}, out;
  (void)topos_tape_record(tape, TOPOS_OP_QLINEAR_ID, in, NULL, &out);
  return out;
}

topos_sym topos_tape_ssm_scan(topos_tape *tape, topos_sym state, topos_sym xa, topos_sym bc) {
  topos_sym in[3] = {state, xa, bc}, out;
  (void)topos_tape_record(tape, TOPOS_OP_SSM_SCAN, in, NULL, &out);
  return out;
}

topos_sym topos_tape_delta_scan(topos_tape *tape, topos_sym state, topos_sym vab, topos_sym qk) {
  topos_sym in[3] = {state, vab, qk}, out;
  (void)topos_tape_record(tape, TOPOS_OP_DELTA_SCAN, in, NULL, &out);
  return out;
}
