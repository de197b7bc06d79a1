#include <pthread.h>
#include <stdlib.h>

#include "test.h"

typedef struct release_log {
  int calls;
  void *data;
  size_t bytes;
} release_log;

static void log_release(void *context, void *data, size_t bytes) {
  release_log *log = context;
  log->calls++;
  log->data = data;
  log->bytes = bytes;
}

TEST(storage_mapped_is_read_only_and_released_once) {
  float buffer[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  release_log log = {0, NULL, 0};
  int64_t shape[] = {2, 4};
  topos_tensor *t, *v, *n;
  CHECK_OK(topos_tensor_wrap(TOPOS_F32, 2, shape, buffer, sizeof buffer, TOPOS_STORAGE_MAPPED,
                             log_release, &log, &t));
  CHECK_EQ_INT(topos_tensor_storage_kind(t), TOPOS_STORAGE_MAPPED);
  CHECK(topos_tensor_data(t) == (const void *)buffer);
  topos_clear_error();
  CHECK(topos_tensor_data_mut(t) == NULL);
  CHECK_ERROR_HAS("read-only");
  int64_t index[] = {1, 1};
  CHECK_STATUS(topos_tensor_set(t, index, 1.0), TOPOS_ERR_STATE);
  double value;
  CHECK_OK(topos_tensor_get(t, index, &value));
  CHECK_BITS_F64(value, 5.0);
  CHECK_OK(topos_tensor_transpose(t, &v));
  CHECK_OK(topos_tensor_narrow(v, 0, 2, 2, &n));
  CHECK(topos_tensor_data_mut(n) == NULL);
  topos_tensor_release(t);
  topos_tensor_release(v);
  CHECK_EQ_INT(log.calls, 0); /* n still views the mapping */
  topos_tensor *copy;
  CHECK_OK(topos_tensor_contiguous(n, 0, &copy)); /* not contiguous: a heap copy */
  CHECK_EQ_INT(topos_tensor_storage_kind(copy), TOPOS_STORAGE_HEAP);
  CHECK(topos_tensor_data_mut(copy) != NULL);
  topos_tensor_release(n);
  CHECK_EQ_INT(log.calls, 1);
  CHECK(log.data == (void *)buffer);
  CHECK_EQ_INT(log.bytes, sizeof buffer);
  CHECK_BITS_F64(((const float *)topos_tensor_data(copy))[1], 6.0); /* t[1,2] */
  topos_tensor_release(copy);
  CHECK_EQ_INT(log.calls, 1);
}

TEST(storage_external_is_writable_and_failed_wrap_keeps_ownership) {
  int32_t buffer[6] = {0};
  release_log log = {0, NULL, 0};
  int64_t shape[] = {6};
  topos_tensor *t;
  CHECK_STATUS(topos_tensor_wrap(TOPOS_I32, 1, shape, buffer, 20, TOPOS_STORAGE_EXTERNAL,
                                 log_release, &log, &t),
               TOPOS_ERR_SHAPE);
  CHECK_STATUS(topos_tensor_wrap(TOPOS_I32, 1, shape, buffer, sizeof buffer, TOPOS_STORAGE_HEAP,
                                 log_release, &log, &t),
               TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(topos_tensor_wrap(TOPOS_I32, 1, shape, (char *)buffer + 1, 24,
                                 TOPOS_STORAGE_EXTERNAL, log_release, &log, &t),
               TOPOS_ERR_ALIGNMENT);
  CHECK_EQ_INT(log.calls, 0);
  CHECK_OK(topos_tensor_wrap(TOPOS_I32, 1, shape, buffer, sizeof buffer, TOPOS_STORAGE_EXTERNAL,
                             log_release, &log, &t));
  int64_t index = 4;
  CHECK_OK(topos_tensor_set(t, &index, 9.0));
  CHECK_EQ_INT(buffer[4], 9);
  CHECK(topos_tensor_data_mut(t) == (void *)buffer);
  topos_tensor_release(t);
  CHECK_EQ_INT(log.calls, 1);
  /* NULL callback is allowed */
  CHECK_OK(topos_tensor_wrap(TOPOS_I32, 1, shape, buffer, sizeof buffer, TOPOS_STORAGE_EXTERNAL,
                             NULL, NULL, &t));
  topos_tensor_release(t);
}

TEST(storage_refcount_retain_release) {
  float buffer[4] = {1, 2, 3, 4};
  release_log log = {0, NULL, 0};
  int64_t shape[] = {4};
  topos_tensor *t, *views[5];
  CHECK_OK(topos_tensor_wrap(TOPOS_F32, 1, shape, buffer, sizeof buffer, TOPOS_STORAGE_EXTERNAL,
                             log_release, &log, &t));
  CHECK(topos_tensor_retain(t) == t);
  for (int i = 0; i < 5; ++i) CHECK_OK(topos_tensor_narrow(t, 0, i % 4, 1, &views[i]));
  topos_tensor_release(t);
  topos_tensor_release(t);
  for (int i = 0; i < 5; ++i) {
    CHECK_EQ_INT(log.calls, 0);
    topos_tensor_release(views[i]);
  }
  CHECK_EQ_INT(log.calls, 1);
  topos_tensor_release(NULL);
}

static void *churn(void *arg) {
  topos_tensor *t = arg;
  for (int i = 0; i < 2000; ++i) {
    topos_tensor *v = NULL;
    topos_tensor_retain(t);
    if (topos_tensor_transpose(t, &v) == TOPOS_OK) topos_tensor_release(v);
    topos_tensor_release(t);
  }
  return NULL;
}

TEST(storage_refcount_across_threads) {
  float buffer[4] = {0};
  release_log log = {0, NULL, 0};
  int64_t shape[] = {2, 2};
  topos_tensor *t;
  CHECK_OK(topos_tensor_wrap(TOPOS_F32, 2, shape, buffer, sizeof buffer, TOPOS_STORAGE_EXTERNAL,
                             log_release, &log, &t));
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) CHECK(pthread_create(&threads[i], NULL, churn, t) == 0);
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
  CHECK_EQ_INT(log.calls, 0);
  topos_tensor_release(t);
  CHECK_EQ_INT(log.calls, 1);
}

/* Large storages are mapped; the block last given back is kept as a spare
 * for the next request it fits (storage.c). A zeroed request served by the
 * spare is zero, the spare's old bytes gone; a request larger than the
 * spare, or more than a quarter smaller, maps fresh pages (the spare is
 * kept for the request it came from). Tensor zeros are public behaviour:
 * topos_tensor_zeros of a large shape after a large tensor was freed. */
TEST(storage_large_blocks_reuse_the_spare_and_keep_zeros) {
  const int64_t n = (int64_t)1 << 19; /* 2 MiB of f32: mapped */
  int64_t shape[1] = {n};
  topos_tensor *a = NULL, *b = NULL, *c = NULL;
  CHECK_OK(topos_tensor_zeros(TOPOS_F32, 1, shape, &a));
  if (!a) return;
  float *pa = topos_tensor_data_mut(a);
  for (int64_t i = 0; i < n; ++i) pa[i] = 1.5f;
  const void *first = pa;
  topos_tensor_release(a); /* the spare now */
  CHECK_OK(topos_tensor_zeros(TOPOS_F32, 1, shape, &b));
  if (!b) return;
  const float *pb = topos_tensor_data(b);
  CHECK(pb == first); /* the same pages back */
  int64_t nonzero = 0;
  for (int64_t i = 0; i < n; ++i) nonzero += pb[i] != 0.0f;
  CHECK_EQ_INT(nonzero, 0);
  topos_tensor_release(b);
  int64_t smaller[1] = {n / 2}; /* fits, but half the spare: fresh pages */
  CHECK_OK(topos_tensor_zeros(TOPOS_F32, 1, smaller, &b));
  if (b) CHECK(topos_tensor_data(b) != first);
  topos_tensor_release(b);
  int64_t big[1] = {3 * n}; /* more than the spare holds: fresh, zero */
  CHECK_OK(topos_tensor_zeros(TOPOS_F32, 1, big, &c));
  if (c) {
    const float *pc = topos_tensor_data(c);
    nonzero = 0;
    for (int64_t i = 0; i < 3 * n; ++i) nonzero += pc[i] != 0.0f;
    CHECK_EQ_INT(nonzero, 0);
  }
  topos_tensor_release(c);
}
