/* Pattern "conv_im2col": the convolution the nn tier composes
 *   [pad(axis 3) <- pad(axis 2) <-] x [B,C,H,W]
 *   unfold(axis 2, KH) -> unfold(axis 4, KW) -> permute [0,2,4,1,3,5]
 *   -> reshape [B*OH*OW, C*KH*KW] (a copy) -> matmul(., kernel)
 * becomes one step: the patch matrix is filled straight from x (zeros where
 * the pads would be) and multiplied by the same matmul kernel. The patch
 * matrix holds exactly the elements the reshape would copy and the product is
 * the same kernel call, so the bits are the composed formula's.
 * In backward plans matmul's rule reads the patch matrix, so the compiler
 * leaves the group unfused there (pattern.h); so does a training plan whose
 * weight gradient reads it — there pattern "im2col" (below) still builds the
 * patch matrix in one pass from x. */
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
#include "engine/conv_chain.h"
#include "engine/pattern.h"
#include "ops/op_table.h"

/* The chain ending at the patch matrix (a reshape): members ascending
 * (reshape last) and the image x, or false (conv_chain.h). */
bool tp_conv_walk(const tp_graph *g, uint32_t reshape, uint32_t *members, uint32_t *count,
                         uint32_t *image) {
  const tp_node *rs = tp_pattern_op(g, reshape, TOPOS_OP_RESHAPE);
  if (!rs || rs->desc->rank != 2) return false;
  uint32_t permute = rs->operands[0];
  const tp_node *pm = tp_pattern_op(g, permute, TOPOS_OP_PERMUTE);
  static const int order[6] = {0, 2, 4, 1, 3, 5};
  if (!pm || pm->attrs->rank != 6 || memcmp(pm->attrs->order, order, sizeof order) != 0)
    return false;
  uint32_t cols = pm->operands[0];
  const tp_node *u4 = tp_pattern_op(g, cols, TOPOS_OP_UNFOLD);
  if (!u4 || u4->attrs->axis != 4) return false;
  uint32_t rows = u4->operands[0];
  const tp_node *u2 = tp_pattern_op(g, rows, TOPOS_OP_UNFOLD);
  if (!u2 || u2->attrs->axis != 2) return false;
  uint32_t below = u2->operands[0];
  uint32_t n = 0;
  const tp_node *p3 = tp_pattern_op(g, below, TOPOS_OP_PAD);
  uint32_t x = below;
  if (p3 && p3->attrs->axis == 3) {
    const tp_node *p2 = tp_pattern_op(g, p3->operands[0], TOPOS_OP_PAD);
    if (!p2 || p2->attrs->axis != 2) return false;
    members[n++] = p3->operands[0];
    members[n++] = below;
    x = p2->operands[0];
  } else if (p3) {
    return false;
  }
  const tp_node *xn = &g->nodes[x];
  if (xn->desc->rank != 4 || !topos_dtype_is_float(xn->desc->dtype)) return false;
  members[n++] = rows;
  members[n++] = cols;
  members[n++] = permute;
  members[n++] = reshape;
  for (uint32_t k = 1; k < n; ++k)
    if (members[k] <= members[k - 1]) return false;
  *count = n;
  *image = x;
  return true;
}

/* The chain below the matmul: fills members (root last) and inputs. */
static bool tp_conv_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                          tp_fusion *f) {
  (void)evaluated;
  const tp_node *mm = tp_pattern_op(g, root, TOPOS_OP_MATMUL);
  if (!mm || mm->desc->rank != 2) return false;
  uint32_t members[7], n = 0, x = 0;
  if (!tp_conv_walk(g, mm->operands[0], members, &n, &x) || members[n - 1] >= root) return false;
  members[n++] = root;
  f->n_members = n;
  memcpy(f->members, members, n * sizeof *members);
  f->n_inputs = 2;
  f->inputs[0] = x;
  f->inputs[1] = mm->operands[1];
  return true;
}

