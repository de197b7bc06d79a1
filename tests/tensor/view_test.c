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
  topos_tensor_release(n);
  CHECK_STATUS(topos_tensor_narrow(t, 1, 3, 4, &n), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("narrow: window [3, 3+4) exceeds extent 5 of axis 1 in shape [2,5]");
  CHECK_STATUS(topos_tensor_narrow(t, 2, 0, 1, &n), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("axis 2");
  CHECK_STATUS(topos_tensor_narrow(t, 0, 0, 0, &n), TOPOS_ERR_RANGE);
  topos_tensor_release(t);
}

TEST(view_reshape_view_and_copy) {
  int64_t shape[] = {2, 3, 4};
  topos_tensor *t = iota(3, shape), *r, *tr, *c;
  /* contiguous: a view, -1 inferred */
  int64_t flat[] = {6, -1};
  CHECK_OK(topos_tensor_reshape(t, 2, flat, &r));
  CHECK(topos_tensor_storage_id(r) == topos_tensor_storage_id(t));
  CHECK_EQ_INT(topos_tensor_shape(r)[1], 4);
  topos_tensor_release(r);
  /* unit axes inserted into a permuted layout: still a view */
  CHECK_OK(topos_tensor_transpose(t, &tr)); /* [2,4,3] */
  int64_t units[] = {1, 2, 1, 4, 3, 1};
  CHECK_OK(topos_tensor_reshape(tr, 6, units, &r));
  CHECK(topos_tensor_storage_id(r) == topos_tensor_storage_id(t));
  int64_t i6[] = {0, 1, 0, 2, 1, 0};
  double v;
  CHECK_OK(topos_tensor_get(r, i6, &v));
  CHECK_BITS_F64(v, at(t, 1, 1, 2));
  topos_tensor_release(r);
  /* splitting an axis of a permuted layout is stride compatible: a view */
  int64_t split[] = {2, 2, 2, 3};
  CHECK_OK(topos_tensor_reshape(tr, 4, split, &r));
  CHECK(topos_tensor_storage_id(r) == topos_tensor_storage_id(t));
  CHECK_EQ_INT(topos_tensor_strides(r)[1], 2);
  CHECK_EQ_INT(topos_tensor_strides(r)[3], 4);
  int64_t i4[] = {1, 1, 0, 2};
  CHECK_OK(topos_tensor_get(r, i4, &v));
  CHECK_BITS_F64(v, at(t, 1, 2, 2));
  topos_tensor_release(r);
  /* merging the transposed axes cannot be a view: a copy in logical order */
  int64_t merge[] = {2, 12};
  CHECK_OK(topos_tensor_reshape(tr, 2, merge, &r));
  CHECK(topos_tensor_storage_id(r) != topos_tensor_storage_id(t));
  CHECK(topos_tensor_is_contiguous(r));
  CHECK_OK(topos_tensor_reshape(tr, 2, merge, &c)); /* deterministic */
  CHECK_TENSOR_BITS(r, c);
  for (int64_t j = 0; j < 12; ++j) CHECK_BITS_F64(at(r, 1, j, 0), at(tr, 1, j / 3, j % 3));
  topos_tensor_release(r);
  topos_tensor_release(c);
  /* errors */
  int64_t wrong[] = {5, 5};
  CHECK_STATUS(topos_tensor_reshape(t, 2, wrong, &r), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("reshape: cannot reshape [2,3,4] (volume 24) into [5,5]");
  int64_t two_infer[] = {-1, -1};
  CHECK_STATUS(topos_tensor_reshape(t, 2, two_infer, &r), TOPOS_ERR_SHAPE);
  int64_t no_fit[] = {5, -1};
  CHECK_STATUS(topos_tensor_reshape(t, 2, no_fit, &r), TOPOS_ERR_SHAPE);
  int64_t zero[] = {0, -1};
  CHECK_STATUS(topos_tensor_reshape(t, 2, zero, &r), TOPOS_ERR_SHAPE);
  /* to a scalar and back */
  int64_t one[] = {1};
  topos_tensor *s, *s0;
  CHECK_OK(topos_tensor_narrow(t, 2, 3, 1, &s));
  topos_tensor *s1, *s2;
  CHECK_OK(topos_tensor_narrow(s, 1, 2, 1, &s1));
  CHECK_OK(topos_tensor_narrow(s1, 0, 1, 1, &s2));
  CHECK_OK(topos_tensor_reshape(s2, 0, NULL, &s0));
  CHECK_EQ_INT(topos_tensor_rank(s0), 0);
  CHECK_OK(topos_tensor_get(s0, NULL, &v));
  CHECK_BITS_F64(v, 23.0);
  CHECK_OK(topos_tensor_reshape(s0, 1, one, &r));
  CHECK(topos_tensor_storage_id(r) == topos_tensor_storage_id(t));
  topos_tensor_release(r);
  topos_tensor_release(s0);
  topos_tensor_release(s2);
  topos_tensor_release(s1);
  topos_tensor_release(s);
  topos_tensor_release(tr);
  topos_tensor_release(t);
}

TEST(view_broadcasts_have_zero_strides) {
  int64_t shape[] = {3};
  topos_tensor *t = iota(1, shape), *b, *row, *s, *all;
  CHECK_OK(topos_tensor_broadcast_along(t, 0, 4, &b)); /* [4,3] */
  CHECK_EQ_INT(topos_tensor_shape(b)[0], 4);
  CHECK_EQ_INT(topos_tensor_strides(b)[0], 0);
  CHECK(topos_tensor_storage_id(b) == topos_tensor_storage_id(t));
  CHECK_BITS_F64(at(b, 3, 2, 0), 2.0);
  CHECK(!topos_tensor_is_contiguous(b));
  CHECK_OK(topos_tensor_broadcast_along(t, 1, 2, &row)); /* [3,2] */
  CHECK_EQ_INT(topos_tensor_strides(row)[1], 0);
  CHECK_BITS_F64(at(row, 2, 1, 0), 2.0);
  CHECK_STATUS(topos_tensor_broadcast_along(t, 2, 2, &s), TOPOS_ERR_RANGE);
  CHECK_STATUS(topos_tensor_broadcast_along(t, 0, 0, &s), TOPOS_ERR_SHAPE);
  /* volume-1 tensor to any shape */
  CHECK_OK(topos_tensor_narrow(t, 0, 1, 1, &s));
  int64_t big[] = {2, 3, 5};
  CHECK_OK(topos_tensor_broadcast(s, 3, big, &all));
  for (int i = 0; i < 3; ++i) CHECK_EQ_INT(topos_tensor_strides(all)[i], 0);
  CHECK_BITS_F64(at(all, 1, 2, 4), 1.0);
  /* writes through the one shared element show everywhere */
  int64_t origin[] = {0, 0, 0};
  CHECK_OK(topos_tensor_set(all, origin, 42.0));
  CHECK_BITS_F64(at(t, 1, 0, 0), 42.0);
  CHECK_BITS_F64(at(all, 1, 1, 1), 42.0);
  topos_tensor *c;
  CHECK_OK(topos_tensor_contiguous(all, 0, &c));
  CHECK(topos_tensor_is_contiguous(c) && topos_tensor_volume(c) == 30);
  CHECK_BITS_F64(at(c, 1, 2, 3), 42.0);
  topos_tensor_release(c);
  topos_tensor *x;
  CHECK_STATUS(topos_tensor_broadcast(t, 3, big, &x), TOPOS_ERR_SHAPE);
  CHECK_ERROR_HAS("volume 3");
  topos_tensor_release(all);
  topos_tensor_release(s);
  topos_tensor_release(row);
  topos_tensor_release(b);
  topos_tensor_release(t);
}

TEST(view_unfold_windows_alias) {
  int64_t shape[] = {2, 10};
  topos_tensor *t = iota(2, shape), *u;
  /* size 3, step 2, dilation 2: span 5, count (10-5)/2+1 = 3 */
  CHECK_OK(topos_tensor_unfold(t, 1, 3, 2, 2, &u));
  CHECK_EQ_INT(topos_tensor_rank(u), 3);
  CHECK_EQ_INT(topos_tensor_shape(u)[1], 3);
  CHECK_EQ_INT(topos_tensor_shape(u)[2], 3);
  CHECK_EQ_INT(topos_tensor_strides(u)[1], 2);
  CHECK_EQ_INT(topos_tensor_strides(u)[2], 2);
  CHECK(topos_tensor_storage_id(u) == topos_tensor_storage_id(t));
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t w = 0; w < 3; ++w)
      for (int64_t k = 0; k < 3; ++k) CHECK_BITS_F64(at(u, r, w, k), at(t, r, w * 2 + k * 2, 0));
  /* overlapping windows alias: one write shows in two windows */
  int64_t index[] = {0, 0, 1};
  CHECK_OK(topos_tensor_set(u, index, -5.0));
  CHECK_BITS_F64(at(u, 0, 1, 0), -5.0);
  topos_tensor_release(u);
  /* unfold along axis 0: exact fit */
  CHECK_OK(topos_tensor_unfold(t, 0, 2, 1, 1, &u));
  CHECK_EQ_INT(topos_tensor_shape(u)[0], 1);
  CHECK_EQ_INT(topos_tensor_shape(u)[1], 2);
  CHECK_EQ_INT(topos_tensor_shape(u)[2], 10);
  topos_tensor_release(u);
  CHECK_OK(topos_tensor_unfold(t, 1, 4, 1, 3, &u)); /* span 10: exactly one window */
  CHECK_EQ_INT(topos_tensor_shape(u)[1], 1);
  topos_tensor_release(u);
  CHECK_STATUS(topos_tensor_unfold(t, 1, 4, 1, 4, &u), TOPOS_ERR_RANGE); /* span 13 */
  CHECK_ERROR_HAS("unfold");
  CHECK_STATUS(topos_tensor_unfold(t, 1, 0, 1, 1, &u), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_tensor_unfold(t, 1, 2, 0, 1, &u), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_tensor_unfold(t, 1, 2, 1, 0, &u), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_tensor_unfold(t, 3, 2, 1, 1, &u), TOPOS_ERR_RANGE);
  CHECK_STATUS(topos_tensor_unfold(t, 1, 11, 1, 1, &u), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("extent 10 of axis 1 in shape [2,10]");
  CHECK_STATUS(topos_tensor_unfold(t, 1, 3, 1, INT64_MAX, &u), TOPOS_ERR_RANGE);
  /* huge step with a single window is fine */
  CHECK_OK(topos_tensor_unfold(t, 1, 10, INT64_MAX, 1, &u));
  CHECK_EQ_INT(topos_tensor_shape(u)[1], 1);
  topos_tensor_release(u);
  topos_tensor_release(t);
}
