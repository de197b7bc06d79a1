/* Reference kernels that move rows and windows with accumulation:
 *   fold:    the adjoint of unfold. Operand axes (axis, axis+1) = (window w,
 *            position s) land on position w*step + s*dilation of an axis of
 *            extent `length`; every output element is zero-seeded and its
 *            contributions are added in ascending window order.
 *   gather:  out[i, ...] = table[idx[i], ...] (bit copy, any plain dtype).
 *   scatter: out[v, ...] = sum of values[i, ...] over idx[i] == v, zero-seeded,
 *            added in ascending i (repeats accumulate).
 * Indices are i32; one outside [0, rows) is TOPOS_ERR_RANGE naming it, and is
 * detected before anything is written. bf16/f16 accumulate in f32. */
#include <stdlib.h>

#include "ops/kernel.h"

/* ---- fold */
#define TP_FOLD_KERNEL(sfx, DT, S, C, LD, ST, unused)                                       \
  static void tp_fold_##sfx(const topos_tensor *a, const topos_op_attrs *attrs,             \
                            topos_tensor *out, C *acc) {                                    \
    const S *pa = TP_ELEMS(const S, a);                                                     \
    int axis = attrs->axis, r = a->rank;                                                    \
    for (int64_t e = 0; e < out->volume; ++e) acc[e] = 0;                                   \
    /* along an input row the output moves by dilation when the row is the        */      \
    /* window-position axis, else by 1 (the output's last axis)                    */      \
    int64_t out_step = axis + 1 == r - 1 ? attrs->dilation * out->strides[axis] : 1;        \
    int64_t inner = tp_inner_extent(a), sa = tp_inner_stride(a);                            \
    int64_t rows = a->volume / inner;                                                       \
    int64_t index[TOPOS_MAX_RANK] = {0};                                                    \
    for (int64_t row = 0; row < rows; ++row) {                                              \
      int64_t o = 0;                                                                        \
      for (int i = 0; i < r; ++i) {                                                         \
        if (i < axis) o += index[i] * out->strides[i];                                      \
        else if (i == axis)                                                                 \
          o += (index[axis] * attrs->step + index[axis + 1] * attrs->dilation) *            \
               out->strides[axis];                                                          \
        else if (i > axis + 1) o += index[i] * out->strides[i - 1];                         \
      }                                                                                     \
      const S *x = pa + tp_tensor_element_offset(a, index);                                 \
      for (int64_t j = 0; j < inner; ++j) acc[o + j * out_step] += LD(x[j * sa]);           \
      tp_next_row(a, index);                                                                \
    }                                                                                       \
    S *po = (S *)tp_tensor_base(out);                                                       \
    for (int64_t e = 0; e < out->volume; ++e) po[e] = ST(acc[e]);                           \
  }
TP_FLOAT_DTYPES(TP_FOLD_KERNEL, 0)

topos_status tp_forward_fold(topos_tensor *const *in, const topos_op_attrs *attrs,
                             const topos_tensor_desc *desc, topos_tensor **out) {
  TP_TRY(tp_kernel_float("fold", desc->dtype));
  topos_tensor *result;
  TP_TRY(tp_new_output(desc, &result));
  void *acc;
  bool heap;
  topos_status status = tp_accumulators("fold", desc->dtype, result->volume, &acc, &heap);
  if (status != TOPOS_OK) {
    topos_tensor_release(result);
    return status;
  }
  TP_DISPATCH_FLOAT(desc->dtype, tp_fold, in[0], attrs, result, acc);
  tp_scratch_free(acc, heap);
  *out = result;
  return TOPOS_OK;
}

/* ---- indices */

static int32_t tp_index_at(const topos_tensor *idx, int64_t i) {
  return TP_ELEMS(const int32_t, idx)[idx->offset + i * idx->strides[0]];
}

static topos_status tp_check_indices(const char *op, const topos_tensor *idx, int64_t rows,
                                     const topos_tensor *data) {
  for (int64_t i = 0; i < idx->shape[0]; ++i) {
    int32_t v = tp_index_at(idx, i);
    if (v < 0 || v >= rows) {
      char shape[160];
      return tp_fail(TOPOS_ERR_RANGE, "%s: index %d at position %lld outside [0, %lld) (data %s)",
                     op, (int)v, (long long)i, (long long)rows,
                     tp_shape_string(data->rank, data->shape, shape, sizeof shape));
    }
  }
  return TOPOS_OK;
}

