/* Patterns "conv_forward" and "conv_wgrad": a training plan's convolution
 * without its patch matrix. In a training plan the patch matrix P (the
 * chain of conv_chain.h, built by pattern im2col) is read twice: by the
 * forward product P·K (+ bias) and by the weight gradient Pᵀ·G. Each of the
 * two becomes a step that reads the image x instead (a step may read any
 * earlier value, pattern.h), so nothing reads P any more and the plan drops
 * it: no [B*OH*OW, C*KH*KW] matrix written and read twice.
 *   conv_forward: add(matmul(P, K), broadcast_along(bias, axis 0)) or the
 *                 bare matmul(P, K);
 *   conv_wgrad:   matmul(transpose(P), G).
 * Bits: the matmul kernel's, element by element — one accumulator seeded
 * with the first product and the products added in ascending k order, each
 * rounded (the default rung, the only one Exact admits; under Fast another
 * member could serve the composed product, and these steps stay within its
 * envelope with the reference bits) — over the same patch values (x, or +0
 * where the pads are), then the bias add in the node's operand order
 * (conv_direct_template.h). f32 with unit steps and dilations; conv_wgrad
 * for at most 16 output channels and 32 output columns. Only where P has another reader (a
 * training plan): an inference plan keeps pattern conv_im2col. Threads
 * split images (forward) or rows of dW (weight gradient). */
#include <stdatomic.h>
#include <string.h>

#include "backend/platform.h"
#include "base/error.h"
#include "base/threads.h"
#include "engine/conv_chain.h"
#include "engine/conv_direct.h"
#include "engine/pattern.h"

/* The patch matrix `reshape`'s geometry into a (no pointers) and the image,
 * when it is an f32 chain with unit steps and dilations whose transpose is
 * recorded (a training graph). */
static bool tp_cd_geometry(const tp_graph *g, const uint8_t *evaluated, uint32_t reshape,
                           tp_cd_args *a, uint32_t *image) {
  uint32_t members[8], n = 0;
  if (!tp_conv_walk(g, reshape, members, &n, image)) return false;
  const tp_node *xn = &g->nodes[*image], *rs = &g->nodes[reshape];
  if (xn->desc->dtype != TOPOS_F32 || rs->desc->dtype != TOPOS_F32) return false;
  memset(a, 0, sizeof *a);
  const tp_node *pm = NULL;
  for (uint32_t k = 0; k < n; ++k) {
    const tp_node *m = &g->nodes[members[k]];
    if (m->op == TOPOS_OP_PAD && m->attrs->axis == 2) a->top = m->attrs->start;
    if (m->op == TOPOS_OP_PAD && m->attrs->axis == 3) a->left = m->attrs->start;
    if (m->op == TOPOS_OP_UNFOLD && (m->attrs->step != 1 || m->attrs->dilation != 1)) return false;
    if (m->op == TOPOS_OP_PERMUTE) pm = m;
  }
  if (!pm || a->top < 0 || a->left < 0) return false;
  const int64_t *xs = xn->desc->shape, *ps = pm->desc->shape; /* [B, OH, OW, C, KH, KW] */
  a->B = xs[0], a->C = xs[1], a->H = xs[2], a->W = xs[3];
  a->OH = ps[1], a->OW = ps[2], a->KH = ps[4], a->KW = ps[5];
  if (ps[3] != a->C || a->OW < 1 || a->OH < 1) return false;
  /* a training plan's patch matrix: its transpose feeds the weight gradient
   * (perhaps fused already, so not asked whether evaluated) */
  (void)evaluated;
  for (uint32_t i = reshape + 1; i < g->count; ++i) {
    const tp_node *m = &g->nodes[i];
    if (m->kind == TOPOS_NODE_OP && m->op == TOPOS_OP_TRANSPOSE && m->operands[0] == reshape)
      return true;
  }
  return false;
}

