/* Pattern "pool_backward": the gradient of a max-pool's input as the reverse
 * sweep records it for the nn tier's composed max-pool (conv.c):
 *
 *   forward   lanes = reshape(permute(unfold(unfold(x))))   [B,C,OH,OW,L]
 *             l_k = narrow(lanes, 4, k, 1); M_0 = l_0; M_k = maximum(M_{k-1}, l_k)
 *   backward  G_{L-1} = the pooled value's gradient           [B,C,OH,OW,1]
 *             for k = L-1 .. 1:  s_k' = step(M_{k-1}, l_k)
 *               S_k     = z_k  + G_k * (one_k - s_k')         (lane k's share)
 *               G_{k-1} = z'_k + G_k * s_k'                   (passed left)
 *             S_0 = G_0
 *             lane_sum of the S_k (one pad per lane, summed)  = S_k + 0
 *             reshape [B,C,OH,OW,KH,KW] -> permute -> fold(axis 4) -> fold(axis 2)
 *
 * z, z', one are rank-0 values (the sweep's zero fills and the 1 of
 * maximum's rule), read at run time, so nothing is assumed about them. The
 * step recomputes the lanes and the running maxima from x with the same
 * maximum (the forward nodes' bits) — which also frees the forward nodes to
 * fuse into the max_pool pattern — then runs each element's ops in the
 * composed order: the products and sums above, the lane sum's + 0 (see
 * patterns_concat.c), and each fold's zero seed plus its single contribution
 * (the folds must not overlap: step >= (size-1)*dilation + 1, checked), so
 * every output element is 0 + (0 + (S_k + 0)) where a window covers it and
 * +0 elsewhere. f32 and f64. */
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
#include "engine/pattern.h"
#include "backend/platform.h"
#include "engine/pool_backward_2x2.h"
#include "ops/kernel.h"

extern const tp_pattern tp_pattern_concat; /* patterns_concat.c */

static bool tp_pb_scalar(const tp_graph *g, uint32_t i, topos_dtype dt) {
  return i < g->count && g->nodes[i].desc->rank == 0 && g->nodes[i].desc->dtype == dt;
}

/* add(broadcast(z), mul(a, b)): z (rank 0), a, b and the two members. */
typedef struct {
  uint32_t z, a, b, spread, mul;
} tp_pb_seed;

static bool tp_pb_seed_of(const tp_graph *g, uint32_t at, topos_dtype dt, tp_pb_seed *s) {
  const tp_node *add = tp_pattern_op(g, at, TOPOS_OP_ADD);
  if (!add) return false;
  const tp_node *spread = tp_pattern_op(g, add->operands[0], TOPOS_OP_BROADCAST);
  const tp_node *mul = tp_pattern_op(g, add->operands[1], TOPOS_OP_MUL);
  if (!spread || !mul || !tp_pb_scalar(g, spread->operands[0], dt)) return false;
  *s = (tp_pb_seed){spread->operands[0], mul->operands[0], mul->operands[1], add->operands[0],
                    add->operands[1]};
  return true;
}

/* narrow(lanes, 4, k, 1) */
static bool tp_pb_lane(const tp_graph *g, uint32_t i, uint32_t lanes, int64_t k) {
  const tp_node *n = tp_pattern_op(g, i, TOPOS_OP_NARROW);
  return n && n->operands[0] == lanes && n->attrs->axis == 4 && n->attrs->start == k &&
         n->attrs->length == 1;
}

/* M_k: the running maximum of lanes 0..k as the forward records it */
static bool tp_pb_running_max(const tp_graph *g, uint32_t i, uint32_t lanes, int64_t k) {
  for (; k > 0; --k) {
    const tp_node *m = tp_pattern_op(g, i, TOPOS_OP_MAXIMUM);
    if (!m || !tp_pb_lane(g, m->operands[1], lanes, k)) return false;
    i = m->operands[0];
  }
  return tp_pb_lane(g, i, lanes, 0);
}

