/* The Fast softmax row, p = exp(x - peak) / s, in vectors: one definition,
 * instanced per ISA by a file that includes the lane operations
 * (base/vlanes_*.h) and defines TP_VMATH_SUFFIX first.
 *
 * The same bits on every ISA and at every vector width: the exp is
 * base/vexp_template.h (lane-independent), and the sum s is defined on 64
 * lanes, not on the registers — element k adds into lane k % 64 in ascending
 * k, then the lanes meet in a fixed halving tree (lane i += lane i + w for
 * w = 32, 16, ..., 1). AVX-512 holds the 64 lanes in 4 registers, AVX2 in 8.
 *
 * Keys past the last finite one (a causal row's masked future) are -inf,
 * whose exp is +0: they are written as +0 and skipped, which adds nothing
 * to any lane. So a row cut after its last live key, as decoding sees it,
 * gives the same bits as the full masked row of a prompt. For the same
 * reason a caller's known run of -inf inside the row (g0, g1: the cache
 * span's unwritten slots) is skipped by whole blocks of 64 at no change. */
#include <math.h>
#include <string.h>

#include "base/vexp_template.h"

#define TP_SMX_LANES 64
#define TP_SMX_NV (TP_SMX_LANES / TP_VW)

int TP_VM_FN(tp_softmax_row_vector_)(const float *x, float *y, int64_t n, int64_t g0, int64_t g1) {
  int64_t live = n;
  while (live > 0 && x[live - 1] == -INFINITY) --live;
  if (live == 0) return 0;
  const int64_t full = live / TP_SMX_LANES * TP_SMX_LANES, rest = live - full;
  /* the whole blocks inside the known -inf run: [skip0, skip1) */
  const int64_t skip0 = (g0 + TP_SMX_LANES - 1) / TP_SMX_LANES * TP_SMX_LANES;
  const int64_t skip1 = (g1 < full ? g1 : full) / TP_SMX_LANES * TP_SMX_LANES;
#define TP_SMX_SKIPPED(k) ((k) >= skip0 && (k) < skip1)
  /* the partial last block, padded with -inf (exp: +0) */
  float pad[TP_SMX_LANES] __attribute__((aligned(64)));
  for (int i = 0; i < TP_SMX_LANES; ++i) pad[i] = i < rest ? x[full + i] : -INFINITY;

  /* peak: max with the running value second, so a NaN key is passed over
   * here (its exp is NaN, which the sum check below catches) */
  TP_V m[TP_SMX_NV];
  for (int v = 0; v < TP_SMX_NV; ++v) m[v] = TP_VSET(-INFINITY);
  for (int64_t k = 0; k < full; k += TP_SMX_LANES)
    if (!TP_SMX_SKIPPED(k))
      for (int v = 0; v < TP_SMX_NV; ++v) m[v] = TP_VMAX(TP_VLOAD(x + k + v * TP_VW), m[v]);
  for (int v = 0; v < TP_SMX_NV; ++v) m[v] = TP_VMAX(TP_VLOAD(pad + v * TP_VW), m[v]);
  /* the peak by a tree (max is exact and m holds no NaN, so any order
   * gives its value; a zero's sign cannot change x - peak's exp), not a
   * chain of 64 dependent scalar maxima: short rows (a prompt's causal
   * rows) spent a third of the softmax there */
  float lanes[TP_SMX_LANES] __attribute__((aligned(64)));
  for (int v = 1; v < TP_SMX_NV; ++v) m[0] = TP_VMAX(m[v], m[0]);
  TP_VSTORE(lanes, m[0]);
  for (int w = TP_VW / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) lanes[i] = lanes[i + w] > lanes[i] ? lanes[i + w] : lanes[i];
  const float peak = lanes[0];
  if (!(peak > -INFINITY && peak < INFINITY)) return 0;

  const TP_V pk = TP_VSET(peak);
  TP_V s[TP_SMX_NV];
  for (int v = 0; v < TP_SMX_NV; ++v) s[v] = TP_VSET(0.0f);
  for (int64_t k = 0; k < full; k += TP_SMX_LANES) {
    if (TP_SMX_SKIPPED(k)) { /* exp(-inf) = +0, which would add nothing */
      for (int v = 0; v < TP_SMX_NV; ++v) TP_VSTORE(y + k + v * TP_VW, TP_VSET(0.0f));
      continue;
    }
    for (int v = 0; v < TP_SMX_NV; ++v) {
      TP_V e = TP_VM_FN(tp_vexp_)(TP_VSUB(TP_VLOAD(x + k + v * TP_VW), pk));
      TP_VSTORE(y + k + v * TP_VW, e);
      s[v] = TP_VADD(s[v], e);
    }
  }
  for (int v = 0; v < TP_SMX_NV; ++v) {
    TP_V e = TP_VM_FN(tp_vexp_)(TP_VSUB(TP_VLOAD(pad + v * TP_VW), pk));
    TP_VSTORE(pad + v * TP_VW, e);
    s[v] = TP_VADD(s[v], e);
  }
  memcpy(y + full, pad, (size_t)rest * sizeof *y);
  /* the halving tree: its levels down to one register's width as vector
   * adds (the same pairs), the rest on the stored lanes */
  for (int w = TP_SMX_NV / 2; w >= 1; w /= 2)
    for (int v = 0; v < w; ++v) s[v] = TP_VADD(s[v], s[v + w]);
  TP_VSTORE(lanes, s[0]);
  for (int w = TP_VW / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) lanes[i] += lanes[i + w];
  const float sum = lanes[0];
  if (!(sum >= 0.5f && sum <= 3.0e38f)) return 0; /* a NaN key */

  const float inv = 1.0f / sum;
  const TP_V vinv = TP_VSET(inv);
  for (int64_t k = 0; k < full; k += TP_VW)
    if (!TP_SMX_SKIPPED(k)) TP_VSTORE(y + k, TP_VMUL(TP_VLOAD(y + k), vinv)); /* skip0, skip1: multiples of 64 */
  for (int64_t k = full; k < live; ++k) y[k] *= inv;
  memset(y + live, 0, (size_t)(n - live) * sizeof *y);
  return 1;
#undef TP_SMX_SKIPPED
}
