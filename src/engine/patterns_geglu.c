/* Pattern "geglu": the Gemma feed-forward's gate, gelu(a) * u, f32 — as
 * topos_tape_gelu records GELU's tanh form:
 *   aa = a * a; cube = aa * a; m = c1 * cube; inner = a + m;
 *   z = c2 * inner; t = tanh(z); hx = c3 * a; s = c4 + t; g = hx * s;
 *   y = g * u
 * with c1..c4 broadcast scalar constants (0.044715, sqrt(2/pi), 0.5, 1 as
 * recorded; any values are taken as they are). Composed, ten steps and nine
 * full-size intermediates per layer (a decoding step's dispatches add up:
 * 300 a token on a 30-block model); fused, one pass, each operation the
 * composed step's single rounding in the same order and operand order
 * (-ffp-contract=off; NaNs resolved as the composed steps' kernels do).
 * Elements are computed alone: threads split them anywhere and change no
 * bit.
 *
 * Exact: tanh through the f32 map chain as the tanh step runs it (libm
 * tanhf), so the composed bits. Fast: the shared vector tanh (base/vexp.h,
 * at most 2 ulp; the simd rung's tanh, so the composed bits wherever that
 * rung serves the tanh step), else the map chain: libm's tanhf was half of
 * a Gemma prompt's time (SmolLM2 as a gemma file, Q8_0: 64-token prompts
 * 616 tokens/s against 1276 as qwen3). Against the composed steps: t within
 * 2 ulp, so y within 2^-21 (|a u| + |y|) (1 + t cancels where a is very
 * negative: GELU's tanh form loses y's relative precision there anyway);
 * special values the same. */
#include <stdatomic.h>
#include <string.h>

#include "base/error.h"
#include "base/numerics.h"
#include "base/threads.h"
#include "base/vexp.h"
#include "engine/pattern.h"
#include "ops/kernel.h"
#include "topos/backend.h"

/* n is f32 of like's shape */
static bool tp_geglu_like(const tp_node *n, const tp_node *like) {
  return n->desc->dtype == TOPOS_F32 && n->desc->rank == like->desc->rank &&
         memcmp(n->desc->shape, like->desc->shape, (size_t)like->desc->rank * sizeof(int64_t)) == 0;
}

/* node i: an op of kind `op`, f32 of like's shape */
static const tp_node *tp_geglu_op(const tp_graph *g, uint32_t i, topos_op op, const tp_node *like) {
  const tp_node *n = tp_pattern_op(g, i, op);
  return n && tp_geglu_like(n, like) ? n : NULL;
}

/* node i: a broadcast of one f32 value to like's shape */
static bool tp_geglu_scalar(const tp_graph *g, uint32_t i, const tp_node *like) {
  const tp_node *b = tp_pattern_filled(g, i);
  return b && tp_geglu_like(b, like);
}

static bool tp_geglu_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root, tp_fusion *f) {
  (void)evaluated;
  const tp_node *r = tp_pattern_op(g, root, TOPOS_OP_MUL);
  if (!r || r->desc->dtype != TOPOS_F32) return false;
  const tp_node *gl = tp_geglu_op(g, r->operands[0], TOPOS_OP_MUL, r); /* hx * s */
  if (!gl) return false;
  const tp_node *hx = tp_geglu_op(g, gl->operands[0], TOPOS_OP_MUL, r); /* c3 * a */
  const tp_node *s = tp_geglu_op(g, gl->operands[1], TOPOS_OP_ADD, r);  /* c4 + t */
  if (!hx || !s || !tp_geglu_scalar(g, hx->operands[0], r) || !tp_geglu_scalar(g, s->operands[0], r)) return false;
  const uint32_t a = hx->operands[1];
  const tp_node *t = tp_geglu_op(g, s->operands[1], TOPOS_OP_TANH, r);
  if (!t) return false;
  const tp_node *z = tp_geglu_op(g, t->operands[0], TOPOS_OP_MUL, r); /* c2 * inner */
  if (!z || !tp_geglu_scalar(g, z->operands[0], r)) return false;
  const tp_node *inner = tp_geglu_op(g, z->operands[1], TOPOS_OP_ADD, r); /* a + m */
  if (!inner || inner->operands[0] != a) return false;
  const tp_node *m = tp_geglu_op(g, inner->operands[1], TOPOS_OP_MUL, r); /* c1 * cube */
  if (!m || !tp_geglu_scalar(g, m->operands[0], r)) return false;
  const tp_node *cube = tp_geglu_op(g, m->operands[1], TOPOS_OP_MUL, r); /* aa * a */
  if (!cube || cube->operands[1] != a) return false;
  const tp_node *aa = tp_geglu_op(g, cube->operands[0], TOPOS_OP_MUL, r); /* a * a */
  if (!aa || aa->operands[0] != a || aa->operands[1] != a) return false;
  if (!tp_geglu_like(&g->nodes[a], r) || !tp_geglu_like(&g->nodes[r->operands[1]], r)) return false;
  uint32_t members[10] = {cube->operands[0], m->operands[1], inner->operands[1], z->operands[1], t->operands[0],
                          s->operands[1],    gl->operands[0], gl->operands[1],   r->operands[0], root};
  if (!tp_fusion_take_members(f, members, 10, root)) return false;
  f->n_inputs = 6;
  f->inputs[0] = a;
  f->inputs[1] = r->operands[1];
  f->inputs[2] = m->operands[0];  /* c1 */
  f->inputs[3] = z->operands[0];  /* c2 */
  f->inputs[4] = hx->operands[0]; /* c3 */
  f->inputs[5] = s->operands[0];  /* c4 */
  f->overwrites = 1; /* the gate, inputs[0], when this step is its last reader */
  return true;
}

