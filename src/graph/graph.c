/* Node storage shared by tapes, networks, runs and fields (graph_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

static atomic_uint_fast64_t tp_next_origin = 1;

uint64_t tp_origin_next(void) { return atomic_fetch_add(&tp_next_origin, 1); }

tp_graph *tp_graph_retain(tp_graph *graph) {
  atomic_fetch_add(&graph->refs, 1);
  return graph;
}

void tp_graph_release(tp_graph *graph) {
  if (!graph || atomic_fetch_sub(&graph->refs, 1) != 1) return;
  for (uint32_t i = 0; i < graph->count; ++i) {
    topos_tensor_release(graph->nodes[i].value);
    free(graph->nodes[i].name);
  }
  free(graph->nodes);
  free(graph->parameters);
  free(graph->inputs);
  free(graph);
}

topos_status tp_graph_copy(const tp_graph *graph, tp_graph **out) {
  tp_graph *copy = calloc(1, sizeof *copy);
  if (!copy) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "graph: out of memory copying a graph");
  atomic_init(&copy->refs, 1);
  copy->origin = graph->origin;
  uint32_t capacity = graph->count ? graph->count : 1;
  copy->nodes = malloc((size_t)capacity * sizeof *copy->nodes);
  copy->parameters = malloc(((size_t)graph->n_parameters + 1) * sizeof(uint32_t));
  copy->inputs = malloc(((size_t)graph->n_inputs + 1) * sizeof(uint32_t));
  if (!copy->nodes || !copy->parameters || !copy->inputs) {
    free(copy->nodes);
    free(copy->parameters);
    free(copy->inputs);
    free(copy);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "graph: out of memory copying a graph");
  }
  copy->capacity = capacity;
  copy->parameters_capacity = graph->n_parameters + 1;
  copy->inputs_capacity = graph->n_inputs + 1;
  memcpy(copy->parameters, graph->parameters, (size_t)graph->n_parameters * sizeof(uint32_t));
  memcpy(copy->inputs, graph->inputs, (size_t)graph->n_inputs * sizeof(uint32_t));
  copy->n_parameters = graph->n_parameters;
  copy->n_inputs = graph->n_inputs;
  for (uint32_t i = 0; i < graph->count; ++i) {
    tp_node node = graph->nodes[i];
    if (node.name) {
      size_t n = strlen(node.name) + 1;
      char *name = malloc(n);
      if (!name) {
        tp_graph_release(copy);
        return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "graph: out of memory copying a graph");
      }
      memcpy(name, node.name, n);
      node.name = name;
    }
    if (node.value) topos_tensor_retain(node.value);
    copy->nodes[copy->count++] = node;
  }
  *out = copy;
  return TOPOS_OK;
}

topos_status tp_graph_resolve(const tp_graph *graph, topos_sym sym, const char *what,
                              uint32_t *index) {
  if (tp_graph_owns(graph, sym)) {
    *index = sym.index;
    return TOPOS_OK;
  }
  if (!topos_sym_is_valid(sym))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "%s: invalid symbol (from a failed record?)",
                   what);
  if (sym.origin != graph->origin)
    return tp_fail(TOPOS_ERR_FOREIGN,
                   "%s: symbol (origin %llu, node %u) belongs to another tape (origin %llu)",
                   what, (unsigned long long)sym.origin, sym.index,
                   (unsigned long long)graph->origin);
  return tp_fail(TOPOS_ERR_FOREIGN, "%s: node %u is beyond this graph's %u nodes", what,
                 sym.index, graph->count);
}

const char *tp_node_label(const tp_node *node) {
  switch (node->kind) {
    case TOPOS_NODE_OP: return topos_op_name(node->op);
    case TOPOS_NODE_CONSTANT: return "constant";
    case TOPOS_NODE_PARAMETER: return "parameter";
    case TOPOS_NODE_INPUT: return "input";
  }
  return "?";
}

void tp_graph_mark_ancestors(const tp_graph *graph, uint8_t *flags) {
  for (uint32_t i = graph->count; i-- > 0;) {
    if (!flags[i]) continue;
    const tp_node *node = &graph->nodes[i];
    if (node->kind != TOPOS_NODE_OP) continue;
    int arity = topos_op_arity(node->op);
    for (int j = 0; j < arity; ++j) flags[node->operands[j]] = 1;
  }
}
