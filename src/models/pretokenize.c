/* Pre-tokenizers of byte-level BPE vocabularies: the GPT-2, Llama-3,
 * Qwen2, Qwen3.5, tekken, gpt-4o, DeepSeek and Kimi K2 regular expressions, matched
 * by hand.
 * Each matcher looks at code point i and returns where the regex's leftmost
 * alternative that matches there ends (0 where none does); alternatives are
 * tried in the pattern's order, so the result is the one a backtracking
 * regex engine gives. A pre-tokenizer is a list of such expressions (most
 * have one): as in llama.cpp and in Hugging Face's sequences of "Isolated"
 * splits, each expression cuts every piece the one before produced into its
 * matches and the runs between them, and sees each piece as a whole text
 * (lookaheads and $ stop at the piece's end). */
#include <stdlib.h>

#include "base/error.h"
#include "models/tokenizer_internal.h"

typedef struct tp_cps {
  const uint32_t *cp;
  const uint8_t *cls;  /* tp_char_class */
  const uint8_t *kind; /* tp_char_kind */
} tp_cps;

static int tp_is_letter(const tp_cps *c, size_t i) { return c->cls[i] == TP_CHAR_LETTER; }
static int tp_is_number(const tp_cps *c, size_t i) { return c->cls[i] == TP_CHAR_NUMBER; }
static int tp_is_space(const tp_cps *c, size_t i) { return c->cls[i] == TP_CHAR_SPACE; }
static int tp_is_newline(const tp_cps *c, size_t i) { return c->cp[i] == '\r' || c->cp[i] == '\n'; }
static int tp_is_punct(const tp_cps *c, size_t i) { return c->kind[i] == TP_KIND_PUNCT; }
/* [\p{L}\p{M}] */
static int tp_is_letter_or_mark(const tp_cps *c, size_t i) {
  return c->cls[i] == TP_CHAR_LETTER || c->kind[i] == TP_KIND_MARK;
}
/* [\p{P}\p{S}]; an undecodable byte counts as a symbol, as U+FFFD (what
 * llama.cpp decodes it to) would */
static int tp_is_punct_or_symbol(const tp_cps *c, size_t i) {
  return c->kind[i] == TP_KIND_PUNCT || c->kind[i] == TP_KIND_SYMBOL || c->cp[i] == TP_UTF8_INVALID;
}

/* How a pattern's contractions match letters' case: exactly ('s|'t|...);
 * ASCII's two cases ('[sS]|'[tT]|..., llama.cpp's spelling of (?i:...));
 * Unicode's simple case folding ((?i:...) in tiktoken's and Python regex's
 * engines), which adds only U+017F LATIN SMALL LETTER LONG S as an 's'. */
enum { TP_CASE_EXACT, TP_CASE_ASCII, TP_CASE_FOLD };

static uint32_t tp_case_fold(uint32_t cp, int mode) {
  if (mode == TP_CASE_EXACT) return cp;
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  return (mode == TP_CASE_FOLD && cp == 0x17F) ? 's' : cp;
}

