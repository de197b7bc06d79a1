/* Plans: a compiled request.
 *
 * Compiling takes the interpreter's schedule (pruning, readable set, what the
 * backward rules read: graph/run.c), lets the pattern table fuse groups of
 * nodes into single steps (pattern.h), decides which values live to the end
 * (kept: readable ones and, in a backward plan, those a backward rule reads),
 * when every other value is dropped (after its last reader), and lays the
 * fresh results out in one arena by liveness (buffer_plan.c). Runs follow
 * that layout (executor.c) and call the interpreter's kernels on the same
 * operands in the same order, so they give the interpreter's bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "engine/plan_internal.h"

/* Element counts of a described graph may sum past int64 (views of a huge
 * desc-only input take no memory): the statistics saturate at INT64_MAX. */
static int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
}

static int64_t node_volume(const tp_node *node) {
  int64_t v = 1;
  for (int i = 0; i < node->desc->rank; ++i) v *= node->desc->shape[i];
  return v;
}

/* Live volume (elements) along the run: a forward plan's peak, a backward
 * plan's floor (values kept for the reverse sweep never drop). */
static void analyse(topos_plan *plan) {
  const tp_schedule *sc = &plan->schedule;
  const tp_graph *graph = sc->graph;
  topos_plan_stats *st = &plan->stats;
  st->nodes = graph->count;
  int64_t live = 0;
  for (uint32_t i = 0; i < graph->count; ++i) {
    if (!plan->evaluated[i]) continue;
    ++st->evaluated;
    st->steps += graph->nodes[i].kind == TOPOS_NODE_OP;
    st->readable += sc->readable[i];
    int64_t v = node_volume(&graph->nodes[i]);
    st->retain_all = saturating_add(st->retain_all, v);
    live = saturating_add(live, v);
    if (live > st->peak) {
      st->peak = live;
      st->peak_node = i;
    }
    for (uint32_t r = plan->release_start[i]; r < plan->release_start[i + 1]; ++r)
      live -= node_volume(&graph->nodes[plan->release_list[r]]);
  }
  st->fused = plan->n_fusions;
  st->arena_bytes = plan->buffers.arena_bytes;
  st->unshared_bytes = plan->buffers.unshared_bytes;
}

/* ---- fusion: offer every evaluated op node to the patterns as a group root */

static bool fusion_is_invisible(const topos_plan *plan, const tp_fusion *f, const uint32_t *uses) {
  const tp_schedule *sc = &plan->schedule;
  const tp_graph *graph = sc->graph;
  bool training = sc->posture != TP_RUN_OBSERVED;
  if (f->n_members < 1 || f->n_members > TP_FUSION_MAX_MEMBERS || f->n_inputs > TP_FUSION_MAX_INPUTS)
    return false;
  uint32_t root = f->members[f->n_members - 1];
  if (root != f->root || graph->nodes[root].kind != TOPOS_NODE_OP ||
      (topos_op_is_view(graph->nodes[root].op) && graph->nodes[root].op != TOPOS_OP_RESHAPE))
    return false;
  for (uint32_t k = 0; k < f->n_members; ++k) {
    uint32_t m = f->members[k];
    if (m >= graph->count || !plan->evaluated[m] || plan->fusion_of[m] >= 0) return false;
    if (k > 0 && m <= f->members[k - 1]) return false;
    if (graph->nodes[m].kind != TOPOS_NODE_OP) return false;
    if (m == root) continue;
    if (sc->readable[m] || plan->sink_of[m] >= 0 || (training && sc->required[m])) return false;
    /* every reader of an interior member is a member */
    uint32_t inside = 0;
    for (uint32_t j = 0; j < f->n_members; ++j) {
      const tp_node *c = &graph->nodes[f->members[j]];
      for (int o = 0; o < topos_op_arity(c->op); ++o) inside += c->operands[o] == m;
    }
    if (inside != uses[m]) return false;
  }
  for (uint32_t k = 0; k < f->n_inputs; ++k)
    if (f->inputs[k] >= root || !plan->evaluated[f->inputs[k]]) return false;
  return true;
}

/* Points each kept group's lists into plan->fusion_lists, where they lie
 * one after another (members, then inputs) in the groups' order. */
