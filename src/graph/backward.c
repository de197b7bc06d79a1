/* The backward column of the op table: one rule per primitive op, written once
 * against tp_algebra (see algebra.h) and interpreted by both gradient routes.
 *
 * Notation: g = incoming gradient (shaped like the output y), a/b = operands.
 * Tie rules: maximum routes the gradient left on ties (step(a, b) = a >= b);
 * relu's subgradient at 0 is 1 (step(a, 0)). Shape-only operands (step's,
 * indices of gather/scatter) get TP_NONE: they are data, not edges, so nothing
 * behind them is differentiated. */
#include "graph/algebra.h"
#include "ops/attrs.h"

static topos_status op1(tp_algebra *alg, topos_op op, tp_handle x, const topos_op_attrs *attrs,
                        tp_handle *out) {
  return alg->apply(alg, op, &x, attrs, out);
}
static topos_status op2(tp_algebra *alg, topos_op op, tp_handle a, tp_handle b, tp_handle *out) {
  tp_handle in[2] = {a, b};
  return alg->apply(alg, op, in, NULL, out);
}
static topos_status with_scalar(tp_algebra *alg, const topos_tensor_desc *like, double value,
                                tp_handle *out) {
  return alg->fill(alg, like, value, out);
}
/* x spread along `axis` back to extent `count` (the adjoint of sum_along). */
static topos_status spread_along(tp_algebra *alg, tp_handle x, int axis, int64_t count,
                                 tp_handle *out) {
  topos_op_attrs attrs = tp_attrs_axis(axis);
  attrs.length = count;
  return op1(alg, TOPOS_OP_BROADCAST_ALONG, x, &attrs, out);
}

#define A (args->inputs[0])
#define B (args->inputs[1])
#define Y (args->output)
#define G (args->grad)

topos_status tp_backward_add(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  (void)alg;
  cot[0] = G;
  cot[1] = G;
  return TOPOS_OK;
}

topos_status tp_backward_sub(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  cot[0] = G;
  return op1(alg, TOPOS_OP_NEG, G, NULL, &cot[1]);
}

topos_status tp_backward_mul(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  TP_TRY(op2(alg, TOPOS_OP_MUL, G, B, &cot[0]));
  return op2(alg, TOPOS_OP_MUL, G, A, &cot[1]);
}

/* d(a/b) = g/b, -(g*y/b) */
topos_status tp_backward_div(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  tp_handle gy, gyb;
  TP_TRY(op2(alg, TOPOS_OP_DIV, G, B, &cot[0]));
  TP_TRY(op2(alg, TOPOS_OP_MUL, G, Y, &gy));
  TP_TRY(op2(alg, TOPOS_OP_DIV, gy, B, &gyb));
  return op1(alg, TOPOS_OP_NEG, gyb, NULL, &cot[1]);
}

topos_status tp_backward_neg(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  return op1(alg, TOPOS_OP_NEG, G, NULL, &cot[0]);
}

topos_status tp_backward_exp(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  return op2(alg, TOPOS_OP_MUL, G, Y, &cot[0]);
}

topos_status tp_backward_ln(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  return op2(alg, TOPOS_OP_DIV, G, A, &cot[0]);
}

/* d sqrt(a) = g / (y + y) */
topos_status tp_backward_sqrt(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  tp_handle twice;
  TP_TRY(op2(alg, TOPOS_OP_ADD, Y, Y, &twice));
  return op2(alg, TOPOS_OP_DIV, G, twice, &cot[0]);
}

/* d tanh(a) = g * (1 - y*y) */
topos_status tp_backward_tanh(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  tp_handle one, yy, slope;
  TP_TRY(with_scalar(alg, args->output_desc, 1.0, &one));
  TP_TRY(op2(alg, TOPOS_OP_MUL, Y, Y, &yy));
  TP_TRY(op2(alg, TOPOS_OP_SUB, one, yy, &slope));
  return op2(alg, TOPOS_OP_MUL, G, slope, &cot[0]);
}

/* d a^b = g*b*a^(b-1), g*y*ln(a) */
topos_status tp_backward_pow(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  tp_handle one, b1, power, gb, gy, lna;
  TP_TRY(with_scalar(alg, &args->input_descs[1], 1.0, &one));
  TP_TRY(op2(alg, TOPOS_OP_SUB, B, one, &b1));
  TP_TRY(op2(alg, TOPOS_OP_POW, A, b1, &power));
  TP_TRY(op2(alg, TOPOS_OP_MUL, G, B, &gb));
  TP_TRY(op2(alg, TOPOS_OP_MUL, gb, power, &cot[0]));
  TP_TRY(op2(alg, TOPOS_OP_MUL, G, Y, &gy));
  TP_TRY(op1(alg, TOPOS_OP_LN, A, NULL, &lna));
  return op2(alg, TOPOS_OP_MUL, gy, lna, &cot[1]);
}

