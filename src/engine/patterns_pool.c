/* Pattern "max_pool": the max-pool the nn tier composes over [B,C,H,W]
 *   unfold(axis 2) -> unfold(axis 4) -> permute [0,1,2,4,3,5]
 *   -> reshape [B,C,OH,OW,L] -> m = narrow(lane 0); m = maximum(m, narrow(lane k)), k = 1..L-1
 * becomes one direct window walk with the same left fold in the same lane
 * order and the same maximum (NaN and signed-zero rules; the masked form,
 * which does not mispredict on a relu's many equal zeros), so the bits are the
 * composed formula's. f32 and f64 (16-bit types would round NaN payloads).
 * L <= 4 (2x2 windows) fits the member limit. Backward plans keep the lanes
 * (maximum's rule reads them), so there the group stays unfused. */
#include <string.h>

#include "base/error.h"
#include "engine/pattern.h"
#include "base/threads.h"
#include "engine/vec4.h"
#include "ops/kernel.h"

static bool tp_pool_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                          tp_fusion *f) {
  (void)evaluated;
  uint32_t chain[TP_FUSION_MAX_MEMBERS];
  uint32_t n = 0;
  /* walk the left spine of maximum nodes down to narrow(lane 0) */
  uint32_t at = root, lanes_node = UINT32_MAX;
  const tp_node *m = tp_pattern_op(g, root, TOPOS_OP_MAXIMUM);
  if (!m) return false;
  if (m->desc->dtype != TOPOS_F32 && m->desc->dtype != TOPOS_F64) return false;
  int64_t expect = -1;
  while ((m = tp_pattern_op(g, at, TOPOS_OP_MAXIMUM)) != NULL) {
    const tp_node *right = tp_pattern_op(g, m->operands[1], TOPOS_OP_NARROW);
    if (!right || right->attrs->axis != 4 || right->attrs->length != 1) return false;
    if (expect >= 0 && right->attrs->start != expect) return false;
    expect = right->attrs->start - 1;
    if (lanes_node == UINT32_MAX) lanes_node = right->operands[0];
    if (right->operands[0] != lanes_node || n + 2 > TP_FUSION_MAX_MEMBERS - 4) return false;
    chain[n++] = at;
    chain[n++] = m->operands[1];
    at = m->operands[0];
  }
  const tp_node *first = tp_pattern_op(g, at, TOPOS_OP_NARROW);
  if (!first || first->attrs->axis != 4 || first->attrs->start != 0 || first->attrs->length != 1 ||
      first->operands[0] != lanes_node || expect != 0)
    return false;
  chain[n++] = at;
  const tp_node *rs = tp_pattern_op(g, lanes_node, TOPOS_OP_RESHAPE);
  if (!rs || rs->desc->rank != 5) return false;
  int64_t L = rs->desc->shape[4];
  if ((int64_t)(n + 1) / 2 != L) return false; /* every lane folded exactly once */
  const tp_node *pm = tp_pattern_op(g, rs->operands[0], TOPOS_OP_PERMUTE);
  static const int order[6] = {0, 1, 2, 4, 3, 5};
  if (!pm || pm->attrs->rank != 6 || memcmp(pm->attrs->order, order, sizeof order) != 0)
    return false;
  const tp_node *u4 = tp_pattern_op(g, pm->operands[0], TOPOS_OP_UNFOLD);
  if (!u4 || u4->attrs->axis != 4) return false;
  const tp_node *u2 = tp_pattern_op(g, u4->operands[0], TOPOS_OP_UNFOLD);
  if (!u2 || u2->attrs->axis != 2 || u2->attrs->size * u4->attrs->size != L) return false;
  if (g->nodes[u2->operands[0]].desc->rank != 4) return false;
  chain[n++] = lanes_node;
  chain[n++] = rs->operands[0];
  chain[n++] = pm->operands[0];
  chain[n++] = u4->operands[0];
  if (!tp_fusion_take_members(f, chain, n, root)) return false;
  f->n_inputs = 1;
  f->inputs[0] = u2->operands[0];
  return true;
}

#define TP_POOL_WALK(T)                                                                       \
  do {                                                                                        \
    const T *src = topos_tensor_data(x);                                                      \
    T *o = topos_tensor_data_mut(dst);                                                        \
    for (int64_t b = 0; b < B; ++b)                                                           \
      for (int64_t c = 0; c < C; ++c)                                                         \
        for (int64_t oh = 0; oh < OH; ++oh)                                                   \
          for (int64_t ow = 0; ow < OW; ++ow) {                                               \
            const T *w = src + b * st[0] + c * st[1] + oh * SH * st[2] + ow * SW * st[3];      \
            T m = w[0];                                                                       \
            for (int64_t k = 1; k < KH * KW; ++k)                                             \
              m = TP_MAXIMUM_MASKED(m, w[(k / KW) * DH * st[2] + (k % KW) * DW * st[3]]);     \
            *o++ = m;                                                                         \
          }                                                                                   \
  } while (0)

