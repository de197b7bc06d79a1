/* Static buffer assignment (see buffer_plan.h): lifetimes from the schedule's
 * last uses extended through view chains, then first-fit placement in one
 * arena in execution order. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "engine/buffer_plan.h"

void tp_buffer_plan_free(tp_buffer_plan *plan) {
  if (!plan) return;
  free(plan->offset);
  free(plan->bytes);
  free(plan->until);
  memset(plan, 0, sizeof *plan);
}

static bool keeps_operand_alive(const tp_node *node) {
  return node->kind == TOPOS_NODE_OP && topos_op_is_view(node->op);
}

static bool allocates(const tp_node *node) {
  return node->kind == TOPOS_NODE_OP &&
         (!topos_op_is_view(node->op) || node->op == TOPOS_OP_RESHAPE);
}

/* Node i's result in bytes, rounded up to TP_BUFFER_ALIGN. A shape rule
 * accepts any valid volume, so a recorded graph may describe a result no
 * arena can hold (a desc-only input of [2^31, 2^31], say): refused here,
 * naming the node, instead of planned with a wrapped size. */
static topos_status aligned_bytes(const tp_node *node, uint32_t i, int64_t *out) {
  const topos_tensor_desc *desc = &node->desc;
  int64_t volume;
  size_t bytes = 0, aligned = 0;
  topos_status s = tp_shape_volume(desc->rank, desc->shape, &volume);
  if (s == TOPOS_OK) s = topos_dtype_bytes(desc->dtype, volume, &bytes);
  if (s != TOPOS_OK) return tp_fail_context(s, "plan_compile: %s (node %u)", tp_node_label(node), i);
  if (!tp_align_up_size(bytes, TP_BUFFER_ALIGN, &aligned) || aligned > (size_t)INT64_MAX)
    return tp_fail(TOPOS_ERR_OVERFLOW, "plan_compile: %s (node %u): %zu bytes overflow the arena",
                   tp_node_label(node), i, bytes);
  *out = (int64_t)aligned;
  return TOPOS_OK;
}

/* Live ranges, kept sorted by offset. */
typedef struct {
  int64_t offset, bytes;
  uint32_t until;
} live_range;

static int64_t first_fit(const live_range *live, size_t n, int64_t bytes) {
  int64_t at = 0;
  for (size_t k = 0; k < n; ++k) {
    if (live[k].offset - at >= bytes) return at;
    at = live[k].offset + live[k].bytes;
  }
  return at; /* above every live range */
}

topos_status tp_buffer_plan_build(const tp_graph *graph, const uint8_t *evaluated,
                                  const uint8_t *kept, const uint32_t *last_use,
                                  tp_buffer_plan *out) {
  memset(out, 0, sizeof *out);
  uint32_t n = graph->count;
  size_t m = n ? n : 1;
  out->count = n;
  out->offset = malloc(m * sizeof *out->offset);
  out->bytes = calloc(m, sizeof *out->bytes);
  out->until = malloc(m * sizeof *out->until);
  live_range *live = malloc(m * sizeof *live);
  if (!out->offset || !out->bytes || !out->until || !live) {
    free(live);
    tp_buffer_plan_free(out);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "plan_compile: out of memory (buffer plan)");
  }
  /* until[i]: last node that reads value i (or anything viewing it) */
  for (uint32_t i = 0; i < n; ++i) {
    out->offset[i] = TP_NOT_IN_ARENA;
    out->until[i] = kept[i] ? UINT32_MAX : last_use[i];
  }
  for (uint32_t i = n; i-- > 0;) {
    const tp_node *node = &graph->nodes[i];
    if (!evaluated[i] || !keeps_operand_alive(node)) continue;
    uint32_t o = node->operands[0];
    uint32_t need = out->until[i] == UINT32_MAX ? UINT32_MAX
                    : (out->until[i] > i ? out->until[i] : i);
    if (out->until[o] == UINT32_MAX || need == UINT32_MAX) out->until[o] = UINT32_MAX;
    else if (need > out->until[o]) out->until[o] = need;
  }
  size_t n_live = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const tp_node *node = &graph->nodes[i];
    if (!evaluated[i] || !allocates(node)) continue;
    /* ranges whose readers all ran before node i are free again */
    size_t kept = 0;
    for (size_t k = 0; k < n_live; ++k)
      if (live[k].until == UINT32_MAX || live[k].until >= i) live[kept++] = live[k];
    n_live = kept;
    int64_t bytes = 0;
    topos_status s = aligned_bytes(node, i, &bytes);
    int64_t at = s == TOPOS_OK ? first_fit(live, n_live, bytes) : 0;
    if (s == TOPOS_OK && (bytes > INT64_MAX - at || bytes > INT64_MAX - out->unshared_bytes))
      s = tp_fail(TOPOS_ERR_OVERFLOW,
                  "plan_compile: %s (node %u): %lld bytes at arena offset %lld overflow the arena",
                  tp_node_label(node), i, (long long)bytes, (long long)at);
    if (s != TOPOS_OK) {
      free(live);
      tp_buffer_plan_free(out);
      return s;
    }
    size_t pos = 0;
    while (pos < n_live && live[pos].offset < at) ++pos;
    memmove(&live[pos + 1], &live[pos], (n_live - pos) * sizeof *live);
    live[pos] = (live_range){at, bytes, out->until[i] == UINT32_MAX ? UINT32_MAX
                                        : (out->until[i] > i ? out->until[i] : i)};
    ++n_live;
    out->offset[i] = at;
    out->bytes[i] = bytes;
    out->unshared_bytes += bytes;
    ++out->buffers;
    if (at + bytes > out->arena_bytes) out->arena_bytes = at + bytes;
  }
  free(live);
  return TOPOS_OK;
}