/* 's 't 're 've 'm 'll 'd at i, in case mode `mode`; returns the end or 0. */
static size_t tp_contraction(const tp_cps *c, size_t i, size_t n, int mode) {
  if (i + 1 >= n || c->cp[i] != '\'') return 0; /* i may be n: after a word that ends the text */
  uint32_t a = tp_case_fold(c->cp[i + 1], mode), b = i + 2 < n ? tp_case_fold(c->cp[i + 2], mode) : 0;
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
  size_t end = tp_contraction(c, i, n, TP_CASE_EXACT);
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

/* \s*[\r\n]+|\s+(?!\S)|\s+ at a whitespace code point i. */
static size_t tp_space_tail(const tp_cps *c, size_t i, size_t n) {
  size_t j = i;
  while (j < n && tp_is_space(c, j)) j++;
  for (size_t k = j; k > i; k--)
    if (tp_is_newline(c, k - 1)) return k; /* \s*[\r\n]+ ends after the last newline */
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
  return tp_space_tail(c, i, n); /* whitespace at i */
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * with digits = 3; Qwen2's pattern is the same with \p{N} (digits = 1). */
static size_t tp_llama3_match(const tp_cps *c, size_t i, size_t n, size_t digits) {
  size_t end = tp_contraction(c, i, n, TP_CASE_ASCII);
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

typedef int (*tp_class_fn)(const tp_cps *c, size_t i);
static size_t tp_run(const tp_cps *c, size_t i, size_t n, tp_class_fn in);

/* [^\s\p{L}\p{M}\p{N}]: punctuation, symbols, controls, but not marks */
static int tp_is_other_not_mark(const tp_cps *c, size_t i) {
  return c->cls[i] == TP_CHAR_OTHER && c->kind[i] != TP_KIND_MARK;
}

/* Qwen3.5's pattern: Qwen2's with marks joining the letters and left out of
 * the symbol runs:
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|
 *    ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * (a mark as the lead ends where the run from it does) */
static size_t tp_qwen35_match(const tp_cps *c, size_t i, size_t n) {
  const size_t end = tp_contraction(c, i, n, TP_CASE_ASCII);
  if (end) return end;
  if (tp_is_letter_or_mark(c, i)) return tp_run(c, i, n, tp_is_letter_or_mark);
  if (c->cls[i] != TP_CHAR_NUMBER && !tp_is_newline(c, i) && i + 1 < n && tp_is_letter_or_mark(c, i + 1))
    return tp_run(c, i + 1, n, tp_is_letter_or_mark);
  if (c->cls[i] == TP_CHAR_NUMBER) return i + 1;
  const size_t s = (c->cp[i] == ' ' && i + 1 < n) ? i + 1 : i;
  if (tp_is_other_not_mark(c, s)) {
    size_t j = tp_run(c, s, n, tp_is_other_not_mark);
    while (j < n && tp_is_newline(c, j)) j++;
    return j;
  }
  return tp_is_space(c, i) ? tp_space_tail(c, i, n) : 0;
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
static int tp_is_han_at(const tp_cps *c, size_t i) { return tp_is_han(c->cp[i]); }
/* Kimi K2's: the same less the Han script, [...&&[^\p{Han}]] (Han's code
 * points in the two are caseless letters and two marks; Lu and Ll hold none) */
static int tp_is_upper_not_han(const tp_cps *c, size_t i) {
  return tp_is_upper_set(c, i) && (c->kind[i] == TP_KIND_UPPER || !tp_is_han_at(c, i));
}
static int tp_is_lower_not_han(const tp_cps *c, size_t i) {
  return tp_is_lower_set(c, i) && (c->kind[i] == TP_KIND_LOWER || !tp_is_han_at(c, i));
}

/* A pattern with words by case:
 *   [^\r\n\p{L}\p{N}]?UPPER*LOWER+C?|[^\r\n\p{L}\p{N}]?UPPER+LOWER*C?|\p{N}{1,digits}|
 *    ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * with its two word classes, its contractions C (0: none, else the case
 * mode of (?i:'s|'t|'re|'ve|'m|'ll|'d)), its digits, and whether / joins
 * the newlines after a symbol run. */
typedef struct tp_cased {
  tp_class_fn upper, lower;
  int contractions;
  size_t digits;
  int slash;
} tp_cased;

static const tp_cased tp_tekken_pattern = {tp_is_upper_set, tp_is_lower_set, 0, 1, 1};
/* gpt-4o's contractions in ASCII's cases, as llama.cpp spells them (its
 * tokenizer.json's (?i:...) would take 'ſ too) */
static const tp_cased tp_gpt4o_pattern = {tp_is_upper_set, tp_is_lower_set, TP_CASE_ASCII, 3, 1};
static const tp_cased tp_kimi_pattern = {tp_is_upper_not_han, tp_is_lower_not_han, TP_CASE_FOLD, 3, 0};

/* upper*lower+ from s, as a backtracking engine matches it: upper* takes
 * its longest run, then gives code points back until lower+ can start;
 * returns the end, or 0 where nothing matches. */
static size_t tp_word_lower(const tp_cps *c, size_t s, size_t n, const tp_cased *p) {
  size_t e = s;
  while (e < n && p->upper(c, e)) e++;
  if (e < n && p->lower(c, e)) { /* lower+ from e, at its longest */
    while (e < n && p->lower(c, e)) e++;
    return e;
  }
  /* the last code point the run gave back that lower+ takes: lower+ ends
   * right after it (the code points after it were upper only) */
  for (size_t k = e; k > s; k--)
    if (p->lower(c, k - 1)) return k;
  return 0;
}

/* upper+lower* from s; 0 where nothing matches */
static size_t tp_word_upper(const tp_cps *c, size_t s, size_t n, const tp_cased *p) {
  size_t e = s;
  while (e < n && p->upper(c, e)) e++;
  if (e == s) return 0;
  while (e < n && p->lower(c, e)) e++;
  return e;
}

/* Pattern p at i. Each word alternative tries the lead first, then none. */
static size_t tp_cased_match(const tp_cps *c, size_t i, size_t n, const tp_cased *p) {
  size_t (*const words[2])(const tp_cps *, size_t, size_t, const tp_cased *) = {tp_word_lower,
                                                                                tp_word_upper};
  for (int w = 0; w < 2; ++w)
    for (int lead = 1; lead >= 0; --lead) {
      if (lead && !(tp_is_lead(c, i) && i + 1 < n)) continue;
      size_t end = words[w](c, i + (size_t)lead, n, p);
      if (!end) continue;
      if (p->contractions) {
        const size_t after = tp_contraction(c, end, n, p->contractions);
        if (after) end = after;
      }
      return end;
    }
  return tp_tail_match(c, i, n, p->digits, p->slash);
}

/* ---- DeepSeek's lists. Their code point sets that are not Unicode
 * categories are ranges written out in the expressions; these are those
 * ranges (inclusive, sorted). */
typedef struct tp_range {
  uint32_t lo, hi;
} tp_range;

static int tp_in_ranges(uint32_t cp, const tp_range *r, size_t n) {
  size_t lo = 0, hi = n; /* the first range ending at or after cp */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r[mid].hi < cp)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && r[lo].lo <= cp;
}
#define TP_IN(cp, ranges) tp_in_ranges(cp, ranges, sizeof ranges / sizeof ranges[0])

/* deepseek-llm's letters: the cased letters of Latin, Greek, Coptic,
 * Cyrillic, Armenian, Georgian, Cherokee, Glagolitic, Deseret, Osage, Old
 * Hungarian, Warang Citi, Adlam and the letterlike symbols, as its pattern
 * lists them (close to \p{LC} of an older Unicode; no caseless letters, so
 * CJK, Arabic or Devanagari are not in it) */
static const tp_range tp_deepseek_letters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},       {0xD8, 0xF6},
    {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},     {0x295, 0x2AF},     {0x370, 0x373},
    {0x376, 0x377},     {0x37B, 0x37D},     {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},
    {0x38C, 0x38C},     {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},   {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},   {0x2107, 0x2107},
    {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},
    {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},
    {0xA771, 0xA787},   {0xA78B, 0xA78E},   {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943}};

/* deepseek-llm's punctuation [!-/:-~！-／：-～‘-‟　-。]: the range :-~ holds
 * the ASCII letters too, and ：-～ the full-width ones */
static const tp_range tp_deepseek_punct[] = {{0x21, 0x2F},     {0x3A, 0x7E},     {0x2018, 0x201F},
                                             {0x3000, 0x3002}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}};

