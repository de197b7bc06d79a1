/* Refcounted storage: heap bytes owned by topos, or caller/mapped bytes
 * handed back through a release callback when the last view goes. Counts are
 * atomic because tensors may be shared across threads. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tensor/tensor_internal.h"

#define TP_STORAGE_ALIGNMENT 64

topos_status tp_storage_heap(size_t bytes, bool zero, tp_storage **out) {
  void *data = NULL;
  /* Never 0 bytes: tensors are never empty, but keep posix_memalign defined. */
  if (posix_memalign(&data, TP_STORAGE_ALIGNMENT, bytes ? bytes : 1) != 0)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "storage: cannot allocate %zu bytes", bytes);
  if (zero) memset(data, 0, bytes);
  /* a HEAP storage frees its bytes itself on the last release */
  topos_status st = tp_storage_wrap(data, bytes, TOPOS_STORAGE_HEAP, NULL, NULL, out);
  if (st != TOPOS_OK) {
    free(data);
    return st;
  }
  tp_heap_allocations_add(1); /* the bytes; wrap counted the handle */
  return TOPOS_OK;
}

topos_status tp_storage_wrap(void *data, size_t bytes, topos_storage_kind kind,
                             topos_release_fn release, void *context, tp_storage **out) {
  tp_storage *s = malloc(sizeof *s);
  if (!s) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "storage: out of memory for a handle");
  atomic_init(&s->refs, 1);
  tp_heap_allocations_add(1);
  s->kind = kind;
  s->data = data;
  s->bytes = bytes;
  s->release = release;
  s->context = context;
  *out = s;
  return TOPOS_OK;
}

void tp_storage_retain(tp_storage *s) { atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed); }

void tp_storage_release(tp_storage *s) {
  if (!s) return;
  /* acq_rel: every write through any view happens-before the free/callback. */
  if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
  if (s->kind == TOPOS_STORAGE_HEAP)
    free(s->data);
  else if (s->release)
    s->release(s->context, s->data, s->bytes);
  free(s);
}
