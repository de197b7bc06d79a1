/* topos — graph tier: recording, the sealed network, symbols, caller-held
 * parameters, the reference interpreter and reverse-mode differentiation.
 *
 * Life cycle
 *   topos_tape_new          -> record sources and ops (each returns a topos_sym)
 *   topos_tape_differentiate   (optional: append gradient nodes, "recorded route")
 *   topos_tape_seal         -> an immutable topos_network (the tape is consumed)
 *   topos_params_from_network -> the caller's parameter values (fresh copies)
 *   topos_network_forward   -> a topos_run (the interpreter: the specification)
 *   topos_run_read / topos_run_backward ("engine route") / topos_params_step
 *
 * Symbols. A topos_sym names one node of one tape for ever: (origin, index),
 * where origin is a process-wide id minted per tape and kept across seal and
 * reopen. Passing a symbol of another tape gives TOPOS_ERR_FOREIGN. A failed
 * record returns TOPOS_SYM_INVALID.
 *
 * Recording errors are sticky. Every record checks operands, shapes and dtypes
 * at once. The first failure sets the thread-local message, e.g.
 *   "matmul (node 7): inner extents differ: [2,3] x [4,5]"
 * and the tape keeps that status and message: later records on a failed tape
 * return TOPOS_SYM_INVALID without recording (so invalid symbols propagate
 * through an expression), and topos_tape_status / topos_tape_seal return the
 * first failure. Models can therefore be written as plain expressions and
 * checked once.
 *
 * Declared observability. A run only answers topos_run_read for the nodes it
 * was asked for (roots and observed nodes), never for what it happened to
 * compute; anything else is TOPOS_ERR_NOT_READABLE.
 *
 * Gradients. Every primitive op has one backward rule (src/graph/backward.c)
 * composed of primitive ops; the engine route (topos_run_backward) evaluates
 * it on tensors, the recorded route (topos_tape_differentiate) records it as
 * nodes, so both give the same bits. The reverse sweep visits nodes from the
 * loss down; only nodes that received a gradient run their rule, and shape-only
 * operands (both operands of step, the indices of gather and scatter) receive
 * none, so nothing behind them is differentiated (no NaN leaks through them).
 * Accumulation order is fixed: a node's gradient is zeros + c1 for its first
 * contribution, then + c2, + c3 ... where contributions arrive in reverse
 * recording order of the consuming nodes and, within one consumer, in operand
 * order. (When c1 only moves or sums the consumer's gradient — add, reshape,
 * permute, pad, narrow, unfold, fold, the broadcasts and sums — zeros + c1 is
 * c1 bit for bit and the sweep records no add: such gradients may be one
 * shared node.) Ties: maximum routes the gradient to its left operand (step(a, b) is
 * a >= b); relu's subgradient at 0 is 1.
 *
 * Threads. A tape is used by one thread at a time. A network is immutable and
 * may be shared by any number of threads running it concurrently. Parameters,
 * runs and fields are plain values: one writer at a time.
 *
 * Tensors handed to topos (constants, initials, defaults, feeds, parameter
 * values) are shared, not copied, and runs may return views of them: never
 * write into them afterwards; replace them (topos_params_set) instead.
 *
 * Ownership. Objects returned through `**out` belong to the caller and are
 * freed with their _free function (NULL is fine). Tensors returned through
 * `topos_tensor **out` carry one new reference (topos_tensor_release). Tensors
 * passed in are retained when kept, never consumed. */
#ifndef TOPOS_GRAPH_H
#define TOPOS_GRAPH_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- symbols */
typedef struct topos_sym {
  uint64_t origin; /* 0 only for TOPOS_SYM_INVALID */
  uint32_t index;  /* node index on its tape */
} topos_sym;

#define TOPOS_SYM_INVALID ((topos_sym){0, UINT32_MAX})
static inline int topos_sym_is_valid(topos_sym s) { return s.origin != 0; }
static inline int topos_sym_equal(topos_sym a, topos_sym b) {
  return a.origin == b.origin && a.index == b.index;
}

typedef struct topos_tape topos_tape;
typedef struct topos_network topos_network;
typedef struct topos_params topos_params;
typedef struct topos_run topos_run;
typedef struct topos_field topos_field;

