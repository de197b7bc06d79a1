/* Pattern "qlinear_concat": products of one activation row with several
 * weights, concatenated along the last axis,
 *   concat(qlinear(x, w_0), qlinear(x, w_1), ..., qlinear(x, w_p-1))
 * as topos_tape_concat records it (pads tiling the axis, summed left to
 * right: patterns_concat.c) — how a decoding llama plan joins q, k and v,
 * or gate and up, when the file does not store the weights back to back.
 * The step runs the products as one topos_qmatmul_multi: one dispatch over
 * all their rows, so short products (a small model's k and v, 192 rows)
 * share the threads and the threads meet once instead of per product. Each
 * part has the bits of its qlinear (the same path: REFERENCE under Exact,
 * AUTO under Fast), and every output gets the concatenation's + 0 (-0 to +0,
 * NaNs quieted). Matched for x of one row only (decoding); a prompt's
 * products are large enough alone. */
#include <string.h>

#include "base/error.h"
#include "base/numerics.h"
#include "engine/pattern.h"
#include "topos/qmatmul.h"

/* Parts of one dispatch at most (topos_qmatmul_multi's). */
#define TP_QCAT_MAX 8

static bool tp_qcat_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root, tp_fusion *f) {
  (void)evaluated;
  const tp_node *top = tp_pattern_op(g, root, TOPOS_OP_ADD);
  if (!top || top->desc->dtype != TOPOS_F32 || top->desc->rank < 1) return false;
  /* a concatenation along the last axis (its adds and pads, then the
   * products), of qlinears of one activation row */
  uint32_t members[3 * TP_QCAT_MAX], n = 0, n_parts = 0;
  const tp_node *pads[TP_QCAT_MAX];
  if (!tp_concat_parts(g, root, members, 2 * TP_QCAT_MAX, &n, pads, TP_QCAT_MAX, &n_parts)) return false;
  const int rank = top->desc->rank;
  if (pads[0]->attrs->axis != rank - 1) return false;
  const tp_node *p0 = tp_pattern_op(g, pads[0]->operands[0], TOPOS_OP_QLINEAR);
  if (!p0) return false;
  const tp_node *x = &g->nodes[p0->operands[0]];
  int64_t rows = 1;
  for (int i = 0; i + 1 < x->desc->rank; ++i) rows *= x->desc->shape[i];
  if (rows != 1 || x->desc->dtype != TOPOS_F32) return false;
  f->n_inputs = 1 + n_parts;
  f->inputs[0] = p0->operands[0];
  for (uint32_t k = 0; k < n_parts; ++k) { /* by start: the order along the axis */
    const tp_node *product = tp_pattern_op(g, pads[k]->operands[0], TOPOS_OP_QLINEAR);
    if (!product || product->operands[0] != p0->operands[0]) return false;
    members[n++] = pads[k]->operands[0];
    f->inputs[1 + k] = product->operands[1];
  }
  return tp_fusion_take_members(f, members, n, root);
}

static topos_status tp_qcat_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *inputs,
                                topos_tensor *dst, topos_tensor **out) {
  (void)g;
  const uint32_t n_parts = f->n_inputs - 1;
  topos_tensor *x = NULL, *w[TP_QCAT_MAX] = {NULL};
  topos_qmatmul_part parts[TP_QCAT_MAX];
  float *y = topos_tensor_data_mut(dst);
  topos_status s = topos_tensor_contiguous(inputs[0], 0, &x);
  const int64_t k = topos_tensor_shape(inputs[0])[topos_tensor_rank(inputs[0]) - 1];
  int64_t offset = 0;
  for (uint32_t i = 0; i < n_parts && s == TOPOS_OK; ++i) {
    topos_tensor *wi = inputs[1 + i];
    if (topos_dtype_is_quantized(topos_tensor_dtype(wi)) && !topos_tensor_is_contiguous(wi))
      s = tp_fail(TOPOS_ERR_SHAPE, "qlinear: block-quantized w must be packed rows (a view with gaps "
                  "between rows cannot be read)");
    if (s == TOPOS_OK) s = topos_tensor_contiguous(wi, 0, &w[i]);
    if (s != TOPOS_OK) break;
    const int64_t n = topos_tensor_shape(wi)[0];
    parts[i] = (topos_qmatmul_part){topos_tensor_data(w[i]), topos_tensor_dtype(wi), n, NULL, y + offset, NULL};
    offset += n;
  }
  if (s == TOPOS_OK) {
    const topos_qmatmul_path path = tp_numerics_exact() ? TOPOS_QMATMUL_REFERENCE : TOPOS_QMATMUL_AUTO;
    s = topos_qmatmul_multi(topos_tensor_data(x), 1, k, parts, n_parts, path);
    if (s != TOPOS_OK) s = tp_fail_context(s, "qlinear");
  }
  if (s == TOPOS_OK) /* the concatenation's + 0 */
    for (int64_t i = 0; i < offset; ++i) y[i] = y[i] + 0.0f;
  topos_tensor_release(x);
  for (uint32_t i = 0; i < n_parts; ++i) topos_tensor_release(w[i]);
  if (s != TOPOS_OK) return s;
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_qlinear_concat = {"qlinear_concat", tp_qcat_match, tp_qcat_run};