static void fusion_point_lists(topos_plan *plan) {
  uint32_t *at = plan->fusion_lists;
  for (uint32_t g = 0; g < plan->n_fusions; ++g) {
    tp_fusion *f = &plan->fusions[g];
    f->members = at;
    f->inputs = at + f->n_members;
    at += f->n_members + f->n_inputs;
  }
}

/* Appends a matched group to the plan, its lists copied out of the match's
 * space; false when out of memory (the plan unchanged). */
static bool fusion_keep(topos_plan *plan, const tp_fusion *f, uint32_t *cap_fusions, size_t *cap_lists) {
  const size_t len = (size_t)f->n_members + f->n_inputs;
  if (plan->n_fusions == *cap_fusions) {
    uint32_t cap = *cap_fusions ? 2 * *cap_fusions : 16;
    tp_fusion *grown = realloc(plan->fusions, cap * sizeof *grown);
    if (!grown) return false;
    plan->fusions = grown, *cap_fusions = cap;
  }
  bool moved = false;
  if (plan->n_fusion_lists + len > *cap_lists) {
    size_t cap = *cap_lists ? 2 * *cap_lists : 256;
    while (cap < plan->n_fusion_lists + len) cap *= 2;
    uint32_t *grown = realloc(plan->fusion_lists, cap * sizeof *grown);
    if (!grown) return false;
    moved = grown != plan->fusion_lists;
    plan->fusion_lists = grown, *cap_lists = cap;
  }
  uint32_t *at = plan->fusion_lists + plan->n_fusion_lists;
  memcpy(at, f->members, f->n_members * sizeof *at);
  memcpy(at + f->n_members, f->inputs, f->n_inputs * sizeof *at);
  plan->n_fusion_lists += len;
  tp_fusion *kept = &plan->fusions[plan->n_fusions++];
  *kept = *f;
  kept->members = at;
  kept->inputs = at + f->n_members;
  if (moved) fusion_point_lists(plan);
  return true;
}

/* The tables trimmed to what the plan keeps. */
static void fusion_trim(topos_plan *plan) {
  if (plan->n_fusions == 0) return;
  tp_fusion *f = realloc(plan->fusions, plan->n_fusions * sizeof *f);
  if (f) plan->fusions = f;
  uint32_t *lists = realloc(plan->fusion_lists, plan->n_fusion_lists * sizeof *lists);
  if (lists) plan->fusion_lists = lists;
  fusion_point_lists(plan);
}

static topos_status fuse(topos_plan *plan, const tp_pattern *const *patterns, size_t n_patterns) {
  const tp_graph *graph = plan->schedule.graph;
  uint32_t n = graph->count;
  for (uint32_t i = 0; i < n; ++i) plan->fusion_of[i] = -1;
  if (n_patterns == 0) return TOPOS_OK;
  uint32_t *uses = calloc(n ? n : 1, sizeof *uses);
  /* grown as fusions are found: a table sized for every node would be freed
   * at once, leaving a hole in the heap */
  uint32_t cap_fusions = 0;
  size_t cap_lists = 0;
  if (!uses) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "plan_compile: out of memory (fusion)");
  for (uint32_t i = 0; i < n; ++i) {
    const tp_node *node = &graph->nodes[i];
    if (!plan->evaluated[i] || node->kind != TOPOS_NODE_OP) continue;
    for (int j = 0; j < topos_op_arity(node->op); ++j) ++uses[node->operands[j]];
  }
  /* descending (pattern.h): uses[] follows each fusion, so it always counts
   * the readers the steps have now (a group reads its inputs, not its
   * members' operands) */
  for (uint32_t i = n; i-- > 0;) {
    if (!plan->evaluated[i] || graph->nodes[i].kind != TOPOS_NODE_OP || plan->fusion_of[i] >= 0)
      continue;
    for (size_t p = 0; p < n_patterns; ++p) {
      tp_fusion_space space;
      tp_fusion *f = tp_fusion_space_init(&space);
      if (!patterns[p]->match(graph, plan->evaluated, i, f)) continue;
      f->pattern = patterns[p];
      f->root = i;
      if (!fusion_is_invisible(plan, f, uses)) continue;
      if (!fusion_keep(plan, f, &cap_fusions, &cap_lists)) {
        free(uses);
        return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "plan_compile: out of memory (fusion %u)", plan->n_fusions);
      }
      int32_t id = (int32_t)plan->n_fusions - 1;
      for (uint32_t k = 0; k < f->n_members; ++k) {
        const tp_node *m = &graph->nodes[f->members[k]];
        for (int j = 0; j < topos_op_arity(m->op); ++j) --uses[m->operands[j]];
        plan->fusion_of[f->members[k]] = id;
        if (f->members[k] != i) plan->evaluated[f->members[k]] = 0;
      }
      for (uint32_t k = 0; k < f->n_inputs; ++k) ++uses[f->inputs[k]];
      break;
    }
  }
  /* values nobody reads any more (a group recomputes them): not evaluated */
  const tp_schedule *sc = &plan->schedule;
  bool training = sc->posture != TP_RUN_OBSERVED;
  for (uint32_t i = n; i-- > 0;) {
    const tp_node *node = &graph->nodes[i];
    if (!plan->evaluated[i] || node->kind != TOPOS_NODE_OP || uses[i] != 0 ||
        sc->readable[i] || plan->sink_of[i] >= 0 || (training && sc->required[i]))
      continue;
    plan->evaluated[i] = 0;
    int32_t g = plan->fusion_of[i];
    if (g >= 0) {
      const tp_fusion *f = &plan->fusions[g];
      for (uint32_t k = 0; k < f->n_inputs; ++k) --uses[f->inputs[k]];
    } else {
      for (int j = 0; j < topos_op_arity(node->op); ++j) --uses[node->operands[j]];
    }
  }
  free(uses);
  fusion_trim(plan);
  return TOPOS_OK;
}

