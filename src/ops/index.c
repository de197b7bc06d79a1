/* Reference kernels that move rows and windows with accumulation:
 *   fold:    the adjoint of unfold. Operand axes (axis, axis+1) = (window w,
 *            position s) land on position w*step + s*dilation of an axis of
 *            extent `length`; every output element is zero-seeded and its
 *            contributions are added in ascending window order.
 *   gather:  out[b, i, ...] = table[b, idx[b, i], ...] (bit copy, any plain
 *            dtype; b: the indices' batch axes, none for rank-1 indices).
 *   scatter: out[b, v, ...] = sum of values[b, i, ...] over idx[b, i] == v,
 *            zero-seeded, added in ascending i (repeats accumulate).
 * Indices are i32; one outside [0, rows) is TOPOS_ERR_RANGE naming it, and is
 * detected before anything is written. bf16/f16 accumulate in f32. */
#include <stdio.h>
#include <stdlib.h>

#include "base/threads.h"
#include "ops/kernel.h"

/* ---- fold */
#define TP_FOLD_KERNEL(sfx, DT, S, C, LD, ST, unused)                                       \
  /* rows [b0, b1) of axis 0 (all of it when axis is 0): with axis > 0 they  */           \
  /* own the output's rows [b0, b1), so ranges can run on separate threads   */           \
  static void tp_fold_##sfx(const topos_tensor *a, const topos_op_attrs *attrs,             \
                            topos_tensor *out, C *acc, int64_t b0, int64_t b1) {            \
    const S *pa = TP_ELEMS(const S, a);                                                     \
    int axis = attrs->axis, r = a->rank;                                                    \
    int64_t span = out->volume / (out->shape[0] ? out->shape[0] : 1);                       \
    if (axis == 0) b0 = 0, b1 = a->shape[0], span = 0;                                      \
    int64_t e_begin = axis == 0 ? 0 : b0 * span, e_end = axis == 0 ? out->volume : b1 * span; \
    for (int64_t e = e_begin; e < e_end; ++e) acc[e] = 0;                                   \
    /* the output offset is linear in the operand's index: the window axis    */           \
    /* moves it by step and the position axis by dilation along output axis   */           \
    /* `axis`, every other axis along its own output axis; so rows walk with  */           \
    /* running offsets, in the operand's row-major order (the sum order)      */           \
    int64_t ostr[TOPOS_MAX_RANK];                                                           \
    for (int i = 0; i < r; ++i)                                                             \
      ostr[i] = i < axis        ? out->strides[i]                                           \
                : i == axis     ? attrs->step * out->strides[axis]                          \
                : i == axis + 1 ? attrs->dilation * out->strides[axis]                      \
                                : out->strides[i - 1];                                      \
    /* coalesce: unit axes dropped, an axis merged into the next when it    */           \
    /* steps as one run in both operand and output (order unchanged)         */           \
    int n = 0;                                                                              \
    int64_t shape[TOPOS_MAX_RANK], xs[TOPOS_MAX_RANK], os[TOPOS_MAX_RANK];                  \
    for (int i = 0; i < r && n >= 0; ++i) {                                                 \
      int64_t e = i == 0 ? b1 - b0 : a->shape[i];                                           \
      if (e == 0) n = -1;                                                                   \
      if (e <= 1) continue;                                                                 \
      if (n > 0 && xs[n - 1] == e * a->strides[i] && os[n - 1] == e * ostr[i]) {            \
        shape[n - 1] *= e;                                                                  \
        xs[n - 1] = a->strides[i];                                                          \
        os[n - 1] = ostr[i];                                                                \
        continue;                                                                           \
      }                                                                                     \
      shape[n] = e;                                                                         \
      xs[n] = a->strides[i];                                                                \
      os[n] = ostr[i];                                                                      \
      ++n;                                                                                  \
    }                                                                                       \
    if (n == 0) { /* one element */                                                         \
      shape[0] = 1;                                                                         \
      xs[0] = os[0] = 0;                                                                    \
      n = 1;                                                                                \
    }                                                                                       \
    int64_t index[TOPOS_MAX_RANK] = {0};                                                    \
    int64_t o = b0 * ostr[0], x = a->offset + b0 * a->strides[0];                           \
    /* the two innermost axes run as nested loops (rows of a conv's window   */           \
    /* are short); the odometer steps the rest                               */           \
    int64_t inner = n > 0 ? shape[n - 1] : 0, sa = n > 0 ? xs[n - 1] : 0,                  \
            so = n > 0 ? os[n - 1] : 0;                                                     \
    int64_t inner2 = n >= 2 ? shape[n - 2] : 1, sa2 = n >= 2 ? xs[n - 2] : 0,              \
            so2 = n >= 2 ? os[n - 2] : 0;                                                   \
    while (n > 0) {                                                                         \
      for (int64_t q = 0; q < inner2; ++q) {                                                \
        const S *px = pa + x + q * sa2;                                                     \
        C *pacc = acc + o + q * so2;                                                        \
        for (int64_t j = 0; j < inner; ++j) pacc[j * so] += LD(px[j * sa]);                 \
      }                                                                                     \
      int i = n - 3;                                                                        \
      for (; i >= 0; --i) { /* next block: odometer over the outer axes */                  \
        o += os[i];                                                                         \
        x += xs[i];                                                                         \
        if (++index[i] < shape[i]) break;                                                   \
        o -= shape[i] * os[i];                                                              \
        x -= shape[i] * xs[i];                                                              \
        index[i] = 0;                                                                       \
      }                                                                                     \
      if (i < 0) break;                                                                     \
    }                                                                                       \
    S *po = (S *)tp_tensor_base(out);                                                       \
    if ((void *)po != (void *)acc) /* else accumulated in place (f32, f64) */               \
      for (int64_t e = e_begin; e < e_end; ++e) po[e] = ST(acc[e]);                         \
  }
