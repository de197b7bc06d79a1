/* Internal (engine): the pattern hook of the plan compiler.
 *
 * A pattern replaces a group of nodes by ONE fused step (conv as im2col +
 * GEMM, max-pool, batch-norm, ...). The compiler offers every evaluated op
 * node, in DESCENDING order, to each pattern of the table as the ROOT of a
 * group (the group's last node, whose value the step produces): a gradient
 * group late in a training plan is settled first, so when it recomputes a
 * forward value from that value's own inputs (a max-pool's lanes from the
 * pooled image) the forward nodes it no longer reads are free to fuse. A
 * step may read any evaluated nodes before its root as inputs — not only its
 * members' operands — as long as it returns the members' bits. A pattern
 * that recognises the nodes ending there fills a tp_fusion — the members
 * (ascending, root last) and the group's external inputs in the order the
 * step reads them — and returns true. The compiler then checks, for every
 * pattern alike, that fusing is invisible:
 *   - every member is evaluated and not already in another group;
 *   - no member but the root is readable, and in a backward plan no member
 *     but the root is read by a backward rule (tp_backward_reads_of): the
 *     reverse sweep will find those values absent;
 *   - every consumer of a non-root member is a member (nothing outside sees
 *     the intermediates);
 *   - the root is not a view op, reshape excepted (the buffer plan gives
 *     a reshape its own arena buffer: its value is a copy when the operand
 *     is strided).
 * After fusing, op nodes nobody reads any more (not readable, not read by a
 * backward rule) are not evaluated at all.
 * A group that fails a check is not fused (the nodes run one by one).
 *
 * At run time the step receives its inputs' values and the root's buffer
 * (dst: contiguous, the root's dtype and shape, aliasing no input but the
 * one f->overwrites names, if the buffer plan took it up) and must
 * return the root's value — normally dst itself — with the bits the member
 * nodes give when run one by one by the interpreter: plan == interpreter,
 * bitwise, under Exact (under Fast, within the acceleration envelope the
 * step documents). It runs with the plan's allocation provider installed, so
 * tp_op_forward_into / topos_op_forward calls inside it allocate from the
 * run's scratch.
 *
 * Adding a pattern: write match + run in src/engine/patterns_<name>.c and add
 * a row to tp_plan_patterns (patterns.c). Nothing else changes: describe()
 * shows fused steps as "fused:<name>" and stats count them. */
#ifndef TP_ENGINE_PATTERN_H
#define TP_ENGINE_PATTERN_H

#include <string.h>

#include "graph/graph_internal.h"
#include "ops/kernel.h" /* TP_FIRST_NAN */
#include "topos/engine.h"

#define TP_FUSION_MAX_MEMBERS 128
#define TP_FUSION_MAX_INPUTS 32

typedef struct tp_pattern tp_pattern;

typedef struct tp_fusion {
  const tp_pattern *pattern;
  uint32_t root;      /* == members[n_members - 1] */
  uint32_t n_members; /* at most TP_FUSION_MAX_MEMBERS */
  uint32_t n_inputs;  /* at most TP_FUSION_MAX_INPUTS */
  uint32_t *members;  /* ascending */
  uint32_t *inputs;   /* nodes outside the group the step reads */
  /* 1 + k: the step may write its result over inputs[k] (an elementwise
   * step reading each element before it writes that element's result); the
   * buffer plan gives it that buffer when the step is its last reader and
   * sizes agree. 0: dst aliases no input. */
  uint32_t overwrites;
} tp_fusion;

/* A group being matched: a fusion whose lists point into arrays of the most
 * a group may hold. The plan keeps each group it fuses with its two lists
 * packed into one table (a llama chunk's 263 groups had taken 664 bytes
 * each, 340 KB a plan). */
typedef struct tp_fusion_space {
  tp_fusion f;
  uint32_t members[TP_FUSION_MAX_MEMBERS];
  uint32_t inputs[TP_FUSION_MAX_INPUTS];
} tp_fusion_space;

static inline tp_fusion *tp_fusion_space_init(tp_fusion_space *s) {
  memset(&s->f, 0, sizeof s->f);
  s->f.members = s->members;
  s->f.inputs = s->inputs;
  return &s->f;
}

struct tp_pattern {
  const char *name;
  /* Fills f (pattern, root and the rest) for the group ending at `root` and
   * returns true, or returns false. `evaluated` flags the nodes the plan
   * evaluates. Must not allocate or fail. */
  bool (*match)(const tp_graph *graph, const uint8_t *evaluated, uint32_t root, tp_fusion *f);
  /* Computes the root's value from inputs[0..f->n_inputs) into dst. */
  topos_status (*run)(const tp_fusion *f, const tp_graph *graph, topos_tensor *const *inputs,
                      topos_tensor *dst, topos_tensor **out);
};

/* Node i when it is an op node of kind `op`, else NULL (i past the graph
 * included): the first test of every match. */
static inline const tp_node *tp_pattern_op(const tp_graph *g, uint32_t i, topos_op op) {
  if (i >= g->count) return NULL;
  const tp_node *n = &g->nodes[i];
  return n->kind == TOPOS_NODE_OP && n->op == op ? n : NULL;
}

/* Node i when it is a broadcast of one value (its operand has every extent
 * 1: a scalar constant the tape's fill_like records), else NULL: the
 * constants of the elementwise patterns (silu's 1, rmsnorm's eps, GELU's
 * and soft caps' factors). Callers check dtype and shape. */
static inline const tp_node *tp_pattern_filled(const tp_graph *g, uint32_t i) {
  const tp_node *b = tp_pattern_op(g, i, TOPOS_OP_BROADCAST);
  if (!b) return NULL;
  const tp_node *src = &g->nodes[b->operands[0]];
  for (int k = 0; k < src->desc->rank; ++k)
    if (src->desc->shape[k] != 1) return NULL;
  return b;
}

/* The value every element of such a broadcast input holds (its first). */
static inline topos_status tp_pattern_filled_value(const topos_tensor *t, double *v) {
  const int64_t first[TOPOS_MAX_RANK] = {0};
  return topos_tensor_get(t, topos_tensor_rank(t) ? first : NULL, v);
}

/* A match's last step: members[0..n) (reordered in place) ascending into f,
 * with n_members. False — no fusion — when a node appears twice, the root
 * is not the last (largest) node, or n exceeds TP_FUSION_MAX_MEMBERS. */
bool tp_fusion_take_members(tp_fusion *f, uint32_t *members, uint32_t n, uint32_t root);

/* The concatenation ending at `root` as topos_tape_concat records it: pads
 * of root's dtype and shape along one axis, summed left to right, tiling the
 * axis exactly (in any order). Fills members with its add and pad nodes
 * (*n_members) and pads with the pads ordered by start (*n_pads); false when
 * root is not one or it needs more than the caps (patterns_concat.c). */
bool tp_concat_parts(const tp_graph *g, uint32_t root, uint32_t *members, uint32_t members_cap,
                     uint32_t *n_members, const tp_node **pads, uint32_t pads_cap, uint32_t *n_pads);

/* The table the public compiler uses (patterns.c). */
extern const tp_pattern *const tp_plan_patterns[];
extern const size_t tp_plan_pattern_count;

/* topos_plan_compile with another pattern table (tests of the hook). */
topos_status tp_plan_compile_with(const topos_network *net, const topos_request *request,
                                  const tp_pattern *const *patterns, size_t n_patterns,
                                  topos_plan **out);

#endif
