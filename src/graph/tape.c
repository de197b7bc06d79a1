/* The tape: recording with record-time checks and a sticky first error;
 * sealing into a network and reopening it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

static topos_status graph_new(uint64_t origin, tp_graph **out) {
  tp_graph *graph = calloc(1, sizeof *graph);
  if (!graph) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tape: out of memory");
  atomic_init(&graph->refs, 1);
  graph->origin = origin;
  *out = graph;
  return TOPOS_OK;
}

topos_status topos_tape_new(topos_tape **out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tape_new: out is NULL");
  *out = NULL;
  topos_tape *tape = calloc(1, sizeof *tape);
  if (!tape) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tape_new: out of memory");
  topos_status s = graph_new(tp_origin_next(), &tape->graph);
  if (s != TOPOS_OK) {
    free(tape);
    return s;
  }
  *out = tape;
  return TOPOS_OK;
}

void topos_tape_free(topos_tape *tape) {
  if (!tape) return;
  tp_graph_release(tape->graph);
  free(tape->scalars);
  free(tape);
}

/* Makes the current thread-local message the tape's sticky first error. */
static topos_status tape_fail(topos_tape *tape, topos_status status) {
  if (tape->status == TOPOS_OK) {
    tape->status = status;
    snprintf(tape->message, sizeof tape->message, "%s", topos_last_error());
  }
  return status;
}

/* A record on a tape that already failed: repeat the first failure. */
static topos_status tape_repeat(const topos_tape *tape) {
  return tp_fail(tape->status, "%s", tape->message);
}

topos_status topos_tape_status(const topos_tape *tape) {
  if (!tape) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tape_status: tape is NULL");
  if (tape->status != TOPOS_OK) return tape_repeat(tape);
  return TOPOS_OK;
}

const char *topos_tape_error(const topos_tape *tape) { return tape ? tape->message : ""; }

uint32_t topos_tape_length(const topos_tape *tape) { return tape ? tape->graph->count : 0; }

topos_status topos_tape_describe(const topos_tape *tape, topos_sym sym, topos_tensor_desc *out) {
  if (!tape || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tape_describe: NULL argument");
  uint32_t index;
  TP_TRY(tp_graph_resolve(tape->graph, sym, "tape_describe", &index));
  *out = *tape->graph->nodes[index].desc;
  return TOPOS_OK;
}

static topos_status grow_u32(uint32_t **array, uint32_t *capacity, uint32_t count) {
  if (count < *capacity) return TOPOS_OK;
  uint32_t next = *capacity ? *capacity * 2 : 16;
  if (next <= *capacity) return tp_fail(TOPOS_ERR_OVERFLOW, "tape: too many nodes");
  uint32_t *grown = realloc(*array, (size_t)next * sizeof **array);
  if (!grown) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tape: out of memory");
  *array = grown;
  *capacity = next;
  return TOPOS_OK;
}

/* Appends a node (taking ownership of node->value's reference and name). */
static topos_status append(tp_graph *graph, const tp_node *node, uint32_t *index) {
  if (graph->count >= UINT32_MAX - 1)
    return tp_fail(TOPOS_ERR_OVERFLOW, "tape: node count limit reached");
  if (graph->count == graph->capacity) {
    uint32_t next = graph->capacity ? graph->capacity * 2 : 64;
    if (next < graph->capacity || next > UINT32_MAX - 1) next = UINT32_MAX - 1;
    tp_node *grown = realloc(graph->nodes, (size_t)next * sizeof *grown);
    if (!grown) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tape: out of memory");
    graph->nodes = grown;
    graph->capacity = next;
  }
  *index = graph->count;
  graph->nodes[graph->count++] = *node;
  return TOPOS_OK;
}

static topos_sym sym_of(const tp_graph *graph, uint32_t index) {
  return (topos_sym){graph->origin, index};
}

topos_status topos_tape_record(topos_tape *tape, topos_op op, const topos_sym *inputs,
                               const topos_op_attrs *attrs, topos_sym *out) {
  if (out) *out = TOPOS_SYM_INVALID;
  if (!tape || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tape_record: NULL argument");
  if (tape->status != TOPOS_OK) return tape_repeat(tape);
  if ((int)op < 0 || op >= TOPOS_OP_COUNT)
    return tape_fail(tape, tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tape_record: unknown op %d",
                                   (int)op));
  const char *name = topos_op_name(op);
  tp_graph *graph = tape->graph;
  uint32_t node_index = graph->count;
  int arity = topos_op_arity(op);
  if (arity > TP_MAX_ARITY || (arity > 0 && !inputs))
    return tape_fail(tape, tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                                   "%s (node %u): operands missing", name, node_index));
  tp_node node;
  memset(&node, 0, sizeof node);
  node.kind = TOPOS_NODE_OP;
  node.op = op;
  node.slot = TP_NO_SLOT;
  topos_op_attrs given; /* checked by the shape rule, interned once it passes */
  memset(&given, 0, sizeof given);
  if (attrs) given = *attrs;
  topos_tensor_desc descs[TP_MAX_ARITY];
  for (int j = 0; j < arity; ++j) {
    const topos_sym in = inputs[j];
    if (tp_graph_owns(graph, in)) {
      node.operands[j] = in.index; /* no message to format */
    } else {
      char what[64];
      snprintf(what, sizeof what, "%s (node %u) operand %d", name, node_index, j);
      return tape_fail(tape, tp_graph_resolve(graph, in, what, &node.operands[j]));
    }
    descs[j] = *graph->nodes[node.operands[j]].desc;
  }
  topos_tensor_desc inferred;
  topos_status s = topos_op_infer(op, descs, &given, &inferred);
  if (s != TOPOS_OK) {
    /* "matmul: inner extents differ ..." -> "matmul (node 7): inner extents differ ..." */
    char detail[512];
    snprintf(detail, sizeof detail, "%s", topos_last_error());
    size_t n = strlen(name);
    const char *rest = detail;
    if (strncmp(detail, name, n) == 0 && detail[n] == ':') rest = detail + n + 1;
    while (*rest == ' ') ++rest;
    return tape_fail(tape, tp_fail(s, "%s (node %u): %s", name, node_index, rest));
  }
  node.attrs = tp_graph_intern_attrs(graph, attrs);
  node.desc = tp_graph_intern_desc(graph, &inferred);
  if (!node.attrs || !node.desc)
    return tape_fail(tape, tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "%s (node %u): out of memory", name, node_index));
  uint32_t index;
  s = append(graph, &node, &index);
  if (s != TOPOS_OK) return tape_fail(tape, s);
  *out = sym_of(graph, index);
  return TOPOS_OK;
}

