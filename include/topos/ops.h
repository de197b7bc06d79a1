/* topos — ops tier: the closed set of primitive operations.
 *
 * Each op is one row of TOPOS_OP_LIST; everything else (enum, names, arity,
 * the shape rule, the reference forward kernel and, in the graph tier, the
 * backward rule) is derived from that row by name:
 *   row X(ADD, add, 2)  =>  TOPOS_OP_ADD, "add", tp_shape_add, tp_forward_add,
 *                           tp_backward_add.
 *
 * The reference forward kernels are the specification of topos: plain loops
 * over logical indices through strides with a fixed summation order. Every
 * faster path is tested against their bits.
 *   - matmul: each output seeded with the first product a[i,0]*b[0,j], then k
 *     ascending; batch axes must be identical (no implicit broadcast).
 *   - sum, sum_along, log_softmax, log_sum_exp: seeded from the first element,
 *     then ascending (row-major logical order for sum).
 *   - fold and scatter: zero-seeded, windows / indices in ascending order.
 *   - bf16/f16: computed in f32, rounded once per op; reductions accumulate in f32.
 *   - qlinear: x[..., k] . w[n, k]^T -> [..., n] f32, x f32, w f32, f16, bf16
 *     or block-quantized (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K). It is the
 *     quantized product's reference path (include/topos/qmatmul.h): each row
 *     of x is quantized to w's partner format with the reference quantizer,
 *     then every output is one reference vec dot (float w: products in f32
 *     summed in f64 in ascending k, rounded once). Rows are independent, so a
 *     row's result does not depend on how many rows are computed with it.
 *     Under the Fast posture the quantized product's SIMD kernels serve it
 *     (same quantized activations, reassociated float sums). Gradients: x
 *     gets g . w for float w; w is differentiated only when it is f32;
 *     block-quantized w is a constant (asking for its gradient fails).
 * Binary elementwise ops require equal shapes and dtypes: broadcasting is
 * always an explicit view (broadcast, broadcast_along).
 * Edge rules: maximum propagates NaN and orders -0 < +0; step(a, t) is 1 when
 * a >= t (ties give 1); relu(x) = maximum(x, 0), so relu(-0) = +0 and its
 * subgradient at 0 is 1.
 * log_softmax / log_sum_exp with a non-finite peak (the lane maximum):
 * log_softmax follows its formula, so a lane holding +inf, a NaN, or only
 * -inf is NaN throughout; log_sum_exp gives the peak when it is infinite
 * (only -inf => -inf, any +inf => +inf) and NaN when a NaN is present.
 * fold and scatter are zero-seeded, so they turn -0 sums into +0.
 * Dtypes: arithmetic takes float dtypes only; integer tensors (i32 indices)
 * have no arithmetic and are refused with TOPOS_ERR_DTYPE; binary ops never
 * mix dtypes (TOPOS_ERR_DTYPE naming both). Views, pad and gather move any
 * plain dtype. Block-quantized tensors are refused by every op except views
 * that keep the packed last axis (message: use the quantized product or
 * dequantize). */
#ifndef TOPOS_OPS_H
#define TOPOS_OPS_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(ENUM, lower_name, arity) — arity counts tensor operands. */
#define TOPOS_OP_LIST(X)           \
  X(ADD, add, 2)                   \
  X(SUB, sub, 2)                   \
  X(MUL, mul, 2)                   \
  X(DIV, div, 2)                   \
  X(NEG, neg, 1)                   \
  X(EXP, exp, 1)                   \
  X(LN, ln, 1)                     \
  X(SQRT, sqrt, 1)                 \
  X(TANH, tanh, 1)                 \
  X(POW, pow, 2)                   \
  X(MAXIMUM, maximum, 2)           \
  X(RELU, relu, 1)                 \
  X(STEP, step, 2)                 \
  X(MATMUL, matmul, 2)             \
  X(TRANSPOSE, transpose, 1)       \
  X(PERMUTE, permute, 1)           \
  X(RESHAPE, reshape, 1)           \
  X(NARROW, narrow, 1)             \
  X(PAD, pad, 1)                   \
  X(BROADCAST, broadcast, 1)       \
  X(BROADCAST_ALONG, broadcast_along, 1) \
  X(SUM, sum, 1)                   \
  X(SUM_ALONG, sum_along, 1)       \
  X(UNFOLD, unfold, 1)             \
  X(FOLD, fold, 1)                 \
  X(GATHER, gather, 2)             \
  X(SCATTER, scatter, 2)           \
  X(LOG_SOFTMAX, log_softmax, 1)   \
  X(LOG_SUM_EXP, log_sum_exp, 1)   \
  X(QLINEAR, qlinear, 2)           \
  X(TOP_K, top_k, 1)               \
  X(QLINEAR_ID, qlinear_id, 3)     \
  X(SSM_SCAN, ssm_scan, 3)         \
  X(DELTA_SCAN, delta_scan, 3)

