/* Pattern "rope": the rotation of pairs, f32 rank 4, as the llama graph
 * records it (models/llama_graph.c, tp_rope; h = 3):
 *   x0 = narrow(p, h, 0, 1), x1 = narrow(p, h, 1, 1)
 *   y0 = sub(mul(x0, c), mul(x1, s)), y1 = add(mul(x0, s), mul(x1, c))
 *   root = add(pad(y0, h, 0, 2), pad(y1, h, 1, 2))          (concat)
 * p [A, B, n, 2] (adjacent pairs), or with h = 2 p [A, B, 2, n] (qwen2's
 * pairs (x[i], x[i + n]), tp_rope with rope_neox); c, s shaped as x0 (any strides:
 * the tables broadcast over the heads). Composed, that is four products, a difference, a sum and the
 * concatenation, seven passes and six intermediates; fused, one pass that
 * reads each pair and its two table entries once.
 *
 * Exact and Fast alike: the composed bits. Each output is the composed
 * steps' operations in their order and operand order, each rounded once
 * (-ffp-contract=off), a NaN in both operands of a product resolved as the
 * composed kernels do (TP_FIRST_NAN), and the concatenation's + 0 (which
 * turns -0 into +0, as the concat pattern). One exception, which no
 * pattern can close: where two NaNs of different payloads meet in the
 * difference or the sum, the composed add kernel's result depends on the
 * operand order its compiler chose (GCC swaps the commutative add), so the
 * payload may differ; that the result is NaN never does. Every pair is
 * computed alone, so the thread split never changes a bit. */
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
#include "engine/pattern.h"

static const tp_node *rp_op(const tp_graph *g, uint32_t i, topos_op op) {
  const tp_node *n = tp_pattern_op(g, i, op);
  return n && n->desc->dtype == TOPOS_F32 && n->desc->rank == 4 ? n : NULL;
}

/* pad(y, axis, start, 2) of a part 1 long on axis */
static bool rp_pad(const tp_graph *g, uint32_t i, int axis, int64_t start, uint32_t *y) {
  const tp_node *n = rp_op(g, i, TOPOS_OP_PAD);
  if (!n || n->attrs->axis != axis || n->attrs->start != start || n->attrs->length != 2) return false;
  *y = n->operands[0];
  return g->nodes[*y].desc->shape[axis] == 1;
}

/* narrow(p, axis, start, 1) */
static bool rp_half(const tp_graph *g, uint32_t i, int axis, int64_t start, uint32_t *p) {
  const tp_node *n = rp_op(g, i, TOPOS_OP_NARROW);
  if (!n || n->attrs->axis != axis || n->attrs->start != start || n->attrs->length != 1) return false;
  *p = n->operands[0];
  return g->nodes[*p].desc->shape[axis] == 2;
}

/* The axis the pairs' halves lie along: 3 (adjacent pairs, p [A, B, n, 2])
 * or 2 (qwen2's NEOX pairs, p [A, B, 2, n]); -1: neither. */
static int rp_axis(const tp_graph *g, uint32_t root) {
  const tp_node *top = rp_op(g, root, TOPOS_OP_ADD);
  const tp_node *pad = top ? rp_op(g, top->operands[0], TOPOS_OP_PAD) : NULL;
  return pad && (pad->attrs->axis == 2 || pad->attrs->axis == 3) ? (int)pad->attrs->axis : -1;
}

/* op(mul(a, b), mul(d, e)): the four operands in order */
static bool rp_pair(const tp_graph *g, uint32_t i, topos_op op, uint32_t *members, uint32_t *abde) {
  const tp_node *n = rp_op(g, i, op);
  if (!n) return false;
  const tp_node *l = rp_op(g, n->operands[0], TOPOS_OP_MUL), *r = rp_op(g, n->operands[1], TOPOS_OP_MUL);
  if (!l || !r) return false;
  members[0] = n->operands[0];
  members[1] = n->operands[1];
  members[2] = i;
  abde[0] = l->operands[0];
  abde[1] = l->operands[1];
  abde[2] = r->operands[0];
  abde[3] = r->operands[1];
  return true;
}

enum { RP_P, RP_COS, RP_SIN };