topos_status topos_tape_fail(topos_tape *tape, topos_status status, const char *message) {
  if (!tape) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tape_fail: tape is NULL");
  if (tape->status != TOPOS_OK) return tape_repeat(tape);
  if (status == TOPOS_OK) status = TOPOS_ERR_INVALID_ARGUMENT;
  char copy[512]; /* message may be topos_last_error() itself */
  snprintf(copy, sizeof copy, "%s", message ? message : "failure");
  return tape_fail(tape, tp_fail(status, "%s", copy));
}

/* ---- sources */

static bool name_taken(const tp_graph *graph, const char *name) {
  for (uint32_t i = 0; i < graph->n_parameters; ++i) {
    const char *other = graph->nodes[graph->parameters[i]].name;
    if (other && strcmp(other, name) == 0) return true;
  }
  for (uint32_t i = 0; i < graph->n_inputs; ++i) {
    const char *other = graph->nodes[graph->inputs[i]].name;
    if (other && strcmp(other, name) == 0) return true;
  }
  return false;
}

static topos_sym record_source(topos_tape *tape, topos_node_kind kind, topos_tensor *value,
                               const topos_tensor_desc *desc, const char *name) {
  static const char *const labels[] = {"op", "constant", "parameter", "input"};
  const char *label = labels[kind];
  if (!tape) {
    tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "%s: tape is NULL", label);
    return TOPOS_SYM_INVALID;
  }
  if (tape->status != TOPOS_OK) {
    tape_repeat(tape);
    return TOPOS_SYM_INVALID;
  }
  tp_graph *graph = tape->graph;
  uint32_t node_index = graph->count;
  if (!value && !desc) {
    tape_fail(tape, tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "%s (node %u): no tensor given", label,
                            node_index));
    return TOPOS_SYM_INVALID;
  }
  tp_node node;
  memset(&node, 0, sizeof node);
  node.kind = kind;
  node.attrs = &tp_attrs_zero;
  node.slot = TP_NO_SLOT;
  const topos_tensor_desc given = value ? topos_tensor_describe(value) : *desc; /* interned once checked */
  if (given.rank < 0 || given.rank > TOPOS_MAX_RANK || (int)given.dtype < 0 || given.dtype >= TOPOS_DTYPE_COUNT) {
    tape_fail(tape, tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "%s (node %u): bad descriptor", label,
                            node_index));
    return TOPOS_SYM_INVALID;
  }
  for (int i = 0; i < given.rank; ++i) {
    if (given.shape[i] <= 0) {
      tape_fail(tape, tp_fail(TOPOS_ERR_SHAPE, "%s (node %u): extent %lld of axis %d is not positive",
                              label, node_index, (long long)given.shape[i], i));
      return TOPOS_SYM_INVALID;
    }
  }
  if (kind == TOPOS_NODE_PARAMETER && !topos_dtype_is_float(given.dtype)) {
    tape_fail(tape, tp_fail(TOPOS_ERR_DTYPE, "parameter (node %u)%s%s: dtype %s is not a float type",
                            node_index, name ? " " : "", name ? name : "",
                            topos_dtype_name(given.dtype)));
    return TOPOS_SYM_INVALID;
  }
  if (name) {
    if (name_taken(graph, name)) {
      tape_fail(tape, tp_fail(TOPOS_ERR_DUPLICATE, "%s (node %u): name \"%s\" is already used",
                              label, node_index, name));
      return TOPOS_SYM_INVALID;
    }
    size_t n = strlen(name) + 1;
    node.name = malloc(n);
    if (!node.name) {
      tape_fail(tape, tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "%s: out of memory", label));
      return TOPOS_SYM_INVALID;
    }
    memcpy(node.name, name, n);
  }
  topos_status s = TOPOS_OK;
  node.desc = tp_graph_intern_desc(graph, &given);
  if (!node.desc) s = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "%s (node %u): out of memory", label, node_index);
  else if (kind == TOPOS_NODE_PARAMETER)
    s = grow_u32(&graph->parameters, &graph->parameters_capacity, graph->n_parameters);
  else if (kind == TOPOS_NODE_INPUT)
    s = grow_u32(&graph->inputs, &graph->inputs_capacity, graph->n_inputs);
  uint32_t index = 0;
  if (s == TOPOS_OK) {
    if (kind == TOPOS_NODE_PARAMETER) node.slot = graph->n_parameters;
    if (kind == TOPOS_NODE_INPUT) node.slot = graph->n_inputs;
    node.value = value;
    s = append(graph, &node, &index);
  }
  if (s != TOPOS_OK) {
    free(node.name);
    tape_fail(tape, s);
    return TOPOS_SYM_INVALID;
  }
  if (value) topos_tensor_retain(value);
  if (kind == TOPOS_NODE_PARAMETER) graph->parameters[graph->n_parameters++] = index;
  if (kind == TOPOS_NODE_INPUT) graph->inputs[graph->n_inputs++] = index;
  return sym_of(graph, index);
}

