/* The quant tier's traits table and the public row functions. Geometry comes
 * from TOPOS_DTYPE_LIST, kernels from TP_QUANT_FORMAT_LIST: a new format is
 * one row in each list plus its kernels. */
#include "base/error.h"
#include "quant/quant_internal.h"

#define TP_QUANT_TRAITS_ROW(e, sfx, partner, dot)                                          \
  [e] = {.dtype = e,                                                                       \
         .suffix = #sfx,                                                                   \
         .block_elements = TP_BLOCK_ELEMENTS_##e,                                          \
         .block_bytes = TP_BLOCK_BYTES_##e,                                                \
         .quantize = tp_quantize_##sfx,                                                    \
         .dequantize = tp_dequantize_##sfx,                                                \
         .vec_dot_type = partner,                                                          \
         .vec_dot = dot},
static const tp_quant_traits tp_quant_traits_table[TOPOS_DTYPE_COUNT] = {
    TP_QUANT_FORMAT_LIST(TP_QUANT_TRAITS_ROW)};
#undef TP_QUANT_TRAITS_ROW

const tp_quant_traits *tp_quant_traits_of(topos_dtype dtype) {
  if ((unsigned)dtype >= (unsigned)TOPOS_DTYPE_COUNT) return NULL;
  const tp_quant_traits *traits = &tp_quant_traits_table[dtype];
  return traits->quantize ? traits : NULL;
}

/* Name for messages without depending on the tensor tier's name table. */
static const char *tp_quant_dtype_label(topos_dtype dtype) {
  static const char *const names[TOPOS_DTYPE_COUNT + 1] = {
#define TP_QUANT_NAME_ROW(e, name, be, bb, gg, kind) [e] = name,
      TOPOS_DTYPE_LIST(TP_QUANT_NAME_ROW)
#undef TP_QUANT_NAME_ROW
      [TOPOS_DTYPE_COUNT] = "?"};
  if ((unsigned)dtype >= (unsigned)TOPOS_DTYPE_COUNT) return names[TOPOS_DTYPE_COUNT];
  return names[dtype];
}

topos_status tp_quant_row_blocks(const char *what, topos_dtype dtype, int64_t n,
                                 const tp_quant_traits **traits, int64_t *blocks) {
  const tp_quant_traits *t = tp_quant_traits_of(dtype);
  if (!t)
    return tp_fail(TOPOS_ERR_DTYPE, "%s: dtype %s (%d) is not a float or block format", what,
                   tp_quant_dtype_label(dtype), (int)dtype);
  if (n < 0 || n % t->block_elements != 0)
    return tp_fail(TOPOS_ERR_SHAPE,
                   "%s: %lld elements is not a whole number of %s blocks of %lld elements", what,
                   (long long)n, t->suffix, (long long)t->block_elements);
  *traits = t;
  *blocks = n / t->block_elements;
  return TOPOS_OK;
}

topos_status topos_quantize_row(topos_dtype dtype, const float *src, void *dst, int64_t n) {
  const tp_quant_traits *traits = NULL;
  int64_t blocks = 0;
  TP_TRY(tp_quant_row_blocks("quantize_row", dtype, n, &traits, &blocks));
  if (blocks > 0 && (!src || !dst))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "quantize_row: NULL %s buffer for %lld elements",
                   src ? "destination" : "source", (long long)n);
  if (blocks > 0) traits->quantize(src, dst, blocks);
  return TOPOS_OK;
}

topos_status topos_dequantize_row(topos_dtype dtype, const void *src, float *dst, int64_t n) {
  const tp_quant_traits *traits = NULL;
  int64_t blocks = 0;
  TP_TRY(tp_quant_row_blocks("dequantize_row", dtype, n, &traits, &blocks));
  if (blocks > 0 && (!src || !dst))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "dequantize_row: NULL %s buffer for %lld elements",
                   src ? "destination" : "source", (long long)n);
  if (blocks > 0) traits->dequantize(src, dst, blocks);
  return TOPOS_OK;
}

topos_status topos_quant_vec_dot_type(topos_dtype weight_dtype, topos_dtype *out) {
  const tp_quant_traits *traits = tp_quant_traits_of(weight_dtype);
  if (!traits || !traits->vec_dot)
    return tp_fail(TOPOS_ERR_DTYPE, "quant_vec_dot_type: %s has no dot product as weights",
                   tp_quant_dtype_label(weight_dtype));
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "quant_vec_dot_type: NULL out");
  *out = traits->vec_dot_type;
  return TOPOS_OK;
}