TP_FLOAT_DTYPES(TP_FOLD_KERNEL, 0)

typedef struct tp_fold_job {
  const topos_tensor *a;
  const topos_op_attrs *attrs;
  topos_tensor *out;
  void *acc;
} tp_fold_job;

static void tp_fold_range(void *ctx, int64_t b0, int64_t b1) {
  const tp_fold_job *j = ctx;
  TP_DISPATCH_FLOAT(j->out->dtype, tp_fold, j->a, j->attrs, j->out, j->acc, b0, b1);
}

topos_status tp_forward_fold(topos_tensor *const *in, const topos_op_attrs *attrs,
                             const topos_tensor_desc *desc, topos_tensor **out) {
  TP_TRY(tp_kernel_float("fold", desc->dtype));
  topos_tensor *result;
  TP_TRY(tp_new_output(desc, &result));
  void *acc;
  bool heap = false;
  /* f32 and f64 accumulate in their own type: straight into the result */
  bool direct = desc->dtype == TOPOS_F32 || desc->dtype == TOPOS_F64;
  if (direct) {
    acc = tp_tensor_base(result);
  } else {
    topos_status status = tp_accumulators("fold", desc->dtype, result->volume, &acc, &heap);
    if (status != TOPOS_OK) {
      topos_tensor_release(result);
      return status;
    }
  }
  tp_fold_job job = {in[0], attrs, result, acc};
  int64_t rows = in[0]->rank > 0 ? in[0]->shape[0] : 1;
  /* threads split axis 0's rows (disjoint outputs) when the windows are not
   * on it; each output element keeps its one sum order, so the same bits */
  if (direct && attrs->axis > 0 && rows > 1 && result->volume >= (1 << 16))
    tp_parallel_for(rows, 1, tp_fold_range, &job);
  else
    tp_fold_range(&job, 0, rows);
  if (!direct) tp_scratch_free(acc, heap);
  *out = result;
  return TOPOS_OK;
}

/* ---- indices */

/* The index at idx[index[0..a), last] where a = idx->rank - 1: the batch
 * position `index` shares with the data, then the position along N. */
static int32_t tp_index_at(const topos_tensor *idx, const int64_t *index, int64_t last) {
  int a = idx->rank - 1;
  int64_t o = idx->offset + last * idx->strides[a];
  for (int i = 0; i < a; ++i) o += index[i] * idx->strides[i];
  return TP_ELEMS(const int32_t, idx)[o];
}

