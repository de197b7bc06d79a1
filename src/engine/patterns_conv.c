/* Pattern "conv_im2col": the convolution the nn tier composes
 *   [pad(axis 3) <- pad(axis 2) <-] x [B,C,H,W]
 *   unfold(axis 2, KH) -> unfold(axis 4, KW) -> permute [0,2,4,1,3,5]
 *   -> reshape [B*OH*OW, C*KH*KW] (a copy) -> matmul(., kernel)
 * becomes one step: the patch matrix is filled straight from x (zeros where
 * the pads would be) and multiplied by the same matmul kernel. The patch
 * matrix holds exactly the elements the reshape would copy and the product is
 * the same kernel call, so the bits are the composed formula's.
 * In backward plans matmul's rule reads the patch matrix, so the compiler
 * leaves the group unfused there (pattern.h). */
#include <string.h>

#include "base/error.h"
#include "engine/pattern.h"
#include "ops/op_table.h"

static const tp_node *tp_conv_op(const tp_graph *g, uint32_t i, topos_op op) {
  if (i >= g->count) return NULL;
  const tp_node *n = &g->nodes[i];
  return n->kind == TOPOS_NODE_OP && n->op == op ? n : NULL;
}

/* The chain below the matmul: fills members (root last) and inputs. */
static bool tp_conv_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                          tp_fusion *f) {
  (void)evaluated;
  const tp_node *mm = tp_conv_op(g, root, TOPOS_OP_MATMUL);
  if (!mm || mm->desc.rank != 2) return false;
  uint32_t reshape = mm->operands[0];
  const tp_node *rs = tp_conv_op(g, reshape, TOPOS_OP_RESHAPE);
  if (!rs || rs->desc.rank != 2) return false;
  uint32_t permute = rs->operands[0];
  const tp_node *pm = tp_conv_op(g, permute, TOPOS_OP_PERMUTE);
  static const int order[6] = {0, 2, 4, 1, 3, 5};
  if (!pm || pm->attrs.rank != 6 || memcmp(pm->attrs.order, order, sizeof order) != 0)
    return false;
  uint32_t cols = pm->operands[0];
  const tp_node *u4 = tp_conv_op(g, cols, TOPOS_OP_UNFOLD);
  if (!u4 || u4->attrs.axis != 4) return false;
  uint32_t rows = u4->operands[0];
  const tp_node *u2 = tp_conv_op(g, rows, TOPOS_OP_UNFOLD);
  if (!u2 || u2->attrs.axis != 2) return false;
  uint32_t below = u2->operands[0];
  uint32_t members[7], n = 0;
  const tp_node *p3 = tp_conv_op(g, below, TOPOS_OP_PAD);
  uint32_t x = below;
  if (p3 && p3->attrs.axis == 3) {
    const tp_node *p2 = tp_conv_op(g, p3->operands[0], TOPOS_OP_PAD);
    if (!p2 || p2->attrs.axis != 2) return false;
    members[n++] = p3->operands[0];
    members[n++] = below;
    x = p2->operands[0];
  } else if (p3) {
    return false;
  }
  const tp_node *xn = &g->nodes[x];
  if (xn->desc.rank != 4 || !topos_dtype_is_float(xn->desc.dtype)) return false;
  members[n++] = rows;
  members[n++] = cols;
  members[n++] = permute;
  members[n++] = reshape;
  members[n++] = root;
  for (uint32_t k = 1; k < n; ++k)
    if (members[k] <= members[k - 1]) return false;
  f->n_members = n;
  memcpy(f->members, members, n * sizeof *members);
  f->n_inputs = 2;
  f->inputs[0] = x;
  f->inputs[1] = mm->operands[1];
  return true;
}

static topos_status tp_conv_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *inputs,
                                topos_tensor *dst, topos_tensor **out) {
  /* read the window geometry back from the members */
  int64_t top = 0, left = 0;
  const tp_node *u2 = NULL, *u4 = NULL;
  for (uint32_t k = 0; k < f->n_members; ++k) {
    const tp_node *m = &g->nodes[f->members[k]];
    if (m->op == TOPOS_OP_PAD && m->attrs.axis == 2) top = m->attrs.start;
    if (m->op == TOPOS_OP_PAD && m->attrs.axis == 3) left = m->attrs.start;
    if (m->op == TOPOS_OP_UNFOLD && m->attrs.axis == 2) u2 = m;
    if (m->op == TOPOS_OP_UNFOLD && m->attrs.axis == 4) u4 = m;
  }
  const topos_tensor *x = inputs[0];
  const int64_t *xs = topos_tensor_shape(x), *st = topos_tensor_strides(x);
  int64_t B = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const tp_node *rows = &g->nodes[u4->operands[0]]; /* [B,C,OH,KH,PW] */
  int64_t OH = rows->desc.shape[2], KH = u2->attrs.size, SH = u2->attrs.step;
  int64_t DH = u2->attrs.dilation;
  int64_t OW = g->nodes[f->members[f->n_members - 3]].desc.shape[2]; /* permuted [B,OH,OW,...] */
  int64_t KW = u4->attrs.size, SW = u4->attrs.step, DW = u4->attrs.dilation;
  int64_t shape[2] = {B * OH * OW, C * KH * KW};
  topos_tensor *patches = NULL;
  TP_TRY(topos_tensor_zeros(topos_tensor_dtype(x), 2, shape, &patches)); /* zeros = the pads */
  size_t width = (size_t)topos_dtype_block_bytes(topos_tensor_dtype(x));
  const char *src = topos_tensor_data(x);
  char *p = topos_tensor_data_mut(patches);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t kh = 0; kh < KH; ++kh) {
            int64_t ih = oh * SH + kh * DH - top;
            for (int64_t kw = 0; kw < KW; ++kw, p += width) {
              int64_t iw = ow * SW + kw * DW - left;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              memcpy(p, src + (size_t)(b * st[0] + c * st[1] + ih * st[2] + iw * st[3]) * width,
                     width);
            }
          }
  topos_tensor *operands[2] = {patches, inputs[1]};
  topos_status s = tp_op_forward_into(TOPOS_OP_MATMUL, operands, NULL, dst, out);
  topos_tensor_release(patches);
  return s;
}

const tp_pattern tp_pattern_conv_im2col = {"conv_im2col", tp_conv_match, tp_conv_run};
