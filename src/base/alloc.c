/* Aligned heap allocation and the arena. All heap traffic of the engine goes
 * through tp_alloc_aligned so benches can count it. */
#include "base/alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/error.h"

#define TP_MAX_ALIGN ((size_t)1 << 20)
#define TP_ARENA_DEFAULT_CHUNK ((size_t)64 << 10)

static atomic_uint_least64_t tp_heap_allocations;

uint64_t tp_heap_allocation_count(void) {
  return atomic_load_explicit(&tp_heap_allocations, memory_order_relaxed);
}

static topos_status tp_check_align(const char *who, size_t align, size_t *effective) {
  if (align == 0) align = TP_DEFAULT_ALIGN;
  if ((align & (align - 1)) != 0 || align > TP_MAX_ALIGN)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "%s: alignment %zu is not a power of two in [1, %zu]", who, align, TP_MAX_ALIGN);
  /* posix_memalign wants at least pointer alignment; more is still aligned. */
  *effective = align < sizeof(void *) ? sizeof(void *) : align;
  return TOPOS_OK;
}

void *tp_pages_alloc(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void tp_pages_prefer_huge(void *pages, size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (pages && bytes >= ((size_t)2 << 20)) madvise(pages, bytes, MADV_HUGEPAGE);
#else
  (void)pages, (void)bytes;
#endif
}

void tp_pages_free(void *pages, size_t bytes) {
  if (pages) munmap(pages, bytes);
}

topos_status tp_alloc_aligned(size_t bytes, size_t align, void **out) {
  if (!out) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "alloc: output pointer is NULL");
  *out = NULL;
  TP_TRY(tp_check_align("alloc", align, &align));
  /* Sizes past PTRDIFF_MAX cannot be indexed; they come from wrapped arithmetic. */
  if (bytes > (size_t)PTRDIFF_MAX - align)
    return tp_fail(TOPOS_ERR_OVERFLOW, "alloc: %zu bytes exceed the address space", bytes);
  void *ptr = NULL;
  if (posix_memalign(&ptr, align, bytes ? bytes : 1) != 0 || !ptr)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "alloc: could not allocate %zu bytes (alignment %zu)",
                   bytes, align);
  atomic_fetch_add_explicit(&tp_heap_allocations, 1, memory_order_relaxed);
  *out = ptr;
  return TOPOS_OK;
}

topos_status tp_calloc_aligned(size_t bytes, size_t align, void **out) {
  TP_TRY(tp_alloc_aligned(bytes, align, out));
  memset(*out, 0, bytes);
  return TOPOS_OK;
}

topos_status tp_alloc_array(size_t count, size_t elem, size_t align, void **out) {
  size_t bytes;
  if (!tp_mul_size(count, elem, &bytes)) {
    if (out) *out = NULL;
    return tp_fail(TOPOS_ERR_OVERFLOW, "alloc: %zu elements of %zu bytes overflow size_t", count,
                   elem);
  }
  return tp_alloc_aligned(bytes, align, out);
}

void tp_free_aligned(void *ptr) { free(ptr); }

topos_status tp_grow_array(void *items, size_t elem, size_t count, size_t *capacity, size_t first,
                           const char *what, void **grown) {
  *grown = items;
  if (count < *capacity) return TOPOS_OK;
  size_t slots, bytes;
  if (*capacity == 0) slots = first;
  else if (!tp_mul_size(*capacity, 2, &slots))
    return tp_fail(TOPOS_ERR_OVERFLOW, "%s: %zu entries cannot double", what, *capacity);
  if (!tp_mul_size(slots, elem, &bytes))
    return tp_fail(TOPOS_ERR_OVERFLOW, "%s: %zu entries of %zu bytes overflow the size type",
                   what, slots, elem);
  void *p = realloc(items, bytes);
  if (!p) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "%s: no memory for %zu entries", what, slots);
  *grown = p;
  *capacity = slots;
  return TOPOS_OK;
}

/* ---- arena */

struct tp_arena_chunk {
  tp_arena_chunk *next;
  size_t size; /* usable bytes after the header */
  size_t used;
};
/* The header occupies one default alignment unit so data starts aligned. */
#define TP_CHUNK_HEADER TP_DEFAULT_ALIGN
_Static_assert(sizeof(tp_arena_chunk) <= TP_CHUNK_HEADER, "chunk header fits its slot");