/* lanes = reshape [B,C,OH,OW,L] of permute [0,1,2,4,3,5] of unfold(axis 4)
 * of unfold(axis 2) of x (rank 4): x's node, or UINT32_MAX */
static uint32_t tp_pb_lanes_source(const tp_graph *g, uint32_t lanes, int64_t L) {
  const tp_node *rs = tp_pattern_op(g, lanes, TOPOS_OP_RESHAPE);
  if (!rs || rs->desc->rank != 5 || rs->desc->shape[4] != L) return UINT32_MAX;
  const tp_node *pm = tp_pattern_op(g, rs->operands[0], TOPOS_OP_PERMUTE);
  static const int order[6] = {0, 1, 2, 4, 3, 5};
  if (!pm || pm->attrs->rank != 6 || memcmp(pm->attrs->order, order, sizeof order) != 0)
    return UINT32_MAX;
  const tp_node *u4 = tp_pattern_op(g, pm->operands[0], TOPOS_OP_UNFOLD);
  if (!u4 || u4->attrs->axis != 4) return UINT32_MAX;
  const tp_node *u2 = tp_pattern_op(g, u4->operands[0], TOPOS_OP_UNFOLD);
  if (!u2 || u2->attrs->axis != 2 || u2->attrs->size * u4->attrs->size != L) return UINT32_MAX;
  if (g->nodes[u2->operands[0]].desc->rank != 4) return UINT32_MAX;
  return u2->operands[0];
}

static bool tp_pb_fold_disjoint(const tp_node *f) {
  return f->attrs->dilation >= 1 && f->attrs->step >= (f->attrs->size - 1) * f->attrs->dilation + 1;
}

