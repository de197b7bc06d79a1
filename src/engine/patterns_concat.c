/* Pattern "concat": pads that tile an axis, summed left to right:
 *   add(...add(add(pad(s_a, axis, a, L), pad(s_b, axis, b, L)), ...), pad(s_z, axis, z, L))
 * where the parts' ranges [start, start + extent) along `axis` cover 0..L-1
 * exactly once, in any order. That is how topos_tape_concat records a
 * concatenation (the llama graph's attention scores: cached keys then the
 * chunk's own, and its RoPE halves), and how the reverse sweep builds the
 * gradient of a max-pool's lanes (one pad per lane, narrow's backward). Every
 * output position receives one s_k element and zeros (+0); each such sum
 * equals s_k + 0 bit for bit: adding +0 keeps every value but -0 (which
 * becomes +0) and quiets a NaN, whichever order the zeros come in. The fused
 * step writes s_k[..] + 0 straight into its range: one pass instead of
 * zero-filled full-size pads and full-size adds, and none of their memory
 * (at a 128-token prompt chunk the attention scores' pads were a sixth of
 * the arena). f32 and f64. */
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
#include "engine/pattern.h"
#include "ops/kernel.h"

/* A pad into `like`'s shape: same dtype and shape as the sum. */
static const tp_node *tp_lane_pad(const tp_graph *g, uint32_t i, const tp_node *like) {
  const tp_node *p = tp_pattern_op(g, i, TOPOS_OP_PAD);
  if (!p || p->desc->dtype != like->desc->dtype || p->desc->rank != like->desc->rank ||
      memcmp(p->desc->shape, like->desc->shape, (size_t)p->desc->rank * sizeof(int64_t)) != 0)
    return NULL;
  return p;
}

bool tp_concat_parts(const tp_graph *g, uint32_t root, uint32_t *members, uint32_t members_cap,
                     uint32_t *n_members, const tp_node **pads, uint32_t pads_cap, uint32_t *n_pads) {
  const tp_node *top = tp_pattern_op(g, root, TOPOS_OP_ADD);
  if (!top) return false;
  uint32_t n = 0, np = 0, at = root;
  /* the left spine: add(rest, pad) down to the first pad */
  for (;;) {
    const tp_node *add = tp_pattern_op(g, at, TOPOS_OP_ADD);
    if (!add) break;
    const tp_node *right = tp_lane_pad(g, add->operands[1], top);
    if (!right || np + 2 > pads_cap || n + 3 > members_cap) return false;
    members[n++] = at;
    members[n++] = add->operands[1];
    pads[np++] = right;
    at = add->operands[0];
  }
  const tp_node *first = tp_lane_pad(g, at, top);
  if (!first) return false;
  members[n++] = at;
  pads[np++] = first;
  int axis = first->attrs->axis;
  /* the parts by start (insertion sort: few), then each must begin where
   * the previous ends, the last at the axis' end */
  for (uint32_t k = 0; k < np; ++k) {
    const tp_node *p = pads[k];
    if (p->attrs->axis != axis) return false;
    uint32_t j = k;
    for (; j > 0 && pads[j - 1]->attrs->start > p->attrs->start; --j) pads[j] = pads[j - 1];
    pads[j] = p;
  }
  int64_t next = 0;
  for (uint32_t k = 0; k < np; ++k) {
    if (pads[k]->attrs->start != next) return false;
    next += g->nodes[pads[k]->operands[0]].desc->shape[axis];
  }
  if (next != top->desc->shape[axis]) return false;
  *n_members = n;
  *n_pads = np;
  return true;
}

