/* Internal: node storage shared by the tape, the network, runs, fields, the
 * differentiator and (later) the plan compiler.
 *
 * A graph is one flat array of nodes in recording order. Recording order is a
 * topological order: every operand index is smaller than its consumer's index.
 * A node is either a source (constant, parameter, input) or an op over 1..2
 * earlier nodes. Every node carries the dtype and shape inferred at record
 * time (desc); a compiler can walk nodes[0..count) and plan from them alone.
 *
 * Sharing: a tp_graph is refcounted. A tape owns its graph exclusively (refs
 * == 1) and appends to it; sealing hands the same graph to the network, after
 * which it is immutable and runs/fields retain it. Reopening a network copies
 * the graph when anyone else still holds it. */
#ifndef TP_GRAPH_INTERNAL_H
#define TP_GRAPH_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "base/error.h"
#include "tensor/tensor_internal.h"
#include "topos/graph.h"

#define TP_MAX_ARITY 3
#define TP_NO_SLOT UINT32_MAX

/* 48 bytes: a llama chunk graph has ~5000 nodes, and every plan keeps its
 * graph (kind and op held narrow for that). */
typedef struct tp_node {
  uint8_t kind;                      /* topos_node_kind */
  uint16_t op;                       /* topos_op, kind == TOPOS_NODE_OP */
  uint32_t slot;                     /* parameter or input ordinal, else TP_NO_SLOT */
  uint32_t operands[TP_MAX_ARITY];   /* first topos_op_arity(op) entries used */
  const topos_op_attrs *attrs;       /* the attributes given at record: interned in the graph
                                        (tp_graph_intern_attrs), never NULL */
  const topos_tensor_desc *desc;     /* inferred dtype and shape of the value: interned in the
                                        graph (tp_graph_intern_desc), never NULL */
  topos_tensor *value;               /* constant / parameter initial / input default (NULL: none) */
  char *name;                        /* parameter or input name, owned, may be NULL */
} tp_node;
_Static_assert(TOPOS_OP_COUNT <= 65536 && TOPOS_NODE_INPUT < 256, "tp_node's narrow kind and op");

/* Fixed-size records stored once per graph: blocks that never move, found
 * by hash (graph.c). */
typedef struct tp_intern {
  unsigned char **blocks;
  uint32_t n, blocks_capacity;
  const unsigned char **index; /* open addressing, index_size slots (a power of two) */
  uint32_t index_size;
} tp_intern;

typedef struct tp_graph {
  atomic_long refs;
  uint64_t origin;
  tp_node *nodes;
  uint32_t count, capacity;
  /* node index of each parameter slot / input slot, in recording order */
  uint32_t *parameters, n_parameters, parameters_capacity;
  uint32_t *inputs, n_inputs, inputs_capacity;
  /* distinct attributes and descriptors, each stored once (a llama chunk
   * graph's 3000 nodes hold a few dozen of each) */
  tp_intern attrs, descs;
} tp_graph;

/* All-zero attributes: what sources and attribute-less ops point to. */
extern const topos_op_attrs tp_attrs_zero;
/* The graph's copy of attrs (NULL: none) or desc, interned: equal values
 * give the same pointer, valid as long as the graph. NULL on out of memory. */
const topos_op_attrs *tp_graph_intern_attrs(tp_graph *graph, const topos_op_attrs *attrs);
const topos_tensor_desc *tp_graph_intern_desc(tp_graph *graph, const topos_tensor_desc *desc);
/* Frees the interned records (graph release). */
void tp_graph_free_interned(tp_graph *graph);

/* A scalar constant the tape recorded (topos_tape_scalar), found again by
 * dtype and value: a llama chunk's norms and scales ask for the same few
 * scalars hundreds of times. */
typedef struct tp_scalar_entry {
  uint64_t bits;  /* the double's bits */
  uint32_t node;  /* UINT32_MAX: empty */
  topos_dtype dtype;
} tp_scalar_entry;

struct topos_tape {
  tp_graph *graph;
  topos_status status; /* first recording failure */
  char message[512];
  tp_scalar_entry *scalars; /* open addressing, scalars_size slots (a power of two) */
  uint32_t n_scalars, scalars_size;
};

struct topos_network {
  tp_graph *graph;
};

struct topos_params {
  uint64_t origin;
  size_t count;
  uint32_t *nodes;        /* node index per slot, ascending */
  char **names;           /* owned copies, may be NULL entries */
  topos_tensor **values;  /* one reference each */
};

struct topos_field {
  tp_graph *graph;        /* retained: shapes for implicit zeros */
  topos_tensor **values;  /* graph->count entries, NULL = zeros */
  /* Set by the tier that made the field when it wants the object back
   * (plans reuse one field per run context): topos_field_free calls it
   * instead of freeing. */
  void (*recycle)(topos_field *field);
};

