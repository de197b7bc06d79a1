/* Pattern "col2im": a convolution's input gradient from the gradient of
 * its output, as the sweep records it:
 *   D = matmul(G, transpose(K))          G [B*OH*OW, F] the output's gradient,
 *                                        K [C*KH*KW, F] the kernel matrix
 *   add(broadcast(z), D)                 z rank 0 (the sweep's zero fill)
 *   -> reshape [B,OH,OW,C,KH,KW] -> permute [0,3,1,4,2,5]
 *   -> fold(axis 4: OW windows, KW positions -> PW)
 *   -> fold(axis 2: OH windows, KH positions -> PH)
 *   -> narrow(axis 2) and narrow(axis 3) (the forward pads undone)
 *   -> reshape (root; a max-pool's backward reshapes its input gradient)
 * becomes one step. Bits: fold seeds each output with +0 and adds its
 * contributions in ascending window order, so per output element (b,c,y,x)
 *   t(oh)  = ((+0 + (z + D[b,oh,ow0,c,kh,kw0])) + (z + D[..ow1..])) + ...   ow ascending
 *   dX     = ((+0 + t(oh0)) + t(oh1)) + ...                                   oh ascending
 * over the (ow, kw) and (oh, kh) pairs that land on the element; the step
 * computes exactly that, each value rounded as the nodes round it. D is
 * computed transposed, Dᵀ = matmul(K, Gᵀ), by the same matmul kernel: each
 * element is the same products (a*b == b*a exactly) summed over F in the
 * same order, so the default rung (the only one Exact admits) gives D's bits
 * (under Fast another member may serve, within its envelope). Dᵀ puts each
 * patch column's OW positions side by side, so the sums run as vectors along
 * a row x. No [B*OH*OW, C*KH*KW] sum nor [B,C,OH,KH,PW] fold is written.
 *
 * The general route walks every element in that order. The f32 route for
 * unit steps and dilations (z == +0) works one image at a time with a row of
 * x in one vector: a missing (ow, kw) pair reads +0 (masked), and adding +0
 * to a sum that is never -0 (it starts at +0) changes no bit. Threads split
 * images. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
#include "backend/platform.h"
#include "engine/col2im_lines.h"
#include "engine/pattern.h"
#include "ops/kernel.h"
#include "ops/op_table.h"

/* The geometry the members fix. */
typedef struct tp_c2i_geom {
  int64_t B, OH, OW, C, KH, KW;        /* D's reshape */
  int64_t sh, dh, sw, dw;              /* the folds' steps and dilations */
  int64_t top, left, H, W;             /* the narrows */
} tp_c2i_geom;