static bool tp_pb_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                        tp_fusion *f) {
  const tp_node *f2 = tp_pattern_op(g, root, TOPOS_OP_FOLD);
  if (!f2 || f2->attrs->axis != 2 || f2->desc->rank != 4) return false;
  topos_dtype dt = f2->desc->dtype;
  if (dt != TOPOS_F32 && dt != TOPOS_F64) return false;
  const tp_node *f1 = tp_pattern_op(g, f2->operands[0], TOPOS_OP_FOLD);
  if (!f1 || f1->attrs->axis != 4 || !tp_pb_fold_disjoint(f1) || !tp_pb_fold_disjoint(f2))
    return false;
  const tp_node *pm = tp_pattern_op(g, f1->operands[0], TOPOS_OP_PERMUTE);
  static const int order[6] = {0, 1, 2, 4, 3, 5};
  if (!pm || pm->attrs->rank != 6 || memcmp(pm->attrs->order, order, sizeof order) != 0)
    return false;
  const tp_node *rs = tp_pattern_op(g, pm->operands[0], TOPOS_OP_RESHAPE);
  if (!rs || rs->desc->rank != 6) return false;
  uint32_t sum = rs->operands[0];
  const tp_node *sn = &g->nodes[sum];
  if (sn->desc->rank != 5 || sn->desc->dtype != dt) return false;
  int64_t L = sn->desc->shape[4];
  if (L < 2 || L != rs->desc->shape[4] * rs->desc->shape[5]) return false;
  /* the lane sum: members and S_k by lane */
  tp_fusion_space lanes_space;
  const tp_fusion *lanes_f = tp_fusion_space_init(&lanes_space);
  if (!tp_pattern_concat.match(g, evaluated, sum, &lanes_space.f) || (int64_t)lanes_f->n_inputs != L)
    return false;
  for (uint32_t k = 0; k < lanes_f->n_members; ++k)
    if (g->nodes[lanes_f->members[k]].op == TOPOS_OP_PAD &&
        g->nodes[lanes_f->members[k]].attrs->axis != 4)
      return false;
  if (2 + 3 * (L - 1) > TP_FUSION_MAX_INPUTS ||
      lanes_f->n_members + 9 * (L - 1) + 4 > TP_FUSION_MAX_MEMBERS)
    return false;
  uint32_t members[TP_FUSION_MAX_MEMBERS], n = 0;
  for (uint32_t k = 0; k < lanes_f->n_members; ++k) members[n++] = lanes_f->members[k];
  members[n++] = pm->operands[0]; /* reshape */
  members[n++] = f1->operands[0]; /* permute */
  members[n++] = f2->operands[0]; /* fold along axis 4 */
  members[n++] = root;
  /* walk G_0 = S_0 up the chain */
  uint32_t consts[TP_FUSION_MAX_INPUTS];
  uint32_t at = lanes_f->inputs[0], lanes = UINT32_MAX;
  for (int64_t k = 1; k < L; ++k) {
    tp_pb_seed pass, share;
    if (!tp_pb_seed_of(g, at, dt, &pass)) return false;           /* G_{k-1} = z' + G_k*s */
    if (!tp_pb_seed_of(g, lanes_f->inputs[k], dt, &share)) return false; /* S_k */
    const tp_node *st = tp_pattern_op(g, pass.b, TOPOS_OP_STEP);
    const tp_node *rest = tp_pattern_op(g, share.b, TOPOS_OP_SUB);
    if (!st || !rest || share.a != pass.a || rest->operands[1] != pass.b) return false;
    const tp_node *one = tp_pattern_op(g, rest->operands[0], TOPOS_OP_BROADCAST);
    if (!one || !tp_pb_scalar(g, one->operands[0], dt)) return false;
    const tp_node *lane = tp_pattern_op(g, st->operands[1], TOPOS_OP_NARROW);
    if (!lane) return false;
    if (lanes == UINT32_MAX) lanes = lane->operands[0];
    if (!tp_pb_lane(g, st->operands[1], lanes, k) ||
        !tp_pb_running_max(g, st->operands[0], lanes, k - 1))
      return false;
    uint32_t add[9] = {at,        pass.spread,         pass.mul, pass.b, lanes_f->inputs[k],
                       share.spread, share.mul, share.b, rest->operands[0]};
    for (int q = 0; q < 9; ++q) members[n++] = add[q];
    consts[3 * (k - 1)] = pass.z;
    consts[3 * (k - 1) + 1] = one->operands[0];
    consts[3 * (k - 1) + 2] = share.z;
    at = pass.a;
  }
  uint32_t x = tp_pb_lanes_source(g, lanes, L);
  const tp_node *gk = &g->nodes[at];
  if (x == UINT32_MAX || gk->desc->rank != 5 || gk->desc->dtype != dt || gk->desc->shape[4] != 1 ||
      g->nodes[x].desc->dtype != dt)
    return false;
  for (int i = 0; i < 4; ++i)
    if (gk->desc->shape[i] != sn->desc->shape[i]) return false;
  for (int i = 0; i < 2; ++i)
    if (f2->desc->shape[i] != sn->desc->shape[i] || g->nodes[x].desc->shape[i] != sn->desc->shape[i])
      return false;
  if (!tp_fusion_take_members(f, members, n, root)) return false;
  f->n_inputs = 2 + 3 * (uint32_t)(L - 1);
  f->inputs[0] = at;
  f->inputs[1] = x;
  memcpy(f->inputs + 2, consts, 3 * (size_t)(L - 1) * sizeof *consts);
  return true;
}

typedef struct tp_pb_job {
  const void *x, *g;
  void *out;
  const int64_t *xs;                /* x's strides */
  int64_t C, OH, OW, H, W;          /* output planes [H, W] */
  int64_t KH, KW, SH, SW, DH, DW;   /* forward windows (lanes) */
  int64_t bKW, bSH, bDH, bSW, bDW;  /* backward placement (folds) */
  double c64[TP_FUSION_MAX_INPUTS];
  float c32[TP_FUSION_MAX_INPUTS];
  int64_t L;
} tp_pb_job;

