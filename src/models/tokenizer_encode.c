/* Encoding: special tokens are cut out of the raw text, then each remaining
 * fragment goes through the SPM or the BPE merge loop (gemma4: the BPE one
 * over raw UTF-8 with ▁ for spaces). Both loops keep the
 * symbols in a linked list and the candidate pairs in a binary heap, so a
 * text of n characters costs O(n log n) lookups. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "models/tokenizer_internal.h"

/* ---- symbols and candidate pairs */
typedef struct tp_symbol {
  size_t start, len; /* bytes of the working text; len 0 = merged away */
  ptrdiff_t prev, next;
} tp_symbol;

typedef struct tp_pair {
  double priority; /* higher first: SPM score, or -rank for BPE */
  ptrdiff_t left, right;
  size_t len; /* bytes of the merged text when the pair was queued */
} tp_pair;

typedef struct tp_heap {
  tp_pair *items;
  size_t count, capacity;
} tp_heap;

/* a before b: higher priority, then the leftmost pair. */
static int tp_pair_before(const tp_pair *a, const tp_pair *b) {
  if (a->priority != b->priority) return a->priority > b->priority;
  return a->left < b->left;
}

static topos_status tp_heap_push(tp_heap *h, tp_pair p) {
  TP_GROW(h->items, h->count, h->capacity, 64, "tokenizer: candidate pairs");
  size_t i = h->count++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!tp_pair_before(&p, &h->items[parent])) break;
    h->items[i] = h->items[parent];
    i = parent;
  }
  h->items[i] = p;
  return TOPOS_OK;
}

static tp_pair tp_heap_pop(tp_heap *h) {
  tp_pair top = h->items[0];
  tp_pair last = h->items[--h->count];
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= h->count) break;
    if (child + 1 < h->count && tp_pair_before(&h->items[child + 1], &h->items[child])) child++;
    if (!tp_pair_before(&h->items[child], &last)) break;
    h->items[i] = h->items[child];
    i = child;
  }
  if (h->count) h->items[i] = last;
  return top;
}

/* The merge loop shared by SPM and BPE; `work` holds the fragment's bytes
 * (normalised for SPM, byte-mapped for BPE) and sym its initial characters. */
typedef struct tp_merger {
  const topos_tokenizer *t;
  const char *work;
  tp_symbol *sym;
  tp_heap heap;
  char *key; /* BPE: "left right" scratch, work length + 1 bytes */
} tp_merger;

static topos_status tp_try_pair(tp_merger *m, ptrdiff_t l, ptrdiff_t r) {
  if (l < 0 || r < 0) return TOPOS_OK;
  const tp_symbol *a = &m->sym[l], *b = &m->sym[r];
  const topos_tokenizer *t = m->t;
  tp_pair p = {0, l, r, a->len + b->len};
  if (t->kind == TOPOS_TOKENIZER_SPM) {
    int32_t id = tp_strmap_get(&t->token_map, m->work + a->start, p.len);
    if (id < 0) return TOPOS_OK;
    p.priority = t->scores[id];
  } else {
    /* a left part with a space after its first byte can never be the left
     * of a merge (see tp_load_merges): such a key would split elsewhere */
    if (a->len > 1 && memchr(m->work + a->start + 1, ' ', a->len - 1)) return TOPOS_OK;
    memcpy(m->key, m->work + a->start, a->len);
    m->key[a->len] = ' ';
    memcpy(m->key + a->len + 1, m->work + b->start, b->len);
    int32_t rank = tp_strmap_get(&t->merge_map, m->key, p.len + 1);
    if (rank < 0) return TOPOS_OK;
    p.priority = -(double)rank;
  }
  return tp_heap_push(&m->heap, p);
}

