/* Pattern "rmsnorm": the llama graph's RMS normalization of rows, f32, as
 * models/llama_graph.c records it (tp_rmsnorm):
 *   ms  = div(sum_along(mul(x, x), 1), n)          (mean_along)
 *   inv = div(one, sqrt(add(ms, eps)))
 *   y   = mul(mul(x, broadcast_along(inv, 1, dim)), w)
 * x [rows, dim]; n, eps, one broadcasts of single values; w any f32 node of
 * x's shape (the weight broadcast over the rows). Composed, that is eight
 * steps — the serial sum_along and five full-size passes among them; fused,
 * one pass per row, rows over threads.
 *
 * Exact and Fast alike: the composed bits. Per row, the squares summed in
 * ascending order from the first (the reference sum_along's f32 lane), then
 * each step's single rounding in the composed order and operand order
 * (-ffp-contract=off), a NaN in both operands of a product resolved as the
 * composed kernels do (TP_FIRST_NAN; where no product can meet two NaNs the
 * plain, vectorized products give the same bits). Each row's sum is its own
 * serial chain; eight rows' chains run side by side. Rows are computed
 * alone, so the thread split never changes a bit. */
#include <math.h>
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
#include "engine/pattern.h"

static const tp_node *rn_op(const tp_graph *g, uint32_t i, topos_op op) {
  const tp_node *n = tp_pattern_op(g, i, op);
  return n && n->desc->dtype == TOPOS_F32 ? n : NULL;
}

/* a broadcast of a single f32 value */
static bool rn_filled(const tp_graph *g, uint32_t i) {
  const tp_node *b = tp_pattern_filled(g, i);
  return b && b->desc->dtype == TOPOS_F32 && g->nodes[b->operands[0]].desc->dtype == TOPOS_F32;
}

enum { RN_X, RN_N, RN_EPS, RN_ONE, RN_W };

static bool rn_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root, tp_fusion *f) {
  (void)evaluated;
  const tp_node *out = rn_op(g, root, TOPOS_OP_MUL);
  if (!out || out->desc->rank != 2) return false;
  const tp_node *y = rn_op(g, out->operands[0], TOPOS_OP_MUL);
  if (!y) return false;
  const uint32_t x = y->operands[0];
  const tp_node *bi = rn_op(g, y->operands[1], TOPOS_OP_BROADCAST_ALONG);
  if (!bi || bi->attrs->axis != 1) return false;
  const tp_node *inv = rn_op(g, bi->operands[0], TOPOS_OP_DIV);
  if (!inv || !rn_filled(g, inv->operands[0])) return false;
  const tp_node *den = rn_op(g, inv->operands[1], TOPOS_OP_SQRT);
  if (!den) return false;
  const tp_node *add = rn_op(g, den->operands[0], TOPOS_OP_ADD);
  if (!add || !rn_filled(g, add->operands[1])) return false;
  const tp_node *ms = rn_op(g, add->operands[0], TOPOS_OP_DIV);
  if (!ms || !rn_filled(g, ms->operands[1])) return false;
  const tp_node *tot = rn_op(g, ms->operands[0], TOPOS_OP_SUM_ALONG);
  if (!tot || tot->attrs->axis != 1) return false;
  const tp_node *sq = rn_op(g, tot->operands[0], TOPOS_OP_MUL);
  if (!sq || sq->operands[0] != x || sq->operands[1] != x) return false;
  /* shapes: x, the squares, y, w and the root [rows, dim]; the row values [rows] */
  const tp_node *xn = &g->nodes[x], *wn = &g->nodes[out->operands[1]];
  if (xn->desc->dtype != TOPOS_F32 || xn->desc->rank != 2 || wn->desc->dtype != TOPOS_F32 ||
      memcmp(xn->desc->shape, out->desc->shape, 2 * sizeof(int64_t)) != 0 ||
      wn->desc->rank != 2 || memcmp(wn->desc->shape, out->desc->shape, 2 * sizeof(int64_t)) != 0 ||
      tot->desc->rank != 1 || tot->desc->shape[0] != out->desc->shape[0] ||
      inv->desc->rank != 1 || bi->desc->rank != 2)
    return false;
  uint32_t members[9] = {tot->operands[0], ms->operands[0], add->operands[0], den->operands[0],
                         inv->operands[1], bi->operands[0], y->operands[1], out->operands[0], root};
  if (!tp_fusion_take_members(f, members, 9, root)) return false;
  f->n_inputs = 5;
  f->inputs[RN_X] = x;
  f->inputs[RN_N] = ms->operands[1];
  f->inputs[RN_EPS] = add->operands[1];
  f->inputs[RN_ONE] = inv->operands[0];
  f->inputs[RN_W] = out->operands[1];
  return true;
}