typedef enum tp_run_posture {
  TP_RUN_COMPLETE,     /* every node computed and readable; backward allowed */
  TP_RUN_TRAINING,     /* declared readable set; all computed values kept; backward allowed */
  TP_RUN_OBSERVED,     /* declared readable set; forward only */
} tp_run_posture;

/* Runs made by a tier above (compiled plans) carry hooks: topos_run_free and
 * topos_run_backward hand the run to them (after the argument checks), so a
 * plan can reuse its run objects, buffers and gradient memory. */
typedef struct tp_run_hooks {
  void (*release)(topos_run *run);
  topos_status (*backward)(const topos_run *run, uint32_t loss, topos_field **out);
} tp_run_hooks;

struct topos_run {
  tp_graph *graph;        /* retained */
  tp_run_posture posture;
  topos_tensor **values;  /* graph->count entries; NULL = not computed or released */
  uint8_t *readable;      /* graph->count flags */
  int exact;              /* numerics posture it ran under (backward re-enters it) */
  const tp_run_hooks *hooks; /* NULL for interpreter runs */
};

/* ---- graph */
uint64_t tp_origin_next(void);
tp_graph *tp_graph_retain(tp_graph *graph);
void tp_graph_release(tp_graph *graph);
/* Deep copy (tensors retained, names duplicated) with refs == 1. */
topos_status tp_graph_copy(const tp_graph *graph, tp_graph **out);
/* Resolves a symbol against a graph: TOPOS_ERR_FOREIGN for another origin or
 * an index beyond the graph, TOPOS_ERR_INVALID_ARGUMENT for TOPOS_SYM_INVALID.
 * `what` names the caller for the message. */
topos_status tp_graph_resolve(const tp_graph *graph, topos_sym sym, const char *what,
                              uint32_t *index);
/* Whether tp_graph_resolve accepts sym (no message: for hot callers that
 * format `what` only on failure). */
static inline bool tp_graph_owns(const tp_graph *graph, topos_sym sym) {
  return topos_sym_is_valid(sym) && sym.origin == graph->origin && sym.index < graph->count;
}
const char *tp_node_label(const tp_node *node); /* op name or source kind */

/* Marks (flags[i] = 1) every ancestor of the flagged nodes, including them. */
void tp_graph_mark_ancestors(const tp_graph *graph, uint8_t *flags);

/* ---- schedules: what a run computes, keeps and releases.
 * Built from declared roots/observe (or "complete": everything), shared by the
 * interpreter (topos_network_forward) and compiled plans, so a plan runs
 * exactly the interpreter's kernel calls. */
typedef struct tp_schedule {
  tp_graph *graph;           /* retained */
  int exact;                 /* numerics posture the runs use (interpreter: the caller's) */
  tp_run_posture posture;
  uint8_t *wanted;           /* count flags: evaluated */
  uint8_t *readable;         /* count flags: answer topos_run_read */
  uint8_t *required;         /* count flags: read by a backward rule (backward plans) */
  uint32_t *last_use;        /* count entries: last wanted consumer, UINT32_MAX if none */
  uint32_t *release_start;   /* count + 1 offsets into release_list */
  uint32_t *release_list;    /* values released right after node i (forward-only) */
} tp_schedule;

/* The backward column's "reads" mask of an op (bit j: operand j, 0x80: its
 * output); defined with the rules in backward.c. */
uint8_t tp_backward_reads_of(topos_op op);

/* n_roots == 0 && n_observe == 0: a complete schedule (everything). */
topos_status tp_schedule_build(tp_graph *graph, const topos_sym *roots, size_t n_roots,
                               const topos_sym *observe, size_t n_observe, int backward,
                               tp_schedule *out);
void tp_schedule_free(tp_schedule *schedule);
/* Checks params against the graph and feeds against its inputs, filling
 * fed[index] (graph->count entries, zeroed by the caller) with each fed tensor
 * (not retained). The interpreter's own checks, shared with plans. */
topos_status tp_run_bind(const tp_graph *graph, const topos_params *params,
                         const topos_feed *feeds, size_t n_feeds, topos_tensor **fed);
/* values[i] = a new reference to source node i's value (constant, parameter,
 * fed input or its default); TOPOS_ERR_MISSING_FEED for an unfed input
 * without a default. */
topos_status tp_run_source(const tp_graph *graph, const topos_params *params,
                           topos_tensor *const *fed, topos_tensor **values, uint32_t i);
topos_status tp_schedule_execute(const tp_schedule *schedule, const topos_params *params,
                                 const topos_feed *feeds, size_t n_feeds, topos_run **out);

/* ---- fields */
topos_status tp_field_new(tp_graph *graph, topos_field **out);

#endif
