/* The Unicode classes the pre-tokenizers need, GPT-2's
 * byte <-> code point table, and the tokenizer's id vector. (UTF-8 coding is
 * base/utf8.c; the string map is base/strmap.c.) */
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/error.h"
#include "models/tokenizer_internal.h"

/* ---- classes: binary searches of the generated tables (for the kinds, the
 * last entry starting at or below cp) */
#include "models/unicode_classes.h"

tp_char_kind tp_char_kind_of(uint32_t cp) {
  if (cp > 0x10FFFF) return TP_KIND_OTHER; /* TP_UTF8_INVALID: an undecodable byte */
  size_t lo = 0, hi = sizeof tp_class_starts / sizeof tp_class_starts[0];
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (tp_class_starts[mid] >> 4 <= cp)
      lo = mid;
    else
      hi = mid;
  }
  return (tp_char_kind)(tp_class_starts[lo] & 15);
}

tp_char_class tp_char_class_of_kind(tp_char_kind k) {
  switch (k) {
    case TP_KIND_UPPER:
    case TP_KIND_LOWER:
    case TP_KIND_CASELESS: return TP_CHAR_LETTER;
    case TP_KIND_NUMBER: return TP_CHAR_NUMBER;
    case TP_KIND_SPACE: return TP_CHAR_SPACE;
    default: return TP_CHAR_OTHER; /* marks, punctuation, symbols: [^\s\p{L}\p{N}] takes them */
  }
}

tp_char_class tp_char_class_of(uint32_t cp) { return tp_char_class_of_kind(tp_char_kind_of(cp)); }

/* the first Han range ending at or after cp, and whether it holds cp */
int tp_is_han(uint32_t cp) {
  const size_t n = sizeof tp_han_ranges / sizeof tp_han_ranges[0];
  if (cp < tp_han_ranges[0][0]) return 0; /* ASCII, Latin, Greek, ... at once */
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (tp_han_ranges[mid][1] < cp)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && tp_han_ranges[lo][0] <= cp;
}

/* ---- GPT-2 bytes_to_unicode: printable Latin-1 bytes ('!'..'~', '¡'..'¬',
 * '®'..'ÿ') stand for themselves; the other 68 bytes get U+0100 onwards in
 * byte order. */
static int tp_byte_is_printable(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t tp_byte_to_unicode(uint8_t b) {
  if (tp_byte_is_printable(b)) return b;
  uint32_t n = 0; /* number of non-printable bytes before b */
  for (unsigned i = 0; i < b; i++) n += !tp_byte_is_printable(i);
  return 0x100 + n;
}

int tp_unicode_to_byte(uint32_t cp) {
  if (cp <= 0xFF) return tp_byte_is_printable(cp) ? (int)cp : -1;
  if (cp >= 0x100 + 68) return -1;
  uint32_t n = cp - 0x100;
  for (unsigned b = 0; b < 256; b++) {
    if (!tp_byte_is_printable(b)) {
      if (n == 0) return (int)b;
      n--;
    }
  }
  return -1;
}

/* ---- id vector */
topos_status tp_idvec_push(tp_idvec *v, int32_t id) {
  TP_GROW(v->data, v->count, v->capacity, 64, "tokenizer: token ids");
  v->data[v->count++] = id;
  return TOPOS_OK;
}
