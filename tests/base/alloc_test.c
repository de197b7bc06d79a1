#include <stdlib.h>

#include "base/alloc.h"
#include "test.h"

TEST(size_helpers_detect_overflow) {
  size_t s = 7;
  CHECK(tp_mul_size(3, 5, &s) && s == 15);
  CHECK(tp_mul_size(0, SIZE_MAX, &s) && s == 0);
  s = 7;
  CHECK(!tp_mul_size(SIZE_MAX / 2 + 1, 2, &s) && s == 7);
  CHECK(tp_add_size(SIZE_MAX - 1, 1, &s) && s == SIZE_MAX);
  CHECK(!tp_add_size(SIZE_MAX, 1, &s) && s == SIZE_MAX);
  int64_t v = 9;
  CHECK(tp_mul_i64(-4, 5, &v) && v == -20);
  CHECK(!tp_mul_i64(INT64_MAX / 2 + 1, 2, &v) && v == -20);
  CHECK(!tp_mul_i64(INT64_MIN, -1, &v));
  CHECK(tp_add_i64(INT64_MAX, INT64_MIN, &v) && v == -1);
  CHECK(!tp_add_i64(INT64_MAX, 1, &v));
  CHECK(!tp_sub_i64(INT64_MIN, 1, &v));
  CHECK(tp_sub_i64(0, INT64_MAX, &v) && v == -INT64_MAX);
  CHECK(tp_align_up_size(65, 64, &s) && s == 128);
  CHECK(tp_align_up_size(0, 64, &s) && s == 0);
  CHECK(!tp_align_up_size(SIZE_MAX - 2, 64, &s));
}

TEST(aligned_alloc_honours_alignment_and_counts) {
  static const size_t aligns[] = {0, 1, 2, 8, 16, 64, 128, 4096, (size_t)1 << 20};
  for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; ++a) {
    for (size_t bytes = 0; bytes < 300; bytes += 37) {
      uint64_t before = tp_heap_allocation_count();
      unsigned char *p = NULL;
      CHECK_OK(tp_alloc_aligned(bytes, aligns[a], (void **)&p));
      CHECK(p != NULL);
      CHECK_EQ_INT(tp_heap_allocation_count(), before + 1);
      size_t want = aligns[a] ? aligns[a] : 64;
      CHECK_EQ_INT((uintptr_t)p % want, 0);
      memset(p, 0xab, bytes); /* every byte is ours (ASan/valgrind would tell) */
      tp_free_aligned(p);
    }
  }
  tp_free_aligned(NULL);
  unsigned char *z = NULL;
  CHECK_OK(tp_calloc_aligned(1000, 0, (void **)&z));
  for (int i = 0; i < 1000; ++i) CHECK_EQ_INT(z[i], 0);
  tp_free_aligned(z);
}