/* What a node is. */
typedef enum topos_node_kind {
  TOPOS_NODE_OP,        /* a primitive op over earlier nodes */
  TOPOS_NODE_CONSTANT,  /* a tensor fixed at record time */
  TOPOS_NODE_PARAMETER, /* a value held by the caller's topos_params */
  TOPOS_NODE_INPUT,     /* a value fed per run (optionally with a default) */
} topos_node_kind;

/* ---- tape: recording */
TOPOS_API topos_status topos_tape_new(topos_tape **out);
TOPOS_API void topos_tape_free(topos_tape *tape);
/* TOPOS_OK, or the first recording failure (its message is set again as the
 * thread-local message). */
TOPOS_API topos_status topos_tape_status(const topos_tape *tape);
/* The message of the first failure ("" if none). Owned by the tape. */
TOPOS_API const char *topos_tape_error(const topos_tape *tape);
/* Number of nodes recorded so far. */
TOPOS_API uint32_t topos_tape_length(const topos_tape *tape);
/* Dtype and shape of a recorded node. */
TOPOS_API topos_status topos_tape_describe(const topos_tape *tape, topos_sym sym,
                                           topos_tensor_desc *out);

/* Sources. Tensors are retained (not copied): do not write to them later.
 * Each returns TOPOS_SYM_INVALID on failure (sticky error, see above). */
TOPOS_API topos_sym topos_tape_constant(topos_tape *tape, topos_tensor *value);
/* A constant rank-0 tensor of a float dtype. */
TOPOS_API topos_sym topos_tape_scalar(topos_tape *tape, topos_dtype dtype, double value);
/* A parameter with its initial value; name (copied, may be NULL) is how
 * checkpoints find it: names must be unique on a tape (TOPOS_ERR_DUPLICATE). */
TOPOS_API topos_sym topos_tape_parameter(topos_tape *tape, topos_tensor *initial,
                                         const char *name);
/* An input whose value is fed per run; `fallback` is used when a run does not
 * feed it. Names (copied, may be NULL) are unique among parameters and inputs. */
TOPOS_API topos_sym topos_tape_input(topos_tape *tape, topos_tensor *fallback, const char *name);
/* An input without a default: a run that needs it and does not feed it fails
 * with TOPOS_ERR_MISSING_FEED. */
TOPOS_API topos_sym topos_tape_input_desc(topos_tape *tape, const topos_tensor_desc *desc,
                                          const char *name);

/* The core record: an op over topos_op_arity(op) operand symbols. attrs may be
 * NULL for ops without attributes. The shape rule runs now. */
TOPOS_API topos_status topos_tape_record(topos_tape *tape, topos_op op, const topos_sym *inputs,
                                         const topos_op_attrs *attrs, topos_sym *out);

/* Records a failure found by caller code (a composite, a layer) as the tape's
 * sticky error: the status and message are kept like any recording failure
 * (unless the tape already failed). Returns the tape's status afterwards. */
TOPOS_API topos_status topos_tape_fail(topos_tape *tape, topos_status status, const char *message);

/* Sugar over topos_tape_record, one per op (see ops.h for the semantics). */
TOPOS_API topos_sym topos_tape_add(topos_tape *tape, topos_sym a, topos_sym b);
TOPOS_API topos_sym topos_tape_sub(topos_tape *tape, topos_sym a, topos_sym b);
TOPOS_API topos_sym topos_tape_mul(topos_tape *tape, topos_sym a, topos_sym b);
TOPOS_API topos_sym topos_tape_div(topos_tape *tape, topos_sym a, topos_sym b);
TOPOS_API topos_sym topos_tape_pow(topos_tape *tape, topos_sym a, topos_sym b);
TOPOS_API topos_sym topos_tape_maximum(topos_tape *tape, topos_sym a, topos_sym b);
TOPOS_API topos_sym topos_tape_step(topos_tape *tape, topos_sym a, topos_sym threshold);
TOPOS_API topos_sym topos_tape_neg(topos_tape *tape, topos_sym a);
TOPOS_API topos_sym topos_tape_exp(topos_tape *tape, topos_sym a);
TOPOS_API topos_sym topos_tape_ln(topos_tape *tape, topos_sym a);
TOPOS_API topos_sym topos_tape_sqrt(topos_tape *tape, topos_sym a);
TOPOS_API topos_sym topos_tape_tanh(topos_tape *tape, topos_sym a);
TOPOS_API topos_sym topos_tape_relu(topos_tape *tape, topos_sym a);
TOPOS_API topos_sym topos_tape_matmul(topos_tape *tape, topos_sym a, topos_sym b);
TOPOS_API topos_sym topos_tape_transpose(topos_tape *tape, topos_sym a);
/* order has one entry per axis of a. */
TOPOS_API topos_sym topos_tape_permute(topos_tape *tape, topos_sym a, const int *order);
TOPOS_API topos_sym topos_tape_reshape(topos_tape *tape, topos_sym a, int rank,
                                       const int64_t *shape);
