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
  tp_graph_free_attrs(graph);
  free(graph);
}

/* ---- interned attributes */

const topos_op_attrs tp_attrs_zero;

enum { ATTRS_PER_BLOCK = 64 };

/* Field by field into zeroed bytes: padding never tells equal attributes
 * apart (keep in step with topos_op_attrs, ops.h). */
static void attrs_normalize(const topos_op_attrs *in, topos_op_attrs *out) {
  memset(out, 0, sizeof *out);
  out->axis = in->axis;
  out->start = in->start;
  out->length = in->length;
  out->size = in->size;
  out->step = in->step;
  out->dilation = in->dilation;
  out->rank = in->rank;
  memcpy(out->shape, in->shape, sizeof out->shape);
  memcpy(out->order, in->order, sizeof out->order);
}

static uint32_t attrs_hash(const topos_op_attrs *a) { /* FNV-1a over the normalized bytes */
  const unsigned char *b = (const unsigned char *)a;
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < sizeof *a; ++i) h = (h ^ b[i]) * 16777619u;
  return h;
}

static bool attrs_index_put(const topos_op_attrs **index, uint32_t size, const topos_op_attrs *a) {
  for (uint32_t i = attrs_hash(a) & (size - 1);; i = (i + 1) & (size - 1))
    if (!index[i]) {
      index[i] = a;
      return true;
    }
}

const topos_op_attrs *tp_graph_intern_attrs(tp_graph *graph, const topos_op_attrs *attrs) {
  topos_op_attrs key;
  if (!attrs) return &tp_attrs_zero;
  attrs_normalize(attrs, &key);
  if (memcmp(&key, &tp_attrs_zero, sizeof key) == 0) return &tp_attrs_zero;
  const uint32_t size = graph->attr_index_size;
  if (size) {
    for (uint32_t i = attrs_hash(&key) & (size - 1); graph->attr_index[i]; i = (i + 1) & (size - 1))
      if (memcmp(graph->attr_index[i], &key, sizeof key) == 0) return graph->attr_index[i];
  }
  if (graph->n_attrs >= UINT32_MAX / 4) return NULL;
  if (2 * (graph->n_attrs + 1) > size) { /* at most half full: rehash into twice the slots */
    uint32_t grown_size = size ? 2 * size : 64;
    const topos_op_attrs **grown = calloc(grown_size, sizeof *grown);
    if (!grown) return NULL;
    for (uint32_t i = 0; i < size; ++i)
      if (graph->attr_index[i]) attrs_index_put(grown, grown_size, graph->attr_index[i]);
    free(graph->attr_index);
    graph->attr_index = grown;
    graph->attr_index_size = grown_size;
  }
  const uint32_t block = graph->n_attrs / ATTRS_PER_BLOCK, at = graph->n_attrs % ATTRS_PER_BLOCK;
  if (at == 0) {
    if (block == graph->attr_blocks_capacity) {
      uint32_t cap = block ? 2 * block : 4;
      topos_op_attrs **blocks = realloc(graph->attr_blocks, cap * sizeof *blocks);
      if (!blocks) return NULL;
      graph->attr_blocks = blocks;
      graph->attr_blocks_capacity = cap;
    }
    graph->attr_blocks[block] = malloc(ATTRS_PER_BLOCK * sizeof **graph->attr_blocks);
    if (!graph->attr_blocks[block]) return NULL;
  }
  topos_op_attrs *slot = &graph->attr_blocks[block][at];
  *slot = key;
  ++graph->n_attrs;
  attrs_index_put(graph->attr_index, graph->attr_index_size, slot);
  return slot;
}

void tp_graph_free_attrs(tp_graph *graph) {
  for (uint32_t b = 0; b * ATTRS_PER_BLOCK < graph->n_attrs; ++b) free(graph->attr_blocks[b]);
  free(graph->attr_blocks);
  free(graph->attr_index);
  graph->attr_blocks = NULL;
  graph->attr_index = NULL;
  graph->n_attrs = graph->attr_blocks_capacity = graph->attr_index_size = 0;
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
    node.attrs = tp_graph_intern_attrs(copy, node.attrs);
    if (!node.attrs) {
      free(node.name != graph->nodes[i].name ? node.name : NULL);
      tp_graph_release(copy);
      return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "graph: out of memory copying a graph");
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
