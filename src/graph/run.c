/* The reference interpreter: one left-to-right scan over the nodes with the
 * reference kernels. This is the specification every plan must reproduce.
 *
 * A complete run (no roots, no observe) computes and keeps every node. A
 * declared run computes only the ancestors of roots and observe; a
 * forward-only one releases each unreadable value after its last consumer, a
 * backward one keeps every computed value for the reverse sweep. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/numerics.h"
#include "graph/graph_internal.h"

void topos_run_free(topos_run *run) {
  if (!run) return;
  if (run->hooks && run->hooks->release) {
    run->hooks->release(run);
    return;
  }
  if (run->values)
    for (uint32_t i = 0; i < run->graph->count; ++i) topos_tensor_release(run->values[i]);
  free(run->values);
  free(run->readable);
  tp_graph_release(run->graph);
  free(run);
}

static const char *node_name(const tp_node *node) { return node->name ? node->name : "(unnamed)"; }

static topos_status check_feed(const tp_graph *graph, const topos_feed *feed, size_t k,
                               topos_tensor **fed) {
  char what[48];
  snprintf(what, sizeof what, "forward: feed %zu", k);
  uint32_t index;
  TP_TRY(tp_graph_resolve(graph, feed->input, what, &index));
  const tp_node *node = &graph->nodes[index];
  if (node->kind != TOPOS_NODE_INPUT)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "forward: feed %zu names node %u, a %s, not an input",
                   k, index, tp_node_label(node));
  if (!feed->value)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "forward: feed %zu (input %s) has no tensor", k,
                   node_name(node));
  if (fed[index])
    return tp_fail(TOPOS_ERR_DUPLICATE, "forward: input %s (node %u) is fed twice",
                   node_name(node), index);
  topos_tensor_desc got = topos_tensor_describe(feed->value);
  if (got.dtype != node->desc->dtype)
    return tp_fail(TOPOS_ERR_DTYPE, "forward: input %s (node %u) is %s, fed %s", node_name(node),
                   index, topos_dtype_name(node->desc->dtype), topos_dtype_name(got.dtype));
  if (got.rank != node->desc->rank ||
      memcmp(got.shape, node->desc->shape, (size_t)got.rank * sizeof(int64_t)) != 0) {
    char a[96], b[96];
    return tp_fail(TOPOS_ERR_SHAPE, "forward: input %s (node %u) has shape %s, fed %s",
                   node_name(node), index,
                   tp_shape_string(node->desc->rank, node->desc->shape, a, sizeof a),
                   tp_shape_string(got.rank, got.shape, b, sizeof b));
  }
  fed[index] = feed->value;
  return TOPOS_OK;
}

static bool same_desc(const topos_tensor_desc *a, const topos_tensor_desc *b) {
  return a->dtype == b->dtype && a->rank == b->rank &&
         memcmp(a->shape, b->shape, (size_t)a->rank * sizeof(int64_t)) == 0;
}

topos_status tp_run_source(const tp_graph *graph, const topos_params *params,
                           topos_tensor *const *fed, topos_tensor **values, uint32_t i) {
  const tp_node *node = &graph->nodes[i];
  switch (node->kind) {
    case TOPOS_NODE_CONSTANT:
      values[i] = topos_tensor_retain(node->value);
      return TOPOS_OK;
    case TOPOS_NODE_PARAMETER:
      values[i] = topos_tensor_retain(params->values[node->slot]);
      return TOPOS_OK;
    case TOPOS_NODE_INPUT:
      if (fed[i]) values[i] = topos_tensor_retain(fed[i]);
      else if (node->value) values[i] = topos_tensor_retain(node->value);
      else
        return tp_fail(TOPOS_ERR_MISSING_FEED, "forward: input %s (node %u) is not fed and has "
                       "no default", node_name(node), i);
      return TOPOS_OK;
    case TOPOS_NODE_OP: break;
  }
  return tp_fail(TOPOS_ERR_INTERNAL, "forward: node %u is not a source", i);
}

/* Evaluates node i from the values of its operands. */
static topos_status evaluate(const tp_graph *graph, const topos_params *params,
                             topos_tensor *const *fed, topos_tensor **values, uint32_t i) {
  const tp_node *node = &graph->nodes[i];
  if (node->kind != TOPOS_NODE_OP) return tp_run_source(graph, params, fed, values, i);
  topos_tensor *inputs[TP_MAX_ARITY] = {NULL};
  int arity = topos_op_arity(node->op);
  for (int j = 0; j < arity; ++j) {
    inputs[j] = values[node->operands[j]];
    if (!inputs[j])
      return tp_fail(TOPOS_ERR_INTERNAL, "forward: %s (node %u): operand %u not computed",
                     topos_op_name(node->op), i, node->operands[j]);
  }
  topos_tensor *out = NULL;
  topos_status s = topos_op_forward(node->op, inputs, node->attrs, &out);
  if (s != TOPOS_OK) return tp_fail_context(s, "forward: %s (node %u)", topos_op_name(node->op), i);
  topos_tensor_desc got = topos_tensor_describe(out);
  if (!same_desc(&got, node->desc)) {
    topos_tensor_release(out);
    return tp_fail(TOPOS_ERR_INTERNAL, "forward: %s (node %u): kernel result disagrees with the "
                   "recorded shape rule", topos_op_name(node->op), i);
  }
  values[i] = out;
  return TOPOS_OK;
}

