#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "base/temp.h"
#include "test.h"

/* Fills p with a pattern of its own; checks it is still there. */
static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(seed * 131u + i * 7u);
}
static int intact(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != (unsigned char)(seed * 131u + i * 7u)) return 0;
  return 1;
}

TEST(temp_blocks_are_aligned_disjoint_and_survive_any_free_order) {
  static const size_t sizes[] = {0, 1, 63, 64, 65, 4096, 70000, 300000};
  enum { N = sizeof sizes / sizeof sizes[0] };
  /* three rounds: the first maps (no block yet), the next ones stack in the
   * block sized by the first; frees alternate between stack order, first to
   * last, and middle-out */
  for (int round = 0; round < 3; ++round) {
    unsigned char *p[N];
    for (int i = 0; i < N; ++i) {
      p[i] = tp_temp_alloc(sizes[i]);
      CHECK(p[i] != NULL);
      CHECK_EQ_INT((uintptr_t)p[i] % 64, 0);
      fill(p[i], sizes[i], (unsigned)i);
    }
    for (int i = 0; i < N; ++i) CHECK(intact(p[i], sizes[i], (unsigned)i));
    for (int k = 0; k < N; ++k) {
      const int i = round == 0 ? N - 1 - k : round == 1 ? k : (k % 2 ? N / 2 + k / 2 : N / 2 - 1 - k / 2);
      tp_temp_free(p[i]);
      p[i] = NULL;
      for (int j = 0; j < N; ++j) /* the live ones keep their bytes */
        if (p[j]) CHECK(intact(p[j], sizes[j], (unsigned)j));
    }
  }
  tp_temp_free(NULL);
}

TEST(temp_reuses_the_bytes_of_freed_entries_without_touching_live_ones) {
  unsigned char *a = tp_temp_alloc(1000), *b = tp_temp_alloc(1000);
  CHECK(a && b);
  fill(b, 1000, 2);
  tp_temp_free(a); /* not the top: b still lives above it */
  unsigned char *c = tp_temp_alloc(5000);
  CHECK(c != NULL);
  fill(c, 5000, 3);
  CHECK(intact(b, 1000, 2));
  tp_temp_free(b);
  tp_temp_free(c);
  if (TP_TEMP_POOLED) {
    /* all free: the next request starts at the block's start again */
    unsigned char *d = tp_temp_alloc(16), *e = tp_temp_alloc(16);
    tp_temp_free(e);
    tp_temp_free(d);
    unsigned char *f = tp_temp_alloc(16);
    CHECK(f == d);
    tp_temp_free(f);
  }
}

TEST(temp_block_grows_to_the_deepest_use_and_no_further) {
  if (!TP_TEMP_POOLED) { /* AddressSanitizer: plain mallocs, no block */
    CHECK_EQ_INT(tp_temp_block_bytes(), 0);
    return;
  }
  const size_t before = tp_temp_block_bytes();
  const size_t big = before + ((size_t)1 << 20); /* does not fit the block */
  unsigned char *x = tp_temp_alloc(big), *y = tp_temp_alloc(4096);
  CHECK(x && y);
  fill(x, big, 5);
  fill(y, 4096, 6);
  CHECK(intact(x, big, 5));
  tp_temp_free(x);
  CHECK_EQ_INT(tp_temp_block_bytes(), before); /* y still lives: no remap under it */
  tp_temp_free(y);
  const size_t grown = tp_temp_block_bytes();
  CHECK(grown >= big + 4096);
  /* the same depth again: served from the block, which stays as it is */
  x = tp_temp_alloc(big);
  y = tp_temp_alloc(4096);
  CHECK(x && y);
  tp_temp_free(y);
  tp_temp_free(x);
  CHECK_EQ_INT(tp_temp_block_bytes(), grown);
  /* steady state: calls of the same depth make no mapping at all */
  const size_t maps = tp_temp_map_count();
  for (int i = 0; i < 100; ++i) {
    unsigned char *a = tp_temp_alloc(big / 2), *b = tp_temp_alloc(big / 3);
    CHECK(a && b);
    tp_temp_free(a);
    tp_temp_free(b);
  }
  CHECK_EQ_INT(tp_temp_map_count(), maps);
  /* a request over TP_TEMP_KEEP_MAX is mapped alone and never kept */
  unsigned char *huge = tp_temp_alloc(TP_TEMP_KEEP_MAX + 1);
  CHECK(huge != NULL);
  huge[0] = 1, huge[TP_TEMP_KEEP_MAX] = 2;
  tp_temp_free(huge);
  CHECK_EQ_INT(tp_temp_block_bytes(), grown);
  /* large entries live together (each kept-size, their sum over the cap):
   * the block stops at TP_TEMP_KEEP_MAX (their pages are never touched) */
  const size_t part = TP_TEMP_KEEP_MAX / 2 + 4096;
  unsigned char *u = tp_temp_alloc(part), *v = tp_temp_alloc(part);
  CHECK(u && v);
  tp_temp_free(u);
  tp_temp_free(v);
  CHECK(tp_temp_block_bytes() > grown);
  CHECK(tp_temp_block_bytes() <= TP_TEMP_KEEP_MAX);
  CHECK(tp_temp_alloc(SIZE_MAX) == NULL);
  CHECK(tp_temp_alloc(SIZE_MAX / 2 + 1) == NULL);
}

static void *temp_thread(void *arg) {
  size_t *out = arg;
  unsigned char *p = tp_temp_alloc(200000);
  if (p) fill(p, 200000, 9);
  int ok = p && intact(p, 200000, 9);
  tp_temp_free(p);
  out[0] = (size_t)ok;
  out[1] = tp_temp_block_bytes();
  return NULL;
}

TEST(temp_blocks_are_per_thread) {
  tp_temp_free(tp_temp_alloc(100)); /* this thread's block exists (when pooled) */
  const size_t mine = tp_temp_block_bytes();
  unsigned char *held = tp_temp_alloc(100);
  CHECK(held != NULL);
  fill(held, 100, 1);
  size_t got[2] = {0, 0};
  pthread_t th;
  CHECK(pthread_create(&th, NULL, temp_thread, got) == 0);
  pthread_join(th, NULL);
  CHECK_EQ_INT(got[0], 1);
  if (TP_TEMP_POOLED) CHECK(got[1] >= 200000); /* its own block, gone with it */
  CHECK(intact(held, 100, 1));
  tp_temp_free(held);
  CHECK_EQ_INT(tp_temp_block_bytes(), mine);
}