/* Pattern "im2col": the same chain ending at the patch matrix itself, when
 * something besides the product reads it (a training plan's weight gradient
 * patchesᵀ·g): the reshape's copy, written straight from x. */
static bool tp_im2col_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                            tp_fusion *f) {
  (void)evaluated;
  uint32_t members[7], n = 0, x = 0;
  if (!tp_conv_walk(g, root, members, &n, &x)) return false;
  f->n_members = n;
  memcpy(f->members, members, n * sizeof *members);
  f->n_inputs = 1;
  f->inputs[0] = x;
  return true;
}

typedef struct {
  const char *src;
  char *p;
  const int64_t *st;
  size_t width;
  int64_t C, H, W, OH, OW, KH, KW, SH, SW, DH, DW, top, left;
} tp_patch_job;

/* f32, x rows contiguous, no horizontal dilation: per (c, kh) one source
 * line, and the windows inside it copied without bounds checks */
static void tp_patch_rows_f32(const tp_patch_job *j, int64_t begin, int64_t end) {
  int64_t row_elems = j->C * j->KH * j->KW, KW = j->KW;
  for (int64_t r = begin; r < end; ++r) {
    int64_t b = r / j->OH, oh = r % j->OH;
    float *rows = (float *)j->p + r * j->OW * row_elems;
    for (int64_t c = 0; c < j->C; ++c)
      for (int64_t kh = 0; kh < j->KH; ++kh) {
        int64_t ih = oh * j->SH + kh * j->DH - j->top;
        float *q0 = rows + (c * j->KH + kh) * KW;
        if (ih < 0 || ih >= j->H) {
          for (int64_t ow = 0; ow < j->OW; ++ow)
            for (int64_t kw = 0; kw < KW; ++kw) q0[ow * row_elems + kw] = 0.0f;
          continue;
        }
        const float *line = (const float *)j->src + b * j->st[0] + c * j->st[1] + ih * j->st[2];
        for (int64_t ow = 0; ow < j->OW; ++ow) {
          int64_t iw = ow * j->SW - j->left;
          float *q = q0 + ow * row_elems;
          if (iw >= 0 && iw + KW <= j->W) {
            if (KW == 3) {
              q[0] = line[iw];
              q[1] = line[iw + 1];
              q[2] = line[iw + 2];
            } else {
              for (int64_t kw = 0; kw < KW; ++kw) q[kw] = line[iw + kw];
            }
          } else {
            for (int64_t kw = 0; kw < KW; ++kw)
              q[kw] = iw + kw >= 0 && iw + kw < j->W ? line[iw + kw] : 0.0f; /* pads: +0 */
          }
        }
      }
  }
}

/* rows (b, oh) [begin, end) of the patch matrix: each writes its own rows */
static void tp_patch_range(void *ctx, int64_t begin, int64_t end) {
  const tp_patch_job *j = ctx;
  if (j->width == sizeof(float) && j->st[3] == 1 && j->DW == 1) {
    tp_patch_rows_f32(j, begin, end);
    return;
  }
  int64_t row_elems = j->C * j->KH * j->KW;
  for (int64_t r = begin; r < end; ++r) {
    int64_t b = r / j->OH, oh = r % j->OH;
    for (int64_t ow = 0; ow < j->OW; ++ow) {
      char *p = j->p + (size_t)((r * j->OW + ow) * row_elems) * j->width;
      for (int64_t c = 0; c < j->C; ++c)
        for (int64_t kh = 0; kh < j->KH; ++kh) {
          int64_t ih = oh * j->SH + kh * j->DH - j->top;
          bool row_in = ih >= 0 && ih < j->H;
          /* a row in the pad has no source line (no pointer formed outside x) */
          const char *line =
              row_in ? j->src + (size_t)(b * j->st[0] + c * j->st[1] + ih * j->st[2]) * j->width
                     : j->src;
          if (j->width == sizeof(float)) {
            float *q = (float *)p;
            for (int64_t kw = 0; kw < j->KW; ++kw) {
              int64_t iw = ow * j->SW + kw * j->DW - j->left;
              q[kw] = row_in && iw >= 0 && iw < j->W ? ((const float *)line)[iw * j->st[3]] : 0.0f;
            }
          } else {
            for (int64_t kw = 0; kw < j->KW; ++kw) {
              int64_t iw = ow * j->SW + kw * j->DW - j->left;
              if (row_in && iw >= 0 && iw < j->W)
                memcpy(p + (size_t)kw * j->width, line + (size_t)(iw * j->st[3]) * j->width, j->width);
              else
                memset(p + (size_t)kw * j->width, 0, j->width); /* the pads' +0 */
            }
          }
          p += (size_t)j->KW * j->width;
        }
    }
  }
}