/* ---- liveness: kept values, last readers, release lists */

static topos_status plan_liveness(topos_plan *plan) {
  const tp_schedule *sc = &plan->schedule;
  const tp_graph *graph = sc->graph;
  uint32_t n = graph->count;
  bool training = sc->posture != TP_RUN_OBSERVED;
  for (uint32_t i = 0; i < n; ++i) {
    plan->last_use[i] = UINT32_MAX;
    plan->kept[i] = plan->evaluated[i] && (sc->readable[i] || (training && sc->required[i]));
  }
  for (uint32_t i = 0; i < n; ++i) {
    const tp_node *node = &graph->nodes[i];
    if (!plan->evaluated[i] || node->kind != TOPOS_NODE_OP) continue;
    int32_t g = plan->fusion_of[i];
    if (g >= 0) { /* a fused step reads its inputs when it runs, at its root */
      const tp_fusion *f = &plan->fusions[g];
      for (uint32_t k = 0; k < f->n_inputs; ++k) plan->last_use[f->inputs[k]] = i;
    } else {
      for (int j = 0; j < topos_op_arity(node->op); ++j) plan->last_use[node->operands[j]] = i;
    }
  }
  /* a sink nobody reads is dropped right after its own step (the sink call) */
  for (uint32_t i = 0; i < n; ++i)
    if (plan->evaluated[i] && !plan->kept[i] && plan->sink_of[i] >= 0 && plan->last_use[i] == UINT32_MAX)
      plan->last_use[i] = i;
  uint32_t releases = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (plan->evaluated[i] && !plan->kept[i] && plan->last_use[i] != UINT32_MAX) ++releases;
  plan->release_start = calloc((size_t)n + 1, sizeof *plan->release_start);
  plan->release_list = malloc(((size_t)releases + 1) * sizeof *plan->release_list);
  uint32_t *fill = calloc(n ? n : 1, sizeof *fill);
  if (!plan->release_start || !plan->release_list || !fill) {
    free(fill);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "plan_compile: out of memory (liveness)");
  }
  for (uint32_t i = 0; i < n; ++i)
    if (plan->evaluated[i] && !plan->kept[i] && plan->last_use[i] != UINT32_MAX)
      ++plan->release_start[plan->last_use[i] + 1];
  for (uint32_t i = 0; i < n; ++i) plan->release_start[i + 1] += plan->release_start[i];
  for (uint32_t i = 0; i < n; ++i) {
    if (!plan->evaluated[i] || plan->kept[i] || plan->last_use[i] == UINT32_MAX) continue;
    uint32_t at = plan->last_use[i];
    plan->release_list[plan->release_start[at] + fill[at]++] = i;
  }
  free(fill);
  return TOPOS_OK;
}

