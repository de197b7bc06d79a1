/* qlinear: x[..., k] . w[n, k]^T -> [..., n] (f32), the graph's face of the
 * quantized product (include/topos/qmatmul.h). w stays in its stored type
 * (a GGUF weight is a mapped view: never copied). Under Exact the product's
 * REFERENCE path runs (rows independent, fixed order), under Fast its AUTO
 * path (SIMD kernels where they serve, else the reference). */
#include <stdio.h>

#include "base/numerics.h"
#include "ops/kernel.h"
#include "topos/qmatmul.h"

static int tp_linear_weight_ok(topos_dtype t) {
  switch (t) {
    case TOPOS_F32: case TOPOS_F16: case TOPOS_BF16: case TOPOS_Q8_0: case TOPOS_Q4_0:
    case TOPOS_Q4_1: case TOPOS_Q5_0: case TOPOS_Q5_1: case TOPOS_Q2_K: case TOPOS_Q3_K:
    case TOPOS_Q4_K: case TOPOS_Q5_K: case TOPOS_Q6_K:
      return 1;
    default:
      return 0;
  }
}

/* "x . w^T" with both shapes, for a message (formatted only on failure:
 * shape inference runs at every step of a plan). */
static const char *tp_qlinear_shapes(const topos_tensor_desc *x, const topos_tensor_desc *w, char *buf,
                                     size_t size) {
  char xs[160], ws[160];
  snprintf(buf, size, "%s . %s^T", tp_desc_string(x, xs, sizeof xs), tp_desc_string(w, ws, sizeof ws));
  return buf;
}

topos_status tp_shape_qlinear(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                             topos_tensor_desc *out) {
  (void)attrs;
  const topos_tensor_desc *x = &in[0], *w = &in[1];
  char text[340];
  if (x->dtype != TOPOS_F32)
    return tp_fail(TOPOS_ERR_DTYPE, "qlinear: x must be f32, got %s (%s)", topos_dtype_name(x->dtype),
                   tp_qlinear_shapes(x, w, text, sizeof text));
  if (!tp_linear_weight_ok(w->dtype))
    return tp_fail(TOPOS_ERR_DTYPE, "qlinear: no product for weights of type %s (%s)",
                   topos_dtype_name(w->dtype), tp_qlinear_shapes(x, w, text, sizeof text));
  if (x->rank < 1 || w->rank != 2)
    return tp_fail(TOPOS_ERR_SHAPE, "qlinear: needs x of rank >= 1 and w of rank 2: %s",
                   tp_qlinear_shapes(x, w, text, sizeof text));
  if (x->shape[x->rank - 1] != w->shape[1])
    return tp_fail(TOPOS_ERR_SHAPE, "qlinear: inner extents differ: %s",
                   tp_qlinear_shapes(x, w, text, sizeof text));
  if (w->shape[1] % topos_dtype_block_size(w->dtype) != 0)
    return tp_fail(TOPOS_ERR_SHAPE, "qlinear: rows of %s are not whole blocks (%s)",
                   topos_dtype_name(w->dtype), tp_qlinear_shapes(x, w, text, sizeof text));
  *out = *x;
  out->dtype = TOPOS_F32;
  out->shape[x->rank - 1] = w->shape[0];
  return TOPOS_OK;
}

topos_status tp_forward_qlinear(topos_tensor *const *in, const topos_op_attrs *attrs,
                               const topos_tensor_desc *desc, topos_tensor **out) {
  (void)attrs;
  topos_tensor *x = NULL, *w = NULL, *result = NULL;
  if (topos_dtype_is_quantized(in[1]->dtype) && !topos_tensor_is_contiguous(in[1]))
    return tp_fail(TOPOS_ERR_SHAPE, "qlinear: block-quantized w must be packed rows (a view "
                   "with gaps between rows cannot be read)");
  /* Packed rows are what the product reads; views of activations (a
   * transposed float w in a backward rule) are made dense first. */
  TP_TRY(topos_tensor_contiguous(in[0], 0, &x));
  topos_status st = topos_tensor_contiguous(in[1], 0, &w);
  if (st == TOPOS_OK) st = tp_new_output(desc, &result);
  if (st == TOPOS_OK) {
    int64_t k = in[1]->shape[1], n = in[1]->shape[0];
    int64_t m = x->volume / k;
    topos_qmatmul_path path = tp_numerics_exact() ? TOPOS_QMATMUL_REFERENCE : TOPOS_QMATMUL_AUTO;
    st = topos_qmatmul((const float *)topos_tensor_data(x), m, k, topos_tensor_data(w),
                       w->dtype, n, NULL, (float *)tp_tensor_base(result), path);
  }
  topos_tensor_release(x);
  topos_tensor_release(w);
  if (st != TOPOS_OK) {
    topos_tensor_release(result);
    return tp_fail_context(st, "qlinear");
  }
  *out = result;
  return TOPOS_OK;
}