static bool tp_cd_forward_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                                tp_fusion *f) {
  const tp_node *node = &g->nodes[root];
  if (node->kind != TOPOS_NODE_OP || node->desc->dtype != TOPOS_F32 || node->desc->rank != 2)
    return false;
  uint32_t mmi = root, bci = 0;
  bool bias = node->op == TOPOS_OP_ADD;
  if (bias) {
    int side = tp_pattern_op(g, node->operands[0], TOPOS_OP_MATMUL) ? 0
               : tp_pattern_op(g, node->operands[1], TOPOS_OP_MATMUL) ? 1
                                                                 : -1;
    if (side < 0) return false;
    mmi = node->operands[side], bci = node->operands[1 - side];
    const tp_node *bc = tp_pattern_op(g, bci, TOPOS_OP_BROADCAST_ALONG);
    if (!bc || bc->attrs->axis != 0 || g->nodes[bc->operands[0]].desc->rank != 1 ||
        bc->desc->dtype != TOPOS_F32)
      return false;
  } else if (node->op != TOPOS_OP_MATMUL) {
    return false;
  }
  const tp_node *mm = &g->nodes[mmi];
  tp_cd_args a;
  uint32_t x = 0;
  if (mm->desc->rank != 2 || !tp_cd_geometry(g, evaluated, mm->operands[0], &a, &x)) return false;
  const tp_node *kn = &g->nodes[mm->operands[1]];
  if (kn->desc->dtype != TOPOS_F32 || kn->desc->rank != 2) return false;
  if (bias && (mm->desc->shape[0] != node->desc->shape[0] || mm->desc->shape[1] != node->desc->shape[1]))
    return false;
  f->n_members = 0;
  if (bias) f->members[f->n_members++] = mmi;
  f->members[f->n_members++] = root;
  f->n_inputs = 0;
  f->inputs[f->n_inputs++] = x;
  f->inputs[f->n_inputs++] = mm->operands[1];
  if (bias) f->inputs[f->n_inputs++] = bci; /* the view: its strides place the bias */
  return true;
}

static bool tp_cd_wgrad_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                              tp_fusion *f) {
  const tp_node *mm = tp_pattern_op(g, root, TOPOS_OP_MATMUL);
  if (!mm || mm->desc->dtype != TOPOS_F32 || mm->desc->rank != 2 || mm->desc->shape[1] > 16)
    return false;
  uint32_t ti = mm->operands[0];
  const tp_node *t = tp_pattern_op(g, ti, TOPOS_OP_TRANSPOSE);
  if (!t) return false;
  tp_cd_args a;
  uint32_t x = 0;
  if (!tp_cd_geometry(g, evaluated, t->operands[0], &a, &x) || a.OW > 32) return false;
  const tp_node *gn = &g->nodes[mm->operands[1]];
  if (gn->desc->dtype != TOPOS_F32 || gn->desc->rank != 2) return false;
  f->n_members = 2;
  f->members[0] = ti;
  f->members[1] = root;
  f->n_inputs = 2;
  f->inputs[0] = x;
  f->inputs[1] = mm->operands[1];
  return true;
}

typedef int (*tp_cd_kernel)(const tp_cd_args *, int64_t, int64_t);

typedef struct tp_cd_job {
  tp_cd_args args;
  tp_cd_kernel kernel;
  int64_t unit; /* 1: images; 8: rows of dW per block */
  int64_t limit;
  atomic_int failed;
} tp_cd_job;

static void tp_cd_range(void *ctx, int64_t begin, int64_t end) {
  tp_cd_job *j = ctx;
  int64_t lo = begin * j->unit, hi = end * j->unit < j->limit ? end * j->unit : j->limit;
  if (j->kernel(&j->args, lo, hi) != 0) atomic_store(&j->failed, 1);
}

static void tp_cd_pick(bool forward, tp_cd_kernel *kernel) {
  *kernel = forward ? tp_cd_forward_f32_baseline : tp_cd_wgrad_f32_baseline;
#if defined(__x86_64__)
  if (tp_vector_isa_best() == TP_VECTOR_AVX512)
    *kernel = forward ? tp_cd_forward_f32_avx512 : tp_cd_wgrad_f32_avx512;
  else if (tp_vector_isa_best() == TP_VECTOR_AVX2)
    *kernel = forward ? tp_cd_forward_f32_avx2 : tp_cd_wgrad_f32_avx2;
#endif
}

