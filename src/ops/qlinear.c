/* qlinear: x[..., k] . w[n, k]^T -> [..., n] (f32), the graph's face of the
 * quantized product (include/topos/qmatmul.h). w stays in its stored type
 * (a GGUF weight is a mapped view: never copied). Under Exact the product's
 * REFERENCE path runs (rows independent, fixed order), under Fast its AUTO
 * path (SIMD kernels where they serve, else the reference). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- qlinear_id: each token's rows through the experts chosen for it */

static const char *tp_qlinear_id_shapes(const topos_tensor_desc *in, char *buf, size_t size) {
  char xs[160], ws[160], is[160];
  snprintf(buf, size, "x %s, experts %s, ids %s", tp_desc_string(&in[0], xs, sizeof xs),
           tp_desc_string(&in[1], ws, sizeof ws), tp_desc_string(&in[2], is, sizeof is));
  return buf;
}

topos_status tp_shape_qlinear_id(const topos_tensor_desc *in, const topos_op_attrs *attrs,
                                 topos_tensor_desc *out) {
  (void)attrs;
  const topos_tensor_desc *x = &in[0], *w = &in[1], *ids = &in[2];
  char text[520];
  if (x->dtype != TOPOS_F32)
    return tp_fail(TOPOS_ERR_DTYPE, "qlinear_id: x must be f32, got %s (%s)",
                   topos_dtype_name(x->dtype), tp_qlinear_id_shapes(in, text, sizeof text));
  if (!tp_linear_weight_ok(w->dtype))
    return tp_fail(TOPOS_ERR_DTYPE, "qlinear_id: no product for experts of type %s (%s)",
                   topos_dtype_name(w->dtype), tp_qlinear_id_shapes(in, text, sizeof text));
  if (ids->dtype != TOPOS_I32)
    return tp_fail(TOPOS_ERR_DTYPE, "qlinear_id: ids must be i32, got %s (%s)",
                   topos_dtype_name(ids->dtype), tp_qlinear_id_shapes(in, text, sizeof text));
  if (x->rank != 3 || w->rank != 3 || ids->rank != 2)
    return tp_fail(TOPOS_ERR_SHAPE, "qlinear_id: needs x [T, S, k], experts [E, n, k] and ids "
                   "[T, K]: %s", tp_qlinear_id_shapes(in, text, sizeof text));
  int64_t T = ids->shape[0], K = ids->shape[1];
  if (x->shape[0] != T || (x->shape[1] != 1 && x->shape[1] != K) || x->shape[2] != w->shape[2])
    return tp_fail(TOPOS_ERR_SHAPE, "qlinear_id: x must be [T, 1 or K, k] for ids [T, K] and "
                   "experts [E, n, k]: %s", tp_qlinear_id_shapes(in, text, sizeof text));
  if (w->shape[2] % topos_dtype_block_size(w->dtype) != 0)
    return tp_fail(TOPOS_ERR_SHAPE, "qlinear_id: rows of %s are not whole blocks (%s)",
                   topos_dtype_name(w->dtype), tp_qlinear_id_shapes(in, text, sizeof text));
  out->dtype = TOPOS_F32;
  out->rank = 3;
  out->shape[0] = T;
  out->shape[1] = K;
  out->shape[2] = w->shape[1];
  return TOPOS_OK;
}

/* Decoding a token whose slots share their input (the experts' gate and
 * up): the K products as the parts of one (topos_qmatmul_multi: the same
 * bits as each alone, one dispatch over all their rows). */
static topos_status tp_qlinear_id_one_row(topos_tensor *const *in, const int32_t *pid, int64_t id_stride,
                                          size_t expert_bytes, const topos_tensor_desc *desc, topos_tensor **out) {
  const int64_t K = desc->shape[1], n = desc->shape[2], k = in[1]->shape[2];
  topos_tensor *x = NULL, *w = NULL, *result = NULL;
  topos_status st = topos_tensor_contiguous(in[0], 0, &x);
  if (st == TOPOS_OK) st = topos_tensor_contiguous(in[1], 0, &w);
  if (st == TOPOS_OK) st = tp_new_output(desc, &result);
  if (st == TOPOS_OK) {
    topos_qmatmul_part parts[8];
    float *py = (float *)tp_tensor_base(result);
    for (int64_t j = 0; j < K; ++j)
      parts[j] = (topos_qmatmul_part){(const char *)topos_tensor_data(w) + (size_t)pid[j * id_stride] * expert_bytes,
                                      w->dtype, n, NULL, py + j * n};
    st = topos_qmatmul_multi((const float *)topos_tensor_data(x), 1, k, parts, (size_t)K,
                             tp_numerics_exact() ? TOPOS_QMATMUL_REFERENCE : TOPOS_QMATMUL_AUTO);
  }
  topos_tensor_release(x);
  topos_tensor_release(w);
  if (st != TOPOS_OK) {
    topos_tensor_release(result);
    return tp_fail_context(st, "qlinear_id");
  }
  *out = result;
  return TOPOS_OK;
}