/* 2x2 windows, stride 2, f32, rows contiguous: four windows per vector step,
 * m = maximum(maximum(maximum(l0, l1), l2), l3) as above; planes [begin, end)
 * of B*C each write their own output rows (any split, same bits). */
typedef struct {
  const float *x;
  float *o;
  const int64_t *st;
  int64_t C, H, OH, OW;
} tp_pool_2x2_job;

static void tp_pool_2x2_range(void *ctx, int64_t begin, int64_t end) {
  const tp_pool_2x2_job *j = ctx;
  for (int64_t bc = begin; bc < end; ++bc) {
    const float *plane = j->x + (bc / j->C) * j->st[0] + (bc % j->C) * j->st[1];
    float *o = j->o + bc * j->OH * j->OW;
    for (int64_t oh = 0; oh < j->OH; ++oh, o += j->OW) {
      const float *r0 = plane + 2 * oh * j->st[2], *r1 = r0 + j->st[2];
      int64_t ow = 0;
      for (; ow + 4 <= j->OW; ow += 4) {
        tp_vf4 l0, l1, l2, l3;
        tp_vf4_deinterleave(r0 + 2 * ow, &l0, &l1);
        tp_vf4_deinterleave(r1 + 2 * ow, &l2, &l3);
        tp_vf4_store(o + ow, tp_vf4_max(tp_vf4_max(tp_vf4_max(l0, l1), l2), l3));
      }
      /* the row's last (< 4) windows as one more vector step when it stays
       * inside the plane: the lanes past the row read the next rows and
       * store into the next output row, which the next oh rewrites (same
       * thread, in order); the plane's last row keeps the scalar loop */
      if (ow < j->OW && j->OW >= 4 && oh + 1 < j->OH && j->st[2] == 2 * j->OW &&
          r1 + 2 * ow + 8 <= plane + j->H * j->st[2]) {
        tp_vf4 l0, l1, l2, l3;
        tp_vf4_deinterleave(r0 + 2 * ow, &l0, &l1);
        tp_vf4_deinterleave(r1 + 2 * ow, &l2, &l3);
        tp_vf4_store(o + ow, tp_vf4_max(tp_vf4_max(tp_vf4_max(l0, l1), l2), l3));
        ow = j->OW;
      }
      for (; ow < j->OW; ++ow) {
        float m = TP_MAXIMUM_MASKED(r0[2 * ow], r0[2 * ow + 1]);
        m = TP_MAXIMUM_MASKED(m, r1[2 * ow]);
        o[ow] = TP_MAXIMUM_MASKED(m, r1[2 * ow + 1]);
      }
    }
  }
}

static topos_status tp_pool_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *inputs,
                                topos_tensor *dst, topos_tensor **out) {
  const tp_node *u2 = NULL, *u4 = NULL;
  for (uint32_t k = 0; k < f->n_members; ++k) {
    const tp_node *m = &g->nodes[f->members[k]];
    if (m->op == TOPOS_OP_UNFOLD && m->attrs->axis == 2) u2 = m;
    if (m->op == TOPOS_OP_UNFOLD && m->attrs->axis == 4) u4 = m;
  }
  const topos_tensor *x = inputs[0];
  const int64_t *st = topos_tensor_strides(x);
  const int64_t *ds = g->nodes[f->root].desc->shape; /* [B,C,OH,OW,1] */
  int64_t B = ds[0], C = ds[1], OH = ds[2], OW = ds[3];
  int64_t KH = u2->attrs->size, SH = u2->attrs->step, DH = u2->attrs->dilation;
  int64_t KW = u4->attrs->size, SW = u4->attrs->step, DW = u4->attrs->dilation;
  if (topos_tensor_dtype(x) == TOPOS_F32 && KH == 2 && KW == 2 && SH == 2 && SW == 2 &&
      DH == 1 && DW == 1 && st[3] == 1) {
    tp_pool_2x2_job job = {topos_tensor_data(x), topos_tensor_data_mut(dst), st, C,
                           topos_tensor_shape(x)[2], OH, OW};
    int64_t per = OH * OW > 0 ? OH * OW : 1;
    tp_parallel_for(B * C, ((1 << 13) + per - 1) / per, tp_pool_2x2_range, &job);
  } else if (topos_tensor_dtype(x) == TOPOS_F32) TP_POOL_WALK(float);
  else TP_POOL_WALK(double);
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_max_pool = {"max_pool", tp_pool_match, tp_pool_run};
