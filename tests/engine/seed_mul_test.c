/* The seed_mul pattern (patterns_seed.c): add(broadcast(z), mul(a, b)) runs
 * as one pass with the composed bits (the product rounded, then the sum),
 * -0 products, NaN and inf * 0 included; in training plans it takes the
 * sweep's zero + g * mask seeds. */
#include <math.h>
#include <string.h>

#include "test.h"

/* Plan (Exact) of root against the interpreter; fused count checked. */
static const char *ts_compare(topos_tape **tape, topos_sym root, uint32_t expect_fused,
                              topos_tensor **value) {
  const char *reason = "setup failed";
  topos_network *net = NULL;
  topos_plan *plan = NULL;
  topos_run *ref = NULL, *run = NULL;
  topos_tensor *a = NULL;
  if (topos_tape_seal(tape, &net) != TOPOS_OK) goto done;
  topos_request r = {.roots = &root, .n_roots = 1, .numerics = TOPOS_NUMERICS_EXACT};
  if (topos_plan_compile(net, &r, &plan) != TOPOS_OK) goto done;
  topos_plan_stats st;
  if (topos_plan_stats_get(plan, &st) != TOPOS_OK) goto done;
  reason = "unexpected number of fused steps";
  if (st.fused != expect_fused) goto done;
  reason = "run failed";
  if (topos_network_forward(net, NULL, NULL, 0, NULL, &ref) != TOPOS_OK) goto done;
  if (topos_plan_forward(plan, NULL, NULL, 0, &run) != TOPOS_OK) goto done;
  if (topos_run_read(ref, root, &a) != TOPOS_OK || topos_run_read(run, root, value) != TOPOS_OK)
    goto done;
  reason = "plan differs from the interpreter";
  if (!topos_tensor_bits_equal(a, *value)) goto done;
  reason = NULL;
done:
  topos_tensor_release(a);
  topos_run_free(ref);
  topos_run_free(run);
  topos_plan_free(plan);
  topos_network_free(net);
  return reason;
}

static topos_sym ts_input(topos_tape *tape, topos_dtype dt, int rank, const int64_t *shape,
                          const double *v) {
  topos_tensor *t = NULL;
  if (topos_tensor_from_f64(dt, rank, shape, v, &t) != TOPOS_OK) return TOPOS_SYM_INVALID;
  topos_sym s = topos_tape_input(tape, t, NULL);
  topos_tensor_release(t);
  return s;
}

TEST(plan_seed_mul_fuses_with_the_composed_bits) {
  static const double av[8] = {1.0, -1.0, 0.0, INFINITY, NAN, 3.0, 1e-30, -0.1};
  static const double bv[8] = {-0.0, 0.0, -2.0, 0.0, 1.0, 0.1, -1e-30, 0.3};
  const int64_t shape[2] = {2, 4};
  const topos_dtype dts[2] = {TOPOS_F32, TOPOS_F64};
  const double zs[2] = {0.0, 0.5};
  for (int d = 0; d < 2; ++d)
    for (int k = 0; k < 2; ++k) {
      topos_tape *tape = NULL;
      topos_tensor *v = NULL;
      CHECK_OK(topos_tape_new(&tape));
      topos_sym a = ts_input(tape, dts[d], 2, shape, av), b = ts_input(tape, dts[d], 2, shape, bv);
      topos_sym z = topos_tape_broadcast(tape, topos_tape_scalar(tape, dts[d], zs[k]), 2, shape);
      topos_sym root = topos_tape_add(tape, z, topos_tape_mul(tape, a, b));
      const char *r = ts_compare(&tape, root, 1, &v);
      CHECK_MSG(!r, "%s (dtype %d, z %g)", r, (int)dts[d], zs[k]);
      double out[8] = {0};
      if (v) CHECK_OK(topos_tensor_read_f64(v, out, 8));
      if (k == 0 && v) { /* -0 products become +0; inf * 0 is NaN */
        CHECK(out[0] == 0 && !signbit(out[0]) && out[2] == 0 && !signbit(out[2]));
        CHECK(out[3] != out[3] && out[4] != out[4]);
      }
      topos_tensor_release(v);
      topos_tape_free(tape);
    }
}

/* The zero on the right (the sweep always puts the fill left) stays composed. */
TEST(plan_seed_mul_leaves_other_shapes_composed) {
  static const double av[8] = {1, 2, 3, 4, 5, 6, 7, 8}, rv[4] = {1, -1, 2, -2};
  const int64_t shape[2] = {2, 4}, row[1] = {4};
  topos_tape *tape = NULL;
  topos_tensor *v = NULL;
  CHECK_OK(topos_tape_new(&tape));
  topos_sym a = ts_input(tape, TOPOS_F32, 2, shape, av), r = ts_input(tape, TOPOS_F32, 1, row, rv);
  topos_sym z = topos_tape_broadcast(tape, topos_tape_scalar(tape, TOPOS_F32, 0.0), 2, shape);
  topos_sym spread = topos_tape_broadcast_along(tape, r, 0, 2);
  topos_sym root = topos_tape_add(tape, topos_tape_mul(tape, a, spread), z); /* zero on the right */
  const char *reason = ts_compare(&tape, root, 0, &v);
  CHECK_MSG(!reason, "%s", reason);
  topos_tensor_release(v);
  topos_tape_free(tape);
}
