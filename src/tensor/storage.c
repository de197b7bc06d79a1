/* Refcounted storage: heap bytes owned by topos, or caller/mapped bytes
 * handed back through a release callback when the last view goes. Counts are
 * atomic because tensors may be shared across threads. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/error.h"
#include "tensor/tensor_internal.h"

#define TP_STORAGE_ALIGNMENT 64

/* Large buffers (plan arenas, KV caches, activations) are mapped
 * directly: unmapping gives the pages back at once, where glibc's heap,
 * whose mmap threshold rises to the largest block freed so far, would keep
 * a freed arena's pages and grow the process with every plan a caller
 * alternates between. Fresh mappings are zero already. */
#define TP_STORAGE_MAP_MIN ((size_t)1 << 20)

static void tp_storage_unmap(void *context, void *data, size_t bytes) {
  (void)context;
  munmap(data, bytes);
}

topos_status tp_storage_heap(size_t bytes, bool zero, tp_storage **out) {
  if (bytes >= TP_STORAGE_MAP_MIN) {
    void *data = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "storage: cannot map %zu bytes", bytes);
#ifdef MADV_HUGEPAGE
    if (bytes >= ((size_t)4 << 20)) madvise(data, bytes, MADV_HUGEPAGE); /* fewer faults; a hint only */
#endif
    topos_status st = tp_storage_wrap(data, bytes, TOPOS_STORAGE_HEAP, tp_storage_unmap, NULL, out);
    if (st != TOPOS_OK) {
      munmap(data, bytes);
      return st;
    }
    tp_heap_allocations_add(1);
    return TOPOS_OK;
  }
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
  if (s->kind == TOPOS_STORAGE_HEAP && !s->release)
    free(s->data);
  else if (s->release)
    s->release(s->context, s->data, s->bytes);
  free(s);
}