static bool rp_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root, tp_fusion *f) {
  (void)evaluated;
  const tp_node *top = rp_op(g, root, TOPOS_OP_ADD);
  const int axis = rp_axis(g, root);
  if (!top || axis < 0) return false;
  uint32_t y0, y1, members[12], n = 0, a[4], b[4];
  if (!rp_pad(g, top->operands[0], axis, 0, &y0) || !rp_pad(g, top->operands[1], axis, 1, &y1)) return false;
  members[n++] = top->operands[0];
  members[n++] = top->operands[1];
  members[n++] = root;
  /* y0 = x0 c - x1 s, y1 = x0 s + x1 c */
  if (!rp_pair(g, y0, TOPOS_OP_SUB, members + n, a)) return false;
  n += 3;
  if (!rp_pair(g, y1, TOPOS_OP_ADD, members + n, b)) return false;
  n += 3;
  const uint32_t x0 = a[0], c = a[1], x1 = a[2], s = a[3];
  if (b[0] != x0 || b[1] != s || b[2] != x1 || b[3] != c || x0 == x1) return false;
  uint32_t p0, p1;
  if (!rp_half(g, x0, axis, 0, &p0) || !rp_half(g, x1, axis, 1, &p1) || p0 != p1) return false;
  members[n++] = x0;
  members[n++] = x1;
  const tp_node *pn = &g->nodes[p0], *cn = &g->nodes[c], *sn = &g->nodes[s];
  if (cn->desc->dtype != TOPOS_F32 || sn->desc->dtype != TOPOS_F32 || cn->desc->rank != 4 ||
      sn->desc->rank != 4 || pn->desc->dtype != TOPOS_F32)
    return false;
  for (int k = 0; k < 4; ++k)
    if (k != axis && (cn->desc->shape[k] != pn->desc->shape[k] || sn->desc->shape[k] != pn->desc->shape[k]))
      return false;
  if (cn->desc->shape[axis] != 1 || sn->desc->shape[axis] != 1) return false;
  if (!tp_fusion_take_members(f, members, n, root)) return false;
  f->n_inputs = 3;
  f->inputs[RP_P] = p0;
  f->inputs[RP_COS] = c;
  f->inputs[RP_SIN] = s;
  return true;
}

/* Strides by role: e along the pairs (the n axis), h between a pair's halves. */
typedef struct rp_job {
  const float *p, *c, *s;
  int64_t p0, p1, pe, ph, c0, c1, ce, s0, s1, se, oe, oh, d1, n;
  float *out;
} rp_job;

/* rows [begin, end) of A * B, each n pairs */
static void rp_range(void *ctx, int64_t begin, int64_t end) {
  const rp_job *j = ctx;
  for (int64_t row = begin; row < end; ++row) {
    const int64_t a = row / j->d1, b = row % j->d1;
    const float *p = j->p + a * j->p0 + b * j->p1;
    const float *c = j->c + a * j->c0 + b * j->c1, *s = j->s + a * j->s0 + b * j->s1;
    float *o = j->out + row * j->n * 2;
    for (int64_t i = 0; i < j->n; ++i) {
      const float x0 = p[i * j->pe], x1 = p[i * j->pe + j->ph];
      const float ci = c[i * j->ce], si = s[i * j->se];
      const float y0 = TP_FIRST_NAN(TP_FIRST_NAN(x0, ci, *), TP_FIRST_NAN(x1, si, *), -);
      const float y1 = TP_FIRST_NAN(TP_FIRST_NAN(x0, si, *), TP_FIRST_NAN(x1, ci, *), +);
      o[i * j->oe] = y0 + 0.0f;
      o[i * j->oe + j->oh] = 0.0f + y1;
    }
  }
}

static topos_status rp_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *inputs,
                           topos_tensor *dst, topos_tensor **out) {
  const int h = rp_axis(g, f->root), e = h == 3 ? 2 : 3; /* the halves' axis, the pairs' axis */
  const int64_t *ps = topos_tensor_strides(inputs[RP_P]), *cs = topos_tensor_strides(inputs[RP_COS]);
  const int64_t *ss = topos_tensor_strides(inputs[RP_SIN]), *shape = topos_tensor_shape(dst);
  const int64_t *os = topos_tensor_strides(dst);
  rp_job j = {topos_tensor_data(inputs[RP_P]),
              topos_tensor_data(inputs[RP_COS]),
              topos_tensor_data(inputs[RP_SIN]),
              ps[0], ps[1], ps[e], ps[h], cs[0], cs[1], cs[e], ss[0], ss[1], ss[e], os[e], os[h],
              shape[1], shape[e],
              topos_tensor_data_mut(dst)};
  const int64_t rows = shape[0] * shape[1];
  int64_t grain = 4096 / (shape[e] > 0 ? shape[e] : 1);
  tp_parallel_for(rows, grain < 1 ? 1 : grain, rp_range, &j);
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_rope = {"rope", rp_match, rp_run};