static topos_status tp_merge_all(tp_merger *m, size_t n_sym) {
  for (size_t i = 1; i < n_sym; i++) TP_TRY(tp_try_pair(m, (ptrdiff_t)i - 1, (ptrdiff_t)i));
  while (m->heap.count) {
    tp_pair p = tp_heap_pop(&m->heap);
    tp_symbol *a = &m->sym[p.left], *b = &m->sym[p.right];
    /* stale: one side was merged into something else since it was queued */
    if (a->len == 0 || b->len == 0 || a->next != p.right || a->len + b->len != p.len) continue;
    a->len += b->len;
    b->len = 0;
    a->next = b->next;
    if (b->next >= 0) m->sym[b->next].prev = p.left;
    TP_TRY(tp_try_pair(m, a->prev, p.left));
    TP_TRY(tp_try_pair(m, p.left, a->next));
  }
  return TOPOS_OK;
}

static topos_status tp_push_byte(const topos_tokenizer *t, unsigned char byte, tp_idvec *out) {
  int32_t id = t->byte_token[byte];
  if (id < 0) id = t->unk;
  if (id < 0)
    return tp_fail(TOPOS_ERR_NOT_FOUND,
                   "tokenizer: byte 0x%02X has no token and the vocabulary has no unknown token",
                   byte);
  return tp_idvec_push(out, id);
}

topos_status tp_spm_encode(const topos_tokenizer *t, const char *text, size_t n, tp_idvec *out) {
  if (n == 0) return TOPOS_OK;
  if (n > SIZE_MAX / sizeof(tp_symbol))
    return tp_fail(TOPOS_ERR_OVERFLOW, "tokenizer: text of %zu bytes too long", n);
  tp_merger m = {t, text, NULL, {NULL, 0, 0}, NULL};
  m.sym = malloc(n * sizeof *m.sym);
  if (!m.sym) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tokenizer: %zu symbols", n);
  size_t count = 0;
  for (size_t at = 0; at < n; count++) {
    uint32_t cp;
    size_t len = tp_utf8_decode((const unsigned char *)text + at, n - at, &cp);
    m.sym[count] = (tp_symbol){at, len, (ptrdiff_t)count - 1, (ptrdiff_t)count + 1};
    at += len;
  }
  m.sym[count - 1].next = -1;
  topos_status st = tp_merge_all(&m, count);
  for (ptrdiff_t i = 0; st == TOPOS_OK && i >= 0; i = m.sym[i].next) {
    const tp_symbol *s = &m.sym[i];
    int32_t id = tp_strmap_get(&t->token_map, text + s->start, s->len);
    if (id >= 0) {
      st = tp_idvec_push(out, id);
    } else { /* only unmerged characters can be missing: byte fallback */
      for (size_t k = 0; k < s->len && st == TOPOS_OK; k++)
        st = tp_push_byte(t, (unsigned char)text[s->start + k], out);
    }
  }
  free(m.sym);
  free(m.heap.items);
  return st;
}

/* BPE over one pre-token: bytes mapped to GPT-2's code points first. */
static topos_status tp_bpe_word(const topos_tokenizer *t, const char *word, size_t n,
                                tp_idvec *out) {
  if (n > SIZE_MAX / sizeof(tp_symbol))
    return tp_fail(TOPOS_ERR_OVERFLOW, "tokenizer: word of %zu bytes too long", n);
  char *work = malloc(2 * n); /* each byte maps to a 1- or 2-byte code point */
  char *key = malloc(2 * n + 1);
  tp_symbol *sym = malloc(n * sizeof *sym);
  topos_status st = TOPOS_OK;
  if (!work || !key || !sym) {
    st = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tokenizer: word of %zu bytes", n);
    goto done;
  }
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = tp_utf8_encode(tp_byte_to_unicode((uint8_t)word[i]), (unsigned char *)work + at);
    sym[i] = (tp_symbol){at, len, (ptrdiff_t)i - 1, (ptrdiff_t)i + 1};
    at += len;
  }
  sym[n - 1].next = -1;
  if (t->ignore_merges) { /* Llama-3: a word that is a token is taken whole */
    int32_t id = tp_strmap_get(&t->token_map, work, at);
    if (id >= 0) {
      st = tp_idvec_push(out, id);
      goto done;
    }
  }
  tp_merger m = {t, work, sym, {NULL, 0, 0}, key};
  st = tp_merge_all(&m, n);
  free(m.heap.items);
  /* each original byte is one initial symbol: byte i maps to sym[i] */
  for (ptrdiff_t i = 0; st == TOPOS_OK && i >= 0; i = sym[i].next) {
    int32_t id = tp_strmap_get(&t->token_map, work + sym[i].start, sym[i].len);
    if (id >= 0) {
      st = tp_idvec_push(out, id);
      continue;
    }
    /* not a token: one token per byte of the original word it covers */
    size_t end = sym[i].start + sym[i].len;
    for (size_t b = (size_t)i; b < n && sym[b].start < end && st == TOPOS_OK; b++)
      st = tp_push_byte(t, (unsigned char)word[b], out);
  }