static topos_status tp_cd_run(bool forward, const tp_fusion *f, const tp_graph *g,
                              topos_tensor *const *inputs, topos_tensor *dst,
                              topos_tensor **out) {
  tp_cd_job job;
  memset(&job, 0, sizeof job);
  const tp_node *root = &g->nodes[f->root];
  uint32_t mmi = forward && f->n_members == 2 ? f->members[0] : f->root, x = 0;
  const tp_node *mm = &g->nodes[mmi];
  uint32_t patches = forward ? mm->operands[0] : g->nodes[mm->operands[0]].operands[0];
  /* the geometry again (the reader count may have changed since: not asked) */
  uint32_t members[8], n = 0;
  if (!tp_conv_walk(g, patches, members, &n, &x))
    return tp_fail(TOPOS_ERR_INTERNAL, "conv_direct: the group no longer matches");
  tp_cd_args a;
  memset(&a, 0, sizeof a);
  for (uint32_t k = 0; k < n; ++k) {
    const tp_node *m = &g->nodes[members[k]];
    if (m->op == TOPOS_OP_PAD && m->attrs->axis == 2) a.top = m->attrs->start;
    if (m->op == TOPOS_OP_PAD && m->attrs->axis == 3) a.left = m->attrs->start;
    if (m->op == TOPOS_OP_PERMUTE) {
      a.OH = m->desc->shape[1], a.OW = m->desc->shape[2];
      a.KH = m->desc->shape[4], a.KW = m->desc->shape[5];
    }
  }
  const int64_t *xs = g->nodes[x].desc->shape;
  a.B = xs[0], a.C = xs[1], a.H = xs[2], a.W = xs[3];
  a.F = root->desc->shape[1];
  topos_tensor *xc = NULL, *other = NULL;
  topos_status s = topos_tensor_contiguous(inputs[0], 0, &xc);
  if (s == TOPOS_OK) s = topos_tensor_contiguous(inputs[1], 0, &other);
  if (s == TOPOS_OK) {
    a.x = topos_tensor_data(xc);
    a.out = topos_tensor_data_mut(dst);
    if (forward) {
      a.k = topos_tensor_data(other);
      if (f->n_inputs == 3) {
        a.bias = topos_tensor_data(inputs[2]);
        a.bias_stride = topos_tensor_strides(inputs[2])[1];
        a.product_first = root->operands[0] == mmi;
      }
      job.unit = 1, job.limit = a.B;
    } else {
      a.g = topos_tensor_data(other);
      /* the kernel's row blocks: the large ones on one thread, smaller ones
       * when there are threads to share them (no bits change: each dW
       * element is summed in one block, in the same order either way) */
      a.wgrad_rows = TP_CD_WGRAD_ROWS(a.F, topos_threads() > 1);
      job.unit = a.wgrad_rows, job.limit = a.C * a.KH * a.KW;
    }
    job.args = a;
    tp_cd_pick(forward, &job.kernel);
    tp_parallel_for((job.limit + job.unit - 1) / job.unit, 1, tp_cd_range, &job);
    if (atomic_load(&job.failed)) s = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "conv_direct: no scratch");
  }
  topos_tensor_release(xc);
  topos_tensor_release(other);
  if (s == TOPOS_OK) *out = topos_tensor_retain(dst);
  return s;
}

static topos_status tp_cd_forward_run(const tp_fusion *f, const tp_graph *g,
                                      topos_tensor *const *inputs, topos_tensor *dst,
                                      topos_tensor **out) {
  return tp_cd_run(true, f, g, inputs, dst, out);
}

static topos_status tp_cd_wgrad_run(const tp_fusion *f, const tp_graph *g,
                                    topos_tensor *const *inputs, topos_tensor *dst,
                                    topos_tensor **out) {
  return tp_cd_run(false, f, g, inputs, dst, out);
}

const tp_pattern tp_pattern_conv_forward = {"conv_forward", tp_cd_forward_match, tp_cd_forward_run};
const tp_pattern tp_pattern_conv_wgrad = {"conv_wgrad", tp_cd_wgrad_match, tp_cd_wgrad_run};

/* the baseline instance of the kernels (the ISA files hold the others) */
#define TP_CD_SUFFIX baseline
#include "engine/conv_direct_template.h"
