/* Eager conveniences: each fills the op's attributes and calls
 * topos_op_forward, so they run exactly the reference kernels and rules. */

#include "base/error.h"
#include "ops/attrs.h"

static topos_status tp_eager1(topos_op op, topos_tensor *a, const topos_op_attrs *attrs,
                              topos_tensor **out) {
  topos_tensor *inputs[1] = {a};
  return topos_op_forward(op, inputs, attrs, out);
}

static topos_status tp_eager2(topos_op op, topos_tensor *a, topos_tensor *b,
                              const topos_op_attrs *attrs, topos_tensor **out) {
  topos_tensor *inputs[2] = {a, b};
  return topos_op_forward(op, inputs, attrs, out);
}

#define TP_EAGER_BINARY(lower, E)                                                  \
  topos_status topos_##lower(topos_tensor *a, topos_tensor *b, topos_tensor **out) { \
    return tp_eager2(TOPOS_OP_##E, a, b, NULL, out);                               \
  }
#define TP_EAGER_UNARY(lower, E)                               \
  topos_status topos_##lower(topos_tensor *a, topos_tensor **out) { \
    return tp_eager1(TOPOS_OP_##E, a, NULL, out);              \
  }
TP_EAGER_BINARY(add, ADD)
TP_EAGER_BINARY(sub, SUB)
TP_EAGER_BINARY(mul, MUL)
TP_EAGER_BINARY(div, DIV)
TP_EAGER_BINARY(pow, POW)
TP_EAGER_BINARY(maximum, MAXIMUM)
TP_EAGER_BINARY(step, STEP)
TP_EAGER_BINARY(matmul, MATMUL)
TP_EAGER_BINARY(gather, GATHER)
TP_EAGER_BINARY(qlinear, QLINEAR)
TP_EAGER_UNARY(neg, NEG)
TP_EAGER_UNARY(exp, EXP)
TP_EAGER_UNARY(ln, LN)
TP_EAGER_UNARY(sqrt, SQRT)
TP_EAGER_UNARY(tanh, TANH)
TP_EAGER_UNARY(relu, RELU)
TP_EAGER_UNARY(sum, SUM)

topos_status topos_sum_along(topos_tensor *a, int axis, topos_tensor **out) {
  topos_op_attrs attrs = tp_attrs_axis(axis);
  return tp_eager1(TOPOS_OP_SUM_ALONG, a, &attrs, out);
}

topos_status topos_log_softmax(topos_tensor *a, int axis, topos_tensor **out) {
  topos_op_attrs attrs = tp_attrs_axis(axis);
  return tp_eager1(TOPOS_OP_LOG_SOFTMAX, a, &attrs, out);
}

topos_status topos_log_sum_exp(topos_tensor *a, int axis, topos_tensor **out) {
  topos_op_attrs attrs = tp_attrs_axis(axis);
  return tp_eager1(TOPOS_OP_LOG_SUM_EXP, a, &attrs, out);
}

topos_status topos_pad(topos_tensor *a, int axis, int64_t start, int64_t extent,
                       topos_tensor **out) {
  topos_op_attrs attrs = tp_attrs_axis(axis);
  attrs.start = start;
  attrs.length = extent;
  return tp_eager1(TOPOS_OP_PAD, a, &attrs, out);
}

topos_status topos_fold(topos_tensor *a, int axis, int64_t size, int64_t step, int64_t dilation,
                        int64_t extent, topos_tensor **out) {
  topos_op_attrs attrs = tp_attrs_axis(axis);
  attrs.size = size;
  attrs.step = step;
  attrs.dilation = dilation;
  attrs.length = extent;
  return tp_eager1(TOPOS_OP_FOLD, a, &attrs, out);
}

topos_status topos_scatter(topos_tensor *values, topos_tensor *indices, int64_t rows,
                           topos_tensor **out) {
  topos_op_attrs attrs = tp_attrs_none();
  attrs.length = rows;
  return tp_eager2(TOPOS_OP_SCATTER, values, indices, &attrs, out);
}

topos_status topos_top_k(topos_tensor *a, int64_t k, topos_tensor **out) {
  topos_op_attrs attrs = tp_attrs_none();
  attrs.length = k;
  return tp_eager1(TOPOS_OP_TOP_K, a, &attrs, out);
}

topos_status topos_qlinear_id(topos_tensor *x, topos_tensor *w, topos_tensor *ids,
                              topos_tensor **out) {
  topos_tensor *inputs[3] = {x, w, ids};
  return topos_op_forward(TOPOS_OP_QLINEAR_ID, inputs, NULL, out);
}

topos_status topos_ssm_scan(topos_tensor *state, topos_tensor *xa, topos_tensor *bc, topos_tensor **out) {
  topos_tensor *inputs[3] = {state, xa, bc};
  return topos_op_forward(TOPOS_OP_SSM_SCAN, inputs, NULL, out);
}

topos_status topos_delta_scan(topos_tensor *state, topos_tensor *vab, topos_tensor *qk, topos_tensor **out) {
  topos_tensor *inputs[3] = {state, vab, qk};
  return topos_op_forward(TOPOS_OP_DELTA_SCAN, inputs, NULL, out);
}
