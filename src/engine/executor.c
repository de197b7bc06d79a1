/* Running a plan: run contexts (plan_internal.h) that execute the plan's
 * steps into their arena and serve every other allocation of the run — view
 * headers, kernel temporaries, the whole engine-route backward sweep — from
 * recycled headers and a scratch region. After the first runs have sized the
 * scratch, a run and its backward pass allocate nothing.
 *
 * Memory safety never depends on the caller's order of frees: arena and
 * scratch are refcounted storages; a context that finds either still
 * referenced when it starts a run (the caller kept a tensor read from an
 * earlier run) lets it go — the tensor keeps those bytes alive — and takes
 * fresh ones. */
#include <stdlib.h>
#include <string.h>

#include "base/numerics.h"
#include "engine/plan_internal.h"
#include "ops/op_table.h"

#define EXEC_OF(member_ptr, member) \
  ((tp_exec *)((char *)(member_ptr) - offsetof(tp_exec, member)))

static void lock(atomic_flag *flag) {
  while (atomic_flag_test_and_set_explicit(flag, memory_order_acquire)) {
  }
}
static void unlock(atomic_flag *flag) { atomic_flag_clear_explicit(flag, memory_order_release); }

/* ---- recycled headers */

static void spare_keep(tp_exec *ex, topos_tensor *t) {
  lock(&ex->spare_lock);
  if (ex->n_spares == ex->cap_spares) {
    size_t next = ex->cap_spares ? ex->cap_spares * 2 : 64;
    topos_tensor **grown = realloc(ex->spares, next * sizeof *grown);
    if (!grown) {
      unlock(&ex->spare_lock);
      tp_tensor_header_free(t);
      return;
    }
    tp_heap_allocations_add(1);
    ex->spares = grown;
    ex->cap_spares = next;
  }
  ex->spares[ex->n_spares++] = t;
  unlock(&ex->spare_lock);
}

static void spare_push(tp_exec *ex, topos_tensor *t) {
  if (tp_tensor_recycle(t)) spare_keep(ex, t); /* else someone else holds it: released */
}

/* headers released by kernels and the sweep while the run's provider is in */
static void provide_recycle(tp_provider *self, topos_tensor *bare) {
  spare_keep((tp_exec *)self, bare);
}

static topos_tensor *provide_header(tp_provider *self) {
  tp_exec *ex = (tp_exec *)self;
  lock(&ex->spare_lock);
  topos_tensor *t = ex->n_spares ? ex->spares[--ex->n_spares] : NULL;
  unlock(&ex->spare_lock);
  return t;
}

/* ---- scratch: a bump region rewound per run; demand sizes the next one */

static bool bump(tp_exec *ex, size_t bytes, size_t *at) {
  size_t need = (bytes + TP_BUFFER_ALIGN - 1) / TP_BUFFER_ALIGN * TP_BUFFER_ALIGN;
  if (need < bytes || need > SIZE_MAX - ex->scratch_live) return false;
  ex->scratch_live += need;
  if (ex->scratch_live > ex->scratch_demand) ex->scratch_demand = ex->scratch_live;
  if (!ex->scratch || ex->scratch->bytes - ex->scratch_used < need) return false;
  *at = ex->scratch_used;
  ex->scratch_used += need;
  return true;
}

static bool provide_place(tp_provider *self, size_t bytes, tp_storage **storage, size_t *at) {
  tp_exec *ex = (tp_exec *)self;
  if (!bump(ex, bytes, at)) return false;
  tp_storage_retain(ex->scratch);
  *storage = ex->scratch;
  return true;
}

/* Between forward steps: once nothing placed in the scratch is alive (the
 * context holds its only reference; kernel temporaries end with their
 * step), the next step starts the region over. It is then sized by the most
 * one stretch of steps keeps at once, not by all a run places: a 16-bit
 * cache's attention step packs each head's new values (32 KB at a 128-token
 * chunk), 2.8 MB a SmolLM2 chunk without this. */
static void scratch_rewind_if_free(tp_exec *ex) {
  if (ex->scratch_live == 0) return;
  if (ex->scratch && atomic_load_explicit(&ex->scratch->refs, memory_order_acquire) != 1) return;
  ex->scratch_used = 0;
  ex->scratch_live = 0;
}

static void *provide_scratch(tp_provider *self, size_t bytes) {
  tp_exec *ex = (tp_exec *)self;
  size_t at;
  return bump(ex, bytes, &at) ? (char *)ex->scratch->data + at : NULL;
}

/* ---- context life cycle */

static const tp_run_hooks exec_hooks;
static void field_recycle(topos_field *field);