topos_status tp_forward_gather(topos_tensor *const *in, const topos_op_attrs *attrs,
                               const topos_tensor_desc *desc, topos_tensor **out) {
  (void)attrs;
  const topos_tensor *table = in[0], *idx = in[1];
  size_t esize = tp_dtype_size(table->dtype);
  if (esize == 0)
    return tp_fail(TOPOS_ERR_INTERNAL, "gather: dtype %s reached a plain kernel",
                   topos_dtype_name(table->dtype));
  TP_TRY(tp_check_indices("gather", idx, table->shape[0], table));
  topos_tensor *result;
  TP_TRY(tp_new_output(desc, &result));
  const char *src = (const char *)table->storage->data;
  char *dst = (char *)tp_tensor_base(result);
  /* walk the output's rows; the table row is the output's with axis 0 remapped.
   * Rank 1: every element is its own row (the last axis is the index axis). */
  int rank1 = result->rank == 1;
  int64_t inner = rank1 ? 1 : tp_inner_extent(result), st = tp_inner_stride(table);
  int64_t rows = result->volume / inner, k = 0;
  int64_t index[TOPOS_MAX_RANK] = {0}, from[TOPOS_MAX_RANK];
  for (int64_t row = 0; row < rows; ++row) {
    for (int axis = 0; axis < result->rank; ++axis) from[axis] = index[axis];
    from[0] = tp_index_at(idx, index[0]);
    int64_t base = tp_tensor_element_offset(table, from);
    for (int64_t j = 0; j < inner; ++j, ++k)
      memcpy(dst + (size_t)k * esize, src + (size_t)(base + j * st) * esize, esize);
    if (rank1) ++index[0];
    else tp_next_row(result, index);
  }
  *out = result;
  return TOPOS_OK;
}

#define TP_SCATTER_KERNEL(sfx, DT, S, C, LD, ST, unused)                                    \
  static void tp_scatter_##sfx(const topos_tensor *values, const topos_tensor *idx,         \
                               topos_tensor *out, C *acc) {                                 \
    const S *pv = TP_ELEMS(const S, values);                                                \
    for (int64_t e = 0; e < out->volume; ++e) acc[e] = 0;                                   \
    int rank1 = values->rank == 1; /* then every element is its own row */               \
    int64_t inner = rank1 ? 1 : tp_inner_extent(values), sv = tp_inner_stride(values);     \
    int64_t rows = values->volume / inner;                                                  \
    int64_t index[TOPOS_MAX_RANK] = {0};                                                    \
    /* row-major walk: value row i = index[0] ascends, so repeats add in ascending i */     \
    for (int64_t row = 0; row < rows; ++row) {                                              \
      int64_t o = (int64_t)tp_index_at(idx, index[0]) * out->strides[0];                   \
      for (int axis = 1; axis < values->rank; ++axis) o += index[axis] * out->strides[axis]; \
      const S *x = pv + tp_tensor_element_offset(values, index);                            \
      for (int64_t j = 0; j < inner; ++j) acc[o + j] += LD(x[j * sv]);                      \
      if (rank1) ++index[0];                                                                \
      else tp_next_row(values, index);                                                      \
    }                                                                                       \
    S *po = (S *)tp_tensor_base(out);                                                       \
    for (int64_t e = 0; e < out->volume; ++e) po[e] = ST(acc[e]);                           \
  }
TP_FLOAT_DTYPES(TP_SCATTER_KERNEL, 0)

topos_status tp_forward_scatter(topos_tensor *const *in, const topos_op_attrs *attrs,
                                const topos_tensor_desc *desc, topos_tensor **out) {
  TP_TRY(tp_kernel_float("scatter", desc->dtype));
  const topos_tensor *values = in[0], *idx = in[1];
  TP_TRY(tp_check_indices("scatter", idx, attrs->length, values));
  topos_tensor *result;
  TP_TRY(tp_new_output(desc, &result));
  void *acc;
  bool heap;
  topos_status status = tp_accumulators("scatter", desc->dtype, result->volume, &acc, &heap);
  if (status != TOPOS_OK) {
    topos_tensor_release(result);
    return status;
  }
  TP_DISPATCH_FLOAT(desc->dtype, tp_scatter, values, idx, result, acc);
  tp_scratch_free(acc, heap);
  *out = result;
  return TOPOS_OK;
}
