/* Pattern "relu_permuted": relu over a permuted view, as a conv's activation
 * reads its product ([B, OH, OW, C] rows seen as [B, C, OH, OW]):
 *   relu(permute(x))   rank 4, f32 or f64
 * The generic elementwise walk reads the view element by element across
 * the channel stride, on one thread. This step writes the same values
 * (relu(v) = maximum(v, 0), the masked maximum the op itself uses, so the
 * same bits) while reading the source in blocks along its unit-stride axis,
 * threaded over the first axis (each output element written once: the
 * partition does not change any bits). */
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
#include "engine/pattern.h"
#include "ops/kernel.h"

static bool tp_relu_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root,
                          tp_fusion *f) {
  (void)evaluated;
  if (root >= g->count) return false;
  const tp_node *r = &g->nodes[root];
  if (r->kind != TOPOS_NODE_OP || r->op != TOPOS_OP_RELU) return false;
  if ((r->desc->dtype != TOPOS_F32 && r->desc->dtype != TOPOS_F64) || r->desc->rank != 4) return false;
  uint32_t pi = r->operands[0];
  const tp_node *p = &g->nodes[pi];
  if (p->kind != TOPOS_NODE_OP || p->op != TOPOS_OP_PERMUTE || p->desc->dtype != r->desc->dtype)
    return false;
  f->n_members = 1;
  f->members[0] = root;
  f->n_inputs = 1;
  f->inputs[0] = pi; /* the view: its strides say where each element is */
  return true;
}

typedef struct tp_relu_job {
  const void *x;
  void *out;
  int64_t shape[4], xs[4];
  int inner; /* the output axis (1..3) with the smallest source stride */
  bool f32;
} tp_relu_job;

/* Output [N, A, B, C] row-major. Per n, the inner axis `in` (the source's
 * unit-stride one, in a conv's case the channels) runs innermost over a
 * block of up to 64 steps of the output's last axis, so the source is read
 * in order and the writes go to a few streams. */
#define TP_RELU_TILE 2048 /* elements of a block's tile */
#define TP_RELU_KERNEL(T, sfx)                                                              \
  static void tp_relu_rows_##sfx(const tp_relu_job *j, int64_t n0, int64_t n1) {            \
    const T *x = j->x;                                                                      \
    T *out = j->out;                                                                        \
    const int64_t *s = j->shape, *xs = j->xs;                                               \
    const int64_t ostr[4] = {s[1] * s[2] * s[3], s[2] * s[3], s[3], 1};                     \
    int in = j->inner;                                                                      \
    if (in == 3) { /* already in order along the last axis */                              \
      for (int64_t n = n0; n < n1; ++n)                                                     \
        for (int64_t a = 0; a < s[1]; ++a)                                                  \
          for (int64_t b = 0; b < s[2]; ++b) {                                              \
            const T *src = x + n * xs[0] + a * xs[1] + b * xs[2];                           \
            T *dst = out + n * ostr[0] + a * ostr[1] + b * ostr[2];                         \
            for (int64_t c = 0; c < s[3]; ++c) dst[c] = tp_maximum_masked_##T(src[c * xs[3]], 0); \
          }                                                                                 \
      return;                                                                               \
    }                                                                                       \
    int other = in == 1 ? 2 : 1; /* the remaining middle axis */                            \
    /* a block's source is one contiguous run (a conv's [W, C] row): relu'd */              \
    /* in order into a tile (vectorizable), then moved to the output planes */              \
    bool run = xs[in] == 1 && xs[3] == s[in] && s[in] <= TP_RELU_TILE;                       \
    int64_t block = run ? TP_RELU_TILE / s[in] : 64;                                        \
    if (block > 64) block = 64;                                                             \
    T tile[TP_RELU_TILE];                                                                   \
    for (int64_t n = n0; n < n1; ++n)                                                       \
      for (int64_t o = 0; o < s[other]; ++o)                                                \
        for (int64_t c0 = 0; c0 < s[3]; c0 += block) {                                      \
          int64_t cn = s[3] - c0 < block ? s[3] - c0 : block;                               \
          const T *src = x + n * xs[0] + o * xs[other] + c0 * xs[3];                        \
          T *dst = out + n * ostr[0] + o * ostr[other] + c0;                                \
          if (run) {                                                                        \
            int64_t count = cn * s[in];                                                     \
            for (int64_t k = 0; k < count; ++k) tile[k] = tp_maximum_masked_##T(src[k], 0);  \
            for (int64_t c = 0; c < cn; ++c)                                                \
              for (int64_t i = 0; i < s[in]; ++i) dst[i * ostr[in] + c] = tile[c * s[in] + i]; \
            continue;                                                                       \
          }                                                                                 \
          for (int64_t c = 0; c < cn; ++c)                                                  \
            for (int64_t i = 0; i < s[in]; ++i)                                             \
              dst[i * ostr[in] + c] = tp_maximum_masked_##T(src[c * xs[3] + i * xs[in]], 0); \
        }                                                                                   \
  }
TP_RELU_KERNEL(float, f32)
TP_RELU_KERNEL(double, f64)

