/* Pattern "swiglu": the llama feed-forward's gate, silu(x) * u, f32 — as
 * topos_tape_silu records it:
 *   mul(mul(x, div(one, add(one, exp(neg(x))))), u)
 * with `one` a broadcast scalar constant (1 for silu; any value c is taken
 * as it is). Composed, that is six steps and five full-size intermediates;
 * fused, one pass:
 *   t = exp(-x)
 *   y = (x * (c / (c + t))) * u
 * each operation the composed step's single rounding, in the same order and
 * operand order (-ffp-contract=off; a NaN in both operands of a product
 * resolved as the composed step's kernel does). Every element is computed
 * alone: threads split the elements anywhere (which also spreads a decoding
 * step's single row) and never change a bit.
 *
 * Exact: t through the f32 map chain as the exp step runs it (libm expf), so
 * the composed bits. Fast: t by the shared vector exp (base/vexp.h, 1 ulp;
 * the simd rung's exp, so the composed bits wherever that rung serves the
 * exp step), else the map chain. Against the composed steps: t within 1 ulp,
 * so y within 4 ulp (t's error moves c + t by at most as much, and three
 * roundings follow); special values (NaN, +-inf, exp's overflow) the same. */
#include <stdatomic.h>
#include <string.h>

#include "base/error.h"
#include "base/numerics.h"
#include "base/threads.h"
#include "base/vexp.h"
#include "engine/pattern.h"
#include "ops/kernel.h"
#include "topos/backend.h"

/* an f32 op node of kind `op` */
static const tp_node *tp_swiglu_op(const tp_graph *g, uint32_t i, topos_op op) {
  const tp_node *n = tp_pattern_op(g, i, op);
  return n && n->desc->dtype == TOPOS_F32 ? n : NULL;
}

static bool tp_same_shape(const tp_node *a, const tp_node *b) {
  return a->desc->rank == b->desc->rank &&
         memcmp(a->desc->shape, b->desc->shape, (size_t)a->desc->rank * sizeof(int64_t)) == 0;
}

/* silu(x) at node i: mul(x, div(one, add(one, exp(neg(x))))); fills the five
 * member nodes and x, one. */
static bool tp_swiglu_silu(const tp_graph *g, uint32_t i, uint32_t *members, uint32_t *x,
                           uint32_t *one) {
  const tp_node *m = tp_swiglu_op(g, i, TOPOS_OP_MUL);
  if (!m) return false;
  const tp_node *d = tp_swiglu_op(g, m->operands[1], TOPOS_OP_DIV);
  if (!d) return false;
  const tp_node *a = tp_swiglu_op(g, d->operands[1], TOPOS_OP_ADD);
  if (!a || a->operands[0] != d->operands[0]) return false;
  const tp_node *e = tp_swiglu_op(g, a->operands[1], TOPOS_OP_EXP);
  if (!e) return false;
  const tp_node *n = tp_swiglu_op(g, e->operands[0], TOPOS_OP_NEG);
  if (!n || n->operands[0] != m->operands[0]) return false;
  /* `one`: a broadcast of a single value */
  const tp_node *o = tp_pattern_filled(g, d->operands[0]);
  if (!o || o->desc->dtype != TOPOS_F32) return false;
  const tp_node *xs = &g->nodes[m->operands[0]];
  if (xs->desc->dtype != TOPOS_F32 || !tp_same_shape(xs, m) || !tp_same_shape(o, m) ||
      !tp_same_shape(n, m) || !tp_same_shape(e, m) || !tp_same_shape(a, m) || !tp_same_shape(d, m))
    return false;
  members[0] = e->operands[0]; /* neg */
  members[1] = a->operands[1]; /* exp */
  members[2] = d->operands[1]; /* add */
  members[3] = m->operands[1]; /* div */
  members[4] = i;              /* mul */
  *x = m->operands[0];
  *one = d->operands[0];
  return true;
}