/* [一-龥ࠀ-一가-퟿] (deepseek-llm, deepseek-coder): U+0800..U+9FA5 (every
 * script from Samaritan to the CJK ideographs, the kana, CJK punctuation
 * and the spaces U+2000..U+200A and U+3000 among them), and the Hangul
 * syllables and Jamo extension U+AC00..U+D7FF */
static const tp_range tp_deepseek_cjk[] = {{0x800, 0x9FA5}, {0xAC00, 0xD7FF}};

/* [一-龥぀-ゟ゠-ヿ] (deepseek-v3): the kana and the CJK ideographs */
static const tp_range tp_deepseek_v3_cjk[] = {{0x3040, 0x30FF}, {0x4E00, 0x9FA5}};

static int tp_is_ds_letter(const tp_cps *c, size_t i) { return TP_IN(c->cp[i], tp_deepseek_letters); }
static int tp_is_ds_punct(const tp_cps *c, size_t i) { return TP_IN(c->cp[i], tp_deepseek_punct); }
static int tp_is_ds_cjk(const tp_cps *c, size_t i) { return TP_IN(c->cp[i], tp_deepseek_cjk); }
static int tp_is_v3_cjk(const tp_cps *c, size_t i) { return TP_IN(c->cp[i], tp_deepseek_v3_cjk); }