done:
  free(work);
  free(key);
  free(sym);
  return st;
}

typedef struct tp_bpe_ctx {
  const topos_tokenizer *t;
  const char *text;
  tp_idvec *out;
} tp_bpe_ctx;

static topos_status tp_bpe_piece(void *ctx, size_t start, size_t length) {
  tp_bpe_ctx *c = ctx;
  if (length == 0) return TOPOS_OK;
  return tp_bpe_word(c->t, c->text + start, length, c->out);
}

topos_status tp_bpe_encode(const topos_tokenizer *t, const char *text, size_t n, tp_idvec *out) {
  tp_bpe_ctx ctx = {t, text, out};
  return tp_pretokenize(t->pre, text, n, tp_bpe_piece, &ctx);
}

/* ---- special tokens: fragments of raw text and token ids */
typedef struct tp_fragment {
  size_t start, len; /* raw text range when id < 0 */
  int32_t id;
} tp_fragment;

typedef struct tp_fragments {
  tp_fragment *items;
  size_t count, capacity;
} tp_fragments;

static topos_status tp_fragments_push(tp_fragments *f, tp_fragment x) {
  TP_GROW(f->items, f->count, f->capacity, 16, "tokenizer: text fragments");
  f->items[f->count++] = x;
  return TOPOS_OK;
}

static const char *tp_find_bytes(const char *hay, size_t n, const char *needle, size_t m) {
  if (m > n) return NULL;
  for (const char *p = hay, *last = hay + (n - m); p <= last;) {
    const char *hit = memchr(p, needle[0], (size_t)(last - p) + 1);
    if (!hit) return NULL;
    if (memcmp(hit, needle, m) == 0) return hit;
    p = hit + 1;
  }
  return NULL;
}

/* Cuts every occurrence of each special token (longest first) out of the raw
 * fragments, as llama.cpp's tokenizer_st_partition does. */
static topos_status tp_split_specials(const topos_tokenizer *t, const char *text, size_t n,
                                      int parse_control, tp_fragments *frags) {
  TP_TRY(tp_fragments_push(frags, (tp_fragment){0, n, -1}));
  if (!t->n_specials || n == 0) return TOPOS_OK;
  uint8_t present[256] = {0};
  for (size_t i = 0; i < n; i++) present[(unsigned char)text[i]] = 1;
  tp_fragments next = {NULL, 0, 0};
  topos_status st = TOPOS_OK;
  for (size_t s = 0; s < t->n_specials && st == TOPOS_OK; s++) {
    int32_t id = t->specials[s];
    if (t->types[id] != TOPOS_TOKEN_USER_DEFINED && !parse_control) continue;
    size_t slen;
    const char *stext = tp_tok_text(t, id, &slen);
    if (slen > n || !present[(unsigned char)stext[0]]) continue;
    next.count = 0;
    int changed = 0;
    for (size_t f = 0; f < frags->count && st == TOPOS_OK; f++) {
      tp_fragment fr = frags->items[f];
      if (fr.id >= 0 || fr.len < slen) {
        st = tp_fragments_push(&next, fr);
        continue;
      }
      size_t at = fr.start, end = fr.start + fr.len;
      const char *hit;
      while (st == TOPOS_OK && (hit = tp_find_bytes(text + at, end - at, stext, slen))) {
        size_t pos = (size_t)(hit - text);
        if (pos > at) st = tp_fragments_push(&next, (tp_fragment){at, pos - at, -1});
        if (st == TOPOS_OK) st = tp_fragments_push(&next, (tp_fragment){pos, slen, id});
        at = pos + slen;
        changed = 1;
      }
      if (st == TOPOS_OK && at < end) st = tp_fragments_push(&next, (tp_fragment){at, end - at, -1});
    }
    if (changed && st == TOPOS_OK) {
      tp_fragments swap = *frags;
      *frags = next;
      next = swap;
    }
  }
  free(next.items);
  return st;
}

