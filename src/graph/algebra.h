/* Internal: the algebra the backward rules are written against, and the op
 * table's backward column.
 *
 * Every backward rule is written ONCE as a composition of primitive ops over
 * opaque handles. Two algebras interpret the handles:
 *   - eager (algebra_eager.c): a handle is a tensor; apply runs the reference
 *     kernel now. This is the engine route (topos_run_backward).
 *   - recording (algebra_record.c): a handle is a node on a tape; apply records
 *     a node. This is the recorded route (topos_tape_differentiate).
 * Running the recorded nodes with the interpreter performs exactly the kernel
 * calls the eager algebra performs, in the same order with the same operands,
 * which is why both routes give the same bits.
 *
 * The reverse sweep (sweep.c) is shared by both routes as well. */
#ifndef TP_GRAPH_ALGEBRA_H
#define TP_GRAPH_ALGEBRA_H

#include "graph/graph_internal.h"

typedef int64_t tp_handle;
#define TP_NONE ((tp_handle)-1) /* a "None" cotangent: a shape-only edge, no gradient */

typedef struct tp_algebra tp_algebra;
struct tp_algebra {
  /* out = op(inputs) */
  topos_status (*apply)(tp_algebra *self, topos_op op, const tp_handle *inputs,
                        const topos_op_attrs *attrs, tp_handle *out);
  /* out = a tensor of `like`'s dtype and shape with every element = value
   * (a broadcast scalar, never a dense fill). */
  topos_status (*fill)(tp_algebra *self, const topos_tensor_desc *like, double value,
                       tp_handle *out);
  /* out = the value of node `index` of the graph being differentiated. */
  topos_status (*node_value)(tp_algebra *self, uint32_t index, tp_handle *out);
  /* Scratch management (no-ops for the recording algebra): handles made after
   * mark() are released by collect() except the `keep` ones, which stay valid
   * until release(). */
  size_t (*mark)(tp_algebra *self);
  void (*collect)(tp_algebra *self, size_t mark, const tp_handle *keep, size_t n_keep);
  void (*release)(tp_algebra *self, tp_handle h);
};

/* What a rule sees: its operands' and output's handles and descriptors, the
 * incoming gradient g (same desc as the output) and the attributes. */
typedef struct tp_rule_args {
  const tp_handle *inputs;
  const topos_tensor_desc *input_descs;
  tp_handle output;
  const topos_tensor_desc *output_desc;
  tp_handle grad;
  const topos_op_attrs *attrs;
} tp_rule_args;

/* Writes one cotangent per operand (TP_NONE for shape-only operands). */
typedef topos_status (*tp_backward_fn)(tp_algebra *alg, const tp_rule_args *args,
                                       tp_handle *cotangents);

#define TP_BACKWARD_DECLARE(E, lower, arity) \
  topos_status tp_backward_##lower(tp_algebra *alg, const tp_rule_args *args, tp_handle *cot);
TOPOS_OP_LIST(TP_BACKWARD_DECLARE)
#undef TP_BACKWARD_DECLARE

/* The backward column of the op table, indexed by topos_op. */
extern const tp_backward_fn tp_backward_rules[TOPOS_OP_COUNT];

/* Which values a rule reads (for a compiler's liveness): bit i = operand i,
 * TP_READS_OUTPUT = the op's own output. Shapes are always available. */
#define TP_READS_OUTPUT 0x80u
extern const uint8_t tp_backward_reads[TOPOS_OP_COUNT];

/* The reverse sweep shared by both routes.
 *
 * Seeds the gradient of `loss` (rank 0) with fill(1), then visits nodes from
 * `loss` down to 0. A node runs its rule only if it received a gradient (so
 * only ancestors of the loss do, and only through edges whose cotangent is not
 * TP_NONE) and, when `active` is given, only if active[node] (operands that are
 * not active receive nothing). Accumulation order, fixed:
 *     grad[x] = fill(x, 0) + c1        (first contribution)
 *     grad[x] = grad[x] + c2, ...      (later ones)
 * where contributions arrive in reverse scan order of their consumers and, for
 * one consumer, in operand order. grads has graph->count entries (TP_NONE =
 * no gradient) owned by the algebra (released with alg->release). */
topos_status tp_sweep(tp_algebra *alg, tp_graph *graph, uint32_t loss, const uint8_t *active,
                      tp_handle *grads);

/* ---- the two algebras */
typedef struct tp_eager_algebra {
  tp_algebra base;
  const topos_run *run;     /* node values come from here */
  topos_tensor **slots;     /* handle -> tensor (NULL once released) */
  size_t n_slots, cap_slots;
  size_t *log;              /* scratch handles in creation order */
  size_t n_log, cap_log;
  /* How dropped tensors go: NULL = topos_tensor_release; a plan passes its
   * header recycler so the sweep's scratch costs no allocation next time. */
  void (*drop)(void *context, topos_tensor *t);
  void *drop_context;
} tp_eager_algebra;
void tp_eager_algebra_init(tp_eager_algebra *alg, const topos_run *run);
/* Gives a new reference to the tensor behind h. */
topos_tensor *tp_eager_algebra_take(tp_eager_algebra *alg, tp_handle h);
void tp_eager_algebra_free(tp_eager_algebra *alg);

typedef struct tp_record_algebra {
  tp_algebra base;
  topos_tape *tape;
} tp_record_algebra;
void tp_record_algebra_init(tp_record_algebra *alg, topos_tape *tape);

#endif
