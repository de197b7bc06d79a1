/* Parameters: the caller's state, keyed by symbol. Training never mutates the
 * network; it replaces tensors here. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

static topos_params *params_alloc(uint64_t origin, size_t count) {
  topos_params *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->origin = origin;
  p->count = count;
  size_t n = count ? count : 1;
  p->nodes = calloc(n, sizeof *p->nodes);
  p->names = calloc(n, sizeof *p->names);
  p->values = calloc(n, sizeof *p->values);
  if (!p->nodes || !p->names || !p->values) {
    topos_params_free(p);
    return NULL;
  }
  return p;
}

void topos_params_free(topos_params *params) {
  if (!params) return;
  for (size_t i = 0; i < params->count; ++i) {
    if (params->values) topos_tensor_release(params->values[i]);
    if (params->names) free(params->names[i]);
  }
  free(params->nodes);
  free(params->names);
  free(params->values);
  free(params);
}

/* Slot i gets node, its own copy of name (NULL stays NULL) and value:
 * shared (a new reference) when `share`, else a fresh contiguous copy, so
 * that writes by the caller never reach the network's initials or another
 * params object. */
static topos_status fill_slot(topos_params *p, size_t i, uint32_t node, const char *name,
                              const topos_tensor *value, bool share, const char *what) {
  p->nodes[i] = node;
  if (name) {
    size_t n = strlen(name) + 1;
    p->names[i] = malloc(n);
    if (!p->names[i]) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    memcpy(p->names[i], name, n);
  }
  if (share) {
    p->values[i] = topos_tensor_retain((topos_tensor *)value);
    return TOPOS_OK;
  }
  return topos_tensor_contiguous((topos_tensor *)value, 1, &p->values[i]);
}

/* Hands p to the caller when every slot filled; frees it otherwise. */
static topos_status finish(topos_params *p, topos_status s, topos_params **out) {
  if (s != TOPOS_OK) {
    topos_params_free(p);
    return s;
  }
  *out = p;
  return TOPOS_OK;
}

topos_status topos_params_from_network(const topos_network *net, topos_params **out) {
  if (out) *out = NULL;
  if (!net || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "params_from_network: NULL argument");
  const tp_graph *graph = net->graph;
  topos_params *p = params_alloc(graph->origin, graph->n_parameters);
  if (!p) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "params_from_network: out of memory");
  topos_status s = TOPOS_OK;
  for (size_t i = 0; i < p->count && s == TOPOS_OK; ++i) {
    const tp_node *node = &graph->nodes[graph->parameters[i]];
    s = fill_slot(p, i, graph->parameters[i], node->name, node->value, false,
                  "params_from_network");
  }
  return finish(p, s, out);
}

topos_status topos_params_copy(const topos_params *params, topos_params **out) {
  if (out) *out = NULL;
  if (!params || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "params_copy: NULL argument");
  topos_params *p = params_alloc(params->origin, params->count);
  if (!p) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "params_copy: out of memory");
  topos_status s = TOPOS_OK;
  for (size_t i = 0; i < p->count && s == TOPOS_OK; ++i)
    s = fill_slot(p, i, params->nodes[i], params->names[i], params->values[i], false,
                  "params_copy");
  return finish(p, s, out);
}

/* Parameters the old network had keep their current values (shared); the
 * ones added after them start from the new network's initials. */
topos_status topos_params_carry(const topos_params *old, const topos_network *net,
                               topos_params **out) {
  if (out) *out = NULL;
  if (!old || !net || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "params_carry: NULL argument");
  const tp_graph *graph = net->graph;
  if (old->origin != graph->origin)
    return tp_fail(TOPOS_ERR_FOREIGN, "params_carry: parameters belong to another network");
  if (old->count > graph->n_parameters)
    return tp_fail(TOPOS_ERR_STATE, "params_carry: %zu parameters but the network has only %u",
                   old->count, graph->n_parameters);
  topos_params *p = params_alloc(graph->origin, graph->n_parameters);
  if (!p) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "params_carry: out of memory");
  topos_status s = TOPOS_OK;
  for (size_t i = 0; i < p->count && s == TOPOS_OK; ++i) {
    const tp_node *node = &graph->nodes[graph->parameters[i]];
    bool kept = i < old->count;
    s = fill_slot(p, i, graph->parameters[i], node->name, kept ? old->values[i] : node->value,
                  kept, "params_carry");
  }
  return finish(p, s, out);
}

size_t topos_params_count(const topos_params *params) { return params ? params->count : 0; }

topos_sym topos_params_symbol(const topos_params *params, size_t i) {
  if (!params || i >= params->count) return TOPOS_SYM_INVALID;
  return (topos_sym){params->origin, params->nodes[i]};
}