/* SentencePiece's whitespace escape: an optional leading space, then every
 * ' ' as U+2581 "▁". *norm (malloc'd, the caller frees it) holds *m bytes. */
static topos_status tp_escape_spaces(const char *text, size_t n, int prefix_space, char **norm,
                                     size_t *m) {
  if (n > (SIZE_MAX - 3) / 3)
    return tp_fail(TOPOS_ERR_OVERFLOW, "tokenizer: text of %zu bytes too long", n);
  char *s = malloc(3 * n + 3);
  if (!s) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tokenizer: %zu bytes", n);
  size_t at = 0;
  for (size_t i = 0; i < n + (size_t)prefix_space; i++) {
    char ch = (prefix_space && i == 0) ? ' ' : text[i - (size_t)prefix_space];
    if (ch == ' ') {
      memcpy(s + at, "\xE2\x96\x81", 3);
      at += 3;
    } else {
      s[at++] = ch;
    }
  }
  *norm = s;
  *m = at;
  return TOPOS_OK;
}

static topos_status tp_spm_fragment(const topos_tokenizer *t, const char *text, size_t n,
                                    int prefix_space, tp_idvec *out) {
  char *norm = NULL;
  size_t m = 0;
  TP_TRY(tp_escape_spaces(text, n, prefix_space, &norm, &m));
  topos_status st = tp_spm_encode(t, norm, m, out);
  free(norm);
  return st;
}

/* gemma4, one run of newlines or of other characters (escaped): BPE over its
 * code points, raw UTF-8 (no GPT-2 byte mapping). */
static topos_status tp_gemma4_word(const topos_tokenizer *t, const char *word, size_t n,
                                   tp_idvec *out) {
  /* a run of newlines that is a token is taken whole, as llama.cpp does for
   * Gemma 4 (the merges need not lead to it) */
  if (word[0] == '\n') {
    int32_t id = tp_strmap_get(&t->token_map, word, n);
    if (id >= 0) return tp_idvec_push(out, id);
  }
  if (n > SIZE_MAX / sizeof(tp_symbol) - 1)
    return tp_fail(TOPOS_ERR_OVERFLOW, "tokenizer: word of %zu bytes too long", n);
  char *key = malloc(n + 1);
  tp_symbol *sym = malloc(n * sizeof *sym);
  topos_status st = TOPOS_OK;
  if (!key || !sym) {
    st = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tokenizer: word of %zu bytes", n);
    goto done;
  }
  size_t count = 0; /* one symbol per code point; an invalid byte is one of its own */
  for (size_t at = 0; at < n; count++) {
    uint32_t cp;
    size_t len = tp_utf8_decode((const unsigned char *)word + at, n - at, &cp);
    sym[count] = (tp_symbol){at, len, (ptrdiff_t)count - 1, (ptrdiff_t)count + 1};
    at += len;
  }
  sym[count - 1].next = -1;
  tp_merger m = {t, word, sym, {NULL, 0, 0}, key};
  st = tp_merge_all(&m, count);
  free(m.heap.items);
  for (ptrdiff_t i = 0; st == TOPOS_OK && i >= 0; i = sym[i].next) {
    int32_t id = tp_strmap_get(&t->token_map, word + sym[i].start, sym[i].len);
    if (id >= 0) {
      st = tp_idvec_push(out, id);
      continue;
    }
    /* not a token: its bytes as "<0xXX>" tokens; a byte without one is dropped */
    for (size_t b = 0; b < sym[i].len && st == TOPOS_OK; b++) {
      int32_t byte_id = t->byte_token[(unsigned char)word[sym[i].start + b]];
      if (byte_id >= 0) st = tp_idvec_push(out, byte_id);
    }
  }
done:
  free(key);
  free(sym);
  return st;
}

