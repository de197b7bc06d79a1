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
  tp_graph_free_interned(graph);
  free(graph);
}

/* ---- interned records: attributes and descriptors */

const topos_op_attrs tp_attrs_zero;

enum { INTERN_PER_BLOCK = 64 };

static uint32_t intern_hash(const unsigned char *b, size_t n) { /* FNV-1a */
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 16777619u;
  return h;
}

static void intern_index_put(const unsigned char **index, uint32_t size, const unsigned char *r, size_t n) {
  for (uint32_t i = intern_hash(r, n) & (size - 1);; i = (i + 1) & (size - 1))
    if (!index[i]) {
      index[i] = r;
      return;
    }
}

/* The pool's copy of the `size` bytes at r (normalized by the caller: no
 * stray padding), found by hash or appended; NULL on out of memory. Blocks
 * never move, so the pointers stay valid while the graph grows. */
static const void *intern_put(tp_intern *pool, const void *record, size_t size) {
  const unsigned char *r = record;
  const uint32_t slots = pool->index_size;
  if (slots)
    for (uint32_t i = intern_hash(r, size) & (slots - 1); pool->index[i]; i = (i + 1) & (slots - 1))
      if (memcmp(pool->index[i], r, size) == 0) return pool->index[i];
  if (pool->n >= UINT32_MAX / 4) return NULL;
  if (2 * (pool->n + 1) > slots) { /* at most half full: rehash into twice the slots */
    uint32_t grown_slots = slots ? 2 * slots : 64;
    const unsigned char **grown = calloc(grown_slots, sizeof *grown);
    if (!grown) return NULL;
    for (uint32_t i = 0; i < slots; ++i)
      if (pool->index[i]) intern_index_put(grown, grown_slots, pool->index[i], size);
    free(pool->index);
    pool->index = grown;
    pool->index_size = grown_slots;
  }
  const uint32_t block = pool->n / INTERN_PER_BLOCK, at = pool->n % INTERN_PER_BLOCK;
  if (at == 0) {
    if (block == pool->blocks_capacity) {
      uint32_t cap = block ? 2 * block : 4;
      unsigned char **blocks = realloc(pool->blocks, cap * sizeof *blocks);
      if (!blocks) return NULL;
      pool->blocks = blocks;
      pool->blocks_capacity = cap;
    }
    pool->blocks[block] = malloc(INTERN_PER_BLOCK * size);
    if (!pool->blocks[block]) return NULL;
  }
  unsigned char *slot = pool->blocks[block] + (size_t)at * size;
  memcpy(slot, r, size);
  ++pool->n;
  intern_index_put(pool->index, pool->index_size, slot, size);
  return slot;
}

static void intern_free(tp_intern *pool) {
  for (uint32_t b = 0; b * INTERN_PER_BLOCK < pool->n; ++b) free(pool->blocks[b]);
  free(pool->blocks);
  free(pool->index);
  memset(pool, 0, sizeof *pool);
}

const topos_op_attrs *tp_graph_intern_attrs(tp_graph *graph, const topos_op_attrs *attrs) {
  if (!attrs) return &tp_attrs_zero;
  topos_op_attrs key; /* field by field into zeroed bytes (keep in step with ops.h) */
  memset(&key, 0, sizeof key);
  key.axis = attrs->axis;
  key.start = attrs->start;
  key.length = attrs->length;
  key.size = attrs->size;
  key.step = attrs->step;
  key.dilation = attrs->dilation;
  key.rank = attrs->rank;
  memcpy(key.shape, attrs->shape, sizeof key.shape);
  memcpy(key.order, attrs->order, sizeof key.order);
  if (memcmp(&key, &tp_attrs_zero, sizeof key) == 0) return &tp_attrs_zero;
  return intern_put(&graph->attrs, &key, sizeof key);
}

const topos_tensor_desc *tp_graph_intern_desc(tp_graph *graph, const topos_tensor_desc *desc) {
  topos_tensor_desc key; /* dtype, rank and the rank's extents; the rest zero */
  memset(&key, 0, sizeof key);
  key.dtype = desc->dtype;
  key.rank = desc->rank;
  for (int i = 0; i < desc->rank && i < TOPOS_MAX_RANK; ++i) key.shape[i] = desc->shape[i];
  return intern_put(&graph->descs, &key, sizeof key);
}

void tp_graph_free_interned(tp_graph *graph) {
  intern_free(&graph->attrs);
  intern_free(&graph->descs);
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
    node.desc = tp_graph_intern_desc(copy, node.desc);
    if (!node.attrs || !node.desc) {
      free(node.name); /* this node's own copy, not yet in the graph */
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