/* Slots (t, j) are taken expert by expert, ascending, each expert's rows as
 * one product (so a prompt's tokens share the wide kernels); every row's
 * bits are its qlinear row's on the same path, as rows are independent. */
topos_status tp_forward_qlinear_id(topos_tensor *const *in, const topos_op_attrs *attrs,
                                   const topos_tensor_desc *desc, topos_tensor **out) {
  (void)attrs;
  const topos_tensor *ids = in[2];
  int64_t T = ids->shape[0], K = ids->shape[1], E = in[1]->shape[0], n = in[1]->shape[1];
  int64_t k = in[1]->shape[2], S = in[0]->shape[1], slots = T * K;
  if (topos_dtype_is_quantized(in[1]->dtype) && !topos_tensor_is_contiguous(in[1]))
    return tp_fail(TOPOS_ERR_SHAPE, "qlinear_id: block-quantized experts must be packed rows");
  const int32_t *pid = (const int32_t *)ids->storage->data + ids->offset;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < K; ++j) {
      int32_t e = pid[t * ids->strides[0] + j * ids->strides[1]];
      if (e < 0 || e >= E)
        return tp_fail(TOPOS_ERR_RANGE, "qlinear_id: expert %d at ids[%lld, %lld] outside "
                       "[0, %lld)", (int)e, (long long)t, (long long)j, (long long)E);
    }
  size_t expert_bytes;
  TP_TRY(topos_dtype_bytes(in[1]->dtype, n * k, &expert_bytes));
  if (T == 1 && S == 1 && K <= 8) return tp_qlinear_id_one_row(in, pid, ids->strides[1], expert_bytes, desc, out);
  topos_tensor *x = NULL, *w = NULL, *result = NULL;
  int64_t *order = malloc((size_t)(slots + E + 1) * sizeof *order);
  float *a = malloc((size_t)slots * (size_t)k * sizeof *a);
  float *o = malloc((size_t)slots * (size_t)n * sizeof *o);
  topos_status st = order && a && o ? TOPOS_OK
                                    : tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qlinear_id: no memory "
                                              "for %lld slots", (long long)slots);
  if (st == TOPOS_OK) st = topos_tensor_contiguous(in[0], 0, &x);
  if (st == TOPOS_OK) st = topos_tensor_contiguous(in[1], 0, &w);
  if (st == TOPOS_OK) st = tp_new_output(desc, &result);
  if (st == TOPOS_OK) {
    /* counting sort of the slots by expert: start[e] .. start[e + 1] */
    int64_t *start = order + slots;
    for (int64_t e = 0; e <= E; ++e) start[e] = 0;
    for (int64_t s = 0; s < slots; ++s) ++start[pid[(s / K) * ids->strides[0] + (s % K) * ids->strides[1]] + 1];
    for (int64_t e = 0; e < E; ++e) start[e + 1] += start[e];
    int64_t *fill = malloc((size_t)E * sizeof *fill);
    if (!fill) st = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qlinear_id: no memory for %lld experts", (long long)E);
    for (int64_t e = 0; st == TOPOS_OK && e < E; ++e) fill[e] = start[e];
    for (int64_t s = 0; st == TOPOS_OK && s < slots; ++s)
      order[fill[pid[(s / K) * ids->strides[0] + (s % K) * ids->strides[1]]]++] = s;
    free(fill);
    const float *px = (const float *)topos_tensor_data(x);
    float *py = (float *)tp_tensor_base(result);
    const char *pw = (const char *)topos_tensor_data(w);
    topos_qmatmul_path path = tp_numerics_exact() ? TOPOS_QMATMUL_REFERENCE : TOPOS_QMATMUL_AUTO;
    for (int64_t e = 0; st == TOPOS_OK && e < E; ++e) {
      int64_t c = start[e + 1] - start[e];
      if (c == 0) continue;
      const int64_t *rows = order + start[e];
      for (int64_t r = 0; r < c; ++r) {
        int64_t t = rows[r] / K, j = rows[r] % K;
        memcpy(a + r * k, px + (t * S + (S == 1 ? 0 : j)) * k, (size_t)k * sizeof *a);
      }
      st = topos_qmatmul(a, c, k, pw + (size_t)e * expert_bytes, w->dtype, n, NULL, o, path);
      for (int64_t r = 0; st == TOPOS_OK && r < c; ++r)
        memcpy(py + rows[r] * n, o + r * n, (size_t)n * sizeof *o);
    }
  }
  free(order);
  free(a);
  free(o);
  topos_tensor_release(x);
  topos_tensor_release(w);
  if (st != TOPOS_OK) {
    topos_tensor_release(result);
    return tp_fail_context(st, "qlinear_id");
  }
  *out = result;
  return TOPOS_OK;
}