topos_sym topos_tape_constant(topos_tape *tape, topos_tensor *value) {
  if (!value && tape && tape->status == TOPOS_OK) {
    tape_fail(tape, tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "constant (node %u): tensor is NULL",
                            tape->graph->count));
    return TOPOS_SYM_INVALID;
  }
  return record_source(tape, TOPOS_NODE_CONSTANT, value, NULL, NULL);
}

/* The slot of (dtype, bits) in the tape's scalar table: its entry, or the
 * empty slot where it goes. The table has room (scalars_size > 0). */
static tp_scalar_entry *scalar_slot(const topos_tape *tape, topos_dtype dtype, uint64_t bits) {
  uint64_t h = (bits ^ (uint64_t)dtype * 0x9e3779b97f4a7c15u) * 0xff51afd7ed558ccdu;
  uint32_t mask = tape->scalars_size - 1, at = (uint32_t)(h >> 32) & mask;
  while (tape->scalars[at].node != UINT32_MAX &&
         (tape->scalars[at].bits != bits || tape->scalars[at].dtype != dtype))
    at = (at + 1) & mask;
  return &tape->scalars[at];
}

/* Room for one more entry (the table at most half full); false when out of
 * memory (the table unchanged). */
static bool scalar_room(topos_tape *tape) {
  if (2 * (tape->n_scalars + 1) <= tape->scalars_size) return true;
  uint32_t size = tape->scalars_size ? 2 * tape->scalars_size : 64;
  tp_scalar_entry *old = tape->scalars, *grown = malloc((size_t)size * sizeof *grown);
  if (!grown) return false;
  for (uint32_t i = 0; i < size; ++i) grown[i].node = UINT32_MAX;
  uint32_t old_size = tape->scalars_size;
  tape->scalars = grown, tape->scalars_size = size;
  for (uint32_t i = 0; i < old_size; ++i)
    if (old[i].node != UINT32_MAX) *scalar_slot(tape, old[i].dtype, old[i].bits) = old[i];
  free(old);
  return true;
}