static bool tp_lanes_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                           tp_fusion *f) {
  (void)evaluated;
  const tp_node *top = tp_pattern_op(g, root, TOPOS_OP_ADD);
  if (!top || (top->desc->dtype != TOPOS_F32 && top->desc->dtype != TOPOS_F64)) return false;
  uint32_t members[TP_FUSION_MAX_MEMBERS], n = 0, n_pads = 0;
  const tp_node *pads[TP_FUSION_MAX_INPUTS];
  if (!tp_concat_parts(g, root, members, TP_FUSION_MAX_MEMBERS, &n, pads, TP_FUSION_MAX_INPUTS, &n_pads))
    return false;
  if (!tp_fusion_take_members(f, members, n, root)) return false;
  f->n_inputs = n_pads;
  for (uint32_t k = 0; k < n_pads; ++k) f->inputs[k] = pads[k]->operands[0];
  return true;
}

typedef struct tp_lanes_job {
  const void *src[TP_FUSION_MAX_INPUTS];
  int64_t start[TP_FUSION_MAX_INPUTS + 1]; /* part k: [start[k], start[k + 1]) along the axis */
  uint32_t parts;
  void *out;
  int64_t lanes, inner;
  bool f32;
} tp_lanes_job;

/* outer rows [begin, end): every output element is written once, so any
 * split gives the same bits */
static void tp_lanes_range(void *ctx, int64_t begin, int64_t end) {
  const tp_lanes_job *j = ctx;
  int64_t lanes = j->lanes, inner = j->inner;
  for (uint32_t k = 0; k < j->parts; ++k) {
    int64_t len = (j->start[k + 1] - j->start[k]) * inner;
    for (int64_t b = begin; b < end; ++b) {
      if (j->f32) {
        float *row = (float *)j->out + (b * lanes + j->start[k]) * inner;
        const float *from = (const float *)j->src[k] + b * len;
        for (int64_t i = 0; i < len; ++i) row[i] = from[i] + 0.0f;
      } else {
        double *row = (double *)j->out + (b * lanes + j->start[k]) * inner;
        const double *from = (const double *)j->src[k] + b * len;
        for (int64_t i = 0; i < len; ++i) row[i] = from[i] + 0.0;
      }
    }
  }
}

static topos_status tp_lanes_run(const tp_fusion *f, const tp_graph *g,
                                 topos_tensor *const *inputs, topos_tensor *dst,
                                 topos_tensor **out) {
  const tp_node *root = &g->nodes[f->root];
  int axis = -1;
  for (uint32_t k = 0; k < f->n_members && axis < 0; ++k)
    if (g->nodes[f->members[k]].op == TOPOS_OP_PAD) axis = g->nodes[f->members[k]].attrs->axis;
  int64_t lanes = root->desc->shape[axis], outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= root->desc->shape[i];
  for (int i = axis + 1; i < root->desc->rank; ++i) inner *= root->desc->shape[i];
  /* the parts read row-major: a strided one is packed first */
  topos_tensor *src[TP_FUSION_MAX_INPUTS] = {NULL};
  topos_status s = TOPOS_OK;
  for (uint32_t k = 0; k < f->n_inputs && s == TOPOS_OK; ++k)
    s = topos_tensor_contiguous(inputs[k], 0, &src[k]);
  if (s == TOPOS_OK) {
    tp_lanes_job job = {{NULL}, {0}, f->n_inputs, topos_tensor_data_mut(dst), lanes, inner,
                        topos_tensor_dtype(dst) == TOPOS_F32};
    for (uint32_t k = 0; k < f->n_inputs; ++k) {
      job.src[k] = topos_tensor_data(src[k]);
      job.start[k + 1] = job.start[k] + topos_tensor_shape(src[k])[axis];
    }
    int64_t grain = inner * lanes > 0 ? ((1 << 15) + inner * lanes - 1) / (inner * lanes) : 1;
    tp_parallel_for(outer, grain, tp_lanes_range, &job);
    *out = topos_tensor_retain(dst);
  }
  for (uint32_t k = 0; k < f->n_inputs; ++k) topos_tensor_release(src[k]);
  return s;
}

const tp_pattern tp_pattern_concat = {"concat", tp_lanes_match, tp_lanes_run};
