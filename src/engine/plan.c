/* Plans: a compiled request. The schedule (pruning, readable set, releases
 * after the last consumer) is the interpreter's own (graph/run.c), so a plan
 * run performs the interpreter's kernel calls in the same order: same bits.
 * What compiling adds is the static liveness analysis reported by
 * topos_plan_stats_get and topos_plan_describe. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/buffer_plan.h"
#include "graph/graph_internal.h"
#include "topos/engine.h"

struct topos_plan {
  tp_schedule schedule;
  tp_buffer_plan buffers;
  topos_numerics numerics;
  topos_plan_stats stats;
};

static int64_t node_volume(const tp_node *node) {
  int64_t v = 1;
  for (int i = 0; i < node->desc.rank; ++i) v *= node->desc.shape[i];
  return v;
}

/* Forward plans: peak of the live volume with releases after last use.
 * Backward plans: the floor a release-as-you-go policy would reach while
 * keeping what the backward rules read (and the readable values). */
static void analyse(topos_plan *plan) {
  const tp_schedule *sc = &plan->schedule;
  const tp_graph *graph = sc->graph;
  topos_plan_stats *st = &plan->stats;
  st->nodes = graph->count;
  int64_t live = 0;
  for (uint32_t i = 0; i < graph->count; ++i) {
    if (!sc->wanted[i]) continue;
    ++st->evaluated;
    st->readable += sc->readable[i];
    int64_t v = node_volume(&graph->nodes[i]);
    st->retain_all += v;
    live += v;
    if (live > st->peak) {
      st->peak = live;
      st->peak_node = i;
    }
    const tp_node *node = &graph->nodes[i];
    if (node->kind != TOPOS_NODE_OP) continue;
    for (int j = 0; j < topos_op_arity(node->op); ++j) {
      uint32_t o = node->operands[j];
      bool kept = sc->readable[o] || (sc->posture != TP_RUN_OBSERVED && sc->required[o]);
      /* released once, at its last consumer (an operand used twice by this node counts once) */
      if (!kept && sc->last_use[o] == i && (j == 0 || node->operands[0] != o))
        live -= node_volume(&graph->nodes[o]);
    }
  }
}

topos_status topos_plan_compile(const topos_network *net, const topos_request *request,
                                topos_plan **out) {
  if (out) *out = NULL;
  if (!net || !request || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_compile: NULL argument");
  if (request->n_roots == 0 || !request->roots)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_compile: a request needs at least one root");
  if (request->numerics != TOPOS_NUMERICS_FAST && request->numerics != TOPOS_NUMERICS_EXACT)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_compile: unknown numerics %d",
                   (int)request->numerics);
  topos_plan *plan = calloc(1, sizeof *plan);
  if (!plan) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "plan_compile: out of memory");
  topos_status s = tp_schedule_build(net->graph, request->roots, request->n_roots,
                                     request->observe, request->n_observe, request->backward != 0,
                                     &plan->schedule);
  if (s != TOPOS_OK) {
    free(plan);
    return tp_fail_context(s, "plan_compile");
  }
  plan->numerics = request->numerics;
  plan->schedule.exact = request->numerics == TOPOS_NUMERICS_EXACT;
  s = tp_buffer_plan_build(&plan->schedule, &plan->buffers);
  if (s != TOPOS_OK) {
    tp_schedule_free(&plan->schedule);
    free(plan);
    return s;
  }
  analyse(plan);
  plan->stats.arena_bytes = plan->buffers.arena_bytes;
  plan->stats.unshared_bytes = plan->buffers.unshared_bytes;
  *out = plan;
  return TOPOS_OK;
}

void topos_plan_free(topos_plan *plan) {
  if (!plan) return;
  tp_schedule_free(&plan->schedule);
  tp_buffer_plan_free(&plan->buffers);
  free(plan);
}

const tp_buffer_plan *tp_plan_buffers(const topos_plan *plan) { return plan ? &plan->buffers : NULL; }

topos_status topos_plan_forward(const topos_plan *plan, const topos_params *params,
                                const topos_feed *feeds, size_t n_feeds, topos_run **out) {
  if (out) *out = NULL;
  if (!plan || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_forward: NULL argument");
  return tp_schedule_execute(&plan->schedule, params, feeds, n_feeds, out);
}

topos_numerics topos_plan_numerics(const topos_plan *plan) {
  return plan ? plan->numerics : TOPOS_NUMERICS_FAST;
}

topos_status topos_plan_stats_get(const topos_plan *plan, topos_plan_stats *out) {
  if (!plan || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "plan_stats: NULL argument");
  *out = plan->stats;
  return TOPOS_OK;
}

/* snprintf into a growing position; keeps counting past the end of buf */
typedef struct {
  char *buf;
  size_t size, length;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  size_t room = t->length < t->size ? t->size - t->length : 0;
  int n = vsnprintf(room ? t->buf + t->length : NULL, room, fmt, args);
  va_end(args);
  if (n > 0) t->length += (size_t)n;
}

size_t topos_plan_describe(const topos_plan *plan, char *buf, size_t size) {
  text t = {buf, size, 0};
  if (buf && size) buf[0] = '\0';
  if (!plan) return 0;
  const tp_schedule *sc = &plan->schedule;
  const tp_graph *graph = sc->graph;
  bool forward = sc->posture == TP_RUN_OBSERVED;
  for (uint32_t i = 0; i < graph->count; ++i) {
    if (!sc->wanted[i]) continue;
    const tp_node *node = &graph->nodes[i];
    char shape[96], typed[112], liveness[48];
    tp_shape_string(node->desc.rank, node->desc.shape, shape, sizeof shape);
    snprintf(typed, sizeof typed, "%s%s", topos_dtype_name(node->desc.dtype), shape);
    if (sc->readable[i]) snprintf(liveness, sizeof liveness, "kept");
    else if (!forward && sc->required[i]) snprintf(liveness, sizeof liveness, "retained");
    else
      snprintf(liveness, sizeof liveness, "%s after %u", forward ? "freed" : "releasable",
               sc->last_use[i]);
    put(&t, "  %4u  %-16s %-20s %s\n", i, tp_node_label(node), typed, liveness);
  }
  const topos_plan_stats *st = &plan->stats;
  put(&t, "plan: %s; %u of %u nodes evaluated, %u readable; numerics %s\n",
      forward ? "forward" : "retain", st->evaluated, st->nodes, st->readable,
      plan->numerics == TOPOS_NUMERICS_EXACT ? "exact" : "fast");
  if (forward)
    put(&t, "live volume: peak %lld elements at node %u, retain-all %lld\n",
        (long long)st->peak, st->peak_node, (long long)st->retain_all);
  else
    put(&t, "live volume: retain-all %lld, release floor %lld at node %u\n",
        (long long)st->retain_all, (long long)st->peak, st->peak_node);
  put(&t, "arena: %lld bytes for %u buffers, %lld without reuse\n", (long long)st->arena_bytes,
      plan->buffers.buffers, (long long)st->unshared_bytes);
  return t.length;
}
