/* Pattern "matmul_bias": a linear layer's (or a conv's) bias add
 *   add(matmul(A, B), broadcast_along(bias))     (either operand order)
 * with the product read by nothing else, as one step: the product by the
 * same matmul kernel straight into the result's buffer, then the bias added
 * in place, row by row while the rows are warm. Each element is the
 * product's value plus the bias value, one rounded add in the node's operand
 * order: the composed bits, without the product's buffer and the
 * elementwise walk over a broadcast view. f32 and f64, rank 2; threads split
 * rows. */
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
#include "engine/pattern.h"
#include "ops/op_table.h"

static bool tp_mb_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                        tp_fusion *f) {
  const tp_node *add = tp_pattern_op(g, root, TOPOS_OP_ADD);
  if (!add || add->desc->rank != 2 ||
      (add->desc->dtype != TOPOS_F32 && add->desc->dtype != TOPOS_F64))
    return false;
  int side = tp_pattern_op(g, add->operands[0], TOPOS_OP_MATMUL) ? 0
             : tp_pattern_op(g, add->operands[1], TOPOS_OP_MATMUL) ? 1
                                                              : -1;
  if (side < 0) return false;
  uint32_t mmi = add->operands[side], bci = add->operands[1 - side];
  const tp_node *mm = &g->nodes[mmi], *bc = tp_pattern_op(g, bci, TOPOS_OP_BROADCAST_ALONG);
  if (!bc || mm->desc->rank != 2 || mm->desc->dtype != add->desc->dtype ||
      g->nodes[bc->operands[0]].desc->rank != 1 || bc->desc->dtype != add->desc->dtype ||
      mm->desc->shape[0] != add->desc->shape[0] || mm->desc->shape[1] != add->desc->shape[1])
    return false;
  if (mmi >= root) return false;
  /* a product whose left operand is a copying reshape read by nothing else
   * (a conv's patch matrix in an inference plan) is pattern conv_im2col's
   * root: leave it there (it builds the patches without the copy) */
  uint32_t ai = mm->operands[0];
  const tp_node *an = tp_pattern_op(g, ai, TOPOS_OP_RESHAPE);
  if (an && tp_pattern_op(g, an->operands[0], TOPOS_OP_PERMUTE)) {
    uint32_t readers = 0;
    for (uint32_t i = ai + 1; i < g->count; ++i) {
      const tp_node *n = &g->nodes[i];
      if (n->kind != TOPOS_NODE_OP || !evaluated[i]) continue;
      for (int k = 0; k < topos_op_arity(n->op); ++k) readers += n->operands[k] == ai;
    }
    if (readers <= 1) return false;
  }
  f->n_members = 2;
  f->members[0] = mmi;
  f->members[1] = root;
  f->n_inputs = 3;
  f->inputs[0] = mm->operands[0];
  f->inputs[1] = mm->operands[1];
  f->inputs[2] = bci; /* the broadcast view itself: its strides place the bias */
  return true;
}

typedef struct tp_mb_job {
  void *c;
  const void *bias; /* element (0, 0) of the broadcast view */
  int64_t n, bs0, bs1;
  bool f32, product_first;
} tp_mb_job;

#define TP_MB_ROWS(T, sfx)                                                                     \
  static void tp_mb_rows_##sfx(const tp_mb_job *j, int64_t r0, int64_t r1) {                   \
    T *c = j->c;                                                                               \
    const T *b = j->bias;                                                                      \
    for (int64_t r = r0; r < r1; ++r) {                                                        \
      T *row = c + r * j->n;                                                                   \
      const T *br = b + r * j->bs0;                                                            \
      if (j->product_first)                                                                    \
        for (int64_t k = 0; k < j->n; ++k) row[k] = row[k] + br[k * j->bs1];                   \
      else                                                                                     \
        for (int64_t k = 0; k < j->n; ++k) row[k] = br[k * j->bs1] + row[k];                   \
    }                                                                                          \
  }
TP_MB_ROWS(float, f32)
TP_MB_ROWS(double, f64)

static void tp_mb_range(void *ctx, int64_t r0, int64_t r1) {
  const tp_mb_job *j = ctx;
  if (j->f32)
    tp_mb_rows_f32(j, r0, r1);
  else
    tp_mb_rows_f64(j, r0, r1);
}

static topos_status tp_mb_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *inputs,
                              topos_tensor *dst, topos_tensor **out) {
  const tp_node *add = &g->nodes[f->root];
  topos_tensor *operands[2] = {inputs[0], inputs[1]}, *mm = NULL;
  TP_TRY(tp_op_forward_into(TOPOS_OP_MATMUL, operands, NULL, dst, &mm));
  if (mm != dst) { /* the kernel result is dst itself for a non-view op (op_table.h) */
    topos_tensor_release(mm);
    return tp_fail(TOPOS_ERR_INTERNAL, "matmul_bias: the product did not land in place");
  }
  topos_tensor_release(mm);
  const topos_tensor *bias = inputs[2];
  const int64_t *shape = topos_tensor_shape(dst), *bs = topos_tensor_strides(bias);
  tp_mb_job job = {topos_tensor_data_mut(dst), topos_tensor_data(bias), shape[1], bs[0], bs[1],
                   topos_tensor_dtype(dst) == TOPOS_F32,
                   g->nodes[add->operands[0]].op == TOPOS_OP_MATMUL};
  int64_t grain = shape[1] > 0 ? ((1 << 14) + shape[1] - 1) / shape[1] : 1;
  tp_parallel_for(shape[0], grain, tp_mb_range, &job);
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_matmul_bias = {"matmul_bias", tp_mb_match, tp_mb_run};
