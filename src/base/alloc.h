/* Internal: aligned heap memory, overflow-checked size arithmetic, and the
 * arena (chunked bump allocator) the engine reuses across plan runs.
 *
 * Size helpers return true when the exact result fits (and store it in *out),
 * false on overflow (then *out is left unchanged). Callers turn false into
 * tp_fail(TOPOS_ERR_OVERFLOW, ...) with their own context. */
#ifndef TP_BASE_ALLOC_H
#define TP_BASE_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h" /* TP_GROW propagates with TP_TRY */
#include "topos/base.h"

#define TP_DEFAULT_ALIGN ((size_t)64) /* one cache line; a full AVX-512 vector */

static inline bool tp_mul_size(size_t a, size_t b, size_t *out) {
  size_t r;
  if (__builtin_mul_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}
static inline bool tp_add_size(size_t a, size_t b, size_t *out) {
  size_t r;
  if (__builtin_add_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}
static inline bool tp_mul_i64(int64_t a, int64_t b, int64_t *out) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}
static inline bool tp_add_i64(int64_t a, int64_t b, int64_t *out) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}
static inline bool tp_sub_i64(int64_t a, int64_t b, int64_t *out) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}
/* value rounded up to a multiple of align (a power of two). */
static inline bool tp_align_up_size(size_t value, size_t align, size_t *out) {
  size_t r;
  if (__builtin_add_overflow(value, align - 1, &r)) return false;
  *out = r & ~(align - 1);
  return true;
}

/* Allocates bytes (0 is allowed and yields a distinct, freeable pointer)
 * aligned to align (0 means TP_DEFAULT_ALIGN; otherwise a power of two, at
 * most 1 MiB). Contents are uninitialised. On success *out owns the block:
 * release it with tp_free_aligned. Errors: TOPOS_ERR_INVALID_ARGUMENT (bad
 * align or out NULL), TOPOS_ERR_OVERFLOW (bytes beyond PTRDIFF_MAX: such
 * sizes only come from wrapped arithmetic), TOPOS_ERR_OUT_OF_MEMORY. *out is
 * NULL on failure. Every success counts in tp_heap_allocation_count. */
topos_status tp_alloc_aligned(size_t bytes, size_t align, void **out);
/* As tp_alloc_aligned with the memory zeroed. */
topos_status tp_calloc_aligned(size_t bytes, size_t align, void **out);
/* Fresh zero pages in a mapping of their own (bytes > 0), NULL when the
 * system refuses: large or long-lived buffers kept out of the malloc heap,
 * whose freed blocks stay resident as holes. Give them back with
 * tp_pages_free and the same bytes. Not counted as heap allocations. */
void *tp_pages_alloc(size_t bytes);
/* Asks for 2 MiB pages on [pages, pages + bytes) where the system grants
 * them (MADV_HUGEPAGE; transparent huge pages in "madvise" mode give none
 * otherwise): a buffer read front to back from memory, as a long KV cache
 * is once per token, then takes one TLB entry per 2 MiB instead of one per
 * 4 KiB page. A hint: where refused, nothing changes. */
void tp_pages_prefer_huge(void *pages, size_t bytes);
void tp_pages_free(void *pages, size_t bytes); /* NULL is fine */
/* count * elem bytes, overflow checked (TOPOS_ERR_OVERFLOW names both). */
topos_status tp_alloc_array(size_t count, size_t elem, size_t align, void **out);
/* Room for one more entry in a growable heap array (malloc/realloc/free)
 * holding count entries of elem bytes in *capacity slots. When full, the
 * capacity doubles (first slots when it is 0) and *grown receives the
 * reallocated block; otherwise *grown = items. On failure
 * (TOPOS_ERR_OVERFLOW, TOPOS_ERR_OUT_OF_MEMORY, the message naming `what`
 * and the slot count) items is still valid and *capacity unchanged. */
topos_status tp_grow_array(void *items, size_t elem, size_t count, size_t *capacity, size_t first,
                           const char *what, void **grown);
/* tp_grow_array for an array `items` (a typed pointer lvalue), propagating
 * failure with TP_TRY. */
#define TP_GROW(items, count, capacity, first, what)                                       \
  do {                                                                                     \
    void *tp_grown_;                                                                       \
    TP_TRY(tp_grow_array((items), sizeof *(items), (count), &(capacity), (first), (what), \
                         &tp_grown_));                                                     \
    (items) = tp_grown_;                                                                   \
  } while (0)
/* Frees a block from tp_alloc_aligned; NULL is a no-op. */
void tp_free_aligned(void *ptr);
/* Successful tp_alloc_aligned calls since start, all threads (for benches
 * that report heap allocations per step). */
uint64_t tp_heap_allocation_count(void);

/* ---- arena: a list of chunks; allocations bump an offset in the current
 * chunk. tp_arena_reset rewinds to the first chunk and keeps every chunk, and
 * a chunk created for a request that did not fit is linked right after the
 * chunk that was current, so replaying the same sequence of requests after a
 * reset finds the same chunks in the same order: steady state allocates
 * nothing from the heap. Not thread-safe; one owner at a time.
 *
 * A zeroed tp_arena (or TP_ARENA_INIT) is a valid empty arena with the
 * default chunk size; tp_arena_init sets another chunk size. Nothing is
 * allocated until the first request. */
typedef struct tp_arena_chunk tp_arena_chunk;
typedef struct tp_arena {
  tp_arena_chunk *first;     /* owned list */
  tp_arena_chunk *current;   /* where the next request is tried first */
  size_t chunk_bytes;        /* usable bytes of a regular chunk; 0 = default (64 KiB) */
  size_t heap_allocations;   /* chunks ever allocated by this arena */
  size_t capacity_bytes;     /* usable bytes in all chunks */
  size_t used_bytes;         /* bytes handed out since the last reset (incl. padding) */
} tp_arena;
#define TP_ARENA_INIT {0}

void tp_arena_init(tp_arena *arena, size_t chunk_bytes);
/* bytes aligned to align (0 = TP_DEFAULT_ALIGN; power of two <= 1 MiB),
 * uninitialised. The memory belongs to the arena: valid until reset or
 * destroy. bytes == 0 gives a non-NULL pointer that must not be
 * dereferenced. Errors as tp_alloc_aligned; the arena is unchanged then. */
topos_status tp_arena_alloc(tp_arena *arena, size_t bytes, size_t align, void **out);
/* count * elem bytes, overflow checked. */
topos_status tp_arena_alloc_array(tp_arena *arena, size_t count, size_t elem, size_t align,
                                  void **out);
/* Forgets every allocation; keeps the chunks for the next round. */
void tp_arena_reset(tp_arena *arena);
/* Frees every chunk; the arena is empty again (and may be reused). */
void tp_arena_destroy(tp_arena *arena);
/* Number of heap allocations (chunks) this arena has made since init or the
 * last destroy. */
static inline size_t tp_arena_heap_allocations(const tp_arena *arena) {
  return arena->heap_allocations;
}

#endif
