/* The dtype table: every fact about an element type comes from one row of
 * TOPOS_DTYPE_LIST (include/topos/tensor.h). */
#include <ctype.h>
#include <stdint.h>

#include "base/error.h"
#include "tensor/tensor_internal.h"

typedef struct tp_dtype_info {
  const char *name;
  int64_t block_elements;
  int64_t block_bytes;
  int ggml_id;
  char kind;
} tp_dtype_info;

static const tp_dtype_info tp_dtypes[TOPOS_DTYPE_COUNT] = {
#define TP_DTYPE_INFO_ROW(e, name, be, bb, gg, kind) [e] = {name, be, bb, gg, kind},
    TOPOS_DTYPE_LIST(TP_DTYPE_INFO_ROW)
#undef TP_DTYPE_INFO_ROW
};

static int tp_dtype_valid(topos_dtype dtype) {
  return (unsigned)dtype < (unsigned)TOPOS_DTYPE_COUNT;
}

const char *topos_dtype_name(topos_dtype dtype) {
  return tp_dtype_valid(dtype) ? tp_dtypes[dtype].name : "unknown-dtype";
}

topos_status topos_dtype_parse(const char *name, topos_dtype *out) {
  if (!name || !out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "dtype_parse: NULL argument");
  for (int d = 0; d < TOPOS_DTYPE_COUNT; ++d) {
    const char *a = tp_dtypes[d].name, *b = name;
    while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b)) ++a, ++b;
    if (*a == '\0' && *b == '\0') {
      *out = (topos_dtype)d;
      return TOPOS_OK;
    }
  }
  return tp_fail(TOPOS_ERR_NOT_FOUND, "dtype_parse: unknown dtype \"%.64s\"", name);
}

int64_t topos_dtype_block_size(topos_dtype dtype) {
  return tp_dtype_valid(dtype) ? tp_dtypes[dtype].block_elements : 0;
}

int64_t topos_dtype_block_bytes(topos_dtype dtype) {
  return tp_dtype_valid(dtype) ? tp_dtypes[dtype].block_bytes : 0;
}

int topos_dtype_is_float(topos_dtype dtype) {
  return tp_dtype_valid(dtype) && tp_dtypes[dtype].kind == 'f';
}

int topos_dtype_is_quantized(topos_dtype dtype) {
  return tp_dtype_valid(dtype) && tp_dtypes[dtype].kind == 'q';
}

int tp_dtype_is_integer(topos_dtype dtype) {
  return tp_dtype_valid(dtype) && tp_dtypes[dtype].kind == 'i';
}

int topos_dtype_ggml_id(topos_dtype dtype) {
  return tp_dtype_valid(dtype) ? tp_dtypes[dtype].ggml_id : -1;
}

topos_status topos_dtype_from_ggml_id(uint32_t id, topos_dtype *out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "dtype_from_ggml_id: NULL out");
  for (int d = 0; d < TOPOS_DTYPE_COUNT; ++d) {
    if (tp_dtypes[d].ggml_id >= 0 && (uint32_t)tp_dtypes[d].ggml_id == id) {
      *out = (topos_dtype)d;
      return TOPOS_OK;
    }
  }
  return tp_fail(TOPOS_ERR_BAD_TYPE, "dtype_from_ggml_id: ggml type %u has no topos dtype", id);
}

size_t tp_dtype_size(topos_dtype dtype) {
  if (!tp_dtype_valid(dtype) || tp_dtypes[dtype].block_elements != 1) return 0;
  return (size_t)tp_dtypes[dtype].block_bytes;
}

topos_status topos_dtype_bytes(topos_dtype dtype, int64_t elements, size_t *out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "dtype_bytes: NULL out");
  if (!tp_dtype_valid(dtype))
    return tp_fail(TOPOS_ERR_DTYPE, "dtype_bytes: invalid dtype %d", (int)dtype);
  if (elements < 0)
    return tp_fail(TOPOS_ERR_SHAPE, "dtype_bytes: negative element count %lld",
                   (long long)elements);
  const tp_dtype_info *info = &tp_dtypes[dtype];
  if (elements % info->block_elements != 0)
    return tp_fail(TOPOS_ERR_SHAPE,
                   "dtype_bytes: %lld elements are not whole %s blocks of %lld elements",
                   (long long)elements, info->name, (long long)info->block_elements);
  int64_t bytes;
  /* Capped at PTRDIFF_MAX so byte offsets stay representable as pointer differences. */
  if (__builtin_mul_overflow(elements / info->block_elements, info->block_bytes, &bytes) ||
      (uint64_t)bytes > (uint64_t)PTRDIFF_MAX)
    return tp_fail(TOPOS_ERR_OVERFLOW, "dtype_bytes: %lld %s elements overflow a byte size",
                   (long long)elements, info->name);
  *out = (size_t)bytes;
  return TOPOS_OK;
}
