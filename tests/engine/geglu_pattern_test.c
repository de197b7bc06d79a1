/* The geglu pattern (patterns_geglu.c): mul(gelu(a), u), GELU's tanh form as
 * topos_tape_gelu records it, as one threaded step with the composed bits
 * under Exact, and under Fast (the vector tanh, 2 ulp) within 2^-21 (|a u| +
 * |y|) of them with the same special values — NaN (either sign, against NaN in u), infinities, -0, large
 * values whose cube overflows — at 1, 2 and 3 threads; a gelu read outside
 * the group stays composed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fusion_util.h"

static topos_tensor *tgg_input(int64_t rows, int64_t n, uint32_t seed, int specials) {
  float *v = fu_uniform_f32(rows * n, seed, 12.0f);
  if (!v) return NULL;
  if (specials == 1) /* a */
    v[0] = NAN, v[1] = INFINITY, v[2] = -INFINITY, v[3] = -0.0f, v[4] = 1e15f, v[5] = -1e15f, v[7] = -NAN;
  if (specials == 2) /* u: NaN against a's NaN and against numbers */
    v[0] = -NAN, v[6] = NAN, v[7] = NAN, v[8] = -0.0f;
  return fu_tensor_of(v, rows, n);
}

/* y = gelu(a) * u (and gelu(a) itself as a second root when `leak`):
 * whether the plan fuses it, and its bits against the interpreter's. */
static const char *tgg_case(topos_numerics num, int threads, int leak, int want_fused) {
  const char *reason = "setup failed";
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_tensor *a = tgg_input(5, 301, 7, 1), *u = tgg_input(5, 301, 99, 2), *p = NULL, *q = NULL;
  int fused = 0;
  if (!a || !u || topos_tape_new(&tape) != TOPOS_OK) goto done;
  topos_sym as = topos_tape_input(tape, a, "a"), us = topos_tape_input(tape, u, "u");
  topos_sym gate = topos_tape_gelu(tape, as);
  topos_sym roots[2] = {topos_tape_mul(tape, gate, us), gate};
  if (topos_tape_seal(&tape, &net) != TOPOS_OK) goto done;
  reason = fu_plan_and_interpreter(net, roots, leak ? 2 : 1, num, threads, "geglu", &fused, &q, &p);
  if (reason) goto done;
  reason = "unexpected fusion (or none)";
  if (fused != want_fused) goto done;
  reason = "plan differs from the interpreter";
  if (num == TOPOS_NUMERICS_EXACT && !topos_tensor_bits_equal(p, q)) goto done;
  if (num != TOPOS_NUMERICS_EXACT) { /* the vector tanh's 2 ulp: within 2^-21 (|a u| + |y|) */
    const int64_t N = 5 * 301;
    float *va = malloc(4 * (size_t)N * sizeof *va);
    float *vb = va ? va + N : NULL, *vx = va ? va + 2 * N : NULL, *vu = va ? va + 3 * N : NULL;
    int ok = va && topos_tensor_read_f32(p, va, N) == TOPOS_OK && topos_tensor_read_f32(q, vb, N) == TOPOS_OK &&
             topos_tensor_read_f32(a, vx, N) == TOPOS_OK && topos_tensor_read_f32(u, vu, N) == TOPOS_OK;
    for (int64_t i = 0; ok && i < N; ++i) {
      if (isnan(va[i]) || isnan(vb[i]) || isinf(va[i]) || isinf(vb[i])) {
        ok = isnan(va[i]) == isnan(vb[i]) && (isnan(va[i]) || va[i] == vb[i]);
        continue;
      }
      const double bound = ldexp(fabs((double)vx[i] * vu[i]) + fabs(va[i]), -21) + ldexp(1.0, -126);
      ok = fabs((double)va[i] - vb[i]) <= bound;
    }
    free(va);
    reason = "plan outside the vector tanh's envelope";
    if (!ok) goto done;
  }
  reason = NULL;
done:
  topos_tensor_release(a);
  topos_tensor_release(u);
  topos_tensor_release(p);
  topos_tensor_release(q);
  topos_network_free(net);
  topos_tape_free(tape);
  return reason;
}

TEST(plan_geglu_fuses_with_the_composed_bits) {
  int saved = topos_threads();
  for (int th = 1; th <= 3; ++th) {
    const char *r = tgg_case(TOPOS_NUMERICS_EXACT, th, 0, 1);
    CHECK_MSG(!r, "exact, %d threads: %s", th, r);
    r = tgg_case(TOPOS_NUMERICS_FAST, th, 0, 1);
    CHECK_MSG(!r, "fast, %d threads: %s", th, r);
  }
  const char *r = tgg_case(TOPOS_NUMERICS_EXACT, 2, 1, 0); /* the gelu is read: no fusion */
  CHECK_MSG(!r, "gelu read outside: %s", r);
  topos_set_threads(saved);
}