/* f32, the source's rows [W, C] contiguous with C a multiple of 4 (a conv's
 * product): 4 positions x 4 channels per step — relu on the 4 loaded
 * vectors, a 4x4 transpose, 4 stores of 4 along the output planes.
 * relu as the masked maximum with +0 reduces to: the bits of a where
 * a > 0 or a is NaN, else +0 (-0, negatives, ties at 0) — the same bits. */
typedef float tp_relu_v4 __attribute__((vector_size(16)));
typedef int32_t tp_relu_m4 __attribute__((vector_size(16)));

static inline tp_relu_v4 tp_relu_v4_apply(tp_relu_v4 a) {
  tp_relu_m4 keep = (a > (tp_relu_v4){0}) | (a != a);
  return (tp_relu_v4)((tp_relu_m4)a & keep);
}

static void tp_relu_rows_f32x4(const tp_relu_job *j, int64_t n0, int64_t n1) {
  const float *x = j->x;
  float *out = j->out;
  const int64_t *s = j->shape, *xs = j->xs;
  const int in = j->inner, other = in == 1 ? 2 : 1;
  const int64_t ostr[4] = {s[1] * s[2] * s[3], s[2] * s[3], s[3], 1};
  const int64_t C = s[in], W = s[3], os = ostr[in];
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t o = 0; o < s[other]; ++o) {
      const float *src = x + n * xs[0] + o * xs[other]; /* [W, C] */
      float *dst = out + n * ostr[0] + o * ostr[other]; /* C planes, W along each */
      int64_t w = 0;
      for (; w + 4 <= W; w += 4)
        for (int64_t c = 0; c < C; c += 4) {
          tp_relu_v4 r[4];
          for (int k = 0; k < 4; ++k) {
            memcpy(&r[k], src + (w + k) * C + c, sizeof r[k]);
            r[k] = tp_relu_v4_apply(r[k]);
          }
          tp_relu_v4 lo01 = __builtin_shufflevector(r[0], r[1], 0, 4, 1, 5);
          tp_relu_v4 hi01 = __builtin_shufflevector(r[0], r[1], 2, 6, 3, 7);
          tp_relu_v4 lo23 = __builtin_shufflevector(r[2], r[3], 0, 4, 1, 5);
          tp_relu_v4 hi23 = __builtin_shufflevector(r[2], r[3], 2, 6, 3, 7);
          tp_relu_v4 t0 = __builtin_shufflevector(lo01, lo23, 0, 1, 4, 5);
          tp_relu_v4 t1 = __builtin_shufflevector(lo01, lo23, 2, 3, 6, 7);
          tp_relu_v4 t2 = __builtin_shufflevector(hi01, hi23, 0, 1, 4, 5);
          tp_relu_v4 t3 = __builtin_shufflevector(hi01, hi23, 2, 3, 6, 7);
          memcpy(dst + (c + 0) * os + w, &t0, sizeof t0);
          memcpy(dst + (c + 1) * os + w, &t1, sizeof t1);
          memcpy(dst + (c + 2) * os + w, &t2, sizeof t2);
          memcpy(dst + (c + 3) * os + w, &t3, sizeof t3);
        }
      for (; w < W; ++w)
        for (int64_t c = 0; c < C; ++c) dst[c * os + w] = tp_maximum_masked_float(src[w * C + c], 0);
    }
}

static void tp_relu_range(void *ctx, int64_t n0, int64_t n1) {
  const tp_relu_job *j = ctx;
  if (j->f32 && j->inner != 3 && j->xs[j->inner] == 1 && j->xs[3] == j->shape[j->inner] &&
      j->shape[j->inner] % 4 == 0)
    tp_relu_rows_f32x4(j, n0, n1);
  else if (j->f32)
    tp_relu_rows_f32(j, n0, n1);
  else
    tp_relu_rows_f64(j, n0, n1);
}

static topos_status tp_relu_run(const tp_fusion *f, const tp_graph *graph,
                                topos_tensor *const *inputs, topos_tensor *dst, topos_tensor **out) {
  (void)f, (void)graph;
  tp_relu_job job;
  memset(&job, 0, sizeof job);
  job.f32 = topos_tensor_dtype(dst) == TOPOS_F32;
  if (topos_tensor_rank(inputs[0]) != 4)
    return tp_fail(TOPOS_ERR_INTERNAL, "relu_permuted: the view is not rank 4");
  memcpy(job.shape, topos_tensor_shape(inputs[0]), sizeof job.shape);
  memcpy(job.xs, topos_tensor_strides(inputs[0]), sizeof job.xs);
  job.inner = 3;
  int64_t best = job.xs[3] < 0 ? -job.xs[3] : job.xs[3];
  for (int a = 1; a < 3; ++a) {
    int64_t m = job.xs[a] < 0 ? -job.xs[a] : job.xs[a];
    if (m < best) best = m, job.inner = a;
  }
  job.x = topos_tensor_data(inputs[0]);
  job.out = topos_tensor_data_mut(dst);
  int64_t per = job.shape[1] * job.shape[2] * job.shape[3];
  if (per > 0 && job.shape[0] > 0)
    tp_parallel_for(job.shape[0], ((1 << 14) + per - 1) / per, tp_relu_range, &job);
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_relu_permuted = {"relu_permuted", tp_relu_match, tp_relu_run};