/* s = step(a, b) (1 where a >= b: ties go left); g*s, g*(1-s) */
topos_status tp_backward_maximum(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  tp_handle s, one, rest;
  TP_TRY(op2(alg, TOPOS_OP_STEP, A, B, &s));
  TP_TRY(op2(alg, TOPOS_OP_MUL, G, s, &cot[0]));
  TP_TRY(with_scalar(alg, args->output_desc, 1.0, &one));
  TP_TRY(op2(alg, TOPOS_OP_SUB, one, s, &rest));
  return op2(alg, TOPOS_OP_MUL, G, rest, &cot[1]);
}

/* g * step(a, 0): subgradient 1 at 0 */
topos_status tp_backward_relu(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  tp_handle zero, s;
  TP_TRY(with_scalar(alg, &args->input_descs[0], 0.0, &zero));
  TP_TRY(op2(alg, TOPOS_OP_STEP, A, zero, &s));
  return op2(alg, TOPOS_OP_MUL, G, s, &cot[0]);
}

/* step is locally constant: both operands are data, not edges. */
topos_status tp_backward_step(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  (void)alg;
  (void)args;
  cot[0] = TP_NONE;
  cot[1] = TP_NONE;
  return TOPOS_OK;
}

/* C = A B over the last two axes: dA = g B^T, dB = A^T g */
topos_status tp_backward_matmul(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  tp_handle at, bt;
  TP_TRY(op1(alg, TOPOS_OP_TRANSPOSE, B, NULL, &bt));
  TP_TRY(op2(alg, TOPOS_OP_MATMUL, G, bt, &cot[0]));
  TP_TRY(op1(alg, TOPOS_OP_TRANSPOSE, A, NULL, &at));
  return op2(alg, TOPOS_OP_MATMUL, at, G, &cot[1]);
}

topos_status tp_backward_transpose(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  return op1(alg, TOPOS_OP_TRANSPOSE, G, NULL, &cot[0]);
}

topos_status tp_backward_permute(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  topos_op_attrs attrs = tp_attrs_none();
  attrs.rank = args->attrs->rank;
  for (int i = 0; i < attrs.rank; ++i) attrs.order[args->attrs->order[i]] = i;
  return op1(alg, TOPOS_OP_PERMUTE, G, &attrs, &cot[0]);
}

topos_status tp_backward_reshape(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  topos_op_attrs attrs = tp_attrs_shape(args->input_descs[0].rank, args->input_descs[0].shape);
  return op1(alg, TOPOS_OP_RESHAPE, G, &attrs, &cot[0]);
}

/* the window goes back into zeros of the operand's extent */
topos_status tp_backward_narrow(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  topos_op_attrs attrs = tp_attrs_axis(args->attrs->axis);
  attrs.start = args->attrs->start;
  attrs.length = args->input_descs[0].shape[args->attrs->axis];
  return op1(alg, TOPOS_OP_PAD, G, &attrs, &cot[0]);
}

topos_status tp_backward_pad(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  topos_op_attrs attrs = tp_attrs_axis(args->attrs->axis);
  attrs.start = args->attrs->start;
  attrs.length = args->input_descs[0].shape[args->attrs->axis];
  return op1(alg, TOPOS_OP_NARROW, G, &attrs, &cot[0]);
}

/* a has volume 1: the gradient is the sum of g, shaped like a */
topos_status tp_backward_broadcast(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  tp_handle total;
  TP_TRY(op1(alg, TOPOS_OP_SUM, G, NULL, &total));
  if (args->input_descs[0].rank == 0) {
    cot[0] = total;
    return TOPOS_OK;
  }
  topos_op_attrs attrs = tp_attrs_shape(args->input_descs[0].rank, args->input_descs[0].shape);
  return op1(alg, TOPOS_OP_RESHAPE, total, &attrs, &cot[0]);
}

