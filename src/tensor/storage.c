/* Refcounted storage: heap bytes owned by topos, or caller/mapped bytes
 * handed back through a release callback when the last view goes. Counts are
 * atomic because tensors may be shared across threads. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* madvise */

#include "base/alloc.h"
#include "base/error.h"
#include "tensor/tensor_internal.h"

#define TP_STORAGE_ALIGNMENT 64

/* Large buffers (plan arenas, KV caches, activations) are mapped
 * directly: unmapping gives the pages back at once, where glibc's heap,
 * whose mmap threshold rises to the largest block freed so far, would keep
 * a freed arena's pages and grow the process with every plan a caller
 * alternates between. Fresh mappings are zero already. */
#define TP_STORAGE_MAP_MIN ((size_t)1 << 20)

/* Plan arenas and scratch are mapped from a smaller size: each lives for
 * many runs, so its faults are paid once per plan activation, and small
 * models' arenas (0.2-0.8 MB for SmolLM2's chunks) otherwise become heap
 * holes as a context moves between plans (SmolLM2's peak, with the kernel
 * temporaries off the heap too: 130 -> 127 MB). */
#define TP_STORAGE_ARENA_MAP_MIN ((size_t)64 << 10)

/* One spare: the block last given back (up to TP_STORAGE_SPARE_MAX) stays
 * mapped until a request it fits (at least the bytes asked, at most a
 * quarter more) takes it, or a newer block replaces it. A caller
 * alternating between plans (the llama context runs a prompt's chunks on
 * plans of their own and trims each as it leaves it) then reuses the same
 * pages instead of faulting and clearing fresh ones every chunk (about 1800
 * faults per 512-token prompt of a 15M-parameter model), while the process
 * still holds at most one spare block beside the live ones. The fit is
 * tight so the request the spare was kept for gets it: with "at most twice"
 * a prompt chunk's 1.3 MB of inputs took the 2.1 MB arena the previous
 * plan gave back, and the next arena was mapped afresh beside it
 * (SmolLM2's bench peak 128.5 -> 127.6 MB with the tighter fit). The
 * context of a mapped storage is its mapped size. */
#define TP_STORAGE_SPARE_MAX ((size_t)256 << 20)

static pthread_mutex_t tp_spare_lock = PTHREAD_MUTEX_INITIALIZER;
static void *tp_spare;
static size_t tp_spare_bytes;

static void tp_storage_unmap(void *context, void *data, size_t bytes) {
  const size_t mapped = (size_t)(uintptr_t)context;
  (void)bytes;
  if (mapped > TP_STORAGE_SPARE_MAX) {
    tp_pages_free(data, mapped);
    return;
  }
  pthread_mutex_lock(&tp_spare_lock);
  void *old = tp_spare;
  size_t old_bytes = tp_spare_bytes;
  tp_spare = data;
  tp_spare_bytes = mapped;
  pthread_mutex_unlock(&tp_spare_lock);
  tp_pages_free(old, old_bytes);
}

/* The spare block when it fits `bytes`, else NULL; *mapped its size. A
 * spare smaller than the request is unmapped: the block about to be mapped
 * would sit beside it, and it is the next spare once given back. */
static void *tp_storage_take_spare(size_t bytes, size_t *mapped) {
  void *data = NULL, *drop = NULL;
  size_t drop_bytes = 0;
  pthread_mutex_lock(&tp_spare_lock);
  if (tp_spare && tp_spare_bytes >= bytes && tp_spare_bytes - bytes <= bytes / 4) {
    data = tp_spare;
    *mapped = tp_spare_bytes;
  } else if (tp_spare && tp_spare_bytes < bytes) {
    drop = tp_spare;
    drop_bytes = tp_spare_bytes;
  }
  if (data || drop) {
    tp_spare = NULL;
    tp_spare_bytes = 0;
  }
  pthread_mutex_unlock(&tp_spare_lock);
  tp_pages_free(drop, drop_bytes);
  return data;
}

static topos_status tp_storage_alloc(size_t bytes, bool zero, size_t map_min, tp_storage **out) {
  if (bytes >= map_min) {
    size_t mapped = bytes;
    void *data = tp_storage_take_spare(bytes, &mapped);
    if (data && zero) memset(data, 0, bytes); /* fresh mappings are zero; a spare is not */
    if (!data) {
      data = tp_pages_alloc(bytes);
      if (!data) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "storage: cannot map %zu bytes", bytes);
#ifdef MADV_HUGEPAGE
      if (bytes >= ((size_t)4 << 20)) madvise(data, bytes, MADV_HUGEPAGE); /* fewer faults; a hint only */
#endif
    }
    topos_status st = tp_storage_wrap(data, bytes, TOPOS_STORAGE_HEAP, tp_storage_unmap,
                                      (void *)(uintptr_t)mapped, out);
    if (st != TOPOS_OK) {
      tp_pages_free(data, mapped);
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

topos_status tp_storage_heap(size_t bytes, bool zero, tp_storage **out) {
  return tp_storage_alloc(bytes, zero, TP_STORAGE_MAP_MIN, out);
}

topos_status tp_storage_arena(size_t bytes, tp_storage **out) {
  return tp_storage_alloc(bytes, false, TP_STORAGE_ARENA_MAP_MIN, out);
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
