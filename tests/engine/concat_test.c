/* The concat pattern (patterns_concat.c): a sum of pads that tile an axis
 * (one-lane pads, as a max-pool's gradient builds them, or parts of any
 * extent, as topos_tape_concat records them) runs as one pass with the
 * composed bits (+0 for -0, NaN kept), in any order; sums that do not tile
 * the axis stay composed. */
#include <math.h>
#include <string.h>

#include "test.h"

static topos_tensor *tl_tensor(topos_dtype dtype, const int64_t *shape, const double *v) {
  topos_tensor *t = NULL;
  return topos_tensor_from_f64(dtype, 3, shape, v, &t) == TOPOS_OK ? t : NULL;
}

/* Compiles `sum` of net under `numerics`, expects `expect_fused` fused
 * steps, runs the plan and the interpreter and compares their bits; the
 * plan's first 12 values into first (if not NULL). NULL when all holds. */
static const char *tc_plan_matches(topos_network *net, topos_sym sum, topos_numerics numerics,
                                   uint32_t expect_fused, float *first) {
  const char *reason = "compile failed";
  topos_plan *plan = NULL;
  topos_run *ref = NULL, *run = NULL;
  topos_tensor *a = NULL, *b = NULL;
  topos_request r = {.roots = &sum, .n_roots = 1, .numerics = numerics};
  topos_plan_stats st;
  if (topos_plan_compile(net, &r, &plan) != TOPOS_OK || topos_plan_stats_get(plan, &st) != TOPOS_OK)
    goto done;
  reason = "unexpected number of fused steps";
  if (st.fused != expect_fused) goto done;
  reason = "run failed";
  topos_numerics saved = topos_numerics_enter(numerics); /* the interpreter in the plan's posture */
  topos_status forward = topos_network_forward(net, NULL, NULL, 0, NULL, &ref);
  topos_numerics_restore(saved);
  if (forward != TOPOS_OK ||
      topos_plan_forward(plan, NULL, NULL, 0, &run) != TOPOS_OK ||
      topos_run_read(ref, sum, &a) != TOPOS_OK || topos_run_read(run, sum, &b) != TOPOS_OK)
    goto done;
  reason = "plan differs from the interpreter";
  if (!topos_tensor_bits_equal(a, b)) goto done;
  reason = "reading the result failed";
  if (first && topos_tensor_read_f32(b, first, 12) != TOPOS_OK) goto done;
  reason = NULL;
done:
  topos_tensor_release(a);
  topos_tensor_release(b);
  topos_run_free(ref);
  topos_run_free(run);
  topos_plan_free(plan);
  return reason;
}

/* sum of pad(s_k, axis 2, starts[k], extent 3) over k, left to right; plan
 * (Exact) against the interpreter. Returns NULL when all holds. */
static const char *tl_case(topos_dtype dtype, const int64_t *starts, int n, uint32_t expect_fused,
                           float *first_lanes /* 12 values, or NULL */) {
  const char *reason = "setup failed";
  topos_tape *tape = NULL;
  topos_network *net = NULL;
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
  topos_tape_mul(tape, sum, sum); /* a consumer outside the group */
  if (topos_tape_seal(&tape, &net) != TOPOS_OK) goto done;
  reason = tc_plan_matches(net, sum, TOPOS_NUMERICS_EXACT, expect_fused, first_lanes);
done:
  topos_network_free(net);
  topos_tape_free(tape);
  return reason;
}

TEST(plan_concat_of_lanes_fuses_with_the_composed_bits) {
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

TEST(plan_concat_needs_every_lane_once) {
  static const int64_t twice[3] = {0, 1, 1}, short_of_one[2] = {0, 2};
  const char *r = tl_case(TOPOS_F32, twice, 3, 0, NULL);
  CHECK_MSG(!r, "%s", r);
  r = tl_case(TOPOS_F32, short_of_one, 2, 0, NULL);
  CHECK_MSG(!r, "%s", r);
}

/* Parts of extents ext[k] along axis 1 of a [3, L, 5] sum, at starts[k];
 * plan (Exact and Fast) against the interpreter, through topos_tape_concat
 * when `recorded` (its own pad/add spine), else the pads summed in the
 * given order. */
static const char *tc_parts(const int64_t *ext, const int64_t *starts, int n, int64_t L,
                            uint32_t expect_fused, int recorded) {
  const char *reason = "setup failed";
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  if (topos_tape_new(&tape) != TOPOS_OK) goto done;
  topos_sym parts[8], sum = TOPOS_SYM_INVALID;
  for (int k = 0; k < n; ++k) {
    int64_t shape[3] = {3, ext[k], 5};
    double v[3 * 8 * 5];
    for (int i = 0; i < 15 * ext[k]; ++i) v[i] = (i * 37 + k * 11) % 13 == 0 ? -0.0 : (i - 7.5) * (k + 1);
    if (ext[k] > 0) v[0] = k == 1 ? NAN : -0.0;
    topos_tensor *t = NULL;
    if (topos_tensor_from_f64(TOPOS_F32, 3, shape, v, &t) != TOPOS_OK) goto done;
    parts[k] = topos_tape_input(tape, t, NULL);
    topos_tensor_release(t);
    if (!recorded) {
      topos_sym p = topos_tape_pad(tape, parts[k], 1, starts[k], L);
      sum = k == 0 ? p : topos_tape_add(tape, sum, p);
    }
  }
  if (recorded) sum = topos_tape_concat(tape, (size_t)n, parts, 1);
  if (topos_tape_seal(&tape, &net) != TOPOS_OK) goto done;
  reason = tc_plan_matches(net, sum, TOPOS_NUMERICS_EXACT, expect_fused, NULL);
  if (!reason) reason = tc_plan_matches(net, sum, TOPOS_NUMERICS_FAST, expect_fused, NULL);
done:
  topos_network_free(net);
  topos_tape_free(tape);
  return reason;
}

TEST(plan_concat_of_parts_fuses_with_the_composed_bits) {
  /* the attention scores' shape: a long part then a short one; three and
   * four parts summed out of order */
  static const int64_t two[2] = {6, 2}, two_at[2] = {0, 6};
  static const int64_t three[3] = {3, 1, 4}, three_at[3] = {5, 0, 1};
  static const int64_t four[4] = {1, 2, 1, 1}, four_at[4] = {4, 0, 2, 3};
  const char *r = tc_parts(two, two_at, 2, 8, 1, 1);
  CHECK_MSG(!r, "recorded concat: %s", r);
  r = tc_parts(three, three_at, 3, 8, 1, 0);
  CHECK_MSG(!r, "shuffled parts: %s", r);
  r = tc_parts(four, four_at, 4, 5, 1, 0);
  CHECK_MSG(!r, "four parts: %s", r);
}

TEST(plan_concat_needs_parts_that_tile_the_axis) {
  /* an overlap, a gap, a part running past the end: composed, same bits */
  static const int64_t ext[2] = {4, 4}, overlap_at[2] = {0, 3}, gap_at[2] = {0, 5};
  const char *r = tc_parts(ext, overlap_at, 2, 8, 0, 0);
  CHECK_MSG(!r, "overlap: %s", r);
  r = tc_parts(ext, gap_at, 2, 9, 0, 0);
  CHECK_MSG(!r, "gap: %s", r);
}