static void plan_destroy(topos_plan *plan) {
  while (plan->idle) {
    tp_exec *ex = plan->idle;
    plan->idle = ex->next;
    tp_exec_destroy(ex);
  }
  tp_schedule_free(&plan->schedule);
  tp_buffer_plan_free(&plan->buffers);
  free(plan->evaluated);
  free(plan->kept);
  free(plan->last_use);
  free(plan->release_start);
  free(plan->release_list);
  free(plan->fusions);
  free(plan->fusion_lists);
  free(plan->fusion_of);
  free(plan->sink_of);
  free(plan);
}

void tp_plan_release(topos_plan *plan) {
  if (plan && atomic_fetch_sub_explicit(&plan->refs, 1, memory_order_acq_rel) == 1)
    plan_destroy(plan);
}

/* sink_of from the request; the schedule made every sink readable (it came
 * in as a root): only the roots and observed ones stay so. A node named
 * twice as a sink is one sink (the first index). */
static topos_status mark_sinks(topos_plan *plan, const topos_sym *sinks, size_t n_sinks,
                               const topos_sym *roots, size_t n_roots, const topos_sym *observe,
                               size_t n_observe) {
  const tp_graph *graph = plan->schedule.graph;
  for (uint32_t i = 0; i < graph->count; ++i) plan->sink_of[i] = -1;
  plan->n_sinks = n_sinks;
  if (n_sinks > (size_t)INT32_MAX + 1) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_compile: %zu sinks", n_sinks);
  for (size_t k = n_sinks; k-- > 0;) { /* descending: the first index wins */
    uint32_t i;
    TP_TRY(tp_graph_resolve(graph, sinks[k], "plan_compile", &i));
    plan->sink_of[i] = (int32_t)k;
    plan->schedule.readable[i] = 0;
  }
  const topos_sym *lists[2] = {roots, observe};
  const size_t counts[2] = {n_roots, n_observe};
  for (int l = 0; l < 2; ++l)
    for (size_t k = 0; k < counts[l]; ++k) {
      uint32_t i;
      TP_TRY(tp_graph_resolve(graph, lists[l][k], "plan_compile", &i));
      plan->schedule.readable[i] = 1;
    }
  return TOPOS_OK;
}

