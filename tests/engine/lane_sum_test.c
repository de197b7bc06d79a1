/* The lane_sum pattern (patterns_lanes.c): a sum of one-lane pads that fill
 * every lane once runs as one pass with the composed bits (+0 for -0, NaN
 * kept), in any lane order; sums that do not tile the lanes stay composed. */
#include <math.h>
#include <string.h>

#include "test.h"

static topos_tensor *tl_tensor(topos_dtype dtype, const int64_t *shape, const double *v) {
  topos_tensor *t = NULL;
  return topos_tensor_from_f64(dtype, 3, shape, v, &t) == TOPOS_OK ? t : NULL;
}

/* sum of pad(s_k, axis 2, starts[k], extent 3) over k, left to right; plan
 * (Exact) against the interpreter. Returns NULL when all holds. */
static const char *tl_case(topos_dtype dtype, const int64_t *starts, int n, uint32_t expect_fused,
                           float *first_lanes /* 12 values, or NULL */) {
  const char *reason = "setup failed";
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  topos_plan *plan = NULL;
  topos_run *ref = NULL, *run = NULL;
  topos_tensor *a = NULL, *b = NULL;
  const int64_t shape[3] = {2, 2, 1};
  static const double v[3][4] = {{-0.0, 1.5, NAN, -2.0}, {3.0, -0.0, -INFINITY, 0.25},
                                 {0.0, -7.0, 1e-30, -0.0}};
  if (topos_tape_new(&tape) != TOPOS_OK) goto done;
  topos_sym sum = TOPOS_SYM_INVALID;
  for (int k = 0; k < n; ++k) {
    topos_tensor *t = tl_tensor(dtype, shape, v[k % 3]);
    topos_sym s = topos_tape_input(tape, t, NULL);
    topos_tensor_release(t);
    topos_sym lane = topos_tape_pad(tape, s, 2, starts[k], 3);
    sum = k == 0 ? lane : topos_tape_add(tape, sum, lane);
  }
  topos_sym root = topos_tape_mul(tape, sum, sum); /* a consumer outside the group */
  if (topos_tape_seal(&tape, &net) != TOPOS_OK) goto done;
  topos_request r = {.roots = &sum, .n_roots = 1, .numerics = TOPOS_NUMERICS_EXACT};
  (void)root;
  if (topos_plan_compile(net, &r, &plan) != TOPOS_OK) goto done;
  topos_plan_stats st;
  if (topos_plan_stats_get(plan, &st) != TOPOS_OK) goto done;
  reason = "unexpected number of fused steps";
  if (st.fused != expect_fused) goto done;
  reason = "run failed";
  if (topos_network_forward(net, NULL, NULL, 0, NULL, &ref) != TOPOS_OK) goto done;
  if (topos_plan_forward(plan, NULL, NULL, 0, &run) != TOPOS_OK) goto done;
  if (topos_run_read(ref, sum, &a) != TOPOS_OK || topos_run_read(run, sum, &b) != TOPOS_OK)
    goto done;
  reason = "plan differs from the interpreter";
  if (!topos_tensor_bits_equal(a, b)) goto done;
  reason = "reading the result failed";
  if (first_lanes && topos_tensor_read_f32(b, first_lanes, 12) != TOPOS_OK) goto done;
  reason = NULL;
done:
  topos_tensor_release(a);
  topos_tensor_release(b);
  topos_run_free(ref);
  topos_run_free(run);
  topos_plan_free(plan);
  topos_network_free(net);
  topos_tape_free(tape);
  return reason;
}

TEST(plan_lane_sum_fuses_with_the_composed_bits) {
  static const int64_t in_order[3] = {0, 1, 2}, shuffled[3] = {2, 0, 1};
  float lanes[12];
  const char *r = tl_case(TOPOS_F32, in_order, 3, 1, lanes);
  CHECK_MSG(!r, "%s", r);
  /* element 0 of each source at lanes 0,1,2: -0 became +0 */
  CHECK(lanes[0] == 0 && !signbit(lanes[0]));
  CHECK(lanes[1] == 3.0f && lanes[2] == 0 && !signbit(lanes[2]));
  r = tl_case(TOPOS_F32, shuffled, 3, 1, NULL);
  CHECK_MSG(!r, "%s", r);
  r = tl_case(TOPOS_F64, shuffled, 3, 1, NULL);
  CHECK_MSG(!r, "%s", r);
  r = tl_case(TOPOS_BF16, in_order, 3, 0, NULL); /* f32 and f64 only */
  CHECK_MSG(!r, "%s", r);
}

TEST(plan_lane_sum_needs_every_lane_once) {
  static const int64_t twice[3] = {0, 1, 1}, short_of_one[2] = {0, 2};
  const char *r = tl_case(TOPOS_F32, twice, 3, 0, NULL);
  CHECK_MSG(!r, "%s", r);
  r = tl_case(TOPOS_F32, short_of_one, 2, 0, NULL);
  CHECK_MSG(!r, "%s", r);
}
