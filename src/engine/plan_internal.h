/* Internal (engine): the compiled plan and its run contexts.
 *
 * A plan is immutable after compile except for its pool of run contexts
 * (tp_exec). A run context owns everything one run needs — the topos_run
 * object, the arena laid out by the buffer plan, a scratch region for kernel
 * temporaries and the backward sweep, recycled tensor headers, the gradient
 * field — and goes back to the pool when its run and the field made from it
 * are freed, so the next run allocates nothing (steady state).
 *
 * Lifetime: the caller's handle and every context in use hold a reference
 * to the plan, so freeing the plan before its runs is fine. */
#ifndef TP_ENGINE_PLAN_INTERNAL_H
#define TP_ENGINE_PLAN_INTERNAL_H

#include <stdatomic.h>

#include "engine/buffer_plan.h"
#include "engine/pattern.h"
#include "graph/algebra.h"
#include "topos/engine.h"

typedef struct tp_exec tp_exec;

struct topos_plan {
  atomic_long refs;
  tp_schedule schedule;       /* pruning, readable set, required (backward reads) */
  tp_buffer_plan buffers;
  topos_numerics numerics;
  topos_plan_stats stats;
  uint8_t *evaluated;         /* count flags: produces a value (wanted, not fused away) */
  uint8_t *kept;              /* count flags: lives to the end of a run */
  uint32_t *last_use;         /* count entries: last step reading the value */
  uint32_t *release_start;    /* count + 1 offsets into release_list */
  uint32_t *release_list;     /* values dropped right after step i */
  tp_fusion *fusions;
  uint32_t n_fusions;
  uint32_t *fusion_lists;     /* every group's members, then inputs, group after group */
  size_t n_fusion_lists;
  int32_t *fusion_of;         /* count entries: group of a member node, -1 if none */
  int32_t *sink_of;           /* count entries: index in the request's sinks, -1 if none */
  size_t n_sinks;
  atomic_flag lock;           /* guards idle */
  tp_exec *idle;              /* contexts ready for the next run */
};

struct tp_exec {
  tp_provider provider;       /* first member: callbacks recover the context */
  topos_plan *plan;
  tp_exec *next;              /* in plan->idle */
  atomic_int users;           /* the run, plus the field while it is out */
  topos_run run;              /* handed to the caller by topos_plan_forward */
  topos_tensor **fed;         /* count entries, per run */
  tp_storage *arena;          /* buffer plan bytes */
  tp_storage *scratch;        /* bump region: kernel temporaries, backward values */
  tp_storage *next_scratch;   /* sized at the end of a run that outgrew scratch */
  size_t scratch_used;         /* bytes of scratch handed out since it was last free */
  size_t scratch_live;         /* the same, counting requests the heap served */
  size_t scratch_demand;       /* the run's most scratch_live: sizes the next scratch */
  atomic_flag spare_lock;
  topos_tensor **spares;      /* recycled headers */
  size_t n_spares, cap_spares;
  /* engine-route backward: buffers kept across runs */
  tp_handle *grads;
  topos_tensor **slots;
  size_t cap_slots;
  size_t *log;
  size_t cap_log;
  topos_field field;          /* handed out by topos_run_backward (one at a time) */
  bool field_out;
};

/* executor.c */
topos_status tp_exec_forward(topos_plan *plan, const topos_params *params,
                             const topos_feed *feeds, size_t n_feeds, topos_sink_fn sink,
                             void *sink_user, topos_run **out);
void tp_exec_destroy(tp_exec *ex);
void tp_plan_release(topos_plan *plan);

#endif