void tp_exec_destroy(tp_exec *ex) {
  if (!ex) return;
  for (size_t k = 0; k < ex->n_spares; ++k) tp_tensor_header_free(ex->spares[k]);
  free(ex->spares);
  tp_storage_release(ex->arena);
  tp_storage_release(ex->scratch);
  tp_storage_release(ex->next_scratch);
  free(ex->run.values);
  free(ex->fed);
  free(ex->grads);
  free(ex->slots);
  free(ex->log);
  free(ex->field.values);
  if (ex->field.graph) tp_graph_release(ex->field.graph);
  if (ex->run.graph) tp_graph_release(ex->run.graph);
  free(ex);
}

static topos_status exec_new(topos_plan *plan, tp_exec **out) {
  tp_graph *graph = plan->schedule.graph;
  size_t n = graph->count ? graph->count : 1;
  tp_exec *ex = calloc(1, sizeof *ex);
  if (!ex) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "plan_forward: out of memory");
  ex->provider.header = provide_header;
  ex->provider.place = provide_place;
  ex->provider.scratch = provide_scratch;
  ex->provider.recycle = provide_recycle;
  ex->plan = plan;
  atomic_flag_clear(&ex->spare_lock);
  ex->run.graph = tp_graph_retain(graph);
  ex->run.posture = plan->schedule.posture;
  ex->run.exact = plan->schedule.exact;
  ex->run.readable = plan->schedule.readable; /* the plan outlives its runs */
  ex->run.hooks = &exec_hooks;
  ex->run.values = calloc(n, sizeof *ex->run.values);
  ex->fed = calloc(n, sizeof *ex->fed);
  ex->field.graph = tp_graph_retain(graph);
  ex->field.values = calloc(n, sizeof *ex->field.values);
  ex->field.recycle = field_recycle;
  if (plan->schedule.posture != TP_RUN_OBSERVED) ex->grads = malloc(n * sizeof *ex->grads);
  tp_heap_allocations_add(plan->schedule.posture != TP_RUN_OBSERVED ? 5 : 4);
  if (!ex->run.values || !ex->fed || !ex->field.values ||
      (plan->schedule.posture != TP_RUN_OBSERVED && !ex->grads)) {
    tp_exec_destroy(ex);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "plan_forward: out of memory");
  }
  *out = ex;
  return TOPOS_OK;
}

/* Keeps the arena and scratch when nobody else holds them (see the top). */
static topos_status exec_reset(tp_exec *ex) {
  const topos_plan *plan = ex->plan;
  if (ex->arena && atomic_load(&ex->arena->refs) != 1) {
    tp_storage_release(ex->arena);
    ex->arena = NULL;
  }
  if (!ex->arena && plan->buffers.arena_bytes > 0)
    TP_TRY(tp_storage_arena((size_t)plan->buffers.arena_bytes, &ex->arena));
  if (ex->next_scratch) { /* sized by the last run (see presize) */
    tp_storage_release(ex->scratch);
    ex->scratch = ex->next_scratch;
    ex->next_scratch = NULL;
  }
  if (ex->scratch &&
      (atomic_load(&ex->scratch->refs) != 1 || ex->scratch->bytes < ex->scratch_demand)) {
    tp_storage_release(ex->scratch);
    ex->scratch = NULL;
  }
  if (!ex->scratch && ex->scratch_demand > 0)
    TP_TRY(tp_storage_arena(ex->scratch_demand, &ex->scratch));
  ex->scratch_used = 0;
  ex->scratch_live = 0;
  ex->scratch_demand = 0;
  return TOPOS_OK;
}

/* At the end of a forward or backward pass that outgrew the scratch: the
 * next run's scratch is allocated now, so the second step is already
 * allocation-free (the current one may still be referenced by this run). */
static void presize(tp_exec *ex) {
  size_t have = ex->scratch ? ex->scratch->bytes : 0;
  if (ex->scratch_demand <= have) return;
  if (ex->next_scratch && ex->next_scratch->bytes >= ex->scratch_demand) return;
  tp_storage_release(ex->next_scratch);
  ex->next_scratch = NULL;
  if (tp_storage_arena(ex->scratch_demand, &ex->next_scratch) != TOPOS_OK)
    ex->next_scratch = NULL; /* the next run sizes it instead */
}

/* Drops one user (the run or the field); the last one returns the context to
 * the plan's pool and the context's reference to the plan. */
static void exec_put(tp_exec *ex) {
  if (atomic_fetch_sub_explicit(&ex->users, 1, memory_order_acq_rel) != 1) return;
  topos_plan *plan = ex->plan;
  lock(&plan->lock);
  ex->next = plan->idle;
  plan->idle = ex;
  unlock(&plan->lock);
  tp_plan_release(plan);
}

