/* Internal (engine): the static buffer plan of a compiled plan.
 *
 * Every evaluated node whose kernel allocates a fresh result (not a view) gets
 * a range [offset, offset + bytes) of one arena. A range is reused by a later
 * node only after every value that reads the buffer — the node itself and
 * every view chained from it — has had its last consumer run (a view keeps its
 * source's buffer alive). A node never reuses a buffer one of its own operands
 * still needs, except a fused step that declares it may write over an input
 * (tp_fusion.overwrites) and is that buffer's last reader: it takes the
 * input's range (the swiglu step writes over its gate). Kept values (readable ones, and in a
 * backward plan those a backward rule reads) live to the end of the run.
 * A reshape of a value dense by construction is a view of it (keeps its
 * operand alive, no range); any other reshape is treated as both: it may
 * copy (own range) or view (keeps its operand alive).
 *
 * The executor (executor.c) follows it: each node's kernel writes straight
 * into its range of the run's arena (tp_op_forward_into). */
#ifndef TP_ENGINE_BUFFER_PLAN_H
#define TP_ENGINE_BUFFER_PLAN_H

#include "graph/graph_internal.h"
#include "topos/engine.h"

#define TP_BUFFER_ALIGN 64
#define TP_NOT_IN_ARENA (-1)

typedef struct tp_buffer_plan {
  uint32_t count;
  int64_t *offset;   /* bytes into the arena, TP_NOT_IN_ARENA for views, sources, skipped */
  int64_t *bytes;    /* reserved size (aligned), 0 if not in the arena */
  uint32_t *until;   /* last node index whose execution still needs the buffer (UINT32_MAX: end) */
  uint32_t *host;    /* a step written in place: the node whose range it took (UINT32_MAX: none) */
  int64_t arena_bytes;    /* high-water mark of the arena */
  int64_t unshared_bytes; /* the same buffers without any reuse */
  uint32_t buffers;       /* ranges assigned */
  uint32_t in_place;      /* steps that write over an input's range (tp_fusion.overwrites) */
} tp_buffer_plan;

/* evaluated: nodes that produce a value in this plan (pruned and fused-away
 * nodes excluded); fusion_of: each node's fusion (-1: none; NULL: no
 * fusions), a fusion root's pattern writing the root's range; kept: values that live to the end of a run; last_use: the
 * last node (step) that reads each value (UINT32_MAX: none); overwrite (NULL:
 * none): per node, an input the node's step may write its result over
 * (UINT32_MAX: none), taken when the step is that buffer's last reader and
 * the sizes agree. */
topos_status tp_buffer_plan_build(const tp_graph *graph, const uint8_t *evaluated,
                                  const int32_t *fusion_of, const uint8_t *kept,
                                  const uint32_t *last_use, const uint32_t *overwrite,
                                  tp_buffer_plan *out);
void tp_buffer_plan_free(tp_buffer_plan *plan);

/* The buffer plan of a compiled plan (for tests and tools). */
const tp_buffer_plan *tp_plan_buffers(const topos_plan *plan);

#endif