TOPOS_API topos_sym topos_tape_narrow(topos_tape *tape, topos_sym a, int axis, int64_t start,
                                      int64_t length);
TOPOS_API topos_sym topos_tape_pad(topos_tape *tape, topos_sym a, int axis, int64_t start,
                                   int64_t extent);
TOPOS_API topos_sym topos_tape_broadcast(topos_tape *tape, topos_sym a, int rank,
                                         const int64_t *shape);
TOPOS_API topos_sym topos_tape_broadcast_along(topos_tape *tape, topos_sym a, int axis,
                                               int64_t count);
TOPOS_API topos_sym topos_tape_sum(topos_tape *tape, topos_sym a);
TOPOS_API topos_sym topos_tape_sum_along(topos_tape *tape, topos_sym a, int axis);
TOPOS_API topos_sym topos_tape_unfold(topos_tape *tape, topos_sym a, int axis, int64_t size,
                                      int64_t step, int64_t dilation);
TOPOS_API topos_sym topos_tape_fold(topos_tape *tape, topos_sym a, int axis, int64_t size,
                                    int64_t step, int64_t dilation, int64_t extent);
TOPOS_API topos_sym topos_tape_gather(topos_tape *tape, topos_sym table, topos_sym indices);
TOPOS_API topos_sym topos_tape_scatter(topos_tape *tape, topos_sym values, topos_sym indices,
                                       int64_t rows);
TOPOS_API topos_sym topos_tape_log_softmax(topos_tape *tape, topos_sym a, int axis);
TOPOS_API topos_sym topos_tape_log_sum_exp(topos_tape *tape, topos_sym a, int axis);
/* x[..., k] . w[n, k]^T (see ops.h: w may be block-quantized). */
TOPOS_API topos_sym topos_tape_qlinear(topos_tape *tape, topos_sym x, topos_sym w);
/* The k largest of each last-axis lane, as i32 positions (see ops.h). */
TOPOS_API topos_sym topos_tape_top_k(topos_tape *tape, topos_sym a, int64_t k);
/* x [T, S, k] through the experts ids [T, K] of w [E, n, k] -> [T, K, n]. */
TOPOS_API topos_sym topos_tape_qlinear_id(topos_tape *tape, topos_sym x, topos_sym w, topos_sym ids);
/* Mamba's selective scan: state [N, H, P], xa [T, H, P + R], bc [T, 2, G, N]
 * -> [T + N, H, P], the outputs then the final state (see ops.h). */
TOPOS_API topos_sym topos_tape_ssm_scan(topos_tape *tape, topos_sym state, topos_sym xa, topos_sym bc);
/* The gated delta rule: state [K, H, V], vab [T, H, V + 2 or V + K + 1], qk [T, 2, G, K]
 * -> [T + K, H, V], the outputs then the final state (see ops.h). */
TOPOS_API topos_sym topos_tape_delta_scan(topos_tape *tape, topos_sym state, topos_sym vab, topos_sym qk);

/* Composites: built only from the calls above (src/graph/composite.c). */
/* A constant filled with value, shaped like `like` (a broadcast scalar). */
TOPOS_API topos_sym topos_tape_fill_like(topos_tape *tape, topos_sym like, double value);
TOPOS_API topos_sym topos_tape_softmax(topos_tape *tape, topos_sym a, int axis);
TOPOS_API topos_sym topos_tape_mean(topos_tape *tape, topos_sym a);          /* rank 0 */
TOPOS_API topos_sym topos_tape_mean_along(topos_tape *tape, topos_sym a, int axis);
/* Biased variance along axis (divides by the extent); the axis is removed. */
TOPOS_API topos_sym topos_tape_variance_along(topos_tape *tape, topos_sym a, int axis);
/* NumPy's right-aligned broadcasting rule, composed of explicit broadcasts. */
TOPOS_API topos_sym topos_tape_broadcast_to(topos_tape *tape, topos_sym a, int rank,
                                            const int64_t *shape);