void topos_plan_trim(topos_plan *plan) {
  if (!plan) return;
  lock(&plan->lock);
  tp_exec *ex = plan->idle;
  plan->idle = NULL;
  unlock(&plan->lock);
  while (ex) {
    tp_exec *next = ex->next;
    tp_exec_destroy(ex);
    ex = next;
  }
}

static void drop_values(tp_exec *ex) {
  uint32_t n = ex->run.graph->count;
  for (uint32_t i = 0; i < n; ++i) {
    if (!ex->run.values[i]) continue;
    spare_push(ex, ex->run.values[i]);
    ex->run.values[i] = NULL;
  }
}

static void run_release(topos_run *run) {
  tp_exec *ex = EXEC_OF(run, run);
  drop_values(ex);
  exec_put(ex);
}

static void field_recycle(topos_field *field) {
  tp_exec *ex = EXEC_OF(field, field);
  for (uint32_t i = 0; i < field->graph->count; ++i) {
    if (!field->values[i]) continue;
    spare_push(ex, field->values[i]);
    field->values[i] = NULL;
  }
  ex->field_out = false;
  exec_put(ex);
}

/* ---- forward */

static bool same_desc(const topos_tensor *t, const topos_tensor_desc *d) {
  if (topos_tensor_dtype(t) != d->dtype || topos_tensor_rank(t) != d->rank) return false;
  return memcmp(topos_tensor_shape(t), d->shape, (size_t)d->rank * sizeof(int64_t)) == 0;
}

static topos_status run_step(tp_exec *ex, uint32_t i) {
  const topos_plan *plan = ex->plan;
  const tp_graph *graph = plan->schedule.graph;
  const tp_node *node = &graph->nodes[i];
  topos_tensor **values = ex->run.values;
  int32_t g = plan->fusion_of[i];
  const tp_fusion *f = g >= 0 ? &plan->fusions[g] : NULL;
  topos_tensor *inputs[TP_FUSION_MAX_INPUTS] = {NULL};
  uint32_t n_in = f ? f->n_inputs : (uint32_t)topos_op_arity(node->op);
  for (uint32_t j = 0; j < n_in; ++j) {
    uint32_t o = f ? f->inputs[j] : node->operands[j];
    inputs[j] = values[o];
    if (!inputs[j])
      return tp_fail(TOPOS_ERR_INTERNAL, "plan: %s (node %u): operand %u not computed",
                     tp_node_label(node), i, o);
  }
  topos_tensor *dst = NULL, *out = NULL;
  int64_t offset = plan->buffers.offset[i];
  if (offset != TP_NOT_IN_ARENA) {
    size_t size = tp_dtype_size(node->desc->dtype);
    TP_TRY(tp_tensor_on_storage(ex->arena, offset / (int64_t)size, node->desc->dtype,
                                node->desc->rank, node->desc->shape, &dst));
  }
  /* a view into no buffer of the plan: its operands hold the recorded
   * descriptors (checked as they were made), so the shape rule is not run
   * again; the result is still checked below */
  topos_status s;
  if (f)
    s = f->pattern->run(f, graph, inputs, dst, &out);
  else if (!dst && tp_op_table[node->op].is_view)
    s = tp_op_forward_view(node->op, inputs, node->attrs, node->desc, &out);
  else
    s = tp_op_forward_into(node->op, inputs, node->attrs, dst, &out);
  spare_push(ex, dst);
  if (s != TOPOS_OK) {
    return tp_fail_context(s, "plan: %s (node %u)",
                           f ? f->pattern->name : topos_op_name(node->op), i);
  }
  if (!same_desc(out, node->desc)) {
    spare_push(ex, out);
    return tp_fail(TOPOS_ERR_INTERNAL, "plan: %s (node %u): result disagrees with the recorded "
                   "shape rule", tp_node_label(node), i);
  }
  values[i] = out;
  return TOPOS_OK;
}

