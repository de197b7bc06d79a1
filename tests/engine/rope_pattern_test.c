/* The rope pattern (patterns_rope.c): the llama graph's rotation of adjacent
 * pairs, and qwen2's of pairs half a head apart, as one step, with the interpreter's bits under Exact and Fast — NaN
 * against NaN and against numbers, infinities, -0 (which the concatenation turns
 * into +0) — at 1, 2 and 3 threads; a rotated half read outside the group
 * stays composed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fusion_util.h"

enum { RT_T = 9, RT_H = 3, RT_HALF = 7 };

static topos_tensor *rt_tensor(int rank, const int64_t *shape, uint32_t seed, int specials) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  float *v = malloc((size_t)n * sizeof *v);
  if (!v) return NULL;
  for (int64_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 4.0f;
  }
  /* NaNs of one sign: where two NaNs meet in the sum or the difference, the
   * composed kernels' compiled operand order picks the payload (see
   * patterns_rope.c); NaN against a number, and in the products, is tested */
  if (specials == 1) /* x: NaN pairs, infinities, zeros of both signs */
    v[0] = NAN, v[1] = NAN, v[2] = INFINITY, v[3] = -0.0f, v[4] = -0.0f, v[5] = 0.0f, v[9] = -INFINITY,
    v[6] = -0.0f, v[7] = 0.0f; /* pair 3: y0 = -0 - +0 = -0, which the concatenation makes +0 */
  if (specials == 2) /* a table: NaN against x's NaN, zeros */
    v[0] = NAN, v[1] = 0.0f, v[2] = -0.0f, v[3] = 0.5f, v[5] = NAN;
  if (specials == 3) v[3] = 0.25f; /* the other table, positive at pair 3 */
  topos_tensor *t = NULL;
  if (topos_tensor_from_f32(TOPOS_F32, rank, shape, v, &t) != TOPOS_OK) t = NULL;
  free(v);
  return t;
}

/* tp_rope of models/llama_graph.c over x [T, H, 2 * half] (neox:
 * tp_rope with rope_neox, pairs (x[i], x[i + half])); `leak` also returns y0 as a
 * root (it is then read outside the group: no fusion). */
static const char *rt_case(topos_numerics num, int threads, int leak, int want_fused, int neox) {
  const char *reason = "setup failed";
  int64_t xs[3] = {RT_T, RT_H, 2 * RT_HALF}, ts[3] = {RT_T, RT_HALF, 1};
  topos_tensor *x = rt_tensor(3, xs, 5, 1), *cs = rt_tensor(3, ts, 17, 2), *sn = rt_tensor(3, ts, 29, 3);
  topos_tape *tape = NULL;
  topos_network *net = NULL;
  if (!x || !cs || !sn || topos_tape_new(&tape) != TOPOS_OK) goto done;
  int64_t ps[4] = {RT_T, RT_H, RT_HALF, 2}, os[3] = {RT_T, RT_H, 2 * RT_HALF};
  int64_t pn[4] = {RT_T, RT_H, 2, RT_HALF}, tn[3] = {RT_T, 1, RT_HALF};
  const int h = neox ? 2 : 3;
  topos_sym p = topos_tape_reshape(tape, topos_tape_input(tape, x, "x"), 4, neox ? pn : ps);
  topos_sym x0 = topos_tape_narrow(tape, p, h, 0, 1), x1 = topos_tape_narrow(tape, p, h, 1, 1);
  topos_sym ci = topos_tape_input(tape, cs, "cos"), si = topos_tape_input(tape, sn, "sin");
  if (neox) ci = topos_tape_reshape(tape, ci, 3, tn), si = topos_tape_reshape(tape, si, 3, tn);
  topos_sym c = topos_tape_broadcast_along(tape, ci, 1, RT_H);
  topos_sym s = topos_tape_broadcast_along(tape, si, 1, RT_H);
  topos_sym y0 = topos_tape_sub(tape, topos_tape_mul(tape, x0, c), topos_tape_mul(tape, x1, s));
  topos_sym y1 = topos_tape_add(tape, topos_tape_mul(tape, x0, s), topos_tape_mul(tape, x1, c));
  topos_sym parts[2] = {y0, y1};
  topos_sym roots[2] = {topos_tape_reshape(tape, topos_tape_concat(tape, 2, parts, h), 3, os), y0};
  if (topos_tape_seal(&tape, &net) != TOPOS_OK) goto done;
  reason = fu_fused_bits(net, roots, leak ? 2 : 1, num, threads, "rope", want_fused);
done:
  topos_tensor_release(x);
  topos_tensor_release(cs);
  topos_tensor_release(sn);
  topos_network_free(net);
  topos_tape_free(tape);
  return reason;
}

TEST(plan_rope_fuses_with_the_composed_bits) {
  int saved = topos_threads();
  for (int neox = 0; neox < 2; ++neox) {
    for (int th = 1; th <= 3; ++th) {
      const char *r = rt_case(TOPOS_NUMERICS_EXACT, th, 0, 1, neox);
      CHECK_MSG(!r, "%s, exact, %d threads: %s", neox ? "neox" : "adjacent", th, r);
      r = rt_case(TOPOS_NUMERICS_FAST, th, 0, 1, neox);
      CHECK_MSG(!r, "%s, fast, %d threads: %s", neox ? "neox" : "adjacent", th, r);
    }
    const char *r = rt_case(TOPOS_NUMERICS_EXACT, 2, 1, 0, neox);
    CHECK_MSG(!r, "%s, a half read outside: %s", neox ? "neox" : "adjacent", r);
  }
  topos_set_threads(saved);
}
