/* Tensor-level quantize / dequantize: rows along the last axis, any input
 * layout, contiguous results. */
#include <stdlib.h>

#include "base/error.h"
#include "quant/quant_internal.h"
#include "tensor/tensor_internal.h"

topos_status topos_quantize(const topos_tensor *source, topos_dtype dtype, topos_tensor **out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "quantize: NULL out");
  *out = NULL;
  if (!source) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "quantize: NULL tensor");
  if (!topos_dtype_is_float(source->dtype))
    return tp_fail(TOPOS_ERR_DTYPE, "quantize: source must be f32, f64, f16 or bf16, not %s",
                   topos_dtype_name(source->dtype));
  const tp_quant_traits *traits = tp_quant_traits_of(dtype);
  if (!traits)
    return tp_fail(TOPOS_ERR_DTYPE, "quantize: %s is not a quantized or 16/32-bit float format",
                   topos_dtype_name(dtype));
  const int64_t last = source->rank > 0 ? source->shape[source->rank - 1] : 1;
  if (last % traits->block_elements != 0 || (source->rank == 0 && traits->block_elements > 1)) {
    char text[128];
    return tp_fail(TOPOS_ERR_SHAPE,
                   "quantize: %s packs blocks of %lld along the last axis; shape %s is not whole "
                   "blocks",
                   traits->suffix, (long long)traits->block_elements,
                   tp_shape_string(source->rank, source->shape, text, sizeof text));
  }
  if ((uint64_t)source->volume > SIZE_MAX / sizeof(float))
    return tp_fail(TOPOS_ERR_OVERFLOW, "quantize: %lld elements", (long long)source->volume);
  /* gather the values row-major in f32 (f64 sources round to nearest here) */
  float *values = malloc((size_t)source->volume * sizeof(float));
  if (!values)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "quantize: %lld floats of scratch",
                   (long long)source->volume);
  topos_status s = topos_tensor_read_f32(source, values, source->volume);
  topos_tensor *result = NULL;
  if (s == TOPOS_OK) s = tp_tensor_empty(dtype, source->rank, source->shape, &result);
  if (s != TOPOS_OK) {
    free(values);
    return tp_fail_context(s, "quantize");
  }
  /* rows are whole blocks and the result is contiguous, so all rows are one run */
  traits->quantize(values, result->storage->data, source->volume / traits->block_elements);
  free(values);
  *out = result;
  return TOPOS_OK;
}

topos_status topos_dequantize(const topos_tensor *source, topos_tensor **out_f32) {
  if (!out_f32) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "dequantize: NULL out");
  *out_f32 = NULL;
  if (!source) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "dequantize: NULL tensor");
  topos_tensor *result = NULL;
  if (topos_dtype_is_float(source->dtype)) { /* plain floats: a conversion */
    TP_TRY(tp_tensor_empty(TOPOS_F32, source->rank, source->shape, &result));
    topos_status s = topos_tensor_read_f32(source, (float *)tp_tensor_base(result), source->volume);
    if (s != TOPOS_OK) {
      topos_tensor_release(result);
      return tp_fail_context(s, "dequantize");
    }
    *out_f32 = result;
    return TOPOS_OK;
  }
  const tp_quant_traits *traits = tp_quant_traits_of(source->dtype);
  if (!traits || source->rank < 1)
    return tp_fail(TOPOS_ERR_DTYPE, "dequantize: %s tensor of rank %d is not block-quantized data",
                   topos_dtype_name(source->dtype), source->rank);
  TP_TRY(tp_tensor_empty(TOPOS_F32, source->rank, source->shape, &result));
  /* Each row (last axis) is whole contiguous blocks; outer axes may be any
   * view (the tensor tier keeps their strides and the offset in whole blocks). */
  const int outer = source->rank - 1;
  const int64_t row = source->shape[outer];
  const int64_t blocks = row / traits->block_elements;
  int64_t index[TOPOS_MAX_RANK] = {0};
  float *dst = (float *)tp_tensor_base(result);
  do {
    int64_t element = source->offset;
    for (int axis = 0; axis < outer; ++axis) element += index[axis] * source->strides[axis];
    const uint8_t *src = (const uint8_t *)source->storage->data +
                         (size_t)(element / traits->block_elements) * (size_t)traits->block_bytes;
    traits->dequantize(src, dst, blocks);
    dst += row;
  } while (tp_index_next(outer, source->shape, index));
  *out_f32 = result;
  return TOPOS_OK;
}