static topos_status exec_run(tp_exec *ex, const topos_params *params, const topos_feed *feeds,
                             size_t n_feeds, topos_sink_fn sink, void *sink_user) {
  const topos_plan *plan = ex->plan;
  const tp_graph *graph = plan->schedule.graph;
  uint32_t n = graph->count;
  memset(ex->fed, 0, (n ? n : 1) * sizeof *ex->fed);
  TP_TRY(tp_run_bind(graph, params, feeds, n_feeds, ex->fed));
  TP_TRY(exec_reset(ex));
  for (uint32_t i = 0; i < n; ++i) {
    if (!plan->evaluated[i]) continue;
    if (graph->nodes[i].kind != TOPOS_NODE_OP)
      TP_TRY(tp_run_source(graph, params, ex->fed, ex->run.values, i));
    else
      TP_TRY(run_step(ex, i));
    if (plan->sink_of[i] >= 0) {
      topos_status s = sink(sink_user, (size_t)plan->sink_of[i], ex->run.values[i]);
      if (s != TOPOS_OK)
        return tp_fail_context(s, "plan: sink %d (%s, node %u)", plan->sink_of[i],
                               tp_node_label(&graph->nodes[i]), i);
    }
    for (uint32_t r = plan->release_start[i]; r < plan->release_start[i + 1]; ++r) {
      uint32_t o = plan->release_list[r];
      spare_push(ex, ex->run.values[o]);
      ex->run.values[o] = NULL;
    }
    scratch_rewind_if_free(ex);
  }
  return TOPOS_OK;
}

topos_status tp_exec_forward(topos_plan *plan, const topos_params *params,
                             const topos_feed *feeds, size_t n_feeds, topos_sink_fn sink,
                             void *sink_user, topos_run **out) {
  atomic_fetch_add_explicit(&plan->refs, 1, memory_order_relaxed);
  lock(&plan->lock);
  tp_exec *ex = plan->idle;
  if (ex) plan->idle = ex->next;
  unlock(&plan->lock);
  if (!ex) {
    topos_status s = exec_new(plan, &ex);
    if (s != TOPOS_OK) {
      tp_plan_release(plan);
      return s;
    }
  }
  ex->next = NULL;
  atomic_store(&ex->users, 1);
  tp_provider *previous = tp_provider_install(&ex->provider);
  int posture = tp_numerics_enter(plan->schedule.exact);
  topos_status s = exec_run(ex, params, feeds, n_feeds, sink, sink_user);
  tp_numerics_leave(posture);
  tp_provider_install(previous);
  presize(ex);
  if (s != TOPOS_OK) {
    run_release(&ex->run);
    return s;
  }
  *out = &ex->run;
  return TOPOS_OK;
}

/* ---- engine-route backward: the shared sweep over the eager algebra, with
 * the context's provider installed and its buffers lent to the algebra */

static void drop_to_spares(void *context, topos_tensor *t) { spare_push(context, t); }

static topos_status run_backward(const topos_run *run, uint32_t loss, topos_field **out) {
  tp_exec *ex = EXEC_OF(run, run);
  tp_graph *graph = run->graph;
  uint32_t n = graph->count;
  for (uint32_t i = 0; i < n; ++i) ex->grads[i] = TP_NONE;
  tp_eager_algebra alg;
  tp_eager_algebra_init(&alg, run);
  alg.slots = ex->slots;
  alg.cap_slots = ex->cap_slots;
  alg.log = ex->log;
  alg.cap_log = ex->cap_log;
  alg.drop = drop_to_spares;
  alg.drop_context = ex;
  tp_provider *previous = tp_provider_install(&ex->provider);
  int posture = tp_numerics_enter(run->exact);
  topos_status s = tp_sweep(&alg.base, graph, loss, NULL, ex->grads);
  topos_field *field = NULL;
  if (s == TOPOS_OK) {
    if (!ex->field_out) { /* the context's own field; a second one comes from the heap */
      ex->field_out = true;
      atomic_fetch_add_explicit(&ex->users, 1, memory_order_relaxed);
      field = &ex->field;
    } else {
      s = tp_field_new(graph, &field);
    }
  }
  if (s == TOPOS_OK)
    for (uint32_t i = 0; i < n; ++i)
      if (ex->grads[i] != TP_NONE) field->values[i] = tp_eager_algebra_take(&alg, ex->grads[i]);
  for (size_t k = 0; k < alg.n_slots; ++k)
    if (alg.slots[k]) spare_push(ex, alg.slots[k]);
  tp_numerics_leave(posture);
  tp_provider_install(previous);
  presize(ex);
  if (alg.slots != ex->slots || alg.cap_slots != ex->cap_slots) tp_heap_allocations_add(1);
  if (alg.log != ex->log || alg.cap_log != ex->cap_log) tp_heap_allocations_add(1);
  ex->slots = alg.slots;
  ex->cap_slots = alg.cap_slots;
  ex->log = alg.log;
  ex->cap_log = alg.cap_log;
  if (s != TOPOS_OK) return s;
  *out = field;
  return TOPOS_OK;
}

static const tp_run_hooks exec_hooks = {run_release, run_backward};