/* One node per distinct (dtype, value) on a tape: constants are immutable,
 * so every use may read the same one (a SmolLM2 chunk graph recorded ~430
 * scalars, each a node, a tensor and its storage in every plan made from it). */
topos_sym topos_tape_scalar(topos_tape *tape, topos_dtype dtype, double value) {
  if (!tape) return record_source(tape, TOPOS_NODE_CONSTANT, NULL, NULL, NULL);
  if (tape->status != TOPOS_OK) {
    tape_repeat(tape);
    return TOPOS_SYM_INVALID;
  }
  uint64_t bits;
  memcpy(&bits, &value, sizeof bits);
  tp_scalar_entry *found = tape->scalars_size ? scalar_slot(tape, dtype, bits) : NULL;
  if (found && found->node != UINT32_MAX) return sym_of(tape->graph, found->node);
  topos_tensor *t = NULL;
  topos_status s = topos_tensor_scalar(dtype, value, &t);
  if (s != TOPOS_OK) {
    tape_fail(tape, tp_fail_context(s, "scalar (node %u)", tape->graph->count));
    return TOPOS_SYM_INVALID;
  }
  topos_sym sym = record_source(tape, TOPOS_NODE_CONSTANT, t, NULL, NULL);
  topos_tensor_release(t);
  /* remembered when there is room; a full table only costs sharing */
  if (topos_sym_is_valid(sym) && scalar_room(tape)) {
    tp_scalar_entry *slot = scalar_slot(tape, dtype, bits);
    *slot = (tp_scalar_entry){bits, sym.index, dtype};
    ++tape->n_scalars;
  }
  return sym;
}

topos_sym topos_tape_parameter(topos_tape *tape, topos_tensor *initial, const char *name) {
  if (!initial && tape && tape->status == TOPOS_OK) {
    tape_fail(tape, tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "parameter (node %u): initial is NULL",
                            tape->graph->count));
    return TOPOS_SYM_INVALID;
  }
  return record_source(tape, TOPOS_NODE_PARAMETER, initial, NULL, name);
}

topos_sym topos_tape_input(topos_tape *tape, topos_tensor *fallback, const char *name) {
  if (!fallback && tape && tape->status == TOPOS_OK) {
    tape_fail(tape, tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                            "input (node %u): default is NULL (use topos_tape_input_desc)",
                            tape->graph->count));
    return TOPOS_SYM_INVALID;
  }
  return record_source(tape, TOPOS_NODE_INPUT, fallback, NULL, name);
}

topos_sym topos_tape_input_desc(topos_tape *tape, const topos_tensor_desc *desc,
                                const char *name) {
  return record_source(tape, TOPOS_NODE_INPUT, NULL, desc, name);
}

/* ---- seal / reopen */

topos_status topos_tape_seal(topos_tape **tape, topos_network **out) {
  if (out) *out = NULL;
  if (!tape || !*tape || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "tape_seal: NULL argument");
  topos_tape *t = *tape;
  *tape = NULL;
  if (t->status != TOPOS_OK) {
    topos_status s = tp_fail(t->status, "tape_seal: %s", t->message);
    topos_tape_free(t);
    return s;
  }
  topos_network *net = malloc(sizeof *net);
  if (!net) {
    topos_tape_free(t);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tape_seal: out of memory");
  }
  net->graph = t->graph;
  free(t->scalars);
  free(t);
  /* recording doubled the node table; a sealed graph lives on in plans
   * as it is (a llama chunk: 5647 nodes in room for 8192, 140 KB a plan) */
  tp_graph *g = net->graph;
  if (g->count > 0 && g->count < g->capacity) {
    tp_node *fit = realloc(g->nodes, (size_t)g->count * sizeof *fit);
    if (fit) g->nodes = fit, g->capacity = g->count;
  }
  *out = net;
  return TOPOS_OK;
}

topos_status topos_network_reopen(topos_network **net, topos_tape **out) {
  if (out) *out = NULL;
  if (!net || !*net || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "network_reopen: NULL argument");
  topos_tape *tape = calloc(1, sizeof *tape);
  if (!tape) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "network_reopen: out of memory");
  tp_graph *graph = (*net)->graph;
  if (atomic_load(&graph->refs) == 1) {
    tape->graph = graph; /* nobody else sees it: take it over */
  } else {
    topos_status s = tp_graph_copy(graph, &tape->graph);
    if (s != TOPOS_OK) {
      free(tape);
      return s;
    }
    tp_graph_release(graph);
  }
  free(*net);
  *net = NULL;
  *out = tape;
  return TOPOS_OK;
}