#define TP_PB_PLANES(T, CV)                                                                   \
  do {                                                                                        \
    const T *xp = j->x;                                                                       \
    const T *gp = j->g;                                                                       \
    T *op = j->out;                                                                           \
    int64_t L = j->L;                                                                         \
    T lane[TP_FUSION_MAX_INPUTS], run[TP_FUSION_MAX_INPUTS], share[TP_FUSION_MAX_INPUTS];     \
    for (int64_t bc = begin; bc < end; ++bc) {                                                \
      int64_t b = bc / j->C, c = bc % j->C;                                                   \
      T *plane = op + bc * j->H * j->W;                                                       \
      for (int64_t e = 0; e < j->H * j->W; ++e) plane[e] = 0;                                 \
      const T *xb = xp + b * j->xs[0] + c * j->xs[1];                                         \
      const T *gb = gp + bc * j->OH * j->OW;                                                  \
      for (int64_t oh = 0; oh < j->OH; ++oh)                                                  \
        for (int64_t ow = 0; ow < j->OW; ++ow) {                                              \
          const T *w = xb + oh * j->SH * j->xs[2] + ow * j->SW * j->xs[3];                    \
          for (int64_t k = 0; k < L; ++k)                                                     \
            lane[k] = w[(k / j->KW) * j->DH * j->xs[2] + (k % j->KW) * j->DW * j->xs[3]];     \
          run[0] = lane[0];                                                                   \
          for (int64_t k = 1; k < L; ++k) run[k] = TP_MAXIMUM_MASKED(run[k - 1], lane[k]);    \
          T gk = gb[oh * j->OW + ow];                                                         \
          for (int64_t k = L - 1; k >= 1; --k) {                                              \
            T s = run[k - 1] >= lane[k] ? (T)1 : (T)0;                                        \
            T rest = CV[3 * (k - 1) + 1] - s;                                                 \
            T part = gk * rest;                                                               \
            share[k] = CV[3 * (k - 1) + 2] + part;                                            \
            T pass = gk * s;                                                                  \
            gk = CV[3 * (k - 1)] + pass;                                                      \
          }                                                                                   \
          share[0] = gk;                                                                      \
          for (int64_t k = 0; k < L; ++k) {                                                   \
            T v = share[k] + (T)0;   /* lane_sum */                                           \
            v = (T)0 + v;            /* fold along axis 4 (zero seed) */                      \
            v = (T)0 + v;            /* fold along axis 2 */                                  \
            int64_t kh = k / j->bKW, kw = k % j->bKW;                                         \
            int64_t h = oh * j->bSH + kh * j->bDH, x = ow * j->bSW + kw * j->bDW;             \
            if (h < j->H && x < j->W) plane[h * j->W + x] = v;                                \
          }                                                                                   \
        }                                                                                     \
    }                                                                                         \
  } while (0)

/* The common case (2x2 windows, stride 2, x rows contiguous, the folds put
 * lane (kh, kw) back at (2 oh + kh, 2 ow + kw)): the same per-element ops,
 * written as straight row loops the compiler vectorizes. */
static bool tp_pb_is_2x2(const tp_pb_job *j) {
  return j->L == 4 && j->KH == 2 && j->KW == 2 && j->SH == 2 && j->SW == 2 && j->DH == 1 &&
         j->DW == 1 && j->bKW == 2 && j->bSH == 2 && j->bSW == 2 && j->bDH == 1 &&
         j->bDW == 1 && j->xs[3] == 1 && j->H >= 2 * j->OH && j->W >= 2 * j->OW;
}

/* The 2x2 planes in 16-lane vectors, the CPU's widest instance
 * (pool_backward_2x2_template.h). */
static void tp_pb_2x2_f32(const tp_pb_job *j, int64_t begin, int64_t end) {
  tp_pb2_args a = {j->x, j->g, j->out, j->xs[0], j->xs[1], j->xs[2],
                   j->C, j->H, j->W, j->OH, j->OW, {0}};
  memcpy(a.c, j->c32, sizeof a.c);
  void (*planes)(const tp_pb2_args *, int64_t, int64_t) = tp_pb2_planes_f32_baseline;
#if defined(__x86_64__)
  if (tp_vector_isa_best() == TP_VECTOR_AVX512)
    planes = tp_pb2_planes_f32_avx512;
  else if (tp_vector_isa_best() == TP_VECTOR_AVX2)
    planes = tp_pb2_planes_f32_avx2;
#endif
  planes(&a, begin, end);
}

