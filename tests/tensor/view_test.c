#include "test.h"
#include <stdlib.h>

/* A [rows, cols] f32 tensor holding 0, 1, 2, ... */
static topos_tensor *iota(int rank, const int64_t *shape) {
  int64_t volume = 1;
  for (int i = 0; i < rank; ++i) volume *= shape[i];
  float *values = malloc((size_t)volume * sizeof *values);
  for (int64_t i = 0; i < volume; ++i) values[i] = (float)i;
  topos_tensor *t = NULL;
  topos_tensor_from_f32(TOPOS_F32, rank, shape, values, &t);
  free(values);
  return t;
}

static double at(const topos_tensor *t, int64_t i0, int64_t i1, int64_t i2) {
  int64_t index[3] = {i0, i1, i2};
  double v = -1;
  topos_tensor_get(t, index, &v);
  return v;
}

TEST(view_permute_transpose_share_storage) {
  int64_t shape[] = {2, 3, 4};
  topos_tensor *t = iota(3, shape), *p, *tr;
  CHECK(t);
  int order[] = {2, 0, 1};
  CHECK_OK(topos_tensor_permute(t, order, &p));
  CHECK(topos_tensor_storage_id(p) == topos_tensor_storage_id(t));
  CHECK_EQ_INT(topos_tensor_shape(p)[0], 4);
  CHECK_EQ_INT(topos_tensor_strides(p)[0], 1);
  CHECK(!topos_tensor_is_contiguous(p));
  CHECK_BITS_F64(at(p, 3, 1, 2), at(t, 1, 2, 3));
  CHECK_OK(topos_tensor_transpose(t, &tr));
  CHECK_EQ_INT(topos_tensor_shape(tr)[1], 4);
  CHECK_BITS_F64(at(tr, 1, 3, 2), at(t, 1, 2, 3));
  int bad[] = {0, 0, 1};
  topos_tensor *x;
  CHECK_STATUS(topos_tensor_permute(t, bad, &x), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("[0,0,1]");
  topos_tensor_release(t); /* views keep the storage alive */
  CHECK_BITS_F64(at(p, 3, 1, 2), 23.0);
  topos_tensor_release(p);
  topos_tensor_release(tr);
}

TEST(view_narrow_and_errors) {
  int64_t shape[] = {2, 5};
  topos_tensor *t = iota(2, shape), *n;
  CHECK_OK(topos_tensor_narrow(t, 1, 1, 3, &n));
  CHECK(topos_tensor_storage_id(n) == topos_tensor_storage_id(t));
  CHECK_EQ_INT(topos_tensor_offset(n), 1);
  CHECK_BITS_F64(at(n, 1, 2, 0), 8.0);
  CHECK_STATUS(topos_tensor_narrow(t, 1, 3, 4, &n), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("narrow: window [3, 3+4) exceeds extent 5 of axis 1 in shape [2,5]");
  CHECK_STATUS(topos_tensor_narrow(t, 2, 0, 1, &n), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("axis 2");
  CHECK_STATUS(topos_tensor_narrow(t, 0, 0, 0, &n), TOPOS_ERR_RANGE);
  topos_tensor_release(t);
}
