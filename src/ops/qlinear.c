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
    case TOPOS_Q4_K: case TOPOS_Q5_K: case TOPOS_Q6_K: case TOPOS_MXFP4:
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

/* qlinear's and qlinear_id's products: the reference path under Exact, else AUTO */
static topos_qmatmul_path tp_linear_path(void) {
  return tp_numerics_exact() ? TOPOS_QMATMUL_REFERENCE : TOPOS_QMATMUL_AUTO;
}

/* Releases the packed operands; on success *out = result, else result too
 * and the failure in the op's name. */
static topos_status tp_linear_finish(const char *op, topos_status st, topos_tensor *x, topos_tensor *w,
                                     topos_tensor *result, topos_tensor **out) {
  topos_tensor_release(x);
  topos_tensor_release(w);
  if (st != TOPOS_OK) {
    topos_tensor_release(result);
    return tp_fail_context(st, "%s", op);
  }
  *out = result;
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
    st = topos_qmatmul((const float *)topos_tensor_data(x), m, k, topos_tensor_data(w),
                       w->dtype, n, NULL, (float *)tp_tensor_base(result), tp_linear_path());
  }
  return tp_linear_finish("qlinear", st, x, w, result, out);
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

/* The products of x [T, S, k] (px) through experts w (pw, expert_bytes
 * apart) for the slots whose experts are eid[T K], into y [T K, n].
 * Decoding a token: the K products as the parts of one (topos_qmatmul_multi,
 * each part on its slot's input: the same bits as each alone, one dispatch
 * over all their rows). Otherwise expert
 * by expert, ascending, each expert's rows gathered into one product (so a
 * prompt's tokens share the wide kernels): every row's bits are its qlinear
 * row's on the same path, as rows are independent. */
static topos_status tp_qlinear_id_products(const float *px, const char *pw, size_t expert_bytes, topos_dtype wtype,
                                           const int32_t *eid, int64_t T, int64_t K, int64_t S, int64_t E,
                                           int64_t n, int64_t k, float *py) {
  const int64_t slots = T * K;
  if (T == 1 && K <= 8) {
    topos_qmatmul_part parts[8];
    for (int64_t j = 0; j < K; ++j)
      parts[j] = (topos_qmatmul_part){pw + (size_t)eid[j] * expert_bytes, wtype, n, NULL, py + j * n,
                                      px + (S == 1 ? 0 : j) * k};
    return topos_qmatmul_multi(px, 1, k, parts, (size_t)K, tp_linear_path());
  }
  /* a counting sort of the slots by expert: order[start[e] .. start[e + 1]) */
  int64_t *start = calloc((size_t)(2 * E + 1), sizeof *start), *fill = start + E + 1;
  int64_t *order = malloc((size_t)slots * sizeof *order);
  if (!start || !order) {
    free(start);
    free(order);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "no memory to sort %lld slots", (long long)slots);
  }
  int64_t most = 0;
  for (int64_t s = 0; s < slots; ++s) ++start[eid[s] + 1];
  for (int64_t e = 0; e < E; ++e) {
    most = start[e + 1] > most ? start[e + 1] : most;
    start[e + 1] += start[e];
    fill[e] = start[e];
  }
  for (int64_t s = 0; s < slots; ++s) order[fill[eid[s]]++] = s;
  float *a = malloc((size_t)most * (size_t)k * sizeof *a), *o = malloc((size_t)most * (size_t)n * sizeof *o);
  topos_status st = a && o ? TOPOS_OK
                           : tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "no memory for an expert's %lld rows", (long long)most);
  for (int64_t e = 0; st == TOPOS_OK && e < E; ++e) {
    const int64_t c = start[e + 1] - start[e], *rows = order + start[e];
    if (c == 0) continue;
    for (int64_t r = 0; r < c; ++r) {
      const int64_t t = rows[r] / K, j = rows[r] % K;
      memcpy(a + r * k, px + (t * S + (S == 1 ? 0 : j)) * k, (size_t)k * sizeof *a);
    }
    st = topos_qmatmul(a, c, k, pw + (size_t)e * expert_bytes, wtype, n, NULL, o, tp_linear_path());
    for (int64_t r = 0; st == TOPOS_OK && r < c; ++r) memcpy(py + rows[r] * n, o + r * n, (size_t)n * sizeof *o);
  }
  free(start);
  free(order);
  free(a);
  free(o);
  return st;
}

topos_status tp_forward_qlinear_id(topos_tensor *const *in, const topos_op_attrs *attrs,
                                   const topos_tensor_desc *desc, topos_tensor **out) {
  (void)attrs;
  const topos_tensor *ids = in[2];
  const int64_t T = ids->shape[0], K = ids->shape[1], E = in[1]->shape[0], n = in[1]->shape[1];
  const int64_t k = in[1]->shape[2], S = in[0]->shape[1];
  if (topos_dtype_is_quantized(in[1]->dtype) && !topos_tensor_is_contiguous(in[1]))
    return tp_fail(TOPOS_ERR_SHAPE, "qlinear_id: block-quantized experts must be packed rows");
  size_t expert_bytes;
  TP_TRY(topos_dtype_bytes(in[1]->dtype, n * k, &expert_bytes));
  int32_t *eid = malloc((size_t)(T * K) * sizeof *eid); /* the ids, checked, row-major */
  if (!eid) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "qlinear_id: no memory for %lld ids", (long long)(T * K));
  const int32_t *pid = (const int32_t *)ids->storage->data + ids->offset;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < K; ++j) {
      const int32_t e = eid[t * K + j] = pid[t * ids->strides[0] + j * ids->strides[1]];
      if (e < 0 || e >= E) {
        free(eid);
        return tp_fail(TOPOS_ERR_RANGE, "qlinear_id: expert %d at ids[%lld, %lld] outside [0, %lld)", (int)e,
                       (long long)t, (long long)j, (long long)E);
      }
    }
  topos_tensor *x = NULL, *w = NULL, *result = NULL;
  topos_status st = topos_tensor_contiguous(in[0], 0, &x);
  if (st == TOPOS_OK) st = topos_tensor_contiguous(in[1], 0, &w);
  if (st == TOPOS_OK) st = tp_new_output(desc, &result);
  if (st == TOPOS_OK)
    st = tp_qlinear_id_products((const float *)topos_tensor_data(x), (const char *)topos_tensor_data(w),
                                expert_bytes, w->dtype, eid, T, K, S, E, n, k, (float *)tp_tensor_base(result));
  free(eid);
  return tp_linear_finish("qlinear_id", st, x, w, result, out);
}