/* X+ at i: the end of the run, 0 where i is not in X. */
static size_t tp_run(const tp_cps *c, size_t i, size_t n, tp_class_fn in) {
  if (!in(c, i)) return 0;
  while (i < n && in(c, i)) i++;
  return i;
}

/* \s?X+ at i: a whitespace is taken where X follows it (else \s? matches
 * nothing and X+ must start at i; where i is both, the run is the same). */
static size_t tp_space_opt_run(const tp_cps *c, size_t i, size_t n, tp_class_fn in) {
  if (tp_is_space(c, i) && i + 1 < n && in(c, i + 1)) return tp_run(c, i + 1, n, in);
  return tp_run(c, i, n, in);
}

static size_t tp_newline_match(const tp_cps *c, size_t i, size_t n) { /* [\r\n] */
  (void)n;
  return tp_is_newline(c, i) ? i + 1 : 0;
}
static size_t tp_number_match(const tp_cps *c, size_t i, size_t n) { /* \p{N} */
  (void)n;
  return tp_is_number(c, i) ? i + 1 : 0;
}
static size_t tp_numbers_match(const tp_cps *c, size_t i, size_t n) { /* \p{N}+ */
  return tp_run(c, i, n, tp_is_number);
}
static size_t tp_numbers3_match(const tp_cps *c, size_t i, size_t n) { /* \p{N}{1,3} */
  size_t j = i;
  while (j < n && j < i + 3 && tp_is_number(c, j)) j++;
  return j > i ? j : 0;
}
static size_t tp_ds_letters_match(const tp_cps *c, size_t i, size_t n) {
  return tp_space_opt_run(c, i, n, tp_is_ds_letter);
}
static size_t tp_ds_punct_match(const tp_cps *c, size_t i, size_t n) {
  return tp_space_opt_run(c, i, n, tp_is_ds_punct);
}
static size_t tp_ds_cjk_match(const tp_cps *c, size_t i, size_t n) { return tp_run(c, i, n, tp_is_ds_cjk); }
static size_t tp_v3_cjk_match(const tp_cps *c, size_t i, size_t n) { return tp_run(c, i, n, tp_is_v3_cjk); }
static size_t tp_letters_match(const tp_cps *c, size_t i, size_t n) { /* \s?\p{L}+ */
  return tp_space_opt_run(c, i, n, tp_is_letter);
}
static size_t tp_puncts_match(const tp_cps *c, size_t i, size_t n) { /* \s?\p{P}+ */
  return tp_space_opt_run(c, i, n, tp_is_punct);
}

/* \s+$: whitespace running to the piece's end; tp_trailing_first puts the
 * search straight at that run, so a long run that stops before the end is
 * not rescanned from each of its code points. */
static size_t tp_trailing_space_match(const tp_cps *c, size_t i, size_t n) {
  size_t j = i;
  while (j < n && tp_is_space(c, j)) j++;
  return j > i && j == n ? n : 0;
}
static size_t tp_trailing_first(const tp_cps *c, size_t i, size_t n) {
  size_t j = n;
  while (j > i && tp_is_space(c, j - 1)) j--;
  return j < n ? j : n;
}

