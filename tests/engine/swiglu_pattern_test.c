/* The swiglu pattern (patterns_swiglu.c): mul(silu(x), u) as one threaded
 * step with the composed bits under Exact, and under Fast (whose exp may be
 * the vector exp) within 4 ulp of them with the same special values — NaN, infinities, -0
 * and exp overflow (x = -100: exp(100) = inf, 1 / inf = 0) included — at 1,
 * 2 and 3 threads, NaN against NaN in both products (the first operand's
 * wins, as in the composed kernels); a silu read outside the group stays
 * composed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fusion_util.h"

static topos_tensor *tsw_input(int64_t rows, int64_t n, uint32_t seed, int specials) {
  float *v = fu_uniform_f32(rows * n, seed, 20.0f);
  if (!v) return NULL;
  if (specials == 1) { /* x */
    v[0] = NAN, v[1] = INFINITY, v[2] = -INFINITY, v[3] = -0.0f, v[4] = -100.0f, v[5] = 100.0f;
    v[7] = -NAN;
  }
  if (specials == 2) /* u: NaN against x's NaN (whose NaN wins) and against numbers */
    v[0] = -NAN, v[6] = NAN, v[7] = NAN, v[8] = -0.0f;
  return fu_tensor_of(v, rows, n);
}

/* y = silu(x) * u (and silu(x) itself as a second root when `leak`): whether
 * the plan fuses it, and its bits against the interpreter's. */
static const char *tsw_case(topos_numerics num, int threads, int leak, int want_fused) {
  const char *reason = "setup failed";
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_tensor *x = tsw_input(5, 37, 7, 1), *u = tsw_input(5, 37, 99, 2), *a = NULL, *b = NULL;
  int fused = 0;
  if (!x || !u || topos_tape_new(&tape) != TOPOS_OK) goto done;
  topos_sym xs = topos_tape_input(tape, x, "x"), us = topos_tape_input(tape, u, "u");
  topos_sym gate = topos_tape_silu(tape, xs);
  topos_sym roots[2] = {topos_tape_mul(tape, gate, us), gate};
  if (topos_tape_seal(&tape, &net) != TOPOS_OK) goto done;
  reason = fu_plan_and_interpreter(net, roots, leak ? 2 : 1, num, threads, "swiglu", &fused, &b, &a);
  if (reason) goto done;
  reason = "unexpected fusion (or none)";
  if (fused != want_fused) goto done;
  reason = "plan differs from the interpreter";
  if (num == TOPOS_NUMERICS_EXACT && !topos_tensor_bits_equal(a, b)) goto done;
  if (num != TOPOS_NUMERICS_EXACT) { /* 4 ulp, special values alike */
    float va[5 * 37], vb[5 * 37];
    if (topos_tensor_read_f32(a, va, 5 * 37) != TOPOS_OK || topos_tensor_read_f32(b, vb, 5 * 37) != TOPOS_OK)
      goto done;
    reason = "plan outside 4 ulp of the interpreter";
    for (int i = 0; i < 5 * 37; ++i) {
      if (isnan(va[i]) || isnan(vb[i]) || isinf(va[i]) || isinf(vb[i])) {
        if (isnan(va[i]) != isnan(vb[i]) || (!isnan(va[i]) && va[i] != vb[i])) goto done;
        continue;
      }
      if (!(fabsf(va[i] - vb[i]) <= ldexpf(fabsf(va[i]), -22) + ldexpf(1.0f, -126))) goto done;
    }
  }
  reason = NULL;
done:
  topos_tensor_release(x);
  topos_tensor_release(u);
  topos_tensor_release(a);
  topos_tensor_release(b);
  topos_network_free(net);
  topos_tape_free(tape);
  return reason;
}

TEST(plan_swiglu_fuses_with_the_composed_bits) {
  int saved = topos_threads();
  for (int th = 1; th <= 3; ++th) {
    const char *r = tsw_case(TOPOS_NUMERICS_EXACT, th, 0, 1);
    CHECK_MSG(!r, "exact, %d threads: %s", th, r);
    r = tsw_case(TOPOS_NUMERICS_FAST, th, 0, 1);
    CHECK_MSG(!r, "fast, %d threads: %s", th, r);
  }
  const char *r = tsw_case(TOPOS_NUMERICS_EXACT, 2, 1, 0); /* the silu is read: no fusion */
  CHECK_MSG(!r, "silu read outside: %s", r);
  topos_set_threads(saved);
}
