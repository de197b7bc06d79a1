/* Pattern "relu_grad": relu's gradient as the sweep records it, laid out for
 * the conv's weight gradient that reads it:
 *   add(broadcast(z), mul(G, step(X, broadcast(t))))   z, t rank 0
 *   -> permute -> reshape (root: the copy into the product's row order)
 * becomes one pass in the root's row-major order: per element
 *   out = z + G * (X >= t ? 1 : 0)
 * with the product rounded, then the sum (the library is built with
 * -ffp-contract=off), i.e. the nodes' bits (step: 1 when a >= t, NaN gives
 * 0), without the mask's, the seed's and the copy's three passes. X and G
 * are read through the permutation (a conv's pre-activation X is such a view
 * of the product's rows already). f32 and f64; threads split the root's
 * first axis. */
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
#include "engine/pattern.h"
#include "ops/kernel.h"

static bool tp_rg_same(const topos_tensor_desc *a, const topos_tensor_desc *b) {
  return a->dtype == b->dtype && a->rank == b->rank &&
         memcmp(a->shape, b->shape, (size_t)a->rank * sizeof(int64_t)) == 0;
}

static bool tp_rg_scalar_spread(const tp_graph *g, uint32_t i) {
  const tp_node *n = tp_pattern_op(g, i, TOPOS_OP_BROADCAST);
  return n && g->nodes[n->operands[0]].desc->rank == 0;
}

static bool tp_rg_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                        tp_fusion *f) {
  (void)evaluated;
  const tp_node *rs = tp_pattern_op(g, root, TOPOS_OP_RESHAPE);
  if (!rs || (rs->desc->dtype != TOPOS_F32 && rs->desc->dtype != TOPOS_F64)) return false;
  uint32_t pmi = rs->operands[0];
  const tp_node *pm = tp_pattern_op(g, pmi, TOPOS_OP_PERMUTE);
  if (!pm) return false;
  uint32_t addi = pm->operands[0];
  const tp_node *add = tp_pattern_op(g, addi, TOPOS_OP_ADD);
  if (!add || add->desc->dtype != rs->desc->dtype) return false;
  uint32_t zi = add->operands[0], muli = add->operands[1];
  const tp_node *mul = tp_pattern_op(g, muli, TOPOS_OP_MUL);
  if (!tp_rg_scalar_spread(g, zi) || !mul) return false;
  int side = tp_pattern_op(g, mul->operands[1], TOPOS_OP_STEP) ? 1
             : tp_pattern_op(g, mul->operands[0], TOPOS_OP_STEP) ? 0
                                                            : -1;
  if (side < 0) return false;
  uint32_t stepi = mul->operands[side], gi = mul->operands[1 - side];
  const tp_node *step = &g->nodes[stepi];
  uint32_t xi = step->operands[0], ti = step->operands[1];
  if (!tp_rg_scalar_spread(g, ti)) return false;
  const topos_tensor_desc *d = add->desc;
  if (!tp_rg_same(mul->desc, d) || !tp_rg_same(step->desc, d) ||
      !tp_rg_same(g->nodes[gi].desc, d) || !tp_rg_same(g->nodes[xi].desc, d))
    return false;
  uint32_t members[] = {ti, stepi, muli, zi, addi, pmi, root};
  uint32_t count = sizeof members / sizeof members[0];
  if (!tp_fusion_take_members(f, members, count, root)) return false;
  f->n_inputs = 4;
  f->inputs[0] = g->nodes[zi].operands[0];
  f->inputs[1] = g->nodes[ti].operands[0];
  f->inputs[2] = gi;
  f->inputs[3] = xi;
  return true;
}

typedef struct tp_rg_job {
  const void *g, *x; /* element 0 of the permuted views */
  void *out;
  int rank;
  int64_t shape[TOPOS_MAX_RANK], gs[TOPOS_MAX_RANK], xs[TOPOS_MAX_RANK];
  double z, t;
  bool f32;
} tp_rg_job;