static int tp_is_ascii_letter(uint32_t cp) { return (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z'); }
/* ASCII's punctuation and symbols: [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~] */
static int tp_is_ascii_punct(uint32_t cp) {
  return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
         (cp >= 0x7B && cp <= 0x7E);
}

/* deepseek-v3's third expression:
 *   [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
 *    ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * A code point none of them takes (a control or format character, a digit
 * group left by \p{N}{1,3}) is left to the run between matches. */
static size_t tp_deepseek_v3_match(const tp_cps *c, size_t i, size_t n) {
  const uint32_t cp = c->cp[i];
  size_t j;
  if (tp_is_ascii_punct(cp) && i + 1 < n && tp_is_ascii_letter(c->cp[i + 1])) {
    j = i + 2;
    while (j < n && tp_is_ascii_letter(c->cp[j])) j++;
    return j;
  }
  /* a letter or mark at i: the run from it (a mark as the lead ends at the same place) */
  if (tp_is_letter_or_mark(c, i)) return tp_run(c, i, n, tp_is_letter_or_mark);
  if (!tp_is_newline(c, i) && !tp_is_punct_or_symbol(c, i) && i + 1 < n && tp_is_letter_or_mark(c, i + 1))
    return tp_run(c, i + 1, n, tp_is_letter_or_mark);
  const size_t s = (cp == ' ' && i + 1 < n) ? i + 1 : i;
  if (tp_is_punct_or_symbol(c, s)) {
    j = tp_run(c, s, n, tp_is_punct_or_symbol);
    while (j < n && tp_is_newline(c, j)) j++;
    return j;
  }
  return tp_is_space(c, i) ? tp_space_tail(c, i, n) : 0;
}

/* Kimi K2's pattern (the pat_str of its tokenization_kimi.py, for tiktoken):
 *   [\p{Han}]+|[^\r\n\p{L}\p{N}]?UPPER*LOWER+C?|[^\r\n\p{L}\p{N}]?UPPER+LOWER*C?|
 *   \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * gpt-4o's after a first alternative for Han runs, with its word classes
 * less Han (UPPER = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]], LOWER
 * likewise), C = (?i:'s|'t|'re|'ve|'m|'ll|'d) and no / after symbols. A
 * Han code point at i is taken by the first alternative, so the lead is
 * never one; Han code points that are not letters (radicals: So) still
 * join symbol runs after the first code point. */
static size_t tp_kimi_match(const tp_cps *c, size_t i, size_t n) {
  if (tp_is_han_at(c, i)) return tp_run(c, i, n, tp_is_han_at);
  return tp_cased_match(c, i, n, &tp_kimi_pattern);
}

/* The single-expression pre-tokenizers with their parameters bound. */
static size_t tp_llama3_3(const tp_cps *c, size_t i, size_t n) { return tp_llama3_match(c, i, n, 3); }
static size_t tp_qwen2_1(const tp_cps *c, size_t i, size_t n) { return tp_llama3_match(c, i, n, 1); }
static size_t tp_tekken(const tp_cps *c, size_t i, size_t n) {
  return tp_cased_match(c, i, n, &tp_tekken_pattern);
}
static size_t tp_gpt4o(const tp_cps *c, size_t i, size_t n) {
  return tp_cased_match(c, i, n, &tp_gpt4o_pattern);
}

typedef size_t (*tp_match_fn)(const tp_cps *c, size_t i, size_t n);

/* One expression: match gives the end of its match at i (0: none starts
 * there); first, where set, the first position at or after i worth trying. */
typedef struct tp_expr {
  tp_match_fn match;
  size_t (*first)(const tp_cps *c, size_t i, size_t n);
} tp_expr;

/* The lists, as llama.cpp's llama-vocab.cpp gives them per pre-tokenizer. */
static const tp_expr tp_gpt2_list[] = {{tp_gpt2_match, NULL}};
static const tp_expr tp_llama3_list[] = {{tp_llama3_3, NULL}};
static const tp_expr tp_qwen2_list[] = {{tp_qwen2_1, NULL}};
static const tp_expr tp_qwen35_list[] = {{tp_qwen35_match, NULL}};
static const tp_expr tp_digits_gpt2_list[] = {{tp_number_match, NULL}, {tp_gpt2_match, NULL}};
static const tp_expr tp_tekken_list[] = {{tp_tekken, NULL}};
static const tp_expr tp_gpt4o_list[] = {{tp_gpt4o, NULL}};
/* [\r\n], \s?[letters]+, \s?[punctuation]+, \s+$, [CJK]+, \p{N}+ */
static const tp_expr tp_deepseek_llm_list[] = {{tp_newline_match, NULL},
                                               {tp_ds_letters_match, NULL},
                                               {tp_ds_punct_match, NULL},
                                               {tp_trailing_space_match, tp_trailing_first},
                                               {tp_ds_cjk_match, NULL},
                                               {tp_numbers_match, NULL}};
/* [\r\n], \s?\p{L}+, \s?\p{P}+, [CJK]+, \p{N} */
static const tp_expr tp_deepseek_coder_list[] = {{tp_newline_match, NULL}, {tp_letters_match, NULL},
                                                 {tp_puncts_match, NULL},  {tp_ds_cjk_match, NULL},
                                                 {tp_number_match, NULL}};
/* \p{N}{1,3}, [CJK and kana]+, the words-and-marks expression */
static const tp_expr tp_deepseek_v3_list[] = {{tp_numbers3_match, NULL}, {tp_v3_cjk_match, NULL},
                                              {tp_deepseek_v3_match, NULL}};
static const tp_expr tp_kimi_list[] = {{tp_kimi_match, NULL}};

typedef struct tp_splitter {
  const tp_cps *c;
  const size_t *off; /* byte offset of each code point, and of the end */
  const tp_expr *list;
  size_t n_list;
  tp_piece_fn emit;
  void *ctx;
} tp_splitter;

/* Code points [a, b) as a piece for expression e: its matches and the runs
 * between them go on to expression e + 1; after the last they are emitted.
 * (The recursion is as deep as the list is long.) */
static topos_status tp_split(const tp_splitter *sp, size_t e, size_t a, size_t b) {
  if (e == sp->n_list) return sp->emit(sp->ctx, sp->off[a], sp->off[b] - sp->off[a]);
  const tp_expr *x = &sp->list[e];
  size_t i = a, gap = a; /* gap: where the run no match took begins */
  while (i < b) {
    if (x->first) i = x->first(sp->c, i, b);
    if (i >= b) break;
    const size_t end = x->match(sp->c, i, b);
    if (end <= i) {
      i++;
      continue;
    }
    if (gap < i) TP_TRY(tp_split(sp, e + 1, gap, i));
    TP_TRY(tp_split(sp, e + 1, i, end));
    i = gap = end;
  }
  if (gap < b) TP_TRY(tp_split(sp, e + 1, gap, b));
  return TOPOS_OK;
}

topos_status tp_pretokenize(tp_pre_kind kind, const char *text, size_t n, tp_piece_fn emit,
                            void *ctx) {
  const tp_expr *list;
  size_t n_list;
#define TP_LIST(l) (list = (l), n_list = sizeof(l) / sizeof(l)[0])
  switch (kind) {
    case TP_PRE_LLAMA3: TP_LIST(tp_llama3_list); break;
    case TP_PRE_QWEN2: TP_LIST(tp_qwen2_list); break;
    case TP_PRE_QWEN35: TP_LIST(tp_qwen35_list); break;
    case TP_PRE_DIGITS_GPT2: TP_LIST(tp_digits_gpt2_list); break;
    case TP_PRE_TEKKEN: TP_LIST(tp_tekken_list); break;
    case TP_PRE_GPT4O: TP_LIST(tp_gpt4o_list); break;
    case TP_PRE_DEEPSEEK_LLM: TP_LIST(tp_deepseek_llm_list); break;
    case TP_PRE_DEEPSEEK_CODER: TP_LIST(tp_deepseek_coder_list); break;
    case TP_PRE_DEEPSEEK_V3: TP_LIST(tp_deepseek_v3_list); break;
    case TP_PRE_KIMI_K2: TP_LIST(tp_kimi_list); break;
    default: TP_LIST(tp_gpt2_list); break;
  }
#undef TP_LIST
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

  const tp_cps c = {cp, cls, kinds};
  const tp_splitter sp = {&c, off, list, n_list, emit, ctx};
  const topos_status st = tp_split(&sp, 0, 0, count);
  free(cp), free(cls), free(kinds), free(off);
  return st;
}