static topos_status plan_compile(const topos_network *net, const topos_request *request,
                                 const topos_sym *sinks, size_t n_sinks_given,
                                 const tp_pattern *const *patterns, size_t n_patterns, topos_plan **out) {
  if (out) *out = NULL;
  if (!net || !request || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_compile: NULL argument");
  const size_t n_roots = request->roots ? request->n_roots : 0;
  const size_t n_sinks = sinks ? n_sinks_given : 0;
  if (n_roots + n_sinks == 0)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_compile: a request needs at least one root or sink");
  if (n_sinks > 0 && request->backward)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_compile: sinks are for forward plans (the "
                   "request asks for backward)");
  if (request->numerics != TOPOS_NUMERICS_FAST && request->numerics != TOPOS_NUMERICS_EXACT)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_compile: unknown numerics %d",
                   (int)request->numerics);
  if (n_roots + n_sinks > UINT32_MAX)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_compile: %zu roots and sinks", n_roots + n_sinks);
  topos_plan *plan = calloc(1, sizeof *plan);
  /* sinks are pruned as roots are; the schedule reads them with the roots */
  topos_sym *wanted = malloc((n_roots + n_sinks) * sizeof *wanted);
  if (!plan || !wanted) {
    free(plan);
    free(wanted);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "plan_compile: out of memory");
  }
  if (n_roots) memcpy(wanted, request->roots, n_roots * sizeof *wanted);
  if (n_sinks) memcpy(wanted + n_roots, sinks, n_sinks * sizeof *wanted);
  atomic_init(&plan->refs, 1);
  atomic_flag_clear(&plan->lock);
  topos_status s = tp_schedule_build(net->graph, wanted, n_roots + n_sinks, request->observe,
                                     request->n_observe, request->backward != 0, &plan->schedule);
  free(wanted);
  if (s != TOPOS_OK) {
    free(plan);
    return tp_fail_context(s, "plan_compile");
  }
  plan->numerics = request->numerics;
  plan->schedule.exact = request->numerics == TOPOS_NUMERICS_EXACT;
  uint32_t n = net->graph->count;
  size_t m = n ? n : 1;
  plan->evaluated = malloc(m);
  plan->kept = calloc(m, 1);
  plan->last_use = malloc(m * sizeof *plan->last_use);
  plan->fusion_of = malloc(m * sizeof *plan->fusion_of);
  plan->sink_of = malloc(m * sizeof *plan->sink_of);
  if (!plan->evaluated || !plan->kept || !plan->last_use || !plan->fusion_of || !plan->sink_of)
    s = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "plan_compile: out of memory");
  if (s == TOPOS_OK) s = mark_sinks(plan, sinks, n_sinks, request->roots, n_roots,
                                    request->observe, request->n_observe);
  if (s == TOPOS_OK) {
    memcpy(plan->evaluated, plan->schedule.wanted, n);
    s = fuse(plan, patterns, n_patterns);
  }
  if (s == TOPOS_OK) s = plan_liveness(plan);
  if (s == TOPOS_OK) {
    /* the inputs fused steps may write over (the buffer plan decides) */
    uint32_t *overwrite = plan->n_fusions ? malloc(m * sizeof *overwrite) : NULL;
    if (plan->n_fusions && !overwrite) s = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "plan_compile: out of memory");
    for (uint32_t i = 0; overwrite && i < n; ++i) overwrite[i] = UINT32_MAX;
    for (uint32_t g = 0; overwrite && g < plan->n_fusions; ++g) {
      const tp_fusion *f = &plan->fusions[g];
      if (f->overwrites > 0 && f->overwrites <= f->n_inputs) overwrite[f->root] = f->inputs[f->overwrites - 1];
    }
    if (s == TOPOS_OK)
      s = tp_buffer_plan_build(net->graph, plan->evaluated, plan->fusion_of, plan->kept,
                               plan->last_use, overwrite, &plan->buffers);
    free(overwrite);
  }
  if (s != TOPOS_OK) {
    plan_destroy(plan);
    return s;
  }
  analyse(plan);
  /* the interpreter's release lists: the plan keeps its own (plan_liveness) */
  free(plan->schedule.last_use);
  free(plan->schedule.release_start);
  free(plan->schedule.release_list);
  plan->schedule.last_use = plan->schedule.release_start = plan->schedule.release_list = NULL;
  *out = plan;
  return TOPOS_OK;
}

topos_status tp_plan_compile_with(const topos_network *net, const topos_request *request,
                                  const tp_pattern *const *patterns, size_t n_patterns,
                                  topos_plan **out) {
  if (out) *out = NULL;
  if (request && (request->n_roots == 0 || !request->roots))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_compile: a request needs at least one root");
  return plan_compile(net, request, NULL, 0, patterns, n_patterns, out);
}

topos_status topos_plan_compile(const topos_network *net, const topos_request *request,
                                topos_plan **out) {
  return tp_plan_compile_with(net, request, tp_plan_patterns, tp_plan_pattern_count, out);
}

topos_status topos_plan_compile_sinks(const topos_network *net, const topos_request *request,
                                      const topos_sym *sinks, size_t n_sinks, topos_plan **out) {
  if (out) *out = NULL;
  if (n_sinks > 0 && !sinks)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_compile: %zu sinks and a NULL list", n_sinks);
  return plan_compile(net, request, sinks, n_sinks, tp_plan_patterns, tp_plan_pattern_count, out);
}

void topos_plan_free(topos_plan *plan) { tp_plan_release(plan); }

const tp_buffer_plan *tp_plan_buffers(const topos_plan *plan) { return plan ? &plan->buffers : NULL; }

topos_status topos_plan_forward(const topos_plan *plan, const topos_params *params,
                                const topos_feed *feeds, size_t n_feeds, topos_run **out) {
  if (out) *out = NULL;
  if (!plan || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_forward: NULL argument");
  if (plan->n_sinks > 0)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_forward: the plan has %zu sinks: run it with "
                   "topos_plan_forward_sink", plan->n_sinks);
  /* the pool of run contexts is the one mutable part of a plan (own lock) */
  return tp_exec_forward((topos_plan *)plan, params, feeds, n_feeds, NULL, NULL, out);
}

