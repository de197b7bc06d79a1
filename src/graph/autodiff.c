/* The two gradient routes. Both run tp_sweep with the same rules; only the
 * algebra differs (eager tensors vs recorded nodes). */
#include <stdlib.h>
#include <string.h>

#include "base/numerics.h"
#include "graph/algebra.h"

static tp_handle *new_grads(uint32_t n) {
  tp_handle *grads = malloc((n ? n : 1) * sizeof *grads);
  if (grads)
    for (uint32_t i = 0; i < n; ++i) grads[i] = TP_NONE;
  return grads;
}

topos_status topos_run_backward(const topos_run *run, topos_sym loss, topos_field **out) {
  if (out) *out = NULL;
  if (!run || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "run_backward: NULL argument");
  if (run->posture == TP_RUN_OBSERVED)
    return tp_fail(TOPOS_ERR_STATE, "run_backward: this run is forward-only (request backward "
                   "in topos_forward_options to keep values for the reverse sweep)");
  uint32_t target;
  TP_TRY(tp_graph_resolve(run->graph, loss, "run_backward", &target));
  if (!run->values[target])
    return tp_fail(TOPOS_ERR_NOT_READABLE, "run_backward: loss (node %u) was not computed by "
                   "this run (make it a root)", target);
  if (run->hooks && run->hooks->backward) return run->hooks->backward(run, target, out);
  tp_graph *graph = run->graph;
  tp_handle *grads = new_grads(graph->count);
  if (!grads) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "run_backward: out of memory");
  tp_eager_algebra alg;
  tp_eager_algebra_init(&alg, run);
  topos_field *field = NULL;
  int previous = tp_numerics_enter(run->exact);
  topos_status s = tp_sweep(&alg.base, graph, target, NULL, grads);
  tp_numerics_leave(previous);
  if (s == TOPOS_OK) s = tp_field_new(graph, &field);
  if (s == TOPOS_OK)
    for (uint32_t i = 0; i < graph->count; ++i)
      if (grads[i] != TP_NONE) field->values[i] = tp_eager_algebra_take(&alg, grads[i]);
  tp_eager_algebra_free(&alg);
  free(grads);
  if (s != TOPOS_OK) return s;
  *out = field;
  return TOPOS_OK;
}

topos_status topos_tape_differentiate(topos_tape *tape, topos_sym loss, size_t count,
                                      const topos_sym *wrt, topos_sym *gradients) {
  if (!tape || (count && (!wrt || !gradients)))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "differentiate: NULL argument");
  TP_TRY(topos_tape_status(tape));
  for (size_t k = 0; k < count; ++k) gradients[k] = TOPOS_SYM_INVALID;
  tp_graph *graph = tape->graph;
  uint32_t target, n = graph->count;
  TP_TRY(tp_graph_resolve(graph, loss, "differentiate: loss", &target));
  uint8_t *active = calloc(n ? n : 1, 1);
  uint32_t *wrt_index = malloc((count ? count : 1) * sizeof *wrt_index);
  tp_handle *grads = new_grads(n);
  topos_status s = TOPOS_OK;
  if (!active || !wrt_index || !grads)
    s = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "differentiate: out of memory");
  for (size_t k = 0; k < count && s == TOPOS_OK; ++k) {
    s = tp_graph_resolve(graph, wrt[k], "differentiate: wrt", &wrt_index[k]);
    if (s == TOPOS_OK) active[wrt_index[k]] = 1;
  }
  if (s == TOPOS_OK && graph->nodes[target].desc->rank != 0) {
    char buf[96];
    const topos_tensor_desc *d = graph->nodes[target].desc;
    s = tp_fail(TOPOS_ERR_SHAPE, "differentiate: loss (node %u) has shape %s; it must be rank 0",
                target, tp_shape_string(d->rank, d->shape, buf, sizeof buf));
  }
  if (s == TOPOS_OK) {
    /* only nodes on a path from some wrt node run rules: the others cannot
     * change any requested gradient, and recording them would be waste */
    for (uint32_t i = 0; i < n; ++i) {
      const tp_node *node = &graph->nodes[i];
      if (node->kind != TOPOS_NODE_OP) continue;
      for (int j = 0; j < topos_op_arity(node->op); ++j)
        if (active[node->operands[j]]) active[i] = 1;
    }
    tp_record_algebra alg;
    tp_record_algebra_init(&alg, tape);
    s = tp_sweep(&alg.base, graph, target, active, grads);
    for (size_t k = 0; k < count && s == TOPOS_OK; ++k) {
      tp_handle g = grads[wrt_index[k]];
      if (g == TP_NONE) {
        /* loss does not depend on it: a recorded zero */
        topos_tensor_desc desc = *tape->graph->nodes[wrt_index[k]].desc;
        s = alg.base.fill(&alg.base, &desc, 0.0, &g);
      }
      if (s == TOPOS_OK) gradients[k] = (topos_sym){graph->origin, (uint32_t)g};
    }
  }
  free(active);
  free(wrt_index);
  free(grads);
  if (s != TOPOS_OK)
    for (size_t k = 0; k < count; ++k) gradients[k] = TOPOS_SYM_INVALID;
  return s;
}

topos_status topos_run_recorded_gradients(const topos_run *run, size_t count,
                                          const topos_sym *params, const topos_sym *gradients,
                                          topos_field **out) {
  if (out) *out = NULL;
  if (!run || !out || (count && (!params || !gradients)))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "run_recorded_gradients: NULL argument");
  topos_field *field = NULL;
  TP_TRY(tp_field_new(run->graph, &field));
  for (size_t k = 0; k < count; ++k) {
    uint32_t p;
    topos_tensor *value = NULL;
    topos_status s = tp_graph_resolve(run->graph, params[k], "run_recorded_gradients", &p);
    if (s == TOPOS_OK) s = topos_run_read(run, gradients[k], &value);
    if (s == TOPOS_OK) {
      topos_tensor_desc got = topos_tensor_describe(value);
      const topos_tensor_desc *want = run->graph->nodes[p].desc;
      if (got.dtype != want->dtype || got.rank != want->rank ||
          memcmp(got.shape, want->shape, (size_t)got.rank * sizeof(int64_t)) != 0)
        s = tp_fail(TOPOS_ERR_SHAPE, "run_recorded_gradients: gradient %zu does not match node "
                    "%u's dtype and shape", k, p);
    }
    if (s != TOPOS_OK) {
      topos_tensor_release(value);
      topos_field_free(field);
      return s;
    }
    topos_tensor_release(field->values[p]);
    field->values[p] = value;
  }
  *out = field;
  return TOPOS_OK;
}
