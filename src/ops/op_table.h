/* Internal: the op table. Every per-op function is named after its row of
 * TOPOS_OP_LIST (include/topos/ops.h), so the compiler — not a switch —
 * guarantees that no op is forgotten:
 *   row X(ADD, add, 2)  =>  tp_shape_add, tp_forward_add  (this tier)
 *                           tp_backward_add                (graph tier)
 *
 * The backward rules live above this tier (they record ops) and build their
 * own array indexed by topos_op from the same rows, e.g.
 *   #define TP_BACKWARD_ROW(E, lower, arity) [TOPOS_OP_##E] = tp_backward_##lower,
 *   static const tp_backward_fn table[TOPOS_OP_COUNT] = {
 *       TOPOS_OP_LIST(TP_BACKWARD_ROW)};
 * with the declarations generated the same way as TP_SHAPE_DECL_ROW below. */
#ifndef TP_OPS_OP_TABLE_H
#define TP_OPS_OP_TABLE_H

#include "topos/ops.h"

/* The shape and dtype rule. `in` has arity entries, already checked to be
 * well-formed descriptors (known dtype, rank 0..TOPOS_MAX_RANK, extents > 0);
 * attrs is never NULL. On failure: TOPOS_ERR_SHAPE / _DTYPE / _RANGE with a
 * message naming the op and the operand shapes. */
typedef topos_status (*tp_shape_fn)(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                                    topos_tensor_desc *out);

/* The reference kernel. Called only after the shape rule accepted the
 * operands; `desc` is what the rule inferred. Returns a new reference in *out
 * (a fresh contiguous tensor; a view for view ops; a broadcast view when a
 * unary map over a broadcast operand is served by the backend). */
typedef topos_status (*tp_forward_fn)(topos_tensor *const *in, const topos_op_attrs *attrs,
                                      const topos_tensor_desc *desc, topos_tensor **out);


#define TP_SHAPE_DECL_ROW(E, lower, arity)                                              \
  topos_status tp_shape_##lower(const topos_tensor_desc *in, const topos_op_attrs *attrs, \
                                topos_tensor_desc *out);
#define TP_FORWARD_DECL_ROW(E, lower, arity)                                               \
  topos_status tp_forward_##lower(topos_tensor *const *in, const topos_op_attrs *attrs,   \
                                  const topos_tensor_desc *desc, topos_tensor **out);
TOPOS_OP_LIST(TP_SHAPE_DECL_ROW)
TOPOS_OP_LIST(TP_FORWARD_DECL_ROW)
#undef TP_SHAPE_DECL_ROW
#undef TP_FORWARD_DECL_ROW

typedef struct tp_op_info {
  const char *name; /* "add" */
  int arity;        /* tensor operands */
  int is_view;      /* the reference forward returns a view (reshape: when it can) */
  tp_shape_fn shape;
  tp_forward_fn forward;
} tp_op_info;

/* Indexed by topos_op; TOPOS_OP_COUNT entries. */
extern const tp_op_info tp_op_table[TOPOS_OP_COUNT];

/* topos_op_forward with the result written into dst: a contiguous tensor of
 * the op's result dtype and shape (e.g. over a plan's arena) that aliases no
 * operand. A non-view op's result is then dst itself (*out gets a new
 * reference to dst): the kernel's output allocation is laid over dst's bytes
 * (tp_tensor_destination_arm), and when a path allocated elsewhere anyway (an
 * accelerated kernel, say) its result is copied into dst. View ops return
 * their view (reshape's copy, when it has to copy, lands in dst). Same rule
 * checks, errors and bits as topos_op_forward. dst NULL: topos_op_forward. */
topos_status tp_op_forward_into(topos_op op, topos_tensor *const *inputs,
                                const topos_op_attrs *attrs, topos_tensor *dst,
                                topos_tensor **out);

/* A view op's (tp_op_table[op].is_view) forward where the caller already
 * holds the result's descriptor: a plan's step, whose operands were checked
 * against the recorded graph's descriptors, for whom the shape rule ran when
 * the graph was recorded. No descriptor copies, no rule: a decoding step
 * runs ~1000 views, at ~600 cycles each through tp_op_forward_into. The
 * caller checks the result against desc. */
topos_status tp_op_forward_view(topos_op op, topos_tensor *const *inputs, const topos_op_attrs *attrs,
                                const topos_tensor_desc *desc, topos_tensor **out);

/* Shape and dtype helpers shared by the rules and kernels. */
const char *tp_desc_string(const topos_tensor_desc *d, char *buf, size_t size);

#endif