topos_status topos_plan_forward_sink(const topos_plan *plan, const topos_params *params,
                                     const topos_feed *feeds, size_t n_feeds, topos_sink_fn sink,
                                     void *user, topos_run **out) {
  if (out) *out = NULL;
  if (!plan || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_forward_sink: NULL argument");
  if (plan->n_sinks > 0 && !sink)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_forward_sink: the plan has %zu sinks and the "
                   "sink is NULL", plan->n_sinks);
  return tp_exec_forward((topos_plan *)plan, params, feeds, n_feeds, sink, user, out);
}

topos_numerics topos_plan_numerics(const topos_plan *plan) {
  return plan ? plan->numerics : TOPOS_NUMERICS_FAST;
}

topos_status topos_plan_stats_get(const topos_plan *plan, topos_plan_stats *out) {
  if (!plan || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_stats: NULL argument");
  *out = plan->stats;
  return TOPOS_OK;
}

size_t topos_plan_describe(const topos_plan *plan, char *buf, size_t size) {
  tp_text t = {buf, size, 0};
  if (buf && size) buf[0] = '\0';
  if (!plan) return 0;
  const tp_schedule *sc = &plan->schedule;
  const tp_graph *graph = sc->graph;
  const tp_buffer_plan *bp = &plan->buffers;
  bool forward = sc->posture == TP_RUN_OBSERVED;
  for (uint32_t i = 0; i < graph->count; ++i) {
    if (!sc->wanted[i]) continue;
    const tp_node *node = &graph->nodes[i];
    char shape[96], typed[112], liveness[48], label[48], buffer[64];
    tp_shape_string(node->desc->rank, node->desc->shape, shape, sizeof shape);
    snprintf(typed, sizeof typed, "%s%s", topos_dtype_name(node->desc->dtype), shape);
    int32_t g = plan->fusion_of[i];
    bool interior = g >= 0 && plan->fusions[g].root != i;
    if (g >= 0 && !interior)
      snprintf(label, sizeof label, "fused:%s", plan->fusions[g].pattern->name);
    else
      snprintf(label, sizeof label, "%s", tp_node_label(node));
    if (interior) snprintf(liveness, sizeof liveness, "fused into %u", plan->fusions[g].root);
    else if (!plan->evaluated[i]) snprintf(liveness, sizeof liveness, "recomputed, unread");
    else if (sc->readable[i]) snprintf(liveness, sizeof liveness, "kept");
    else if (plan->kept[i]) snprintf(liveness, sizeof liveness, "retained");
    else if (plan->sink_of[i] >= 0) snprintf(liveness, sizeof liveness, "sink, freed after %u", plan->last_use[i]);
    else snprintf(liveness, sizeof liveness, "freed after %u", plan->last_use[i]);
    if (interior || !plan->evaluated[i]) snprintf(buffer, sizeof buffer, "-");
    else if (node->kind != TOPOS_NODE_OP) snprintf(buffer, sizeof buffer, "source");
    else if (bp->offset[i] == TP_NOT_IN_ARENA) snprintf(buffer, sizeof buffer, "view");
    else
      snprintf(buffer, sizeof buffer, "arena [%lld,%lld)", (long long)bp->offset[i],
               (long long)(bp->offset[i] + bp->bytes[i]));
    tp_text_printf(&t, "  %4u  %-16s %-20s %-16s %s\n", i, label, typed, liveness, buffer);
  }
  const topos_plan_stats *st = &plan->stats;
  tp_text_printf(&t, "plan: %s; %u of %u nodes evaluated, %u readable; numerics %s\n",
      forward ? "forward" : "retain", st->evaluated, st->nodes, st->readable,
      plan->numerics == TOPOS_NUMERICS_EXACT ? "exact" : "fast");
  tp_text_printf(&t, "steps: %u (%u fused)\n", st->steps, st->fused);
  if (forward)
    tp_text_printf(&t, "live volume: peak %lld elements at node %u, retain-all %lld\n",
        (long long)st->peak, st->peak_node, (long long)st->retain_all);
  else
    tp_text_printf(&t, "live volume: retain-all %lld, release floor %lld at node %u\n",
        (long long)st->retain_all, (long long)st->peak, st->peak_node);
  tp_text_printf(&t, "arena: %lld bytes for %u buffers, %lld without reuse\n", (long long)st->arena_bytes,
      bp->buffers, (long long)st->unshared_bytes);
  return tp_text_finish(&t);
}