static topos_status declare(const tp_graph *graph, const topos_sym *syms, size_t n,
                            const char *what, uint8_t *flags) {
  if (n && !syms) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "forward: %s is NULL", what);
  for (size_t k = 0; k < n; ++k) {
    uint32_t index;
    char label[48];
    snprintf(label, sizeof label, "forward: %s %zu", what, k);
    TP_TRY(tp_graph_resolve(graph, syms[k], label, &index));
    flags[index] = 1;
  }
  return TOPOS_OK;
}

void tp_schedule_free(tp_schedule *schedule) {
  if (!schedule) return;
  free(schedule->wanted);
  free(schedule->readable);
  free(schedule->required);
  free(schedule->last_use);
  free(schedule->release_start);
  free(schedule->release_list);
  if (schedule->graph) tp_graph_release(schedule->graph);
  memset(schedule, 0, sizeof *schedule);
}

static topos_status schedule_fill(tp_schedule *sc, const topos_sym *roots, size_t n_roots,
                                  const topos_sym *observe, size_t n_observe, int backward) {
  const tp_graph *graph = sc->graph;
  uint32_t n = graph->count;
  bool complete = n_roots == 0 && n_observe == 0;
  if (complete) {
    sc->posture = TP_RUN_COMPLETE;
    memset(sc->wanted, 1, n);
    memset(sc->readable, 1, n);
  } else {
    sc->posture = backward ? TP_RUN_TRAINING : TP_RUN_OBSERVED;
    TP_TRY(declare(graph, roots, n_roots, "root", sc->readable));
    TP_TRY(declare(graph, observe, n_observe, "observed node", sc->readable));
    memcpy(sc->wanted, sc->readable, n);
    tp_graph_mark_ancestors(graph, sc->wanted);
  }
  for (uint32_t i = 0; i < n; ++i) sc->last_use[i] = UINT32_MAX;
  uint32_t releases = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const tp_node *node = &graph->nodes[i];
    if (!sc->wanted[i] || node->kind != TOPOS_NODE_OP) continue;
    int arity = topos_op_arity(node->op);
    uint8_t reads = tp_backward_reads_of(node->op);
    for (int j = 0; j < arity; ++j) {
      sc->last_use[node->operands[j]] = i;
      if (reads & (1u << j)) sc->required[node->operands[j]] = 1;
    }
    if (reads & 0x80u) sc->required[i] = 1;
  }
  /* forward-only: each unreadable value is released right after its last consumer */
  if (sc->posture == TP_RUN_OBSERVED)
    for (uint32_t i = 0; i < n; ++i)
      if (sc->wanted[i] && !sc->readable[i] && sc->last_use[i] != UINT32_MAX) ++releases;
  sc->release_list = malloc(((size_t)releases + 1) * sizeof *sc->release_list);
  if (!sc->release_list) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "forward: out of memory");
  memset(sc->release_start, 0, ((size_t)n + 1) * sizeof *sc->release_start);
  if (sc->posture != TP_RUN_OBSERVED) return TOPOS_OK;
  for (uint32_t i = 0; i < n; ++i)
    if (sc->wanted[i] && !sc->readable[i] && sc->last_use[i] != UINT32_MAX)
      ++sc->release_start[sc->last_use[i] + 1];
  for (uint32_t i = 0; i < n; ++i) sc->release_start[i + 1] += sc->release_start[i];
  uint32_t *fill = calloc(n ? n : 1, sizeof *fill);
  if (!fill) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "forward: out of memory");
  for (uint32_t i = 0; i < n; ++i) {
    if (!sc->wanted[i] || sc->readable[i] || sc->last_use[i] == UINT32_MAX) continue;
    uint32_t at = sc->last_use[i];
    sc->release_list[sc->release_start[at] + fill[at]++] = i;
  }
  free(fill);
  return TOPOS_OK;
}