topos_status tp_backward_broadcast_along(tp_algebra *alg, const tp_rule_args *args,
                                         tp_handle *cot) {
  topos_op_attrs attrs = tp_attrs_axis(args->attrs->axis);
  return op1(alg, TOPOS_OP_SUM_ALONG, G, &attrs, &cot[0]);
}

topos_status tp_backward_sum(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  topos_op_attrs attrs = tp_attrs_shape(args->input_descs[0].rank, args->input_descs[0].shape);
  return op1(alg, TOPOS_OP_BROADCAST, G, &attrs, &cot[0]);
}

topos_status tp_backward_sum_along(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  int axis = args->attrs->axis;
  return spread_along(alg, G, axis, args->input_descs[0].shape[axis], &cot[0]);
}

topos_status tp_backward_unfold(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  topos_op_attrs attrs = *args->attrs;
  attrs.length = args->input_descs[0].shape[args->attrs->axis];
  return op1(alg, TOPOS_OP_FOLD, G, &attrs, &cot[0]);
}

topos_status tp_backward_fold(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  topos_op_attrs attrs = *args->attrs;
  return op1(alg, TOPOS_OP_UNFOLD, G, &attrs, &cot[0]);
}

/* rows picked by indices go back to their rows (repeats accumulate), in
 * their batch */
topos_status tp_backward_gather(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  topos_op_attrs attrs = tp_attrs_none();
  attrs.length = args->input_descs[0].shape[args->input_descs[1].rank - 1];
  tp_handle in[2] = {G, B};
  TP_TRY(alg->apply(alg, TOPOS_OP_SCATTER, in, &attrs, &cot[0]));
  cot[1] = TP_NONE;
  return TOPOS_OK;
}

topos_status tp_backward_scatter(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  TP_TRY(op2(alg, TOPOS_OP_GATHER, G, B, &cot[0]));
  cot[1] = TP_NONE;
  return TOPOS_OK;
}

/* y = log_softmax(x): dx = g - exp(y) * spread(sum_along(g)) */
topos_status tp_backward_log_softmax(tp_algebra *alg, const tp_rule_args *args,
                                     tp_handle *cot) {
  int axis = args->attrs->axis;
  topos_op_attrs attrs = tp_attrs_axis(axis);
  tp_handle total, spread, probs, scaled;
  TP_TRY(op1(alg, TOPOS_OP_SUM_ALONG, G, &attrs, &total));
  TP_TRY(spread_along(alg, total, axis, args->input_descs[0].shape[axis], &spread));
  TP_TRY(op1(alg, TOPOS_OP_EXP, Y, NULL, &probs));
  TP_TRY(op2(alg, TOPOS_OP_MUL, probs, spread, &scaled));
  return op2(alg, TOPOS_OP_SUB, G, scaled, &cot[0]);
}

/* y = log_sum_exp(x) (axis removed): dx = spread(g) * exp(x - spread(y)) */
topos_status tp_backward_log_sum_exp(tp_algebra *alg, const tp_rule_args *args,
                                     tp_handle *cot) {
  int axis = args->attrs->axis;
  int64_t extent = args->input_descs[0].shape[axis];
  tp_handle gs, ys, centered, weights;
  TP_TRY(spread_along(alg, G, axis, extent, &gs));
  TP_TRY(spread_along(alg, Y, axis, extent, &ys));
  TP_TRY(op2(alg, TOPOS_OP_SUB, A, ys, &centered));
  TP_TRY(op1(alg, TOPOS_OP_EXP, centered, NULL, &weights));
  return op2(alg, TOPOS_OP_MUL, gs, weights, &cot[0]);
}

/* y = x . w^T over x's last axis: dx = g . w (a float w, transposed as a view
 * and packed by qlinear itself); dw = g2^T x2 with the leading axes of g and x
 * flattened, only for f32 w (weights of loaded models are constants: a
 * block-quantized w has no gradient, and asking for one fails). */
