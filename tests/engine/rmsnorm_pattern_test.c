/* The rmsnorm pattern (patterns_rmsnorm.c): the llama graph's RMS
 * normalization as one step with the interpreter's bits under Exact and
 * Fast — a NaN row, a NaN weight (against the NaN row: whose payload), an infinite element, a zero row (0 / sqrt(eps)), huge
 * values whose squares overflow — at 1, 2 and 3 threads; no fusion when the
 * row values are read outside the group. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fusion_util.h"

enum { RN_ROWS = 37, RN_DIM = 70 };

static topos_tensor *rn_tensor(int rank, const int64_t *shape, uint32_t seed, int specials) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  float *v = malloc((size_t)n * sizeof *v);
  if (!v) return NULL;
  for (int64_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 6.0f;
  }
  if (specials == 2) v[9] = -NAN; /* a weight: NaN against row 0's NaN, and against numbers */
  if (specials == 1) {
    v[0 * RN_DIM + 3] = NAN;                               /* row 0: NaN */
    v[1 * RN_DIM + 5] = INFINITY;                          /* row 1: inf */
    for (int k = 0; k < RN_DIM; ++k) v[2 * RN_DIM + k] = 0.0f; /* row 2: zeros */
    v[3 * RN_DIM + 7] = 3e20f;                             /* row 3: square overflows */
    v[4 * RN_DIM] = -0.0f;
  }
  topos_tensor *t = NULL;
  if (topos_tensor_from_f32(TOPOS_F32, rank, shape, v, &t) != TOPOS_OK) t = NULL;
  free(v);
  return t;
}

/* tp_rmsnorm of models/llama_graph.c; `leak` also returns the row values
 * (inv) as a root. */
static const char *rn_case(topos_numerics num, int threads, int leak, int want_fused, int w_nan) {
  const char *reason = "setup failed";
  int64_t xs[2] = {RN_ROWS, RN_DIM}, wsh[1] = {RN_DIM};
  topos_tensor *x = rn_tensor(2, xs, 3, 1), *w = rn_tensor(1, wsh, 11, w_nan ? 2 : 0);
  topos_tape *t = NULL;
  topos_network *net = NULL;
  if (!x || !w || topos_tape_new(&t) != TOPOS_OK) goto done;
  topos_sym xv = topos_tape_input(t, x, "x");
  topos_sym ms = topos_tape_mean_along(t, topos_tape_mul(t, xv, xv), 1);
  topos_sym eps = topos_tape_fill_like(t, ms, 1e-5);
  topos_sym den = topos_tape_sqrt(t, topos_tape_add(t, ms, eps));
  topos_sym inv = topos_tape_div(t, topos_tape_fill_like(t, den, 1.0), den);
  topos_sym y = topos_tape_mul(t, xv, topos_tape_broadcast_along(t, inv, 1, RN_DIM));
  topos_sym roots[2] = {
      topos_tape_mul(t, y, topos_tape_broadcast_along(t, topos_tape_constant(t, w), 0, RN_ROWS)), inv};
  if (topos_tape_seal(&t, &net) != TOPOS_OK) goto done;
  reason = fu_fused_bits(net, roots, leak ? 2 : 1, num, threads, "rmsnorm", want_fused);
done:
  topos_tensor_release(x);
  topos_tensor_release(w);
  topos_network_free(net);
  topos_tape_free(t);
  return reason;
}

TEST(plan_rmsnorm_fuses_with_the_composed_bits) {
  int saved = topos_threads();
  for (int th = 1; th <= 3; ++th) {
    for (int w_nan = 0; w_nan <= 1; ++w_nan) {
      const char *r = rn_case(TOPOS_NUMERICS_EXACT, th, 0, 1, w_nan);
      CHECK_MSG(!r, "exact, %d threads, NaN weight %d: %s", th, w_nan, r);
      r = rn_case(TOPOS_NUMERICS_FAST, th, 0, 1, w_nan);
      CHECK_MSG(!r, "fast, %d threads, NaN weight %d: %s", th, w_nan, r);
    }
  }
  const char *r = rn_case(TOPOS_NUMERICS_EXACT, 2, 1, 0, 0);
  CHECK_MSG(!r, "row values read outside: %s", r);
  topos_set_threads(saved);
}