/* Fills the patch matrix [B*OH*OW, C*KH*KW] (contiguous) from x with the
 * geometry of the group's members. */
static void tp_patches_fill(const tp_fusion *f, const tp_graph *g, const topos_tensor *x,
                            topos_tensor *patches) {
  int64_t top = 0, left = 0;
  const tp_node *u2 = NULL, *u4 = NULL, *pm = NULL;
  for (uint32_t k = 0; k < f->n_members; ++k) {
    const tp_node *m = &g->nodes[f->members[k]];
    if (m->op == TOPOS_OP_PAD && m->attrs->axis == 2) top = m->attrs->start;
    if (m->op == TOPOS_OP_PAD && m->attrs->axis == 3) left = m->attrs->start;
    if (m->op == TOPOS_OP_UNFOLD && m->attrs->axis == 2) u2 = m;
    if (m->op == TOPOS_OP_UNFOLD && m->attrs->axis == 4) u4 = m;
    if (m->op == TOPOS_OP_PERMUTE) pm = m;
  }
  const int64_t *xs = topos_tensor_shape(x);
  const tp_node *rows = &g->nodes[u4->operands[0]]; /* [B,C,OH,KH,PW] */
  tp_patch_job j = {topos_tensor_data(x), topos_tensor_data_mut(patches), topos_tensor_strides(x),
                    (size_t)topos_dtype_block_bytes(topos_tensor_dtype(x)), xs[1], xs[2], xs[3],
                    rows->desc->shape[2], pm->desc->shape[2], u2->attrs->size, u4->attrs->size,
                    u2->attrs->step, u4->attrs->step, u2->attrs->dilation, u4->attrs->dilation, top,
                    left};
  int64_t per = j.OW * j.C * j.KH * j.KW;
  tp_parallel_for(xs[0] * j.OH, per > 0 ? ((1 << 14) + per - 1) / per : 1, tp_patch_range, &j);
}

static topos_status tp_conv_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *inputs,
                                topos_tensor *dst, topos_tensor **out) {
  const tp_node *rs = &g->nodes[f->members[f->n_members - 2]];
  topos_tensor *patches = NULL;
  TP_TRY(topos_tensor_zeros(topos_tensor_dtype(inputs[0]), 2, rs->desc->shape, &patches));
  tp_patches_fill(f, g, inputs[0], patches);
  topos_tensor *operands[2] = {patches, inputs[1]};
  topos_status s = tp_op_forward_into(TOPOS_OP_MATMUL, operands, NULL, dst, out);
  topos_tensor_release(patches);
  return s;
}

static topos_status tp_im2col_run(const tp_fusion *f, const tp_graph *g,
                                  topos_tensor *const *inputs, topos_tensor *dst,
                                  topos_tensor **out) {
  tp_patches_fill(f, g, inputs[0], dst);
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_conv_im2col = {"conv_im2col", tp_conv_match, tp_conv_run};
const tp_pattern tp_pattern_im2col = {"im2col", tp_im2col_match, tp_im2col_run};