static bool tp_swiglu_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root, tp_fusion *f) {
  (void)evaluated;
  const tp_node *r = tp_swiglu_op(g, root, TOPOS_OP_MUL);
  if (!r) return false;
  uint32_t members[6], x, one;
  if (!tp_swiglu_silu(g, r->operands[0], members, &x, &one)) return false;
  const tp_node *u = &g->nodes[r->operands[1]];
  if (u->desc->dtype != TOPOS_F32 || !tp_same_shape(u, r) || !tp_same_shape(&g->nodes[x], r)) return false;
  members[5] = root;
  if (!tp_fusion_take_members(f, members, 6, root)) return false;
  f->n_inputs = 3;
  f->inputs[0] = x;
  f->inputs[1] = r->operands[1];
  f->inputs[2] = one;
  f->overwrites = 1; /* the gate, inputs[0], when this step is its last reader */
  return true;
}

typedef struct tp_swiglu_job {
  const float *x, *u;
  float *y, c;
  int exact;
  atomic_int status;
} tp_swiglu_job;

/* elements [begin, end) */
static void tp_swiglu_range(void *ctx, int64_t begin, int64_t end) {
  tp_swiglu_job *j = ctx;
  const topos_element *f32 = topos_element_of(TOPOS_F32);
  int saved = tp_numerics_enter(j->exact); /* workers do not inherit the posture */
  const float c = j->c;
  topos_status s = TOPOS_OK;
  /* blocks through a stack buffer: element i of y is written after x[i]
   * and u[i] are read, so y may be x's or u's buffer (the plan lets the
   * step write over the gate's, f->overwrites) */
  float e[256];
  for (int64_t b = begin; b < end && s == TOPOS_OK; b += 256) {
    const int64_t n = end - b < 256 ? end - b : 256;
    const float *x = j->x + b, *u = j->u + b;
    float *y = j->y + b;
    for (int64_t i = 0; i < n; ++i) e[i] = -x[i];
    if (j->exact || !tp_vexp_f32(e, e, n)) s = topos_element_map(f32, TOPOS_MAP_EXP, e, e, n);
    if (s != TOPOS_OK) break;
    for (int64_t i = 0; i < n; ++i) {
      const float sig = TP_FIRST_NAN(c, TP_FIRST_NAN(c, e[i], +), /);
      const float g = TP_FIRST_NAN(x[i], sig, *);
      y[i] = TP_FIRST_NAN(g, u[i], *);
    }
  }
  if (s != TOPOS_OK) atomic_store(&j->status, (int)s);
  tp_numerics_leave(saved);
}

static topos_status tp_swiglu_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *inputs,
                                  topos_tensor *dst, topos_tensor **out) {
  (void)f, (void)g;
  topos_tensor *x = NULL, *u = NULL;
  double c = 0.0; /* every element of `one` is this f32 value */
  topos_status s = topos_tensor_contiguous(inputs[0], 0, &x);
  if (s == TOPOS_OK) s = topos_tensor_contiguous(inputs[1], 0, &u);
  if (s == TOPOS_OK) s = tp_pattern_filled_value(inputs[2], &c);
  if (s == TOPOS_OK) {
    tp_swiglu_job job = {topos_tensor_data(x), topos_tensor_data(u), topos_tensor_data_mut(dst), (float)c,
                         tp_numerics_exact(), TOPOS_OK};
    atomic_init(&job.status, TOPOS_OK);
    tp_parallel_for(topos_tensor_volume(dst), 2048, tp_swiglu_range, &job);
    s = (topos_status)atomic_load(&job.status);
    if (s != TOPOS_OK) s = tp_fail(s, "swiglu: the exp map failed");
  }
  topos_tensor_release(x);
  topos_tensor_release(u);
  if (s != TOPOS_OK) return s;
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_swiglu = {"swiglu", tp_swiglu_match, tp_swiglu_run};