/* Walks down from the root; fills members (ascending) and the geometry. */
static bool tp_c2i_walk(const tp_graph *g, uint32_t root, tp_fusion *f, tp_c2i_geom *geo) {
  const tp_node *rs = tp_pattern_op(g, root, TOPOS_OP_RESHAPE);
  if (!rs || (rs->desc->dtype != TOPOS_F32 && rs->desc->dtype != TOPOS_F64)) return false;
  uint32_t n1 = rs->operands[0];
  const tp_node *na = tp_pattern_op(g, n1, TOPOS_OP_NARROW);
  if (!na) return false;
  uint32_t n2 = na->operands[0];
  const tp_node *nb = tp_pattern_op(g, n2, TOPOS_OP_NARROW);
  if (!nb || na->desc->rank != 4 || na->attrs->axis == nb->attrs->axis) return false;
  const tp_node *nh = na->attrs->axis == 2 ? na : nb, *nw = na->attrs->axis == 3 ? na : nb;
  if (nh->attrs->axis != 2 || nw->attrs->axis != 3) return false;
  uint32_t f2i = nb->operands[0];
  const tp_node *f2 = tp_pattern_op(g, f2i, TOPOS_OP_FOLD);
  if (!f2 || f2->attrs->axis != 2 || f2->desc->rank != 4) return false;
  uint32_t f1i = f2->operands[0];
  const tp_node *f1 = tp_pattern_op(g, f1i, TOPOS_OP_FOLD);
  if (!f1 || f1->attrs->axis != 4 || f1->desc->rank != 5) return false;
  uint32_t pmi = f1->operands[0];
  const tp_node *pm = tp_pattern_op(g, pmi, TOPOS_OP_PERMUTE);
  static const int order[6] = {0, 3, 1, 4, 2, 5};
  if (!pm || pm->attrs->rank != 6 || memcmp(pm->attrs->order, order, sizeof order) != 0)
    return false;
  uint32_t r6i = pm->operands[0];
  const tp_node *r6 = tp_pattern_op(g, r6i, TOPOS_OP_RESHAPE);
  if (!r6 || r6->desc->rank != 6) return false;
  uint32_t addi = r6->operands[0];
  const tp_node *add = tp_pattern_op(g, addi, TOPOS_OP_ADD);
  if (!add || add->desc->rank != 2 || add->desc->dtype != rs->desc->dtype) return false;
  uint32_t spi = add->operands[0], di = add->operands[1];
  const tp_node *spread = tp_pattern_op(g, spi, TOPOS_OP_BROADCAST);
  if (!spread || g->nodes[spread->operands[0]].desc->rank != 0) return false;
  const tp_node *d = tp_pattern_op(g, di, TOPOS_OP_MATMUL);
  if (!d || d->desc->rank != 2 || d->desc->dtype != add->desc->dtype ||
      d->desc->shape[0] != add->desc->shape[0] || d->desc->shape[1] != add->desc->shape[1])
    return false;
  uint32_t gi = d->operands[0], kti = d->operands[1];
  const tp_node *kt = tp_pattern_op(g, kti, TOPOS_OP_TRANSPOSE);
  if (!kt || g->nodes[gi].desc->rank != 2 || g->nodes[kt->operands[0]].desc->rank != 2) return false;
  const int64_t *s6 = r6->desc->shape;
  *geo = (tp_c2i_geom){s6[0], s6[1], s6[2], s6[3], s6[4], s6[5],
                       f2->attrs->step, f2->attrs->dilation, f1->attrs->step, f1->attrs->dilation,
                       nh->attrs->start, nw->attrs->start, nh->attrs->length, nw->attrs->length};
  if (geo->B * geo->OH * geo->OW != add->desc->shape[0] ||
      geo->C * geo->KH * geo->KW != add->desc->shape[1])
    return false;
  if (geo->sh < 1 || geo->dh < 1 || geo->sw < 1 || geo->dw < 1 || geo->top < 0 || geo->left < 0)
    return false;
  uint32_t members[] = {kti, di, spi, addi, r6i, pmi, f1i, f2i, n2, n1, root};
  uint32_t count = sizeof members / sizeof members[0];
  if (!tp_fusion_take_members(f, members, count, root)) return false;
  f->n_inputs = 3;
  f->inputs[0] = spread->operands[0];
  f->inputs[1] = gi;
  f->inputs[2] = kt->operands[0];
  return true;
}

static bool tp_c2i_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                         tp_fusion *f) {
  (void)evaluated;
  tp_c2i_geom geo;
  return tp_c2i_walk(g, root, f, &geo);
}

typedef struct tp_c2i_job {
  tp_c2i_geom geo;
  const void *d; /* Dᵀ [C*KH*KW, B*OH*OW], contiguous */
  void *out;     /* [B,C,H,W] in row-major order */
  double z;
  atomic_int failed;
} tp_c2i_job;

/* Every element in the composed order (any geometry, f32 or f64). */
#define TP_C2I_GENERAL(T, sfx)                                                                 \
  static void tp_c2i_general_##sfx(const tp_c2i_job *j, int64_t b0, int64_t b1) {              \
    const tp_c2i_geom *q = &j->geo;                                                            \
    const T *d = j->d;                                                                         \
    T *out = j->out, z = (T)j->z;                                                              \
    int64_t cells = q->B * q->OH * q->OW;                                                      \
    for (int64_t b = b0; b < b1; ++b)                                                          \
      for (int64_t c = 0; c < q->C; ++c)                                                       \
        for (int64_t y = 0; y < q->H; ++y)                                                     \
          for (int64_t x = 0; x < q->W; ++x) {                                                 \
            int64_t yp = y + q->top, xp = x + q->left;                                         \
            T acc = 0;                                                                         \
            for (int64_t oh = 0; oh < q->OH; ++oh) {                                           \
              int64_t rh = yp - oh * q->sh;                                                    \
              if (rh < 0) break;                                                               \
              if (rh % q->dh || rh / q->dh >= q->KH) continue;                                 \
              int64_t kh = rh / q->dh;                                                         \
              T t = 0;                                                                         \
              for (int64_t ow = 0; ow < q->OW; ++ow) {                                         \
                int64_t rw = xp - ow * q->sw;                                                  \
                if (rw < 0) break;                                                             \
                if (rw % q->dw || rw / q->dw >= q->KW) continue;                               \
                int64_t kw = rw / q->dw;                                                       \
                T v = d[((c * q->KH + kh) * q->KW + kw) * cells + (b * q->OH + oh) * q->OW + ow]; \
                t += z + v;                                                                    \
              }                                                                                \
              acc += t;                                                                        \
            }                                                                                  \
            out[((b * q->C + c) * q->H + y) * q->W + x] = acc;                                 \
          }                                                                                    \
  }