static unsigned char *tp_chunk_data(tp_arena_chunk *chunk) {
  return (unsigned char *)chunk + TP_CHUNK_HEADER;
}

void tp_arena_init(tp_arena *arena, size_t chunk_bytes) {
  memset(arena, 0, sizeof *arena);
  arena->chunk_bytes = chunk_bytes;
}

/* Bumps inside chunk if bytes at align fit after its used part. */
static void *tp_chunk_try(tp_arena_chunk *chunk, size_t bytes, size_t align, size_t *consumed) {
  uintptr_t base = (uintptr_t)tp_chunk_data(chunk);
  uintptr_t start = base + chunk->used;
  uintptr_t aligned = (start + (align - 1)) & ~(uintptr_t)(align - 1);
  size_t padding = (size_t)(aligned - start);
  size_t room = chunk->size - chunk->used;
  if (padding > room || bytes > room - padding) return NULL;
  chunk->used += padding + bytes;
  *consumed = padding + bytes;
  return (void *)aligned;
}

topos_status tp_arena_alloc(tp_arena *arena, size_t bytes, size_t align, void **out) {
  if (!arena || !out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "arena alloc: arena or output pointer is NULL");
  *out = NULL;
  TP_TRY(tp_check_align("arena alloc", align, &align));
  size_t consumed = 0;
  void *ptr;
  if (arena->current) {
    if ((ptr = tp_chunk_try(arena->current, bytes, align, &consumed))) goto done;
    /* Chunks after current are untouched this round: start them empty. */
    for (tp_arena_chunk *c = arena->current->next; c; c = c->next) {
      c->used = 0;
      if ((ptr = tp_chunk_try(c, bytes, align, &consumed))) {
        arena->current = c;
        goto done;
      }
    }
  }
  {
    size_t regular = arena->chunk_bytes ? arena->chunk_bytes : TP_ARENA_DEFAULT_CHUNK;
    size_t need, total;
    /* Worst-case padding is align - TP_DEFAULT_ALIGN since data starts 64-aligned. */
    if (!tp_add_size(bytes, align, &need) || !tp_add_size(need < regular ? regular : need,
                                                          TP_CHUNK_HEADER, &total))
      return tp_fail(TOPOS_ERR_OVERFLOW, "arena alloc: %zu bytes at alignment %zu overflow",
                     bytes, align);
    tp_arena_chunk *chunk;
    TP_TRY(tp_alloc_aligned(total, TP_DEFAULT_ALIGN, (void **)&chunk));
    chunk->size = total - TP_CHUNK_HEADER;
    chunk->used = 0;
    if (arena->current) { /* right after current, so a replay meets it at the same point */
      chunk->next = arena->current->next;
      arena->current->next = chunk;
    } else {
      chunk->next = arena->first;
      arena->first = chunk;
    }
    arena->current = chunk;
    arena->heap_allocations += 1;
    arena->capacity_bytes += chunk->size;
    ptr = tp_chunk_try(chunk, bytes, align, &consumed);
    if (!ptr) return tp_fail(TOPOS_ERR_INTERNAL, "arena alloc: fresh chunk too small");
  }
done:
  arena->used_bytes += consumed;
  *out = ptr;
  return TOPOS_OK;
}

topos_status tp_arena_alloc_array(tp_arena *arena, size_t count, size_t elem, size_t align,
                                  void **out) {
  size_t bytes;
  if (!tp_mul_size(count, elem, &bytes)) {
    if (out) *out = NULL;
    return tp_fail(TOPOS_ERR_OVERFLOW, "arena alloc: %zu elements of %zu bytes overflow size_t",
                   count, elem);
  }
  return tp_arena_alloc(arena, bytes, align, out);
}

void tp_arena_reset(tp_arena *arena) {
  arena->current = arena->first;
  if (arena->first) arena->first->used = 0;
  arena->used_bytes = 0;
}

void tp_arena_destroy(tp_arena *arena) {
  tp_arena_chunk *c = arena->first;
  while (c) {
    tp_arena_chunk *next = c->next;
    tp_free_aligned(c);
    c = next;
  }
  size_t chunk_bytes = arena->chunk_bytes;
  memset(arena, 0, sizeof *arena);
  arena->chunk_bytes = chunk_bytes;
}