typedef enum topos_op {
#define TOPOS_OP_ENUM_ROW(E, lower, arity) TOPOS_OP_##E,
  TOPOS_OP_LIST(TOPOS_OP_ENUM_ROW)
#undef TOPOS_OP_ENUM_ROW
  TOPOS_OP_COUNT
} topos_op;

/* Attributes of the ops that have them; unused fields are ignored.
 *   sum_along, log_softmax, log_sum_exp: axis
 *   narrow:          axis, start, length (window, > 0)
 *   pad:             axis, start, length (= the padded extent)
 *   broadcast_along: axis (insert position 0..rank), length (= count)
 *   broadcast:       rank, shape (operand must have volume 1)
 *   reshape:         rank, shape (one extent may be -1)
 *   permute:         rank (must equal the operand's), order
 *   unfold:          axis, size, step, dilation (axis -> (count, size))
 *   fold:            axis, size, step, dilation, length (= the folded extent);
 *                    the operand's axes (axis, axis+1) are (count, size)
 *   gather:          table [B..., V, ...], indices i32 [B..., N] -> [B..., N, ...]:
 *                    out[b, i, ...] = table[b, idx[b, i], ...]. The indices'
 *                    leading axes B (none for rank-1 indices) are batch axes
 *                    the table shares; the next table axis is the one indexed.
 *   scatter:         values [B..., N, ...], indices i32 [B..., N], length
 *                    (= extent V of the indexed axis) -> [B..., V, ...]: the
 *                    adjoint of gather (repeats accumulate, ascending i).
 *   top_k:           a [..., N] float, length (= k, 1..N) -> i32 [..., k]:
 *                    the positions of the k largest values of each last-axis
 *                    lane, largest first; equal values in ascending position;
 *                    NaN ranks below every number (-0 and +0 are equal). The
 *                    result is integer: no gradient passes through it.
 *   qlinear_id:      x f32 [T, S, k], w [E, n, k], ids i32 [T, K] -> f32
 *                    [T, K, n] with S = 1 or K: out[t, j] = w[ids[t, j]] .
 *                    x[t, S == 1 ? 0 : j] — a mixture-of-experts layer's
 *                    product, each token through the experts chosen for it.
 *                    w is any qlinear weight type; an id outside [0, E) is
 *                    TOPOS_ERR_RANGE. Every row is qlinear's row on the same
 *                    path (same bits), whatever rows share its expert.
 *   ssm_scan:        state f32 [N, H, P], xa f32 [T, H, P + R], bc f32
 *                    [T, 2, G, N] -> f32 [T + N, H, P]: the selective scan of
 *                    Mamba blocks. xa[t, h] holds the P inputs times the time
 *                    step, then R = 1 decay per head (Mamba-2) or R = N, one
 *                    per state entry (Mamba-1); bc[t] holds B then C, head h
 *                    reading group h / (H / G). For t ascending:
 *                    s[n, h, p] = s[n, h, p] * a + B[n] * xa[t, h, p] and
 *                    out[t, h, p] = sum over ascending n of C[n] * s[n, h, p];
 *                    out[T + n] is the final state. A token's arithmetic does
 *                    not depend on the chunk it is in (a sequence scanned in
 *                    pieces, each piece's final state the next one's, gives
 *                    the bits of one scan). No gradient (refused).
 *   delta_scan:      state f32 [K, H, V], vab f32 [T, H, V + R + 1], qk f32
 *                    [T, 2, G, K] -> f32 [T + K, H, V]: the gated delta rule
 *                    (gated DeltaNet, Kimi Delta Attention). vab[t, h] holds
 *                    V values, R decays a (R = 1: one for the head; R = K:
 *                    one per key entry) and beta; qk[t] holds q (already
 *                    scaled) then k of G key heads, head h reading h / (H /
 *                    G). For t ascending, per head: S[i, :] = a[i] S[i, :];
 *                    d = beta (v - S^T k); S = S + k d^T;
 *                    out[t] = S^T q, the sums over i in ascending order;
 *                    out[T + i] the final state. Chunks give the bits of one
 *                    scan, as ssm_scan's. No gradient (refused). */
typedef struct topos_op_attrs {
  int axis;
  int64_t start;
  int64_t length;
  int64_t size, step, dilation;
  int rank;
  int64_t shape[TOPOS_MAX_RANK];
  int order[TOPOS_MAX_RANK];
} topos_op_attrs;

/* What an op produces: used for record-time shape checks. */
typedef struct topos_tensor_desc {
  topos_dtype dtype;
  int rank;
  int64_t shape[TOPOS_MAX_RANK];
} topos_tensor_desc;

