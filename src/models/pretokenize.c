/* Pre-tokenizers of byte-level BPE vocabularies: the GPT-2, Llama-3,
 * Qwen2, tekken and gpt-4o regular expressions, matched by hand. Each matcher looks at code point i
 * and returns where the regex's leftmost alternative that matches there
 * ends; alternatives are tried in the pattern's order, so the result is the
 * one a backtracking regex engine gives. */
#include <stdlib.h>

#include "base/error.h"
#include "models/tokenizer_internal.h"

typedef struct tp_cps {
  const uint32_t *cp;
  const uint8_t *cls;  /* tp_char_class */
  const uint8_t *kind; /* tp_char_kind */
} tp_cps;

static int tp_is_letter(const tp_cps *c, size_t i) { return c->cls[i] == TP_CHAR_LETTER; }
static int tp_is_space(const tp_cps *c, size_t i) { return c->cls[i] == TP_CHAR_SPACE; }
static int tp_is_newline(const tp_cps *c, size_t i) { return c->cp[i] == '\r' || c->cp[i] == '\n'; }

static uint32_t tp_ascii_lower(uint32_t cp) { return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp; }

/* 's 't 're 've 'm 'll 'd at i; returns the end or 0. */
static size_t tp_contraction(const tp_cps *c, size_t i, size_t n, int ignore_case) {
  if (i + 1 >= n || c->cp[i] != '\'') return 0; /* i may be n: after a word that ends the text */
  uint32_t a = c->cp[i + 1], b = i + 2 < n ? c->cp[i + 2] : 0;
  if (ignore_case) a = tp_ascii_lower(a), b = tp_ascii_lower(b);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return 0;
}

