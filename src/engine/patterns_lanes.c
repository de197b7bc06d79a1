/* Pattern "lane_sum": the gradient of a max-pool's lanes as the reverse sweep
 * builds it — one pad per lane (narrow's backward), summed left to right:
 *   add(...add(add(pad(s_a, axis, a, L), pad(s_b, axis, b, L)), ...), pad(s_z, axis, z, L))
 * where every s_k has extent 1 along `axis` and the starts are 0..L-1 in
 * some order, so every lane position receives exactly one s_k element and
 * L-1 padding zeros (+0). Each such sum equals s_k + 0 bit for bit: adding +0
 * keeps every value but -0 (which becomes +0) and quiets a NaN, whichever
 * order the zeros come in. The fused step writes s_k[..] + 0 straight into
 * lane k: one pass instead of L zero-filled pads and L-1 full-size adds.
 * f32 and f64. */
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
#include "engine/pattern.h"
#include "ops/kernel.h"

static const tp_node *tp_lanes_op(const tp_graph *g, uint32_t i, topos_op op) {
  if (i >= g->count) return NULL;
  const tp_node *n = &g->nodes[i];
  return n->kind == TOPOS_NODE_OP && n->op == op ? n : NULL;
}

/* A pad of one lane into `like`'s shape: same dtype and shape as the sum. */
static const tp_node *tp_lane_pad(const tp_graph *g, uint32_t i, const tp_node *like) {
  const tp_node *p = tp_lanes_op(g, i, TOPOS_OP_PAD);
  if (!p || p->desc.dtype != like->desc.dtype || p->desc.rank != like->desc.rank ||
      memcmp(p->desc.shape, like->desc.shape, (size_t)p->desc.rank * sizeof(int64_t)) != 0)
    return NULL;
  if (g->nodes[p->operands[0]].desc.shape[p->attrs.axis] != 1) return NULL;
  return p;
}

static bool tp_lanes_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                           tp_fusion *f) {
  (void)evaluated;
  const tp_node *top = tp_lanes_op(g, root, TOPOS_OP_ADD);
  if (!top || (top->desc.dtype != TOPOS_F32 && top->desc.dtype != TOPOS_F64)) return false;
  uint32_t members[TP_FUSION_MAX_MEMBERS], n = 0;
  uint32_t by_lane[TP_FUSION_MAX_INPUTS];
  const tp_node *pads[TP_FUSION_MAX_INPUTS];
  uint32_t n_pads = 0, at = root;
  /* the left spine: add(rest, pad) down to the first pad */
  for (;;) {
    const tp_node *add = tp_lanes_op(g, at, TOPOS_OP_ADD);
    if (!add) break;
    const tp_node *right = tp_lane_pad(g, add->operands[1], top);
    if (!right || n_pads + 2 > TP_FUSION_MAX_INPUTS || n + 3 > TP_FUSION_MAX_MEMBERS) return false;
    members[n++] = at;
    members[n++] = add->operands[1];
    pads[n_pads++] = right;
    at = add->operands[0];
  }
  const tp_node *first = tp_lane_pad(g, at, top);
  if (!first) return false;
  members[n++] = at;
  pads[n_pads++] = first;
  int axis = first->attrs.axis;
  int64_t lanes = top->desc.shape[axis];
  if ((int64_t)n_pads != lanes) return false;
  for (uint32_t k = 0; k < n_pads; ++k) by_lane[k] = UINT32_MAX;
  for (uint32_t k = 0; k < n_pads; ++k) {
    const tp_node *p = pads[k];
    if (p->attrs.axis != axis || p->attrs.start < 0 || p->attrs.start >= lanes ||
        by_lane[p->attrs.start] != UINT32_MAX)
      return false;
    by_lane[p->attrs.start] = p->operands[0];
  }
  if (!tp_fusion_take_members(f, members, n, root)) return false;
  f->n_inputs = n_pads;
  memcpy(f->inputs, by_lane, n_pads * sizeof *by_lane);
  return true;
}

typedef struct tp_lanes_job {
  const void *src[TP_FUSION_MAX_INPUTS];
  void *out;
  int64_t lanes, inner;
  bool f32;
} tp_lanes_job;

/* outer rows [begin, end): every output element is written once, so any
 * split gives the same bits */
static void tp_lanes_range(void *ctx, int64_t begin, int64_t end) {
  const tp_lanes_job *j = ctx;
  int64_t lanes = j->lanes, inner = j->inner;
  for (int64_t k = 0; k < lanes; ++k)
    for (int64_t b = begin; b < end; ++b) {
      if (j->f32) {
        float *row = (float *)j->out + (b * lanes + k) * inner;
        const float *from = (const float *)j->src[k] + b * inner;
        for (int64_t i = 0; i < inner; ++i) row[i] = from[i] + 0.0f;
      } else {
        double *row = (double *)j->out + (b * lanes + k) * inner;
        const double *from = (const double *)j->src[k] + b * inner;
        for (int64_t i = 0; i < inner; ++i) row[i] = from[i] + 0.0;
      }
    }
}

static topos_status tp_lanes_run(const tp_fusion *f, const tp_graph *g,
                                 topos_tensor *const *inputs, topos_tensor *dst,
                                 topos_tensor **out) {
  const tp_node *root = &g->nodes[f->root];
  int axis = -1;
  for (uint32_t k = 0; k < f->n_members && axis < 0; ++k)
    if (g->nodes[f->members[k]].op == TOPOS_OP_PAD) axis = g->nodes[f->members[k]].attrs.axis;
  int64_t lanes = root->desc.shape[axis], outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= root->desc.shape[i];
  for (int i = axis + 1; i < root->desc.rank; ++i) inner *= root->desc.shape[i];
  /* the lanes read row-major: a strided one is packed first */
  topos_tensor *src[TP_FUSION_MAX_INPUTS] = {NULL};
  topos_status s = TOPOS_OK;
  for (uint32_t k = 0; k < f->n_inputs && s == TOPOS_OK; ++k)
    s = topos_tensor_contiguous(inputs[k], 0, &src[k]);
  if (s == TOPOS_OK) {
    tp_lanes_job job = {{NULL}, topos_tensor_data_mut(dst), lanes, inner,
                        topos_tensor_dtype(dst) == TOPOS_F32};
    for (uint32_t k = 0; k < f->n_inputs; ++k) job.src[k] = topos_tensor_data(src[k]);
    int64_t grain = inner * lanes > 0 ? ((1 << 15) + inner * lanes - 1) / (inner * lanes) : 1;
    tp_parallel_for(outer, grain, tp_lanes_range, &job);
    *out = topos_tensor_retain(dst);
  }
  for (uint32_t k = 0; k < f->n_inputs; ++k) topos_tensor_release(src[k]);
  return s;
}

const tp_pattern tp_pattern_lane_sum = {"lane_sum", tp_lanes_match, tp_lanes_run};