/* gemma4, one raw-text fragment: spaces escaped (no prefix), then the runs of
 * [^\n]+|[\n]+, each its own BPE word. */
static topos_status tp_gemma4_fragment(const topos_tokenizer *t, const char *text, size_t n,
                                       tp_idvec *out) {
  char *norm = NULL;
  size_t m = 0;
  TP_TRY(tp_escape_spaces(text, n, 0, &norm, &m));
  topos_status st = TOPOS_OK;
  for (size_t at = 0; at < m && st == TOPOS_OK;) {
    int newline = norm[at] == '\n';
    size_t end = at + 1;
    while (end < m && (norm[end] == '\n') == newline) end++;
    st = tp_gemma4_word(t, norm + at, end - at, out);
    at = end;
  }
  free(norm);
  return st;
}

topos_status topos_tokenizer_encode(const topos_tokenizer *t, const char *text, size_t len,
                                    unsigned flags, int32_t *ids, size_t capacity,
                                    size_t *count) {
  if (count) *count = 0;
  if (!t || !count || (!text && len) || (!ids && capacity))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "tokenizer_encode: tokenizer, count, text (when len > 0) and ids (when "
                   "capacity > 0) must be set");
  int add_bos = (flags & TOPOS_TOKENIZE_ADD_BOS) ||
                ((flags & TOPOS_TOKENIZE_ADD_SPECIAL) && t->add_bos);
  int add_eos = (flags & TOPOS_TOKENIZE_ADD_EOS) ||
                ((flags & TOPOS_TOKENIZE_ADD_SPECIAL) && t->add_eos);
  tp_idvec out = {NULL, 0, 0};
  tp_fragments frags = {NULL, 0, 0};
  topos_status st = TOPOS_OK;
  if (add_bos && t->bos >= 0) st = tp_idvec_push(&out, t->bos);
  if (st == TOPOS_OK)
    st = tp_split_specials(t, text ? text : "", len, !!(flags & TOPOS_TOKENIZE_PARSE_SPECIAL),
                           &frags);
  int prev_special = 1; /* SPM: a space is prefixed at the start and after specials */
  for (size_t f = 0; f < frags.count && st == TOPOS_OK; f++) {
    tp_fragment fr = frags.items[f];
    if (fr.id < 0 && fr.len == 0) continue;
    if (fr.id >= 0) {
      st = tp_idvec_push(&out, fr.id);
      prev_special = 1;
    } else if (t->kind == TOPOS_TOKENIZER_SPM) {
      st = tp_spm_fragment(t, text + fr.start, fr.len, t->add_space_prefix && prev_special, &out);
      prev_special = 0;
    } else if (t->kind == TOPOS_TOKENIZER_GEMMA4) {
      st = tp_gemma4_fragment(t, text + fr.start, fr.len, &out);
      prev_special = 0;
    } else {
      st = tp_bpe_encode(t, text + fr.start, fr.len, &out);
      prev_special = 0;
    }
  }
  if (st == TOPOS_OK && add_eos && t->eos >= 0) st = tp_idvec_push(&out, t->eos);
  if (st == TOPOS_OK) {
    *count = out.count;
    size_t copy = out.count < capacity ? out.count : capacity;
    if (copy) memcpy(ids, out.data, copy * sizeof *ids);
    if (out.count > capacity)
      st = tp_fail(TOPOS_ERR_RANGE, "tokenizer_encode: %zu ids do not fit capacity %zu",
                   out.count, capacity);
  }
  free(out.data);
  free(frags.items);
  return st;
}