#define TP_RG_KERNEL(T, sfx)                                                                   \
  /* rows [r0, r1) of the root's first axis, in row-major order; the last two */             \
  /* axes as one tile (a conv's [W, C]: g read across C planes, x in order)    */             \
  static void tp_rg_rows_##sfx(const tp_rg_job *j, int64_t r0, int64_t r1) {                   \
    const T *g = j->g, *x = j->x;                                                              \
    T *out = j->out;                                                                           \
    const T z = (T)j->z, t = (T)j->t, ones[2] = {0, 1};                                        \
    int r = j->rank;                                                                           \
    int64_t inner = j->shape[r - 1], gsi = j->gs[r - 1], xsi = j->xs[r - 1];                   \
    int64_t mid = r >= 3 ? j->shape[r - 2] : 1, gsm = r >= 3 ? j->gs[r - 2] : 0,                \
            xsm = r >= 3 ? j->xs[r - 2] : 0;                                                   \
    int64_t tiles = 1;                                                                         \
    for (int i = 1; i < r - 2; ++i) tiles *= j->shape[i];                                      \
    for (int64_t a = r0; a < r1; ++a) {                                                        \
      int64_t index[TOPOS_MAX_RANK] = {0};                                                     \
      for (int64_t tile = 0; tile < tiles; ++tile) {                                           \
        int64_t go = a * j->gs[0], xo = a * j->xs[0];                                          \
        for (int i = 1; i < r - 2; ++i) go += index[i] * j->gs[i], xo += index[i] * j->xs[i];  \
        T *o = out + (a * tiles + tile) * mid * inner;                                         \
        if (gsm == 1) { /* g in order along mid (a conv's NCHW gradient): read so */          \
          for (int64_t e = 0; e < inner; ++e) {                                                \
            const T *ge = g + go + e * gsi, *xe = x + xo + e * xsi;                            \
            T *oe = o + e;                                                                     \
            for (int64_t m = 0; m < mid; ++m) {                                                \
              T p = ge[m] * ones[xe[m * xsm] >= t];                                            \
              oe[m * inner] = z + p;                                                           \
            }                                                                                  \
          }                                                                                    \
        } else                                                                                 \
        for (int64_t m = 0; m < mid; ++m) {                                                    \
          const T *gm = g + go + m * gsm, *xm = x + xo + m * xsm;                              \
          T *om = o + m * inner;                                                               \
          for (int64_t e = 0; e < inner; ++e) {                                                \
            T p = gm[e * gsi] * ones[xm[e * xsi] >= t];                                        \
            om[e] = z + p;                                                                     \
          }                                                                                    \
        }                                                                                      \
        for (int i = r - 3; i >= 1; --i) {                                                     \
          if (++index[i] < j->shape[i]) break;                                                 \
          index[i] = 0;                                                                        \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }
TP_RG_KERNEL(float, f32)
TP_RG_KERNEL(double, f64)

/* f32 with G in order along the tile's middle axis (a conv's NCHW
 * gradient) and X and the output in order over the tile ([W, C] rows,
 * C a multiple of 4): 4 planes x 4 positions of G per step, transposed to
 * 4 vectors along C, then per lane z + G * (X >= t ? 1 : 0) — the same
 * product of the same factors, then the same sum. */
typedef float tp_rg_v4 __attribute__((vector_size(16)));
typedef int32_t tp_rg_m4 __attribute__((vector_size(16)));

static bool tp_rg_x4_fits(const tp_rg_job *j) {
  int r = j->rank;
  return j->f32 && r >= 3 && j->gs[r - 2] == 1 && j->xs[r - 1] == 1 &&
         j->xs[r - 2] == j->shape[r - 1] && j->shape[r - 1] % 4 == 0;
}

static void tp_rg_rows_f32x4(const tp_rg_job *j, int64_t r0, int64_t r1) {
  const float *g = j->g, *x = j->x;
  float *out = j->out;
  const int r = j->rank;
  const int64_t C = j->shape[r - 1], W = j->shape[r - 2], gsc = j->gs[r - 1];
  const float z = (float)j->z, t = (float)j->t, ones[2] = {0, 1};
  const tp_rg_v4 zv = {z, z, z, z}, tv = {t, t, t, t};
  float one = 1.0f;
  int32_t one_bits;
  memcpy(&one_bits, &one, sizeof one_bits);
  const tp_rg_m4 onev = {one_bits, one_bits, one_bits, one_bits};
  int64_t tiles = 1;
  for (int i = 1; i < r - 2; ++i) tiles *= j->shape[i];
  for (int64_t a = r0; a < r1; ++a) {
    int64_t index[TOPOS_MAX_RANK] = {0};
    for (int64_t tile = 0; tile < tiles; ++tile) {
      int64_t go = a * j->gs[0], xo = a * j->xs[0];
      for (int i = 1; i < r - 2; ++i) go += index[i] * j->gs[i], xo += index[i] * j->xs[i];
      const float *gt = g + go, *xt = x + xo;
      float *o = out + (a * tiles + tile) * W * C;
      int64_t w = 0;
      for (; w + 4 <= W; w += 4)
        for (int64_t c = 0; c < C; c += 4) {
          tp_rg_v4 q[4];
          for (int k = 0; k < 4; ++k) memcpy(&q[k], gt + (c + k) * gsc + w, sizeof q[k]);
          tp_rg_v4 lo01 = __builtin_shufflevector(q[0], q[1], 0, 4, 1, 5);
          tp_rg_v4 hi01 = __builtin_shufflevector(q[0], q[1], 2, 6, 3, 7);
          tp_rg_v4 lo23 = __builtin_shufflevector(q[2], q[3], 0, 4, 1, 5);
          tp_rg_v4 hi23 = __builtin_shufflevector(q[2], q[3], 2, 6, 3, 7);
          tp_rg_v4 p[4];
          p[0] = __builtin_shufflevector(lo01, lo23, 0, 1, 4, 5);
          p[1] = __builtin_shufflevector(lo01, lo23, 2, 3, 6, 7);
          p[2] = __builtin_shufflevector(hi01, hi23, 0, 1, 4, 5);
          p[3] = __builtin_shufflevector(hi01, hi23, 2, 3, 6, 7);
          for (int k = 0; k < 4; ++k) {
            tp_rg_v4 xv;
            memcpy(&xv, xt + (w + k) * C + c, sizeof xv);
            tp_rg_v4 step = (tp_rg_v4)((xv >= tv) & onev);
            tp_rg_v4 v = zv + p[k] * step;
            memcpy(o + (w + k) * C + c, &v, sizeof v);
          }
        }
      for (; w < W; ++w)
        for (int64_t c = 0; c < C; ++c) {
          float pr = gt[c * gsc + w] * ones[xt[w * C + c] >= t];
          o[w * C + c] = z + pr;
        }
      for (int i = r - 3; i >= 1; --i) {
        if (++index[i] < j->shape[i]) break;
        index[i] = 0;
      }
    }
  }
}

static void tp_rg_range(void *ctx, int64_t r0, int64_t r1) {
  const tp_rg_job *j = ctx;
  if (tp_rg_x4_fits(j))
    tp_rg_rows_f32x4(j, r0, r1);
  else if (j->f32)
    tp_rg_rows_f32(j, r0, r1);
  else
    tp_rg_rows_f64(j, r0, r1);
}

static topos_status tp_rg_run(const tp_fusion *f, const tp_graph *graph,
                              topos_tensor *const *inputs, topos_tensor *dst, topos_tensor **out) {
  const tp_node *pm = &graph->nodes[f->members[f->n_members - 2]];
  tp_rg_job job = {0};
  job.f32 = topos_tensor_dtype(dst) == TOPOS_F32;
  TP_TRY(topos_tensor_read_f64(inputs[0], &job.z, 1));
  TP_TRY(topos_tensor_read_f64(inputs[1], &job.t, 1));
  topos_tensor *gv = NULL, *xv = NULL;
  topos_status s = topos_tensor_permute(inputs[2], pm->attrs->order, &gv);
  if (s == TOPOS_OK) s = topos_tensor_permute(inputs[3], pm->attrs->order, &xv);
  if (s == TOPOS_OK) {
    job.rank = topos_tensor_rank(gv);
    const int64_t *shape = topos_tensor_shape(gv);
    if (job.rank < 2) { /* one row */
      job.rank = 2;
      job.shape[0] = 1, job.gs[0] = job.xs[0] = 0;
      job.shape[1] = topos_tensor_rank(gv) ? shape[0] : 1;
      job.gs[1] = topos_tensor_rank(gv) ? topos_tensor_strides(gv)[0] : 0;
      job.xs[1] = topos_tensor_rank(xv) ? topos_tensor_strides(xv)[0] : 0;
    } else {
      memcpy(job.shape, shape, (size_t)job.rank * sizeof(int64_t));
      memcpy(job.gs, topos_tensor_strides(gv), (size_t)job.rank * sizeof(int64_t));
      memcpy(job.xs, topos_tensor_strides(xv), (size_t)job.rank * sizeof(int64_t));
    }
    job.g = topos_tensor_data(gv);
    job.x = topos_tensor_data(xv);
    job.out = topos_tensor_data_mut(dst);
    int64_t per = topos_tensor_volume(dst) / (job.shape[0] ? job.shape[0] : 1);
    tp_parallel_for(job.shape[0], per > 0 ? ((1 << 14) + per - 1) / per : 1, tp_rg_range, &job);
    *out = topos_tensor_retain(dst);
  }
  topos_tensor_release(gv);
  topos_tensor_release(xv);
  return s;
}

const tp_pattern tp_pattern_relu_grad = {"relu_grad", tp_rg_match, tp_rg_run};