typedef struct tp_geglu_job {
  const float *a, *u;
  float *y, c[4];
  int exact;
  atomic_int status;
} tp_geglu_job;

/* elements [begin, end) */
static void tp_geglu_range(void *ctx, int64_t begin, int64_t end) {
  tp_geglu_job *j = ctx;
  const topos_element *f32 = topos_element_of(TOPOS_F32);
  int saved = tp_numerics_enter(j->exact); /* workers do not inherit the posture */
  const float c1 = j->c[0], c2 = j->c[1], c3 = j->c[2], c4 = j->c[3];
  topos_status st = TOPOS_OK;
  /* blocks through a stack buffer: element i of y is written after a[i]
   * and u[i] are read, so y may be a's buffer (f->overwrites) */
  float z[256];
  for (int64_t b = begin; b < end && st == TOPOS_OK; b += 256) {
    const int64_t n = end - b < 256 ? end - b : 256;
    const float *a = j->a + b, *u = j->u + b;
    float *y = j->y + b;
    for (int64_t i = 0; i < n; ++i) {
      const float aa = TP_FIRST_NAN(a[i], a[i], *);
      const float cube = TP_FIRST_NAN(aa, a[i], *);
      const float inner = TP_FIRST_NAN(a[i], TP_FIRST_NAN(c1, cube, *), +);
      z[i] = TP_FIRST_NAN(c2, inner, *);
    }
    if (j->exact || !tp_vtanh_f32(z, z, n)) st = topos_element_map(f32, TOPOS_MAP_TANH, z, z, n);
    if (st != TOPOS_OK) break;
    for (int64_t i = 0; i < n; ++i) {
      const float hx = TP_FIRST_NAN(c3, a[i], *);
      const float g = TP_FIRST_NAN(hx, TP_FIRST_NAN(c4, z[i], +), *);
      y[i] = TP_FIRST_NAN(g, u[i], *);
    }
  }
  if (st != TOPOS_OK) atomic_store(&j->status, (int)st);
  tp_numerics_leave(saved);
}

static topos_status tp_geglu_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *inputs,
                                 topos_tensor *dst, topos_tensor **out) {
  (void)f, (void)g;
  topos_tensor *a = NULL, *u = NULL;
  double c[4] = {0};
  topos_status s = topos_tensor_contiguous(inputs[0], 0, &a);
  if (s == TOPOS_OK) s = topos_tensor_contiguous(inputs[1], 0, &u);
  for (int k = 0; k < 4 && s == TOPOS_OK; ++k) s = tp_pattern_filled_value(inputs[2 + k], &c[k]);
  if (s == TOPOS_OK) {
    tp_geglu_job job = {topos_tensor_data(a), topos_tensor_data(u), topos_tensor_data_mut(dst),
                        {(float)c[0], (float)c[1], (float)c[2], (float)c[3]}, tp_numerics_exact(), TOPOS_OK};
    atomic_init(&job.status, TOPOS_OK);
    tp_parallel_for(topos_tensor_volume(dst), 2048, tp_geglu_range, &job);
    s = (topos_status)atomic_load(&job.status);
    if (s != TOPOS_OK) s = tp_fail(s, "geglu: the tanh map failed");
  }
  topos_tensor_release(a);
  topos_tensor_release(u);
  if (s != TOPOS_OK) return s;
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_geglu = {"geglu", tp_geglu_match, tp_geglu_run};
