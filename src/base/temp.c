/* Per-thread scratch for kernel temporaries (see temp.h).
 *
 * Each entry starts with a 64-byte head. Stack entries link to the entry
 * below them, so a free in any order only marks its entry, and the top
 * falls back over every marked entry once the topmost one is free. Entries
 * that do not fit the block are mappings of their own ("alone"). */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "base/temp.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/alloc.h"

#if !TP_TEMP_POOLED
#define TP_TEMP_PLAIN 1
#endif

#define TP_TEMP_HEAD ((size_t)64)
#define TP_TEMP_GRAIN ((size_t)64 << 10) /* blocks are whole multiples of this */
#define TP_TEMP_STACKED 0x53544b31u
#define TP_TEMP_ALONE 0x414c4e31u
#define TP_TEMP_NONE SIZE_MAX

typedef struct {
  uint32_t magic;
  uint32_t freed;
  size_t bytes; /* stacked: the entry's span, head included; alone: the mapping's size */
  size_t below; /* stacked: offset of the entry below (TP_TEMP_NONE: none); alone: the
                   bytes it counts toward the high-water mark (0: too large to keep) */
} tp_temp_head;

typedef struct {
  char *block;
  size_t cap;   /* bytes of the block */
  size_t top;   /* bytes in use from the block's start */
  size_t last;  /* offset of the top entry (TP_TEMP_NONE: empty) */
  size_t alone; /* counted bytes of live alone entries */
  size_t high;  /* the most bytes live at once, stacked and alone */
  size_t live;  /* live entries of both kinds */
  size_t maps;  /* mappings made, block and alone (tests) */
} tp_temp_stack;

#ifndef TP_TEMP_PLAIN
static __thread tp_temp_stack tp_temp = {NULL, 0, 0, TP_TEMP_NONE, 0, 0, 0, 0};
static pthread_key_t tp_temp_key;
static pthread_once_t tp_temp_once = PTHREAD_ONCE_INIT;
static int tp_temp_key_ok;

/* A worker's block goes with the worker. */
static void tp_temp_thread_exit(void *v) {
  tp_temp_stack *s = v;
  if (!s) return;
  tp_pages_free(s->block, s->cap);
  s->block = NULL, s->cap = 0;
}

static void tp_temp_make_key(void) { tp_temp_key_ok = pthread_key_create(&tp_temp_key, tp_temp_thread_exit) == 0; }

static int tp_temp_round(size_t v, size_t grain, size_t *out) {
  if (v > SIZE_MAX - (grain - 1)) return 0;
  *out = (v + grain - 1) / grain * grain;
  return 1;
}

static void *tp_temp_map(tp_temp_stack *s, size_t bytes) {
  s->maps += 1;
  return tp_pages_alloc(bytes);
}

/* With nothing live: the block grows to the high-water mark, at most
 * TP_TEMP_KEEP_MAX. A failure leaves no block (requests are then mapped
 * alone). */
static void tp_temp_resize(tp_temp_stack *s) {
  const size_t want = s->high < TP_TEMP_KEEP_MAX ? s->high : TP_TEMP_KEEP_MAX;
  size_t cap;
  if (want <= s->cap || !tp_temp_round(want, TP_TEMP_GRAIN, &cap)) return;
  tp_pages_free(s->block, s->cap);
  s->block = tp_temp_map(s, cap);
  s->cap = s->block ? cap : 0;
  s->top = 0;
  s->last = TP_TEMP_NONE;
  pthread_once(&tp_temp_once, tp_temp_make_key);
  if (tp_temp_key_ok) pthread_setspecific(tp_temp_key, s);
}
#endif

void *tp_temp_alloc(size_t bytes) {
#ifdef TP_TEMP_PLAIN
  void *p = NULL;
  return posix_memalign(&p, 64, bytes ? bytes : 1) == 0 ? p : NULL;
#else
  tp_temp_stack *s = &tp_temp;
  size_t span;
  if (bytes > SIZE_MAX / 2 || !tp_temp_round(bytes + TP_TEMP_HEAD, 64, &span)) return NULL;
  tp_temp_head *h;
  if (s->block && s->cap - s->top >= span) {
    h = (tp_temp_head *)(void *)(s->block + s->top);
    h->magic = TP_TEMP_STACKED;
    h->bytes = span;
    h->below = s->last;
    s->last = s->top;
    s->top += span;
  } else {
    size_t mapped;
    if (!tp_temp_round(span, 4096, &mapped) || !(h = tp_temp_map(s, mapped))) return NULL;
    h->magic = TP_TEMP_ALONE;
    h->bytes = mapped;
    h->below = span <= TP_TEMP_KEEP_MAX ? span : 0;
    s->alone += h->below;
  }
  h->freed = 0;
  s->live += 1;
  if (s->top + s->alone > s->high) s->high = s->top + s->alone;
  return (char *)h + TP_TEMP_HEAD;
#endif
}

void tp_temp_free(void *p) {
  if (!p) return;
#ifdef TP_TEMP_PLAIN
  free(p);
#else
  tp_temp_stack *s = &tp_temp;
  tp_temp_head *h = (tp_temp_head *)(void *)((char *)p - TP_TEMP_HEAD);
  if (h->magic == TP_TEMP_ALONE) {
    s->alone -= h->below;
    tp_pages_free(h, h->bytes);
  } else {
    h->freed = 1;
    while (s->last != TP_TEMP_NONE) {
      const tp_temp_head *t = (const tp_temp_head *)(const void *)(s->block + s->last);
      if (!t->freed) break;
      s->top = s->last;
      s->last = t->below;
    }
  }
  if (--s->live == 0) tp_temp_resize(s);
#endif
}

size_t tp_temp_map_count(void) {
#ifdef TP_TEMP_PLAIN
  return 0;
#else
  return tp_temp.maps;
#endif
}

size_t tp_temp_block_bytes(void) {
#ifdef TP_TEMP_PLAIN
  return 0;
#else
  return tp_temp.cap;
#endif
}
