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
