/* Where new tensors live: the per-thread provider and one-shot destination
 * (see tensor_internal.h), header recycling and the heap allocation counter.
 * Kept apart from tensor.c so the default heap path stays obvious there. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "tensor/tensor_internal.h"

static _Thread_local tp_provider *tp_current_provider;
static _Thread_local topos_tensor *tp_current_destination;
static atomic_uint_fast64_t tp_heap_count;

/* Also counts the base tier's aligned allocations (tp_alloc_aligned), so
 * whatever a kernel or backend allocates that way shows up too. */
uint64_t tp_heap_allocations(void) {
  return atomic_load_explicit(&tp_heap_count, memory_order_relaxed) + tp_heap_allocation_count();
}

void tp_heap_allocations_add(uint64_t n) {
  atomic_fetch_add_explicit(&tp_heap_count, n, memory_order_relaxed);
}

tp_provider *tp_provider_install(tp_provider *p) {
  tp_provider *previous = tp_current_provider;
  tp_current_provider = p;
  return previous;
}

topos_tensor *tp_tensor_destination_arm(topos_tensor *dst) {
  topos_tensor *previous = tp_current_destination;
  tp_current_destination = dst;
  return previous;
}

bool tp_tensor_place(topos_dtype dtype, int rank, const int64_t *shape, int64_t volume,
                     size_t bytes, tp_storage **storage, int64_t *offset, topos_tensor **exact) {
  *exact = NULL;
  size_t size = (unsigned)dtype < (unsigned)TOPOS_DTYPE_COUNT ? tp_dtype_size(dtype) : 0;
  if (size == 0) return false; /* block dtypes: always the heap */
  topos_tensor *dst = tp_current_destination;
  if (dst && dst->dtype == dtype && dst->volume == volume) {
    tp_current_destination = NULL; /* one-shot */
    if (dst->rank == rank && memcmp(dst->shape, shape, (size_t)rank * sizeof *shape) == 0) {
      *exact = topos_tensor_retain(dst);
      return true;
    }
    tp_storage_retain(dst->storage);
    *storage = dst->storage;
    *offset = dst->offset;
    return true;
  }
  tp_provider *p = tp_current_provider;
  size_t at = 0;
  if (p && p->place && p->place(p, bytes, storage, &at)) {
    *offset = (int64_t)(at / size);
    return true;
  }
  return false;
}

topos_tensor *tp_tensor_header_new(void) {
  tp_provider *p = tp_current_provider;
  topos_tensor *t = p && p->header ? p->header(p) : NULL;
  if (t) return t;
  tp_heap_allocations_add(1);
  return malloc(sizeof *t);
}

void tp_tensor_header_free(topos_tensor *t) { free(t); }

void tp_tensor_header_discard(topos_tensor *t) {
  tp_provider *p = tp_current_provider;
  if (p && p->recycle) {
    t->storage = NULL;
    p->recycle(p, t);
  } else {
    free(t);
  }
}

bool tp_tensor_recycle(topos_tensor *t) {
  if (!t) return false;
  if (atomic_load_explicit(&t->refs, memory_order_acquire) != 1) {
    topos_tensor_release(t);
    return false;
  }
  tp_storage_release(t->storage);
  t->storage = NULL;
  return true;
}

void *tp_scratch_alloc(size_t bytes, bool *heap) {
  tp_provider *p = tp_current_provider;
  void *mem = p && p->scratch ? p->scratch(p, bytes) : NULL;
  *heap = mem == NULL;
  if (mem) return mem;
  tp_heap_allocations_add(1);
  return malloc(bytes ? bytes : 1);
}

void tp_scratch_free(void *p, bool heap) {
  if (heap) free(p);
}