topos_status tp_backward_qlinear(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  const topos_tensor_desc *wd = &args->input_descs[1], *xd = &args->input_descs[0];
  if (!topos_dtype_is_float(wd->dtype))
    return tp_fail(TOPOS_ERR_DTYPE, "qlinear: cannot differentiate through a %s weight "
                   "(block-quantized weights are constants; dequantize to f32 to train)",
                   topos_dtype_name(wd->dtype));
  tp_handle wt;
  TP_TRY(op1(alg, TOPOS_OP_TRANSPOSE, B, NULL, &wt));
  TP_TRY(op2(alg, TOPOS_OP_QLINEAR, G, wt, &cot[0]));
  if (wd->dtype != TOPOS_F32) {
    cot[1] = TP_NONE; /* f16/bf16 weights: no gradient edge (constants) */
    return TOPOS_OK;
  }
  int64_t rows = 1;
  for (int i = 0; i + 1 < xd->rank; ++i) rows *= xd->shape[i];
  topos_op_attrs ra;
  memset(&ra, 0, sizeof ra);
  ra.rank = 2;
  ra.shape[0] = rows;
  ra.shape[1] = wd->shape[0];
  tp_handle g2, x2, g2t;
  TP_TRY(op1(alg, TOPOS_OP_RESHAPE, G, &ra, &g2));
  ra.shape[1] = wd->shape[1];
  TP_TRY(op1(alg, TOPOS_OP_RESHAPE, A, &ra, &x2));
  TP_TRY(op1(alg, TOPOS_OP_TRANSPOSE, g2, NULL, &g2t));
  return op2(alg, TOPOS_OP_MATMUL, g2t, x2, &cot[1]);
}

/* positions are integers: nothing passes back through them */
topos_status tp_backward_top_k(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  (void)alg;
  (void)args;
  cot[0] = TP_NONE;
  return TOPOS_OK;
}

/* The scan's adjoint needs the state at every step, the [T, N, H, P]
 * trajectory the op exists not to keep: refused, naming what was asked. */
topos_status tp_backward_ssm_scan(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  (void)alg;
  (void)args;
  (void)cot;
  return tp_fail(TOPOS_UNSUPPORTED, "ssm_scan: no gradient (the selective scan is for inference; its adjoint "
                 "would need every step's state)");
}

/* likewise the delta rule's */
topos_status tp_backward_delta_scan(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  (void)alg;
  (void)args;
  (void)cot;
  return tp_fail(TOPOS_UNSUPPORTED, "delta_scan: no gradient (the delta rule's scan is for inference; its adjoint "
                 "would need every step's state)");
}

/* y[t, j] = w[ids[t, j]] . x[t, s(j)]: dx[t, s(j)] += g[t, j] . w[ids[t, j]]
 * (qlinear_id over the experts transposed, summed over j where S = 1);
 * dw[e] = sum over (t, j) with ids[t, j] = e of g[t, j]^T x[t, s(j)] — the
 * slots' outer products scattered onto their experts. Block-quantized
 * experts are constants, as for qlinear. */
topos_status tp_backward_qlinear_id(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot) {
  const topos_tensor_desc *xd = &args->input_descs[0], *wd = &args->input_descs[1];
  const topos_tensor_desc *yd = args->output_desc;
  if (!topos_dtype_is_float(wd->dtype))
    return tp_fail(TOPOS_ERR_DTYPE, "qlinear_id: cannot differentiate through %s experts "
                   "(block-quantized weights are constants; dequantize to f32 to train)",
                   topos_dtype_name(wd->dtype));
  const int64_t T = yd->shape[0], K = yd->shape[1], n = yd->shape[2], k = xd->shape[2];
  const int shared = xd->shape[1] == 1 && K > 1; /* one input row for all of a token's slots */
  topos_op_attrs pa = tp_attrs_none();
  pa.rank = 3;
  pa.order[0] = 0, pa.order[1] = 2, pa.order[2] = 1;
  tp_handle wt, in3[3], dx;
  TP_TRY(op1(alg, TOPOS_OP_PERMUTE, B, &pa, &wt));
  in3[0] = G, in3[1] = wt, in3[2] = args->inputs[2];
  TP_TRY(alg->apply(alg, TOPOS_OP_QLINEAR_ID, in3, NULL, &dx)); /* [T, K, k] */
  topos_op_attrs ra = tp_attrs_none();
  if (shared) {
    tp_handle summed;
    topos_op_attrs sa = tp_attrs_axis(1);
    TP_TRY(op1(alg, TOPOS_OP_SUM_ALONG, dx, &sa, &summed));
    ra.rank = 3, ra.shape[0] = T, ra.shape[1] = 1, ra.shape[2] = k;
    TP_TRY(op1(alg, TOPOS_OP_RESHAPE, summed, &ra, &cot[0]));
  } else {
    cot[0] = dx;
  }
  cot[2] = TP_NONE;
  if (wd->dtype != TOPOS_F32) {
    cot[1] = TP_NONE; /* f16/bf16 experts: constants */
    return TOPOS_OK;
  }
  tp_handle xs = A, g4, x4, outer, flat_ids;
  if (shared) {
    topos_op_attrs ba = tp_attrs_axis(1);
    ba.length = K;
    tp_handle x2;
    ra.rank = 2, ra.shape[0] = T, ra.shape[1] = k;
    TP_TRY(op1(alg, TOPOS_OP_RESHAPE, A, &ra, &x2));
    TP_TRY(op1(alg, TOPOS_OP_BROADCAST_ALONG, x2, &ba, &xs));
  }
  ra.rank = 3, ra.shape[0] = T * K, ra.shape[1] = n, ra.shape[2] = 1;
  TP_TRY(op1(alg, TOPOS_OP_RESHAPE, G, &ra, &g4));
  ra.shape[1] = 1, ra.shape[2] = k;
  TP_TRY(op1(alg, TOPOS_OP_RESHAPE, xs, &ra, &x4));
  TP_TRY(op2(alg, TOPOS_OP_MATMUL, g4, x4, &outer)); /* [T K, n, k] */
  ra.rank = 1, ra.shape[0] = T * K;
  TP_TRY(op1(alg, TOPOS_OP_RESHAPE, args->inputs[2], &ra, &flat_ids));
  topos_op_attrs sc = tp_attrs_none();
  sc.length = wd->shape[0];
  tp_handle in2[2] = {outer, flat_ids};
  return alg->apply(alg, TOPOS_OP_SCATTER, in2, &sc, &cot[1]);
}

