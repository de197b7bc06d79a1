/* The recurrent scans over a state (ops.h): ssm_scan, the selective
 * state-space scan of Mamba blocks, and delta_scan, the gated delta rule of
 * gated-DeltaNet blocks (Qwen3-Next, Qwen3.5, Kimi Linear).
 *
 * ssm_scan:
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
 * trajectory this op exists not to keep (backward.c refuses it).
 *
 * delta_scan: state S [K, H, V] (head h's K x V matrix, entry (i, j) at
 * [i, h, j]); vab [T, H, V + R + 1]: per token and head the V values, R
 * decays (exp of the gate: R = 1, one for the head, gated DeltaNet's; R =
 * K, one per key entry, Kimi Delta Attention's) and beta; qk [T, 2, G, K]:
 * q (already scaled) then k of G key heads, head h reading h / (H / G) ->
 * [T + K, H, V]: for t ascending, S[i, :] = a[i] S[i, :]; d = beta (v - S^T
 * k); S = S + k d^T; y = S^T q, each sum in ascending i; rows T + i the
 * final state. The same reasons and the
 * same kernel frame (scan_template.h): the state's columns are independent,
 * so 16 of them are scanned together, packed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
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

/* The two ops' one shape rule: state [N, H, P], inputs [T, H, P + R +
 * extra] with R = 1 or N decays (extra: delta_scan's beta), [T, 2, G, N]
 * (B and C, or q and k) with G dividing H -> [T + N, H, P]. `inputs` and
 * `state` say the shapes in the op's own letters for its message. */
static topos_status tp_scan_shape(const char *op, int64_t extra, const char *inputs, const char *state,
                                  const topos_tensor_desc *in, topos_tensor_desc *out) {
  const topos_tensor_desc *s = &in[0], *xa = &in[1], *bc = &in[2];
  char text[520];
  for (int i = 0; i < 3; ++i)
    if (in[i].dtype != TOPOS_F32)
      return tp_fail(TOPOS_ERR_DTYPE, "%s: operands must be f32, operand %d is %s (%s)", op, i,
                     topos_dtype_name(in[i].dtype), tp_scan_shapes(in, text, sizeof text));
  if (s->rank != 3 || xa->rank != 3 || bc->rank != 4)
    return tp_fail(TOPOS_ERR_SHAPE, "%s: needs state %s, %s: %s", op, state, inputs,
                   tp_scan_shapes(in, text, sizeof text));
  const int64_t N = s->shape[0], H = s->shape[1], P = s->shape[2], T = xa->shape[0], G = bc->shape[2];
  const int64_t R = xa->shape[2] - P - extra;
  if (xa->shape[1] != H || (R != 1 && R != N) || bc->shape[0] != T || bc->shape[1] != 2 || bc->shape[3] != N)
    return tp_fail(TOPOS_ERR_SHAPE, "%s: expects %s for state %s: %s", op, inputs, state,
                   tp_scan_shapes(in, text, sizeof text));
  if (H % G != 0)
    return tp_fail(TOPOS_ERR_SHAPE, "%s: %lld heads do not split into %lld groups (%s)", op, (long long)H,
                   (long long)G, tp_scan_shapes(in, text, sizeof text));
  out->dtype = TOPOS_F32;
  out->rank = 3;
  out->shape[0] = T + N;
  out->shape[1] = H;
  out->shape[2] = P;
  return TOPOS_OK;
}

topos_status tp_shape_ssm_scan(const topos_tensor_desc *in, const topos_op_attrs *attrs, topos_tensor_desc *out) {
  (void)attrs;
  return tp_scan_shape("ssm_scan", 0, "inputs [T, H, P + 1 or P + N] and bc [T, 2, G, N]", "[N, H, P]", in, out);
}

#include "ops/scan_kernel.h"

#define TP_SCAN_ITEMS_FN tp_scan_items_base
#define TP_SCAN_VEC 4 /* SSE2, NEON */
#include "ops/scan_template.h"

/* Either op's forward: the operands made contiguous, the channel blocks of
 * every head in parallel, each reading its state rows from the input and
 * leaving them in the output's state rows (a 128 x 128 state of 32 heads
 * is 2 MB: copied whole first, it was 5 % of a Qwen3.5 token). */
static topos_status tp_scan_forward(const char *op, int delta, topos_tensor *const *in, const topos_tensor_desc *desc,
                                    topos_tensor **out) {
  topos_tensor *s = NULL, *xa = NULL, *bc = NULL, *result = NULL;
  topos_status st = topos_tensor_contiguous(in[0], 0, &s);
  if (st == TOPOS_OK) st = topos_tensor_contiguous(in[1], 0, &xa);
  if (st == TOPOS_OK) st = topos_tensor_contiguous(in[2], 0, &bc);
  if (st == TOPOS_OK) st = tp_new_output(desc, &result);
  if (st == TOPOS_OK) {
    tp_scan_job j = {(const float *)topos_tensor_data(s), (const float *)topos_tensor_data(xa),
                     (const float *)topos_tensor_data(bc), (float *)tp_tensor_base(result), xa->shape[0],
                     s->shape[0], s->shape[1], s->shape[2], xa->shape[2] - s->shape[2] - delta, bc->shape[2], delta};
    /* an item's work is T N (up to 16) multiply-adds twice: ranges of ~64k */
    const int64_t blocks = (j.P + TP_SCAN_LANES - 1) / TP_SCAN_LANES, items = j.H * blocks;
    tp_range_fn items_fn = tp_scan_items_base;
#if defined(__x86_64__)
    if (tp_cpu_has_avx2_set()) items_fn = tp_scan_items_avx2;
#endif
    tp_parallel_for(items, (1 << 16) / (j.T * j.N * TP_SCAN_LANES) + 1, items_fn, &j);
  }
  topos_tensor_release(s);
  topos_tensor_release(xa);
  topos_tensor_release(bc);
  if (st != TOPOS_OK) {
    topos_tensor_release(result);
    return tp_fail_context(st, "%s", op);
  }
  *out = result;
  return TOPOS_OK;
}

topos_status tp_forward_ssm_scan(topos_tensor *const *in, const topos_op_attrs *attrs, const topos_tensor_desc *desc,
                                 topos_tensor **out) {
  (void)attrs;
  return tp_scan_forward("ssm_scan", 0, in, desc, out);
}

/* ---- delta_scan: the gated delta rule (ops.h) */

topos_status tp_shape_delta_scan(const topos_tensor_desc *in, const topos_op_attrs *attrs, topos_tensor_desc *out) {
  (void)attrs;
  return tp_scan_shape("delta_scan", 1, "inputs [T, H, V + 2 or V + K + 1] and qk [T, 2, G, K]", "[K, H, V]", in, out);
}

topos_status tp_forward_delta_scan(topos_tensor *const *in, const topos_op_attrs *attrs, const topos_tensor_desc *desc,
                                   topos_tensor **out) {
  (void)attrs;
  return tp_scan_forward("delta_scan", 1, in, desc, out);
}
