/* ssm_scan: the selective state-space scan of Mamba blocks (ops.h).
 *
 *   s [N, H, P]  the state before the chunk: N state entries for each of H
 *                heads' P channels
 *   xa [T, H, P + R]  per token and head: the P inputs already scaled by
 *                the time step (x dt), then R decays (R = 1: one per head,
 *                Mamba-2's exp(dt A); R = N: one per state entry, Mamba-1's)
 *   bc [T, 2, G, N]  per token: B then C, G groups of N; head h reads group
 *                h / (H / G)
 *   -> [T + N, H, P]: rows t < T the outputs y, rows T + n the final state.
 *
 * For t ascending: s[n, h, p] = s[n, h, p] * a + B[n] * xa[t, h, p], then
 * y[t, h, p] = C[0] s[0, h, p] + C[1] s[1, h, p] + ... in ascending n. A
 * token's arithmetic is the same whatever chunk it is in, so running a
 * sequence in pieces (each piece's final state the next one's s) gives the
 * bits of running it whole: decoding a Mamba model token by token equals its
 * prompt's forward.
 *
 * Why one op with packed operands: the recurrence cannot be written with the
 * elementwise ops without the whole [T, N, H, P] trajectory (a 512-token
 * chunk of a 3072-channel, 128-state block would be 800 MB), and ops take at
 * most three operands, so x dt and the decays travel together (as the
 * graph computes them from the same dt), and B and C together (as the
 * block's projection lays them out). No gradient: the adjoint needs the
 * trajectory this op exists not to keep (backward.c refuses it). */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/threads.h"
#include "ops/kernel.h"
#include "ops/op_table.h"

static const char *tp_scan_shapes(const topos_tensor_desc *in, char *buf, size_t size) {
  char s[160], x[160], b[160];
  snprintf(buf, size, "state %s, inputs %s, bc %s", tp_desc_string(&in[0], s, sizeof s),
           tp_desc_string(&in[1], x, sizeof x), tp_desc_string(&in[2], b, sizeof b));
  return buf;
}

topos_status tp_shape_ssm_scan(const topos_tensor_desc *in, const topos_op_attrs *attrs, topos_tensor_desc *out) {
  (void)attrs;
  const topos_tensor_desc *s = &in[0], *xa = &in[1], *bc = &in[2];
  char text[520];
  for (int i = 0; i < 3; ++i)
    if (in[i].dtype != TOPOS_F32)
      return tp_fail(TOPOS_ERR_DTYPE, "ssm_scan: operands must be f32, operand %d is %s (%s)", i,
                     topos_dtype_name(in[i].dtype), tp_scan_shapes(in, text, sizeof text));
  if (s->rank != 3 || xa->rank != 3 || bc->rank != 4)
    return tp_fail(TOPOS_ERR_SHAPE, "ssm_scan: needs state [N, H, P], inputs [T, H, P + R] and bc [T, 2, G, N]: %s",
                   tp_scan_shapes(in, text, sizeof text));
  const int64_t N = s->shape[0], H = s->shape[1], P = s->shape[2], T = xa->shape[0], G = bc->shape[2];
  const int64_t R = xa->shape[2] - P;
  if (xa->shape[1] != H || (R != 1 && R != N) || bc->shape[0] != T || bc->shape[1] != 2 || bc->shape[3] != N)
    return tp_fail(TOPOS_ERR_SHAPE, "ssm_scan: inputs must be [T, H, P + 1 or P + N] and bc [T, 2, G, N] for state "
                   "[N, H, P]: %s", tp_scan_shapes(in, text, sizeof text));
  if (H % G != 0)
    return tp_fail(TOPOS_ERR_SHAPE, "ssm_scan: %lld heads do not split into %lld groups (%s)", (long long)H,
                   (long long)G, tp_scan_shapes(in, text, sizeof text));
  out->dtype = TOPOS_F32;
  out->rank = 3;
  out->shape[0] = T + N;
  out->shape[1] = H;
  out->shape[2] = P;
  return TOPOS_OK;
}

typedef struct tp_scan_job {
  const float *xa, *bc;
  float *out; /* [T + N, H, P]: the state rows start at T */
  int64_t T, N, H, P, R, G;
} tp_scan_job;

/* Heads [h0, h1): each owns its state columns and output columns. */
static void tp_scan_heads(void *ctx, int64_t h0, int64_t h1) {
  const tp_scan_job *j = ctx;
  const int64_t T = j->T, N = j->N, H = j->H, P = j->P, R = j->R, G = j->G, W = P + R;
  float *state = j->out + T * H * P;
  for (int64_t h = h0; h < h1; ++h) {
    const int64_t g = h / (H / G);
    for (int64_t t = 0; t < T; ++t) {
      const float *u = j->xa + (t * H + h) * W, *decay = u + P;
      const float *b = j->bc + (t * 2 * G + g) * N, *c = b + G * N;
      float *y = j->out + (t * H + h) * P;
      for (int64_t n = 0; n < N; ++n) {
        float *sn = state + (n * H + h) * P;
        const float a = decay[R == 1 ? 0 : n], bn = b[n], cn = c[n];
        for (int64_t p = 0; p < P; ++p) sn[p] = sn[p] * a + bn * u[p];
        if (n == 0) {
          for (int64_t p = 0; p < P; ++p) y[p] = cn * sn[p];
        } else {
          for (int64_t p = 0; p < P; ++p) y[p] = y[p] + cn * sn[p];
        }
      }
    }
  }
}

topos_status tp_forward_ssm_scan(topos_tensor *const *in, const topos_op_attrs *attrs, const topos_tensor_desc *desc,
                                 topos_tensor **out) {
  (void)attrs;
  topos_tensor *s = NULL, *xa = NULL, *bc = NULL, *result = NULL;
  topos_status st = topos_tensor_contiguous(in[0], 0, &s);
  if (st == TOPOS_OK) st = topos_tensor_contiguous(in[1], 0, &xa);
  if (st == TOPOS_OK) st = topos_tensor_contiguous(in[2], 0, &bc);
  if (st == TOPOS_OK) st = tp_new_output(desc, &result);
  if (st == TOPOS_OK) {
    tp_scan_job j = {(const float *)topos_tensor_data(xa), (const float *)topos_tensor_data(bc),
                     (float *)tp_tensor_base(result), xa->shape[0], s->shape[0], s->shape[1], s->shape[2],
                     xa->shape[2] - s->shape[2], bc->shape[2]};
    memcpy(j.out + j.T * j.H * j.P, topos_tensor_data(s), (size_t)s->volume * sizeof(float));
    /* a head's work is T N P multiply-adds twice: split by heads, ~64k each */
    const int64_t per_head = j.T * j.N * j.P;
    tp_parallel_for(j.H, per_head > 0 ? (1 << 16) / per_head + 1 : 1, tp_scan_heads, &j);
  }
  topos_tensor_release(s);
  topos_tensor_release(xa);
  topos_tensor_release(bc);
  if (st != TOPOS_OK) {
    topos_tensor_release(result);
    return tp_fail_context(st, "ssm_scan");
  }
  *out = result;
  return TOPOS_OK;
}