/* planes [begin, end) of B*C: each writes only its own plane */
static void tp_pb_range_f32(void *ctx, int64_t begin, int64_t end) {
  const tp_pb_job *j = ctx;
  if (tp_pb_is_2x2(j)) {
    tp_pb_2x2_f32(j, begin, end);
    return;
  }
  TP_PB_PLANES(float, j->c32);
}
static void tp_pb_range_f64(void *ctx, int64_t begin, int64_t end) {
  const tp_pb_job *j = ctx;
  TP_PB_PLANES(double, j->c64);
}

static topos_status tp_pb_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *inputs,
                              topos_tensor *dst, topos_tensor **out) {
  const tp_node *root = &g->nodes[f->root];
  const tp_node *f1 = &g->nodes[root->operands[0]];
  const tp_node *rs = &g->nodes[g->nodes[f1->operands[0]].operands[0]];
  /* the forward windows: a step member reads a lane, a narrow of the lanes
   * = reshape(permute(unfold(axis 4, unfold(axis 2, x)))) (matched) */
  const tp_node *u2 = NULL, *u4 = NULL;
  for (uint32_t k = 0; k < f->n_members && !u2; ++k) {
    const tp_node *st = &g->nodes[f->members[k]];
    if (st->op != TOPOS_OP_STEP) continue;
    const tp_node *lanes = &g->nodes[g->nodes[st->operands[1]].operands[0]];
    const tp_node *pm = &g->nodes[lanes->operands[0]];
    u4 = &g->nodes[pm->operands[0]];
    u2 = &g->nodes[u4->operands[0]];
  }
  if (!u2) return tp_fail(TOPOS_ERR_INTERNAL, "pool_backward: no step member");
  tp_pb_job job;
  memset(&job, 0, sizeof job);
  const int64_t *os = root->desc->shape;
  job.C = os[1];
  job.H = os[2];
  job.W = os[3];
  job.OH = rs->desc->shape[2];
  job.OW = rs->desc->shape[3];
  job.L = rs->desc->shape[4] * rs->desc->shape[5];
  job.KH = u2->attrs->size, job.SH = u2->attrs->step, job.DH = u2->attrs->dilation;
  job.KW = u4->attrs->size, job.SW = u4->attrs->step, job.DW = u4->attrs->dilation;
  job.bKW = rs->desc->shape[5];
  job.bSH = root->attrs->step, job.bDH = root->attrs->dilation;
  job.bSW = f1->attrs->step, job.bDW = f1->attrs->dilation;
  bool f32 = root->desc->dtype == TOPOS_F32;
  topos_status s = TOPOS_OK;
  for (uint32_t k = 2; k < f->n_inputs && s == TOPOS_OK; ++k)
    s = f32 ? topos_tensor_read_f32(inputs[k], &job.c32[k - 2], 1)
            : topos_tensor_read_f64(inputs[k], &job.c64[k - 2], 1);
  topos_tensor *gc = NULL;
  if (s == TOPOS_OK) s = topos_tensor_contiguous(inputs[0], 0, &gc);
  if (s == TOPOS_OK) {
    const topos_tensor *x = inputs[1];
    job.x = (const char *)topos_tensor_data(x);
    job.xs = topos_tensor_strides(x);
    job.g = topos_tensor_data(gc);
    job.out = topos_tensor_data_mut(dst);
    int64_t planes = os[0] * os[1];
    int64_t grain = job.H * job.W > 0 ? ((1 << 14) + job.H * job.W - 1) / (job.H * job.W) : 1;
    tp_parallel_for(planes, grain, f32 ? tp_pb_range_f32 : tp_pb_range_f64, &job);
    *out = topos_tensor_retain(dst);
  }
  topos_tensor_release(gc);
  return s;
}

const tp_pattern tp_pattern_pool_backward = {"pool_backward", tp_pb_match, tp_pb_run};

/* the baseline instance of the 2x2 kernel (the ISA files hold the others) */
#define TP_PB2_SUFFIX baseline
#include "engine/pool_backward_2x2_template.h"