TP_C2I_GENERAL(float, f32)
TP_C2I_GENERAL(double, f64)

typedef float tp_c2i_v16 __attribute__((vector_size(64)));
enum { TP_C2I_LANES = 16 };

typedef int32_t tp_c2i_m16 __attribute__((vector_size(64)));

/* f32, unit steps and dilations, z == +0: images [b0, b1), a row of x per
 * vector (lanes past W are computed and dropped). */
static void tp_c2i_unit_f32(tp_c2i_job *j, int64_t b0, int64_t b1) {
  const tp_c2i_geom *q = &j->geo;
  const float *d = j->d;
  float *out = j->out;
  int64_t cells = q->B * q->OH * q->OW, total = q->C * q->KH * q->KW * cells;
  int64_t vw = (q->W + TP_C2I_LANES - 1) / TP_C2I_LANES * TP_C2I_LANES;
  int64_t chunks = vw / TP_C2I_LANES;
  /* masks[chunk][kw]: lane x reads ow = x + left - kw, kept when inside [0, OW) */
  tp_c2i_m16 *masks = malloc((size_t)(chunks * q->KW) * sizeof *masks);
  float *acc = malloc((size_t)(q->C * q->H * vw) * sizeof(float));
  if (!masks || !acc) {
    free(masks), free(acc);
    atomic_store(&j->failed, 1);
    return;
  }
  for (int64_t ch = 0; ch < chunks; ++ch)
    for (int64_t kw = 0; kw < q->KW; ++kw)
      for (int l = 0; l < TP_C2I_LANES; ++l) {
        int64_t ow = ch * TP_C2I_LANES + l + q->left - kw;
        masks[ch * q->KW + kw][l] = ow >= 0 && ow < q->OW ? -1 : 0;
      }
  for (int64_t b = b0; b < b1; ++b) {
    memset(acc, 0, (size_t)(q->C * q->H * vw) * sizeof(float));
    for (int64_t c = 0; c < q->C; ++c)
      for (int64_t oh = 0; oh < q->OH; ++oh) /* ascending: each acc row's sum order */
        for (int64_t kh = 0; kh < q->KH; ++kh) {
          int64_t y = oh + kh - q->top;
          if (y < 0 || y >= q->H) continue;
          int64_t run = (b * q->OH + oh) * q->OW; /* ow = 0 of this row in each column */
          const float *col = d + ((c * q->KH + kh) * q->KW) * cells;
          float *arow = acc + (c * q->H + y) * vw;
          for (int64_t ch = 0; ch < chunks; ++ch) {
            tp_c2i_v16 t = {0}, v, a;
            /* ow = xp - kw ascending: kw descending */
            for (int64_t kw = q->KW - 1; kw >= 0; --kw) {
              int64_t at = kw * cells + run + ch * TP_C2I_LANES + q->left - kw;
              const float *src = col + at;
              int64_t from = (c * q->KH + kh) * q->KW * cells + at;
              if (from >= 0 && from + TP_C2I_LANES <= total) {
                memcpy(&v, src, sizeof v);
              } else { /* the buffer's first or last few values: no read outside */
                for (int l = 0; l < TP_C2I_LANES; ++l)
                  v[l] = from + l >= 0 && from + l < total ? src[l] : 0.0f;
              }
              tp_c2i_m16 bits;
              memcpy(&bits, &v, sizeof bits);
              bits &= masks[ch * q->KW + kw];
              memcpy(&v, &bits, sizeof v);
              t += (tp_c2i_v16){0} + v;
            }
            memcpy(&a, arow + ch * TP_C2I_LANES, sizeof a);
            a += t;
            memcpy(arow + ch * TP_C2I_LANES, &a, sizeof a);
          }
        }
    for (int64_t r = 0; r < q->C * q->H; ++r)
      memcpy(out + (b * q->C * q->H + r) * q->W, acc + r * vw, (size_t)q->W * sizeof(float));
  }
  free(masks), free(acc);
}

static bool tp_c2i_unit(const tp_c2i_job *j, bool f32) {
  const tp_c2i_geom *q = &j->geo;
  float z = (float)j->z;
  uint32_t zbits;
  memcpy(&zbits, &z, sizeof zbits);
  return f32 && zbits == 0 && q->sh == 1 && q->dh == 1 && q->sw == 1 && q->dw == 1;
}

static void tp_c2i_range_f32(void *ctx, int64_t b0, int64_t b1) {
  tp_c2i_job *j = ctx;
  if (tp_c2i_unit(j, true))
    tp_c2i_unit_f32(j, b0, b1);
  else
    tp_c2i_general_f32(j, b0, b1);
}

