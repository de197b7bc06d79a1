/* Pattern "seed_mul": a gradient's first contribution when a rule made it
 * with a product (relu's and maximum's g * mask, mul's g * b), as the sweep
 * records it:
 *   add(broadcast(z), mul(a, b))        z rank 0 (the sweep's zero fill)
 * with a, b and the sum of one dtype and shape. One pass computes z + a*b per
 * element: the product rounded, then the sum rounded (the library is built
 * with -ffp-contract=off, so never a fused multiply-add): the composed bits,
 * without the product's buffer and second pass. f32 and f64. */
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
#include "engine/pattern.h"
#include "ops/kernel.h"

static bool tp_seed_same(const topos_tensor_desc *a, const topos_tensor_desc *b) {
  return a->dtype == b->dtype && a->rank == b->rank &&
         memcmp(a->shape, b->shape, (size_t)a->rank * sizeof(int64_t)) == 0;
}

static bool tp_seed_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                          tp_fusion *f) {
  (void)evaluated;
  const tp_node *add = tp_pattern_op(g, root, TOPOS_OP_ADD);
  if (!add || (add->desc->dtype != TOPOS_F32 && add->desc->dtype != TOPOS_F64)) return false;
  const tp_node *spread = tp_pattern_op(g, add->operands[0], TOPOS_OP_BROADCAST);
  const tp_node *mul = tp_pattern_op(g, add->operands[1], TOPOS_OP_MUL);
  if (!spread || !mul || g->nodes[spread->operands[0]].desc->rank != 0) return false;
  if (!tp_seed_same(mul->desc, add->desc) ||
      !tp_seed_same(g->nodes[mul->operands[0]].desc, add->desc) ||
      !tp_seed_same(g->nodes[mul->operands[1]].desc, add->desc))
    return false;
  uint32_t lo = add->operands[0] < add->operands[1] ? add->operands[0] : add->operands[1];
  uint32_t hi = add->operands[0] ^ add->operands[1] ^ lo;
  if (hi >= root) return false;
  f->n_members = 3;
  f->members[0] = lo;
  f->members[1] = hi;
  f->members[2] = root;
  f->n_inputs = 3;
  f->inputs[0] = spread->operands[0];
  f->inputs[1] = mul->operands[0];
  f->inputs[2] = mul->operands[1];
  return true;
}

typedef struct tp_seed_job {
  const void *x, *y;
  void *o;
  double z64;
  float z32;
  bool f32;
} tp_seed_job;

/* elements [begin, end): any split gives the same bits (one result each) */
static void tp_seed_range(void *ctx, int64_t begin, int64_t end) {
  const tp_seed_job *j = ctx;
  if (j->f32) {
    const float *x = j->x, *y = j->y;
    float *o = j->o, z = j->z32;
    for (int64_t i = begin; i < end; ++i) {
      float p = x[i] * y[i];
      o[i] = z + p;
    }
  } else {
    const double *x = j->x, *y = j->y;
    double *o = j->o, z = j->z64;
    for (int64_t i = begin; i < end; ++i) {
      double p = x[i] * y[i];
      o[i] = z + p;
    }
  }
}

static topos_status tp_seed_run(const tp_fusion *f, const tp_graph *g,
                                topos_tensor *const *inputs, topos_tensor *dst,
                                topos_tensor **out) {
  (void)f, (void)g;
  topos_tensor *a = NULL, *b = NULL;
  tp_seed_job job = {0};
  job.f32 = topos_tensor_dtype(dst) == TOPOS_F32;
  topos_status s = job.f32 ? topos_tensor_read_f32(inputs[0], &job.z32, 1)
                           : topos_tensor_read_f64(inputs[0], &job.z64, 1);
  if (s == TOPOS_OK) s = topos_tensor_contiguous(inputs[1], 0, &a);
  if (s == TOPOS_OK) s = topos_tensor_contiguous(inputs[2], 0, &b);
  if (s == TOPOS_OK) {
    job.x = topos_tensor_data(a);
    job.y = topos_tensor_data(b);
    job.o = topos_tensor_data_mut(dst);
    tp_parallel_for(topos_tensor_volume(dst), 1 << 15, tp_seed_range, &job);
    *out = topos_tensor_retain(dst);
  }
  topos_tensor_release(a);
  topos_tensor_release(b);
  return s;
}

const tp_pattern tp_pattern_seed_mul = {"seed_mul", tp_seed_match, tp_seed_run};