/* Slot of a parameter symbol (binary search: slots are in node order). */
static topos_status params_slot(const topos_params *params, topos_sym sym, const char *what,
                                size_t *slot) {
  if (!topos_sym_is_valid(sym))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "%s: invalid symbol", what);
  if (sym.origin != params->origin)
    return tp_fail(TOPOS_ERR_FOREIGN, "%s: symbol (origin %llu, node %u) is not from these "
                   "parameters' network (origin %llu)", what, (unsigned long long)sym.origin,
                   sym.index, (unsigned long long)params->origin);
  size_t lo = 0, hi = params->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (params->nodes[mid] < sym.index) lo = mid + 1;
    else hi = mid;
  }
  if (lo == params->count || params->nodes[lo] != sym.index)
    return tp_fail(TOPOS_ERR_NOT_FOUND, "%s: node %u is not a parameter", what, sym.index);
  *slot = lo;
  return TOPOS_OK;
}

const char *topos_params_name(const topos_params *params, topos_sym sym) {
  size_t slot;
  if (!params || !topos_sym_is_valid(sym) || sym.origin != params->origin) return NULL;
  if (params_slot(params, sym, "params_name", &slot) != TOPOS_OK) return NULL;
  return params->names[slot];
}

topos_status topos_params_get(const topos_params *params, topos_sym sym, topos_tensor **out) {
  if (out) *out = NULL;
  if (!params || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "params_get: NULL argument");
  size_t slot;
  TP_TRY(params_slot(params, sym, "params_get", &slot));
  *out = topos_tensor_retain(params->values[slot]);
  return TOPOS_OK;
}

static topos_status same_layout(const topos_tensor *expected, const topos_tensor *got,
                                const char *what, const char *name, uint32_t node) {
  char a[96], b[96];
  if (topos_tensor_dtype(expected) != topos_tensor_dtype(got))
    return tp_fail(TOPOS_ERR_DTYPE, "%s: parameter %s (node %u) is %s, got %s", what,
                   name ? name : "(unnamed)", node, topos_dtype_name(topos_tensor_dtype(expected)),
                   topos_dtype_name(topos_tensor_dtype(got)));
  int rank = topos_tensor_rank(expected);
  if (rank != topos_tensor_rank(got) ||
      memcmp(topos_tensor_shape(expected), topos_tensor_shape(got), (size_t)rank * sizeof(int64_t)))
    return tp_fail(TOPOS_ERR_SHAPE, "%s: parameter %s (node %u) has shape %s, got %s", what,
                   name ? name : "(unnamed)", node,
                   tp_shape_string(rank, topos_tensor_shape(expected), a, sizeof a),
                   tp_shape_string(topos_tensor_rank(got), topos_tensor_shape(got), b, sizeof b));
  return TOPOS_OK;
}

topos_status topos_params_set(topos_params *params, topos_sym sym, topos_tensor *value) {
  if (!params || !value) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "params_set: NULL argument");
  size_t slot;
  TP_TRY(params_slot(params, sym, "params_set", &slot));
  TP_TRY(same_layout(params->values[slot], value, "params_set", params->names[slot],
                     params->nodes[slot]));
  topos_tensor_retain(value);
  topos_tensor_release(params->values[slot]);
  params->values[slot] = value;
  return TOPOS_OK;
}

topos_status topos_params_step(topos_params *params, const topos_field *gradients,
                               topos_step_fn fn, void *user) {
  if (!params || !gradients || !fn)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "params_step: NULL argument");
  if (gradients->graph->origin != params->origin)
    return tp_fail(TOPOS_ERR_FOREIGN, "params_step: gradients belong to another network");
  /* small models step without touching the heap (training loops count allocations) */
  topos_tensor *local[32] = {NULL};
  topos_tensor **next = params->count <= 32 ? local : calloc(params->count, sizeof *next);
  if (!next) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "params_step: out of memory");
  topos_status s = TOPOS_OK;
  for (size_t i = 0; i < params->count && s == TOPOS_OK; ++i) {
    topos_sym sym = {params->origin, params->nodes[i]};
    topos_tensor *grad = NULL;
    s = topos_field_get(gradients, sym, &grad);
    if (s == TOPOS_OK) s = fn(user, sym, params->values[i], grad, &next[i]);
    if (s == TOPOS_OK && !next[i])
      s = tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "params_step: step function gave no tensor");
    if (s == TOPOS_OK)
      s = same_layout(params->values[i], next[i], "params_step", params->names[i],
                      params->nodes[i]);
    topos_tensor_release(grad);
  }
  for (size_t i = 0; i < params->count; ++i) {
    if (s == TOPOS_OK) {
      topos_tensor_release(params->values[i]);
      params->values[i] = next[i];
    } else {
      topos_tensor_release(next[i]);
    }
  }
  if (next != local) free(next);
  return s;
}