TEST(aligned_alloc_rejects_bad_requests) {
  void *p = (void *)1;
  CHECK_STATUS(tp_alloc_aligned(16, 3, &p), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("alignment 3");
  CHECK(p == NULL);
  CHECK_STATUS(tp_alloc_aligned(16, (size_t)1 << 21, &p), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tp_alloc_aligned(16, 64, NULL), TOPOS_ERR_INVALID_ARGUMENT);
  p = (void *)1;
  CHECK_STATUS(tp_alloc_aligned(SIZE_MAX, 64, &p), TOPOS_ERR_OVERFLOW);
  CHECK(p == NULL);
  CHECK_STATUS(tp_alloc_array(SIZE_MAX / 3, 4, 0, &p), TOPOS_ERR_OVERFLOW);
  char expected[64];
  snprintf(expected, sizeof expected, "%zu elements of 4 bytes", SIZE_MAX / 3);
  CHECK_ERROR_HAS(expected);
  CHECK(p == NULL);
}

#if defined(__SANITIZE_ADDRESS__)
#define TT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TT_ASAN 1
#endif
#endif

TEST(aligned_alloc_reports_out_of_memory) {
#ifdef TT_ASAN
  SKIP("ASan aborts on impossible allocations instead of returning NULL");
#else
  void *p = (void *)1;
  /* Below PTRDIFF_MAX (so not an overflow) but far beyond any machine. */
  CHECK_STATUS(tp_alloc_aligned((size_t)1 << 62, 64, &p), TOPOS_ERR_OUT_OF_MEMORY);
  CHECK(p == NULL);
  CHECK_ERROR_HAS("could not allocate");
#endif
}

/* Fills each allocation with its own byte, then checks none was overwritten. */
typedef struct {
  unsigned char *ptr;
  size_t bytes;
  size_t align;
} tt_block;

static int tt_arena_round(tp_arena *arena, tt_block *blocks, int count, unsigned seed) {
  static const size_t aligns[] = {0, 1, 8, 16, 64, 256, 4096};
  unsigned x = seed;
  for (int i = 0; i < count; ++i) {
    x = x * 1103515245u + 12345u;
    size_t bytes = (x >> 8) % 3000;
    if (i % 17 == 5) bytes = 200000; /* bigger than a chunk */
    size_t align = aligns[(x >> 20) % 7];
    void *p;
    if (tp_arena_alloc(arena, bytes, align, &p) != TOPOS_OK) return 0;
    blocks[i] = (tt_block){p, bytes, align ? align : 64};
    memset(p, i & 0xff, bytes);
  }
  for (int i = 0; i < count; ++i) {
    if ((uintptr_t)blocks[i].ptr % blocks[i].align) return 0;
    for (size_t b = 0; b < blocks[i].bytes; ++b)
      if (blocks[i].ptr[b] != (unsigned char)(i & 0xff)) return 0;
  }
  return 1;
}

TEST(arena_allocations_are_aligned_and_disjoint) {
  tp_arena arena = TP_ARENA_INIT;
  static tt_block blocks[200];
  CHECK(tt_arena_round(&arena, blocks, 200, 1));
  CHECK(tp_arena_heap_allocations(&arena) > 1);
  CHECK(arena.used_bytes <= arena.capacity_bytes);
  tp_arena_destroy(&arena);
  CHECK_EQ_INT(tp_arena_heap_allocations(&arena), 0);
  CHECK(arena.first == NULL);
  /* reusable after destroy */
  void *p;
  CHECK_OK(tp_arena_alloc(&arena, 10, 0, &p));
  tp_arena_destroy(&arena);
}

TEST(arena_reset_replays_without_heap_allocations) {
  tp_arena arena;
  tp_arena_init(&arena, 8192);
  static tt_block first[150], again[150];
  CHECK(tt_arena_round(&arena, first, 150, 7));
  size_t chunks = tp_arena_heap_allocations(&arena);
  size_t capacity = arena.capacity_bytes;
  for (int round = 0; round < 3; ++round) {
    tp_arena_reset(&arena);
    CHECK_EQ_INT(arena.used_bytes, 0);
    uint64_t heap_before = tp_heap_allocation_count();
    CHECK(tt_arena_round(&arena, again, 150, 7));
    CHECK_EQ_INT(tp_heap_allocation_count(), heap_before);
    CHECK_EQ_INT(tp_arena_heap_allocations(&arena), chunks);
    CHECK_EQ_INT(arena.capacity_bytes, capacity);
    for (int i = 0; i < 150; ++i) CHECK(again[i].ptr == first[i].ptr);
  }
  /* a smaller round after reset fits in what is there */
  tp_arena_reset(&arena);
  CHECK(tt_arena_round(&arena, again, 40, 7));
  CHECK_EQ_INT(tp_arena_heap_allocations(&arena), chunks);
  tp_arena_destroy(&arena);
}

TEST(arena_rejects_bad_requests) {
  tp_arena arena = TP_ARENA_INIT;
  void *p = (void *)1;
  CHECK_STATUS(tp_arena_alloc(&arena, 8, 24, &p), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK(p == NULL);
  CHECK_STATUS(tp_arena_alloc(&arena, SIZE_MAX - 10, 64, &p), TOPOS_ERR_OVERFLOW);
  CHECK_STATUS(tp_arena_alloc_array(&arena, SIZE_MAX / 2, 3, 0, &p), TOPOS_ERR_OVERFLOW);
  CHECK_STATUS(tp_arena_alloc(NULL, 8, 0, &p), TOPOS_ERR_INVALID_ARGUMENT);
  CHECK_EQ_INT(tp_arena_heap_allocations(&arena), 0);
  float *floats;
  CHECK_OK(tp_arena_alloc_array(&arena, 100, sizeof(float), 0, (void **)&floats));
  CHECK_EQ_INT((uintptr_t)floats % 64, 0);
  for (int i = 0; i < 100; ++i) floats[i] = (float)i;
  void *empty;
  CHECK_OK(tp_arena_alloc(&arena, 0, 0, &empty));
  CHECK(empty != NULL);
  tp_arena_destroy(&arena);
}

TEST(grow_array_doubles_when_full_and_refuses_sizes_that_wrap) {
  int *items = NULL;
  size_t count = 0, capacity = 0;
  void *grown = NULL;
  /* empty: `first` slots */
  CHECK_OK(tp_grow_array(items, sizeof *items, count, &capacity, 4, "test array", &grown));
  items = grown;
  CHECK(items != NULL && capacity == 4);
  for (count = 0; count < 4; ++count) items[count] = (int)count;
  /* not full: nothing moves */
  size_t held = capacity;
  CHECK_OK(tp_grow_array(items, sizeof *items, 3, &capacity, 4, "test array", &grown));
  CHECK(grown == items && capacity == held);
  /* full: doubled, contents kept */
  CHECK_OK(tp_grow_array(items, sizeof *items, count, &capacity, 4, "test array", &grown));
  items = grown;
  CHECK(capacity == 8 && items[3] == 3);
  /* a capacity whose double or byte size wraps: refused, nothing changed */
  size_t huge = SIZE_MAX / 2 + 1;
  CHECK_STATUS(tp_grow_array(items, sizeof *items, huge, &huge, 4, "test array", &grown),
               TOPOS_ERR_OVERFLOW);
  CHECK_ERROR_HAS("test array");
  CHECK(grown == items && huge == SIZE_MAX / 2 + 1);
  size_t big = SIZE_MAX / 4;
  CHECK_STATUS(tp_grow_array(items, sizeof *items, big, &big, 4, "test array", &grown),
               TOPOS_ERR_OVERFLOW);
  CHECK(big == SIZE_MAX / 4);
  free(items);
}

TEST(pages_are_zero_writable_and_not_counted_as_heap) {
  const size_t bytes = ((size_t)1 << 20) + 123;
  const uint64_t before = tp_heap_allocation_count();
  unsigned char *p = tp_pages_alloc(bytes);
  CHECK(p != NULL);
  if (!p) return;
  CHECK_EQ_INT((uintptr_t)p % 4096, 0);
  size_t nonzero = 0;
  for (size_t i = 0; i < bytes; ++i) nonzero += p[i] != 0;
  CHECK_EQ_INT(nonzero, 0);
  memset(p, 0x5a, bytes);
  CHECK_EQ_INT(p[bytes - 1], 0x5a);
  tp_pages_free(p, bytes);
  tp_pages_free(NULL, bytes);
  CHECK_EQ_INT(tp_heap_allocation_count(), before);
}