static topos_status tp_check_indices(const char *op, const topos_tensor *idx, int64_t rows,
                                     const topos_tensor *data) {
  int64_t index[TOPOS_MAX_RANK] = {0}, n = idx->shape[idx->rank - 1];
  do {
    for (int64_t i = 0; i < n; ++i) {
      int32_t v = tp_index_at(idx, index, i);
      if (v < 0 || v >= rows) {
        char shape[160], at[160];
        index[idx->rank - 1] = i;
        if (idx->rank == 1) snprintf(at, sizeof at, "%lld", (long long)i);
        else tp_shape_string(idx->rank, index, at, sizeof at);
        return tp_fail(TOPOS_ERR_RANGE, "%s: index %d at position %s outside [0, %lld) (data %s)",
                       op, (int)v, at,
                       (long long)rows, tp_shape_string(data->rank, data->shape, shape, sizeof shape));
      }
    }
  } while (idx->rank > 1 && tp_index_next(idx->rank - 1, idx->shape, index));
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
  int a = idx->rank - 1; /* the indexed axis */
  TP_TRY(tp_check_indices("gather", idx, table->shape[a], table));
  topos_tensor *result;
  TP_TRY(tp_new_output(desc, &result));
  const char *src = (const char *)table->storage->data;
  char *dst = (char *)tp_tensor_base(result);
  /* walk the output's rows; the table element is the output's with axis a
   * remapped. When a is the last axis every element has its own index. */
  int last = a == result->rank - 1;
  int64_t inner = tp_inner_extent(result), st = tp_inner_stride(table);
  int64_t rows = result->volume / inner, k = 0;
  int64_t index[TOPOS_MAX_RANK] = {0}, from[TOPOS_MAX_RANK];
  for (int64_t row = 0; row < rows; ++row) {
    for (int axis = 0; axis < result->rank; ++axis) from[axis] = index[axis];
    if (last) {
      for (int64_t j = 0; j < inner; ++j, ++k) {
        from[a] = tp_index_at(idx, index, j);
        memcpy(dst + (size_t)k * esize,
               src + (size_t)tp_tensor_element_offset(table, from) * esize, esize);
      }
    } else {
      from[a] = tp_index_at(idx, index, index[a]);
      int64_t base = tp_tensor_element_offset(table, from);
      for (int64_t j = 0; j < inner; ++j, ++k)
        memcpy(dst + (size_t)k * esize, src + (size_t)(base + j * st) * esize, esize);
    }
    tp_next_row(result, index);
  }
  *out = result;
  return TOPOS_OK;
}

#define TP_SCATTER_KERNEL(sfx, DT, S, C, LD, ST, unused)                                    \
  static void tp_scatter_##sfx(const topos_tensor *values, const topos_tensor *idx,         \
                               topos_tensor *out, C *acc) {                                 \
    const S *pv = TP_ELEMS(const S, values);                                                \
    for (int64_t e = 0; e < out->volume; ++e) acc[e] = 0;                                   \
    int a = idx->rank - 1, last = a == values->rank - 1;                                    \
    int64_t inner = tp_inner_extent(values), sv = tp_inner_stride(values);                  \
    int64_t rows = values->volume / inner;                                                  \
    int64_t index[TOPOS_MAX_RANK] = {0};                                                    \
    /* row-major walk: within a batch position i = index[a] ascends, so      */           \
    /* repeats add in ascending i                                            */           \
    for (int64_t row = 0; row < rows; ++row) {                                              \
      int64_t o = 0;                                                                        \
      for (int axis = 0; axis < values->rank; ++axis)                                       \
        if (axis != a) o += index[axis] * out->strides[axis];                               \
      const S *x = pv + tp_tensor_element_offset(values, index);                            \
      if (last) {                                                                           \
        for (int64_t j = 0; j < inner; ++j)                                                 \
          acc[o + (int64_t)tp_index_at(idx, index, j) * out->strides[a]] += LD(x[j * sv]);  \
      } else {                                                                              \
        o += (int64_t)tp_index_at(idx, index, index[a]) * out->strides[a];                  \
        for (int64_t j = 0; j < inner; ++j) acc[o + j] += LD(x[j * sv]);                    \
      }                                                                                     \
      tp_next_row(values, index);                                                           \
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