TOPOS_API const char *topos_op_name(topos_op op);
TOPOS_API int topos_op_arity(topos_op op);
/* 1 for ops whose reference forward returns a view (transpose, permute,
 * narrow, broadcast, broadcast_along, unfold; reshape when possible). */
TOPOS_API int topos_op_is_view(topos_op op);
/* The op whose topos_op_name is name; TOPOS_ERR_NOT_FOUND otherwise. */
TOPOS_API topos_status topos_op_parse(const char *name, topos_op *out);

/* The shape and dtype rule. On failure the message names the op and the
 * operand shapes, e.g. "add: shapes [2,3] and [3,2] differ". */
TOPOS_API topos_status topos_op_infer(topos_op op, const topos_tensor_desc *inputs,
                                      const topos_op_attrs *attrs, topos_tensor_desc *out);
/* Runs the op's reference forward (elementwise maps and matmul offer their
 * work to the backend chain first). inputs has topos_op_arity(op) entries.
 * *out is a new
 * reference the caller releases. It may be a view sharing storage with an
 * input (see topos_op_is_view) or, for a unary map over a broadcast view, a
 * broadcast view of freshly computed elements: test layout with
 * topos_tensor_is_contiguous, not by op. */
TOPOS_API topos_status topos_op_forward(topos_op op, topos_tensor *const *inputs,
                                        const topos_op_attrs *attrs, topos_tensor **out);
/* Fills a descriptor from a tensor. */
TOPOS_API topos_tensor_desc topos_tensor_describe(const topos_tensor *t);

/* Eager conveniences over topos_op_forward (reference kernels). */
TOPOS_API topos_status topos_add(topos_tensor *a, topos_tensor *b, topos_tensor **out);
TOPOS_API topos_status topos_sub(topos_tensor *a, topos_tensor *b, topos_tensor **out);
TOPOS_API topos_status topos_mul(topos_tensor *a, topos_tensor *b, topos_tensor **out);
TOPOS_API topos_status topos_div(topos_tensor *a, topos_tensor *b, topos_tensor **out);
TOPOS_API topos_status topos_pow(topos_tensor *a, topos_tensor *b, topos_tensor **out);
TOPOS_API topos_status topos_maximum(topos_tensor *a, topos_tensor *b, topos_tensor **out);
TOPOS_API topos_status topos_step(topos_tensor *a, topos_tensor *threshold, topos_tensor **out);
TOPOS_API topos_status topos_neg(topos_tensor *a, topos_tensor **out);
TOPOS_API topos_status topos_exp(topos_tensor *a, topos_tensor **out);
TOPOS_API topos_status topos_ln(topos_tensor *a, topos_tensor **out);
TOPOS_API topos_status topos_sqrt(topos_tensor *a, topos_tensor **out);
TOPOS_API topos_status topos_tanh(topos_tensor *a, topos_tensor **out);
TOPOS_API topos_status topos_relu(topos_tensor *a, topos_tensor **out);
TOPOS_API topos_status topos_matmul(topos_tensor *a, topos_tensor *b, topos_tensor **out);
TOPOS_API topos_status topos_sum(topos_tensor *a, topos_tensor **out);
TOPOS_API topos_status topos_sum_along(topos_tensor *a, int axis, topos_tensor **out);
TOPOS_API topos_status topos_pad(topos_tensor *a, int axis, int64_t start, int64_t extent,
                                 topos_tensor **out);
TOPOS_API topos_status topos_fold(topos_tensor *a, int axis, int64_t size, int64_t step,
                                  int64_t dilation, int64_t extent, topos_tensor **out);
TOPOS_API topos_status topos_gather(topos_tensor *table, topos_tensor *indices, topos_tensor **out);
TOPOS_API topos_status topos_scatter(topos_tensor *values, topos_tensor *indices, int64_t rows,
                                     topos_tensor **out);
TOPOS_API topos_status topos_log_softmax(topos_tensor *a, int axis, topos_tensor **out);
TOPOS_API topos_status topos_log_sum_exp(topos_tensor *a, int axis, topos_tensor **out);
TOPOS_API topos_status topos_qlinear(topos_tensor *x, topos_tensor *w, topos_tensor **out);
TOPOS_API topos_status topos_top_k(topos_tensor *a, int64_t k, topos_tensor **out);
TOPOS_API topos_status topos_qlinear_id(topos_tensor *x, topos_tensor *w, topos_tensor *ids,
                                        topos_tensor **out);
TOPOS_API topos_status topos_ssm_scan(topos_tensor *state, topos_tensor *xa, topos_tensor *bc,
                                      topos_tensor **out);
TOPOS_API topos_status topos_delta_scan(topos_tensor *state, topos_tensor *vab, topos_tensor *qk,
                                        topos_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