#undef A
#undef B
#undef Y
#undef G

const tp_backward_fn tp_backward_rules[TOPOS_OP_COUNT] = {
#define TP_BACKWARD_ROW(E, lower, arity) [TOPOS_OP_##E] = tp_backward_##lower,
    TOPOS_OP_LIST(TP_BACKWARD_ROW)
#undef TP_BACKWARD_ROW
};

/* Clean cotangents (algebra.h): moves of g (add, sub's left operand, the
 * views, pad/narrow with +0 fill, unfold/fold, broadcasts) or sums of g
 * (sum, sum_along, fold: any order of adding -0-free values is -0-free). */
const uint8_t tp_backward_clean[TOPOS_OP_COUNT] = {
    [TOPOS_OP_ADD] = 0x3u,       [TOPOS_OP_SUB] = 0x1u,       [TOPOS_OP_TRANSPOSE] = 0x1u,
    [TOPOS_OP_PERMUTE] = 0x1u,   [TOPOS_OP_RESHAPE] = 0x1u,   [TOPOS_OP_NARROW] = 0x1u,
    [TOPOS_OP_PAD] = 0x1u,       [TOPOS_OP_BROADCAST] = 0x1u, [TOPOS_OP_BROADCAST_ALONG] = 0x1u,
    [TOPOS_OP_SUM] = 0x1u,       [TOPOS_OP_SUM_ALONG] = 0x1u, [TOPOS_OP_UNFOLD] = 0x1u,
    [TOPOS_OP_FOLD] = 0x1u,
};

#define R_A 0x1u
#define R_B 0x2u
#define R_C 0x4u
#define R_Y TP_READS_OUTPUT
const uint8_t tp_backward_reads[TOPOS_OP_COUNT] = {
    [TOPOS_OP_MUL] = R_A | R_B,
    [TOPOS_OP_DIV] = R_B | R_Y,
    [TOPOS_OP_EXP] = R_Y,
    [TOPOS_OP_LN] = R_A,
    [TOPOS_OP_SQRT] = R_Y,
    [TOPOS_OP_TANH] = R_Y,
    [TOPOS_OP_POW] = R_A | R_B | R_Y,
    [TOPOS_OP_MAXIMUM] = R_A | R_B,
    [TOPOS_OP_RELU] = R_A,
    [TOPOS_OP_MATMUL] = R_A | R_B,
    [TOPOS_OP_GATHER] = R_B,
    [TOPOS_OP_SCATTER] = R_B,
    [TOPOS_OP_LOG_SOFTMAX] = R_Y,
    [TOPOS_OP_LOG_SUM_EXP] = R_A | R_Y,
    [TOPOS_OP_QLINEAR] = R_A | R_B,
    [TOPOS_OP_QLINEAR_ID] = R_A | R_B | R_C,
};

uint8_t tp_backward_reads_of(topos_op op) {
  return ((int)op >= 0 && op < TOPOS_OP_COUNT) ? tp_backward_reads[op] : 0;
}