/* Joins along axis; all other extents equal. */
TOPOS_API topos_sym topos_tape_concat(topos_tape *tape, size_t count, const topos_sym *parts,
                                      int axis);
TOPOS_API topos_sym topos_tape_squeeze(topos_tape *tape, topos_sym a, int axis);
TOPOS_API topos_sym topos_tape_unsqueeze(topos_tape *tape, topos_sym a, int axis);
TOPOS_API topos_sym topos_tape_abs(topos_tape *tape, topos_sym a);
TOPOS_API topos_sym topos_tape_sigmoid(topos_tape *tape, topos_sym a);
TOPOS_API topos_sym topos_tape_silu(topos_tape *tape, topos_sym a);
/* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
TOPOS_API topos_sym topos_tape_gelu(topos_tape *tape, topos_sym a);

/* Recorded route: appends the gradient of the rank-0 node `loss` with respect
 * to each of wrt[0..count) as ordinary nodes and writes their symbols to
 * gradients[0..count). The gradient nodes can be run, compiled and
 * differentiated again. A wrt node that `loss` does not depend on gets a
 * recorded zero. Produces the same bits as topos_run_backward. */
TOPOS_API topos_status topos_tape_differentiate(topos_tape *tape, topos_sym loss, size_t count,
                                                const topos_sym *wrt, topos_sym *gradients);

/* Seals the tape into an immutable network. Consumes *tape (set to NULL),
 * also on failure; fails with the tape's first recording error. */
TOPOS_API topos_status topos_tape_seal(topos_tape **tape, topos_network **out);

/* ---- network: the sealed, immutable specification */
/* Frees the caller's handle; runs made from it stay valid. */
TOPOS_API void topos_network_free(topos_network *net);
/* Consumes *net (set to NULL) and gives a tape with the same nodes and origin,
 * so old symbols stay valid and new nodes can be appended. */
TOPOS_API topos_status topos_network_reopen(topos_network **net, topos_tape **out);
TOPOS_API uint32_t topos_network_length(const topos_network *net);
TOPOS_API topos_status topos_network_describe(const topos_network *net, topos_sym sym,
                                              topos_tensor_desc *out);
/* Kind of a node and, for TOPOS_NODE_OP, its op (else *op is untouched). */
TOPOS_API topos_status topos_network_node(const topos_network *net, topos_sym sym,
                                          topos_node_kind *kind, topos_op *op);
/* Name of a parameter or input (NULL if unnamed or not a source). Owned by the network. */
TOPOS_API const char *topos_network_name(const topos_network *net, topos_sym sym);
/* The parameter or input with that name; TOPOS_ERR_NOT_FOUND otherwise. */
TOPOS_API topos_status topos_network_find(const topos_network *net, const char *name,
                                          topos_sym *out);
/* Symbol of the origin of this network's nodes: {origin, index} for index < length. */
TOPOS_API topos_sym topos_network_symbol(const topos_network *net, uint32_t index);

/* ---- parameters: the caller's state, keyed by symbol */
/* Fresh copies of every parameter's initial value. */
TOPOS_API topos_status topos_params_from_network(const topos_network *net, topos_params **out);
/* Deep copy (tensor contents copied). */
TOPOS_API topos_status topos_params_copy(const topos_params *params, topos_params **out);
TOPOS_API void topos_params_free(topos_params *params);
TOPOS_API size_t topos_params_count(const topos_params *params);
/* The i-th parameter (recording order). */
TOPOS_API topos_sym topos_params_symbol(const topos_params *params, size_t i);
/* The parameter's name (NULL if unnamed); owned by params. */
TOPOS_API const char *topos_params_name(const topos_params *params, topos_sym sym);
/* After topos_network_reopen + seal: parameters for the grown network that
 * keep old's values (shared, not copied) for the parameters it already had and
 * fresh copies of the initials for new ones. */