/* \s+(?!\S) then \s+, at a whitespace code point i. */
static size_t tp_space_run(const tp_cps *c, size_t i, size_t n) {
  size_t j = i;
  while (j < n && tp_is_space(c, j)) j++;
  if (j == n) return n;           /* the run ends the text: (?!\S) holds */
  if (j - i >= 2) return j - 1;   /* leave the last space to the next word */
  return j;                       /* a single space before a non-space: \s+ */
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static size_t tp_gpt2_match(const tp_cps *c, size_t i, size_t n) {
  size_t end = tp_contraction(c, i, n, 0);
  if (end) return end;
  size_t s = (c->cp[i] == ' ' && i + 1 < n) ? i + 1 : i;
  uint8_t cls = c->cls[s];
  if (cls != TP_CHAR_SPACE) {
    size_t j = s;
    while (j < n && c->cls[j] == cls) j++;
    return j;
  }
  return tp_space_run(c, i, n);
}

/* The alternatives Llama 3's, Qwen2's, tekken's and gpt-4o's patterns end
 * with, at a code point i no word alternative took:
 *   \p{N}{1,digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * ([\r\n/]* after the symbols where slash is 1: tekken, gpt-4o). */
static size_t tp_tail_match(const tp_cps *c, size_t i, size_t n, size_t digits, int slash) {
  size_t j;
  if (c->cls[i] == TP_CHAR_NUMBER) {
    j = i + 1;
    while (j < n && j < i + digits && c->cls[j] == TP_CHAR_NUMBER) j++;
    return j;
  }
  size_t s = (c->cp[i] == ' ' && i + 1 < n) ? i + 1 : i;
  if (c->cls[s] == TP_CHAR_OTHER) {
    j = s;
    while (j < n && c->cls[j] == TP_CHAR_OTHER) j++;
    while (j < n && (tp_is_newline(c, j) || (slash && c->cp[j] == '/'))) j++;
    return j;
  }
  /* whitespace at i */
  j = i;
  while (j < n && tp_is_space(c, j)) j++;
  for (size_t k = j; k > i; k--)
    if (tp_is_newline(c, k - 1)) return k; /* \s*[\r\n]+ ends after the last newline */
  return tp_space_run(c, i, n);
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * with digits = 3; Qwen2's pattern is the same with \p{N} (digits = 1). */
static size_t tp_llama3_match(const tp_cps *c, size_t i, size_t n, size_t digits) {
  size_t end = tp_contraction(c, i, n, 1);
  if (end) return end;
  uint8_t cls = c->cls[i];
  size_t j;
  if (cls == TP_CHAR_LETTER || (cls != TP_CHAR_NUMBER && !tp_is_newline(c, i) && i + 1 < n &&
                                tp_is_letter(c, i + 1))) {
    j = i + 1;
    while (j < n && tp_is_letter(c, j)) j++;
    return j;
  }
  return tp_tail_match(c, i, n, digits, 0);
}

/* tekken's and gpt-4o's classes: "upper" [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}],
 * "lower" [\p{Ll}\p{Lm}\p{Lo}\p{M}] (caseless letters and marks are both),
 * and the optional lead [^\r\n\p{L}\p{N}] (marks too). */
static int tp_is_upper_set(const tp_cps *c, size_t i) {
  return c->kind[i] == TP_KIND_UPPER || c->kind[i] == TP_KIND_CASELESS || c->kind[i] == TP_KIND_MARK;
}
static int tp_is_lower_set(const tp_cps *c, size_t i) {
  return c->kind[i] == TP_KIND_LOWER || c->kind[i] == TP_KIND_CASELESS || c->kind[i] == TP_KIND_MARK;
}
static int tp_is_lead(const tp_cps *c, size_t i) {
  return c->cls[i] != TP_CHAR_LETTER && c->cls[i] != TP_CHAR_NUMBER && !tp_is_newline(c, i);
}

/* upper*lower+ from s, as a backtracking engine matches it: upper* takes
 * its longest run, then gives code points back until lower+ can start;
 * returns the end, or 0 where nothing matches. */
static size_t tp_word_lower(const tp_cps *c, size_t s, size_t n) {
  size_t e = s;
  while (e < n && tp_is_upper_set(c, e)) e++;
  if (e < n && tp_is_lower_set(c, e)) { /* lower+ from e, at its longest */
    while (e < n && tp_is_lower_set(c, e)) e++;
    return e;
  }
  /* the last code point the run gave back that lower+ takes: lower+ ends
   * right after it (the code points after it were upper only) */
  for (size_t k = e; k > s; k--)
    if (tp_is_lower_set(c, k - 1)) return k;
  return 0;
}

/* upper+lower* from s; 0 where nothing matches */
static size_t tp_word_upper(const tp_cps *c, size_t s, size_t n) {
  size_t e = s;
  while (e < n && tp_is_upper_set(c, e)) e++;
  if (e == s) return 0;
  while (e < n && tp_is_lower_set(c, e)) e++;
  return e;
}

/* [^\r\n\p{L}\p{N}]?UPPER*LOWER+C?|[^\r\n\p{L}\p{N}]?UPPER+LOWER*C?|\p{N}{1,digits}|
 *  ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * tekken: no contractions C, digits 1; gpt-4o: C = (?i:'s|'t|'re|'ve|'m|'ll|'d), digits 3.
 * Each word alternative tries the lead first, then none. */
static size_t tp_cased_match(const tp_cps *c, size_t i, size_t n, size_t digits, int contractions) {
  size_t (*const words[2])(const tp_cps *, size_t, size_t) = {tp_word_lower, tp_word_upper};
  for (int w = 0; w < 2; ++w)
    for (int lead = 1; lead >= 0; --lead) {
      if (lead && !(tp_is_lead(c, i) && i + 1 < n)) continue;
      size_t end = words[w](c, i + (size_t)lead, n);
      if (!end) continue;
      if (contractions) {
        const size_t after = tp_contraction(c, end, n, 1);
        if (after) end = after;
      }
      return end;
    }
  return tp_tail_match(c, i, n, digits, 1);
}

topos_status tp_pretokenize(tp_pre_kind kind, const char *text, size_t n, tp_piece_fn emit,
                            void *ctx) {
  if (n == 0) return TOPOS_OK;
  if (n > SIZE_MAX / (sizeof(uint32_t) + sizeof(size_t) + 1) - 1)
    return tp_fail(TOPOS_ERR_OVERFLOW, "tokenizer: text of %zu bytes too long", n);
  uint32_t *cp = malloc(n * sizeof *cp);
  uint8_t *cls = malloc(n), *kinds = malloc(n);
  size_t *off = malloc((n + 1) * sizeof *off);
  if (!cp || !cls || !kinds || !off) {
    free(cp), free(cls), free(kinds), free(off);
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "tokenizer: pre-tokenizing %zu bytes", n);
  }
  const unsigned char *u = (const unsigned char *)text;
  size_t count = 0;
  for (size_t at = 0; at < n; count++) {
    off[count] = at;
    at += tp_utf8_decode(u + at, n - at, &cp[count]);
    const tp_char_kind k = tp_char_kind_of(cp[count]);
    kinds[count] = (uint8_t)k;
    cls[count] = (uint8_t)tp_char_class_of_kind(k);
  }
  off[count] = n;

  tp_cps c = {cp, cls, kinds};
  topos_status st = TOPOS_OK;
  size_t i = 0;
  while (i < count && st == TOPOS_OK) {
    size_t seg_end = count; /* the range a pattern may look at */
    if (kind == TP_PRE_DIGITS_GPT2) {
      if (cls[i] == TP_CHAR_NUMBER) { /* \p{N} alone */
        st = emit(ctx, off[i], off[i + 1] - off[i]);
        i++;
        continue;
      }
      seg_end = i;
      while (seg_end < count && cls[seg_end] != TP_CHAR_NUMBER) seg_end++;
    }
    size_t end = kind == TP_PRE_LLAMA3   ? tp_llama3_match(&c, i, seg_end, 3)
                 : kind == TP_PRE_QWEN2  ? tp_llama3_match(&c, i, seg_end, 1)
                 : kind == TP_PRE_TEKKEN ? tp_cased_match(&c, i, seg_end, 1, 0)
                 : kind == TP_PRE_GPT4O  ? tp_cased_match(&c, i, seg_end, 3, 1)
                                         : tp_gpt2_match(&c, i, seg_end);
    if (end <= i) end = i + 1; /* cannot happen: every class has a matching alternative */
    st = emit(ctx, off[i], off[end] - off[i]);
    i = end;
  }
  free(cp), free(cls), free(kinds), free(off);
  return st;
}
