#include <stdlib.h>

#include "test.h"

/* q8_0 blocks: 34 bytes per 32 elements. A [3, 64] tensor is 3 rows of 2 blocks. */
static void fill_blocks(unsigned char *bytes, size_t n) {
  for (size_t i = 0; i < n; ++i) bytes[i] = (unsigned char)(i * 7 + 1);
}

TEST(quantized_storage_create_and_view_outer_axes) {
  unsigned char bytes[3 * 2 * 34];
  fill_blocks(bytes, sizeof bytes);
  int64_t shape[] = {3, 64};
  topos_tensor *t, *row, *z, *w;
  CHECK_OK(topos_tensor_from_data(TOPOS_Q8_0, 2, shape, bytes, sizeof bytes, &t));
  CHECK_STATUS(topos_tensor_from_data(TOPOS_Q8_0, 2, shape, bytes, sizeof bytes - 1, &z),
               TOPOS_ERR_SHAPE);
  CHECK_EQ_INT(topos_tensor_strides(t)[0], 64);
  CHECK_OK(topos_tensor_zeros(TOPOS_Q8_0, 2, shape, &z));
  CHECK(!topos_tensor_bits_equal(t, z));
  /* narrow rows: offset is whole blocks, data points at the row's first block */
  CHECK_OK(topos_tensor_narrow(t, 0, 1, 2, &row));
  CHECK_EQ_INT(topos_tensor_offset(row), 64);
  CHECK((const unsigned char *)topos_tensor_data(row) == (const unsigned char *)topos_tensor_data(t) + 68);
  /* narrow along the last axis in whole blocks works, partial blocks do not */
  topos_tensor *half, *x;
  CHECK_OK(topos_tensor_narrow(t, 1, 32, 32, &half));
  CHECK((const unsigned char *)topos_tensor_data(half) == (const unsigned char *)topos_tensor_data(t) + 34);
  CHECK_STATUS(topos_tensor_narrow(t, 1, 16, 32, &x), TOPOS_ERR_DTYPE);
  CHECK_ERROR_HAS("whole blocks");
  /* a strided block layout packs into a contiguous copy, block by block */
  topos_tensor *packed;
  CHECK(!topos_tensor_is_contiguous(half));
  CHECK_OK(topos_tensor_contiguous(half, 0, &packed));
  CHECK(topos_tensor_is_contiguous(packed));
  const unsigned char *p = topos_tensor_data(packed);
  for (int r = 0; r < 3; ++r)
    for (int b = 0; b < 34; ++b) CHECK_EQ_INT(p[r * 34 + b], bytes[r * 68 + 34 + b]);
  CHECK_TENSOR_BITS(packed, half);
  /* wrap a mapped block buffer */
  CHECK_OK(topos_tensor_wrap(TOPOS_Q8_0, 2, shape, bytes, sizeof bytes, TOPOS_STORAGE_MAPPED,
                             NULL, NULL, &w));
  CHECK_TENSOR_BITS(w, t);
  /* reshape of the contiguous blocks is a view; splitting a block is refused */
  int64_t flat[] = {192};
  topos_tensor *f;
  CHECK_OK(topos_tensor_reshape(t, 1, flat, &f));
  CHECK(topos_tensor_storage_id(f) == topos_tensor_storage_id(t));
  topos_tensor_release(f);
  int64_t split[] = {12, 16};
  CHECK_STATUS(topos_tensor_reshape(t, 2, split, &f), TOPOS_ERR_DTYPE);
  /* broadcast along a new outer axis is fine, after the block axis it is not */
  CHECK_OK(topos_tensor_broadcast_along(t, 0, 2, &f));
  CHECK_EQ_INT(topos_tensor_strides(f)[0], 0);
  topos_tensor_release(f);
  CHECK_STATUS(topos_tensor_broadcast_along(t, 2, 2, &f), TOPOS_ERR_DTYPE);
  topos_tensor_release(w);
  topos_tensor_release(packed);
  topos_tensor_release(half);
  topos_tensor_release(row);
  topos_tensor_release(z);
  topos_tensor_release(t);
}

TEST(quantized_elements_refused_with_dtype_error) {
  int64_t shape[] = {2, 256};
  topos_tensor *t, *x;
  CHECK_OK(topos_tensor_zeros(TOPOS_Q4_K, 2, shape, &t));
  int64_t index[] = {0, 0};
  double v;
  CHECK_STATUS(topos_tensor_get(t, index, &v), TOPOS_ERR_DTYPE);
  CHECK_ERROR_HAS("dequantize");
  CHECK_STATUS(topos_tensor_set(t, index, 1.0), TOPOS_ERR_DTYPE);
  CHECK_STATUS(topos_tensor_convert(t, TOPOS_F32, &x), TOPOS_ERR_DTYPE);
  CHECK_ERROR_HAS("dequantize");
  float f[512];
  CHECK_STATUS(topos_tensor_read_f32(t, f, 512), TOPOS_ERR_DTYPE);
  topos_tensor *plain;
  CHECK_OK(topos_tensor_zeros(TOPOS_F32, 2, shape, &plain));
  CHECK_STATUS(topos_tensor_convert(plain, TOPOS_Q4_K, &x), TOPOS_ERR_DTYPE);
  topos_tensor_release(plain);
  CHECK_STATUS(topos_tensor_transpose(t, &x), TOPOS_ERR_DTYPE);
  CHECK_ERROR_HAS("last axis");
  CHECK_STATUS(topos_tensor_unfold(t, 1, 2, 1, 1, &x), TOPOS_ERR_DTYPE);
  CHECK_OK(topos_tensor_unfold(t, 0, 2, 1, 1, &x)); /* outer axis: fine */
  topos_tensor_release(x);
  CHECK_STATUS(topos_tensor_full(TOPOS_Q4_K, 2, shape, 0.0, &x), TOPOS_ERR_DTYPE);
  char buf[128];
  topos_tensor_format(t, buf, sizeof buf, 100);
  CHECK_MSG(strcmp(buf, "tensor q4_K [2,256] (block-quantized, 2 blocks of 144 bytes)") == 0,
            "got \"%s\"", buf);
  topos_tensor_release(t);
}