TOPOS_API topos_status topos_params_carry(const topos_params *old, const topos_network *net,
                                          topos_params **out);
/* Gives one new reference to the current value. */
TOPOS_API topos_status topos_params_get(const topos_params *params, topos_sym sym,
                                        topos_tensor **out);
/* Replaces the value (retained; dtype and shape must match the parameter). */
TOPOS_API topos_status topos_params_set(topos_params *params, topos_sym sym, topos_tensor *value);

/* One update: given the parameter, its value and its gradient, return a new
 * value through *out (a new reference of the same dtype and shape). */
typedef topos_status (*topos_step_fn)(void *user, topos_sym param, topos_tensor *value,
                                      topos_tensor *gradient, topos_tensor **out);
/* Calls fn once per parameter (recording order) with its gradient from field,
 * then installs all new values at once: on any failure params is unchanged. */
TOPOS_API topos_status topos_params_step(topos_params *params, const topos_field *gradients,
                                         topos_step_fn fn, void *user);

/* ---- interpreter runs */
typedef struct topos_feed {
  topos_sym input;
  topos_tensor *value; /* dtype and shape must equal the input's */
} topos_feed;

/* What a run computes and keeps. With no roots and nothing observed the run
 * is complete: every node is computed and readable, backward allowed. Else
 * only ancestors of roots and observe are computed, only roots and observe are
 * readable, and backward is allowed only when `backward` is set (then every
 * computed value is kept for the reverse sweep). */
typedef struct topos_forward_options {
  const topos_sym *roots;
  size_t n_roots;
  const topos_sym *observe;
  size_t n_observe;
  int backward;
} topos_forward_options;

/* Runs the network with the reference kernels, one left-to-right scan, under
 * the calling thread's numerics posture (topos_numerics_enter; Fast by default).
 * options may be NULL (a complete run). Feeds override input defaults; an
 * input that is needed, has no default and is not fed gives
 * TOPOS_ERR_MISSING_FEED; a feed of the wrong dtype or shape gives
 * TOPOS_ERR_DTYPE / TOPOS_ERR_SHAPE naming the input. */
TOPOS_API topos_status topos_network_forward(const topos_network *net, const topos_params *params,
                                             const topos_feed *feeds, size_t n_feeds,
                                             const topos_forward_options *options,
                                             topos_run **out);
TOPOS_API void topos_run_free(topos_run *run);
/* Gives one new reference to a readable node's value. */
TOPOS_API topos_status topos_run_read(const topos_run *run, topos_sym sym, topos_tensor **out);
/* Engine route: gradients of the rank-0 node loss with respect to every node
 * it depends on (parameters included; zeros for those it does not depend on).
 * TOPOS_ERR_STATE on a forward-only run. */
TOPOS_API topos_status topos_run_backward(const topos_run *run, topos_sym loss,
                                          topos_field **out);
/* Collects recorded gradients (from topos_tape_differentiate) into a field:
 * field[params[i]] = value of gradients[i], which must be readable. */
TOPOS_API topos_status topos_run_recorded_gradients(const topos_run *run, size_t count,
                                                    const topos_sym *params,
                                                    const topos_sym *gradients,
                                                    topos_field **out);

/* ---- fields: one tensor per node (gradients, optimizer state) */
/* An empty field over the network's nodes (every entry reads as zeros):
 * a starting point for optimizer state. */
TOPOS_API topos_status topos_field_new(const topos_network *net, topos_field **out);
TOPOS_API void topos_field_free(topos_field *field);
/* Stores value (retained) as sym's entry; dtype and shape must match the node. */
TOPOS_API topos_status topos_field_set(topos_field *field, topos_sym sym, topos_tensor *value);
/* Gives one new reference; a node without an entry reads as zeros of its shape.
 * Gradients may be views (a broadcast for the gradient of a sum, say): read
 * them with topos_tensor_read_* or make them dense with topos_tensor_contiguous. */
TOPOS_API topos_status topos_field_get(const topos_field *field, topos_sym sym,
                                       topos_tensor **out);
/* 1 if the field holds an entry for sym (a computed gradient), else 0. */
TOPOS_API int topos_field_has(const topos_field *field, topos_sym sym);

#ifdef __cplusplus
}
#endif
#endif
