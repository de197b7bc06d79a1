/* Pattern "batch_norm": the inference tail the nn tier composes over rows
 * x [N,F] with per-feature mean, variance, eps, scale and shift [F]
 *   c = x - bcast(mean); s = sqrt(variance + eps)
 *   y = ((c / bcast(s)) * bcast(scale)) + bcast(shift)
 * becomes one pass doing the same five roundings per element in the same
 * order (f32, f64), so the bits are the composed formula's. The training
 * variant's centered value also feeds the variance (a consumer outside the
 * group) and backward plans read the interiors, so there the compiler leaves
 * the nodes composed. */
#include <string.h>

#include "base/error.h"
#include "engine/pattern.h"
#include "ops/kernel.h"

/* A broadcast_along(axis 0) of a [F] node: its index, or UINT32_MAX. */
static uint32_t tp_bn_spread(const tp_graph *g, uint32_t i, int64_t features) {
  const tp_node *b = tp_pattern_op(g, i, TOPOS_OP_BROADCAST_ALONG);
  if (!b || b->attrs->axis != 0) return UINT32_MAX;
  const tp_node *src = &g->nodes[b->operands[0]];
  return src->desc->rank == 1 && src->desc->shape[0] == features ? b->operands[0] : UINT32_MAX;
}

static bool tp_bn_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root, tp_fusion *f) {
  (void)evaluated;
  const tp_node *add = tp_pattern_op(g, root, TOPOS_OP_ADD);
  if (!add || add->desc->rank != 2) return false;
  if (add->desc->dtype != TOPOS_F32 && add->desc->dtype != TOPOS_F64) return false;
  int64_t F = add->desc->shape[1];
  const tp_node *mul = tp_pattern_op(g, add->operands[0], TOPOS_OP_MUL);
  uint32_t shift = tp_bn_spread(g, add->operands[1], F);
  if (!mul || shift == UINT32_MAX) return false;
  const tp_node *div = tp_pattern_op(g, mul->operands[0], TOPOS_OP_DIV);
  uint32_t scale = tp_bn_spread(g, mul->operands[1], F);
  if (!div || scale == UINT32_MAX) return false;
  const tp_node *sub = tp_pattern_op(g, div->operands[0], TOPOS_OP_SUB);
  uint32_t sqrt_node = tp_bn_spread(g, div->operands[1], F);
  if (!sub || sqrt_node == UINT32_MAX) return false;
  const tp_node *sq = tp_pattern_op(g, sqrt_node, TOPOS_OP_SQRT);
  if (!sq) return false;
  const tp_node *var_eps = tp_pattern_op(g, sq->operands[0], TOPOS_OP_ADD);
  uint32_t mean = tp_bn_spread(g, sub->operands[1], F);
  if (!var_eps || mean == UINT32_MAX) return false;
  uint32_t members[10] = {sub->operands[1], div->operands[0], sq->operands[0], sqrt_node,
                          div->operands[1], mul->operands[0], mul->operands[1],
                          add->operands[0], add->operands[1], root};
  if (!tp_fusion_take_members(f, members, 10, root)) return false;
  f->n_inputs = 6;
  f->inputs[0] = sub->operands[0]; /* x rows */
  f->inputs[1] = mean;
  f->inputs[2] = var_eps->operands[0];
  f->inputs[3] = var_eps->operands[1];
  f->inputs[4] = scale;
  f->inputs[5] = shift;
  return true;
}

#define TP_BN_PASS(T)                                                                       \
  do {                                                                                      \
    const T *x = topos_tensor_data(in[0]);                                                  \
    const T *p[5];                                                                          \
    int64_t ps[5];                                                                          \
    for (int k = 0; k < 5; ++k) {                                                           \
      p[k] = topos_tensor_data(in[k + 1]);                                                  \
      ps[k] = topos_tensor_rank(in[k + 1]) ? topos_tensor_strides(in[k + 1])[0] : 0;        \
    }                                                                                       \
    T *o = topos_tensor_data_mut(dst);                                                      \
    for (int64_t i = 0; i < N; ++i)                                                         \
      for (int64_t j = 0; j < F; ++j) {                                                     \
        T c = x[i * xs[0] + j * xs[1]] - p[0][j * ps[0]];                                   \
        T s = TP_SQRT((T)(p[1][j * ps[1]] + p[2][j * ps[2]]));                              \
        T y = c / s;                                                                        \
        y = y * p[3][j * ps[3]];                                                            \
        *o++ = y + p[4][j * ps[4]];                                                         \
      }                                                                                     \
  } while (0)

static topos_status tp_bn_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *in,
                              topos_tensor *dst, topos_tensor **out) {
  const int64_t *shape = g->nodes[f->root].desc->shape;
  int64_t N = shape[0], F = shape[1];
  const int64_t *xs = topos_tensor_strides(in[0]);
  for (int k = 1; k < 6; ++k)
    if (topos_tensor_rank(in[k]) > 1 || topos_tensor_dtype(in[k]) != topos_tensor_dtype(dst))
      return tp_fail(TOPOS_ERR_INTERNAL, "batch_norm pattern: input %d is not a [F] vector", k);
  if (topos_tensor_dtype(dst) == TOPOS_F32) TP_BN_PASS(float);
  else TP_BN_PASS(double);
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_batch_norm = {"batch_norm", tp_bn_match, tp_bn_run};