typedef struct rn_job {
  const float *x, *w;
  int64_t xs0, xs1, ws0, ws1, dim;
  float n, eps, one;
  int w_has_nan; /* else a product with w never meets two NaNs: plain products */
  float *out;
} rn_job;

#define RN_BLOCK 8 /* rows whose sums run side by side: each sum is a serial chain */

static void rn_range(void *ctx, int64_t begin, int64_t end) {
  const rn_job *j = ctx;
  const int64_t dim = j->dim, xs1 = j->xs1;
  for (int64_t r0 = begin; r0 < end; r0 += RN_BLOCK) {
    const int rows = end - r0 < RN_BLOCK ? (int)(end - r0) : RN_BLOCK;
    float s[RN_BLOCK];
    const float *x[RN_BLOCK];
    for (int r = 0; r < rows; ++r) {
      x[r] = j->x + (r0 + r) * j->xs0;
      s[r] = x[r][0] * x[r][0];
    }
    for (int64_t k = 1; k < dim; ++k)
      for (int r = 0; r < rows; ++r) s[r] += x[r][k * xs1] * x[r][k * xs1];
    for (int r = 0; r < rows; ++r) {
      const float inv = TP_FIRST_NAN(j->one, sqrtf(TP_FIRST_NAN(s[r] / j->n, j->eps, +)), /);
      const float *w = j->w + (r0 + r) * j->ws0, *xr = x[r];
      float *o = j->out + (r0 + r) * dim;
      if (inv == inv && !j->w_has_nan && xs1 == 1 && j->ws1 == 1) {
        /* at most one NaN per product: any operand order gives these bits */
        for (int64_t k = 0; k < dim; ++k) o[k] = (xr[k] * inv) * w[k];
        continue;
      }
      for (int64_t k = 0; k < dim; ++k) {
        const float y = TP_FIRST_NAN(xr[k * xs1], inv, *);
        o[k] = TP_FIRST_NAN(y, w[k * j->ws1], *);
      }
    }
  }
}

static topos_status rn_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *inputs,
                           topos_tensor *dst, topos_tensor **out) {
  (void)f, (void)g;
  double n = 0, eps = 0, one = 0;
  const int64_t zero[1] = {0};
  TP_TRY(topos_tensor_get(inputs[RN_N], zero, &n));
  TP_TRY(topos_tensor_get(inputs[RN_EPS], zero, &eps));
  TP_TRY(topos_tensor_get(inputs[RN_ONE], zero, &one));
  const int64_t *xs = topos_tensor_strides(inputs[RN_X]), *ws = topos_tensor_strides(inputs[RN_W]);
  const int64_t *shape = topos_tensor_shape(dst);
  rn_job j = {topos_tensor_data(inputs[RN_X]), topos_tensor_data(inputs[RN_W]), xs[0], xs[1], ws[0],
              ws[1], shape[1], (float)n, (float)eps, (float)one, 0, topos_tensor_data_mut(dst)};
  for (int64_t r = 0; r < (ws[0] == 0 ? 1 : shape[0]) && !j.w_has_nan; ++r) /* w: one row, broadcast */
    for (int64_t k = 0; k < shape[1]; ++k) {
      const float v = j.w[r * ws[0] + k * ws[1]];
      if (v != v) {
        j.w_has_nan = 1;
        break;
      }
    }
  int64_t grain = 8192 / (shape[1] > 0 ? shape[1] : 1);
  tp_parallel_for(shape[0], grain < 1 ? 1 : grain, rn_range, &j);
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_rmsnorm = {"rmsnorm", rn_match, rn_run};