static void tp_c2i_range_f64(void *ctx, int64_t b0, int64_t b1) {
  tp_c2i_general_f64(ctx, b0, b1);
}

typedef struct tp_c2i_lines_job {
  tp_c2i_lines_args args;
  int (*kernel)(const tp_c2i_lines_args *, int64_t, int64_t);
  atomic_int failed;
} tp_c2i_lines_job;

static void tp_c2i_lines_range(void *ctx, int64_t b0, int64_t b1) {
  tp_c2i_lines_job *j = ctx;
  if (j->kernel(&j->args, b0, b1) != 0) atomic_store(&j->failed, 1);
}

/* The lines route (col2im_lines_template.h): D's elements computed in the
 * reference product's order next to their use; true when it ran (*status
 * set), false when the shapes are not its own. */
static bool tp_c2i_lines(const tp_c2i_job *job, topos_tensor *const *inputs, topos_tensor *dst,
                         topos_status *status) {
  const tp_c2i_geom *q = &job->geo;
  if (topos_tensor_dtype(dst) != TOPOS_F32 || !tp_c2i_unit(job, true)) return false;
  tp_c2i_lines_job lj = {{NULL, NULL, topos_tensor_data_mut(dst), q->B, q->OH, q->OW, q->C, q->KH,
                          q->KW, topos_tensor_shape(inputs[1])[1], q->top, q->left, q->H, q->W},
                         tp_c2i_lines_f32_baseline, 0};
  if (!tp_c2i_lines_fit(&lj.args)) return false;
#if defined(__x86_64__)
  if (tp_vector_isa_best() == TP_VECTOR_AVX512)
    lj.kernel = tp_c2i_lines_f32_avx512;
  else if (tp_vector_isa_best() == TP_VECTOR_AVX2)
    lj.kernel = tp_c2i_lines_f32_avx2;
#endif
  topos_tensor *g = NULL, *k = NULL;
  topos_status s = topos_tensor_contiguous(inputs[1], 0, &g);
  if (s == TOPOS_OK) s = topos_tensor_contiguous(inputs[2], 0, &k);
  if (s == TOPOS_OK) {
    lj.args.g = topos_tensor_data(g);
    lj.args.k = topos_tensor_data(k);
    tp_parallel_for(q->B, 1, tp_c2i_lines_range, &lj);
    if (atomic_load(&lj.failed)) s = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "col2im: no scratch");
  }
  topos_tensor_release(g);
  topos_tensor_release(k);
  *status = s;
  return true;
}

static topos_status tp_c2i_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *inputs,
                               topos_tensor *dst, topos_tensor **out) {
  tp_c2i_job job = {0};
  tp_fusion_space walked;
  if (!tp_c2i_walk(g, f->root, tp_fusion_space_init(&walked), &job.geo))
    return tp_fail(TOPOS_ERR_INTERNAL, "col2im: the group no longer matches");
  bool f32 = topos_tensor_dtype(dst) == TOPOS_F32;
  topos_status s = topos_tensor_read_f64(inputs[0], &job.z, 1);
  if (s != TOPOS_OK) return s;
  if (tp_c2i_lines(&job, inputs, dst, &s)) {
    if (s == TOPOS_OK) *out = topos_tensor_retain(dst);
    return s;
  }
  /* Dᵀ = K · Gᵀ: the product's elements, transposed (see top) */
  topos_tensor *gt = NULL, *dt = NULL, *d = NULL;
  if (s == TOPOS_OK) s = topos_tensor_transpose(inputs[1], &gt);
  if (s == TOPOS_OK) {
    topos_tensor *operands[2] = {inputs[2], gt};
    s = tp_op_forward_into(TOPOS_OP_MATMUL, operands, NULL, NULL, &dt);
  }
  if (s == TOPOS_OK) s = topos_tensor_contiguous(dt, 0, &d);
  topos_tensor_release(gt);
  topos_tensor_release(dt);
  if (s != TOPOS_OK) return s;
  job.d = topos_tensor_data(d);
  job.out = topos_tensor_data_mut(dst);
  tp_parallel_for(job.geo.B, 1, f32 ? tp_c2i_range_f32 : tp_c2i_range_f64, &job);
  topos_tensor_release(d);
  if (atomic_load(&job.failed)) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "col2im: no scratch");
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_col2im = {"col2im", tp_c2i_match, tp_c2i_run};

/* the baseline instance of the lines kernel (the ISA files hold the others) */
#define TP_C2I_SUFFIX baseline
#include "engine/col2im_lines_template.h"