topos_status tp_schedule_build(tp_graph *graph, const topos_sym *roots, size_t n_roots,
                               const topos_sym *observe, size_t n_observe, int backward,
                               tp_schedule *out) {
  memset(out, 0, sizeof *out);
  size_t n = graph->count ? graph->count : 1;
  out->graph = tp_graph_retain(graph);
  out->wanted = calloc(n, 1);
  out->readable = calloc(n, 1);
  out->required = calloc(n, 1);
  out->last_use = malloc(n * sizeof *out->last_use);
  out->release_start = malloc((n + 1) * sizeof *out->release_start);
  topos_status s;
  if (!out->wanted || !out->readable || !out->required || !out->last_use || !out->release_start)
    s = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "forward: out of memory");
  else
    s = schedule_fill(out, roots, n_roots, observe, n_observe, backward);
  if (s != TOPOS_OK) tp_schedule_free(out);
  return s;
}

topos_status tp_run_bind(const tp_graph *graph, const topos_params *params,
                         const topos_feed *feeds, size_t n_feeds, topos_tensor **fed) {
  if (graph->n_parameters > 0) {
    if (!params)
      return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "forward: the network has %u parameters and no "
                     "params were given", graph->n_parameters);
    if (params->origin != graph->origin)
      return tp_fail(TOPOS_ERR_FOREIGN, "forward: params belong to another network");
    if (params->count != graph->n_parameters)
      return tp_fail(TOPOS_ERR_STATE, "forward: params hold %zu parameters, the network has %u",
                     params->count, graph->n_parameters);
  }
  if (n_feeds && !feeds) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "forward: feeds is NULL");
  for (size_t k = 0; k < n_feeds; ++k) TP_TRY(check_feed(graph, &feeds[k], k, fed));
  return TOPOS_OK;
}

static topos_status execute(const tp_schedule *sc, const topos_params *params,
                            const topos_feed *feeds, size_t n_feeds, topos_run *run,
                            topos_tensor **fed) {
  const tp_graph *graph = sc->graph;
  uint32_t n = graph->count;
  TP_TRY(tp_run_bind(graph, params, feeds, n_feeds, fed));
  run->posture = sc->posture;
  run->exact = sc->exact;
  memcpy(run->readable, sc->readable, n);
  for (uint32_t i = 0; i < n; ++i) {
    if (!sc->wanted[i]) continue;
    TP_TRY(evaluate(graph, params, fed, run->values, i));
    for (uint32_t r = sc->release_start[i]; r < sc->release_start[i + 1]; ++r) {
      uint32_t o = sc->release_list[r];
      topos_tensor_release(run->values[o]);
      run->values[o] = NULL;
    }
  }
  return TOPOS_OK;
}

topos_status tp_schedule_execute(const tp_schedule *sc, const topos_params *params,
                                 const topos_feed *feeds, size_t n_feeds, topos_run **out) {
  *out = NULL;
  tp_graph *graph = sc->graph;
  size_t n = graph->count ? graph->count : 1;
  topos_run *run = calloc(1, sizeof *run);
  topos_tensor **fed = calloc(n, sizeof *fed);
  if (run) {
    run->graph = tp_graph_retain(graph);
    run->values = calloc(n, sizeof *run->values);
    run->readable = calloc(n, 1);
  }
  topos_status s;
  if (!run || !run->values || !run->readable || !fed)
    s = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "forward: out of memory");
  else {
    int previous = tp_numerics_enter(sc->exact);
    s = execute(sc, params, feeds, n_feeds, run, fed);
    tp_numerics_leave(previous);
  }
  free(fed);
  if (s != TOPOS_OK) {
    topos_run_free(run);
    return s;
  }
  *out = run;
  return TOPOS_OK;
}

topos_status topos_network_forward(const topos_network *net, const topos_params *params,
                                   const topos_feed *feeds, size_t n_feeds,
                                   const topos_forward_options *options, topos_run **out) {
  if (out) *out = NULL;
  if (!net || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "forward: NULL argument");
  tp_schedule sc;
  topos_forward_options none = {NULL, 0, NULL, 0, 0};
  if (!options) options = &none;
  TP_TRY(tp_schedule_build(net->graph, options->roots, options->n_roots, options->observe,
                           options->n_observe, options->backward, &sc));
  /* The interpreter runs under the caller's posture (Fast unless the thread
   * entered Exact), and its backward sweep re-enters that posture. */
  sc.exact = tp_numerics_exact();
  topos_status s = tp_schedule_execute(&sc, params, feeds, n_feeds, out);
  tp_schedule_free(&sc);
  return s;
}

topos_status topos_run_read(const topos_run *run, topos_sym sym, topos_tensor **out) {
  if (out) *out = NULL;
  if (!run || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "run_read: NULL argument");
  uint32_t index;
  TP_TRY(tp_graph_resolve(run->graph, sym, "run_read", &index));
  if (!run->readable[index] || !run->values[index])
    return tp_fail(TOPOS_ERR_NOT_READABLE, "run_read: node %u (%s) was not declared readable "
                   "(add it to roots or observe)", index, tp_node_label(&run->graph->nodes[index]));
  *out = topos_tensor_retain(run->values[index]);
  return TOPOS_OK;
}
