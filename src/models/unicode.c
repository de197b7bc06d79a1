/* The approximate Unicode classes the pre-tokenizers need, GPT-2's
 * byte <-> code point table, and the tokenizer's id vector. (UTF-8 coding is
 * base/utf8.c; the string map is base/strmap.c.) */
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/error.h"
#include "models/tokenizer_internal.h"

/* ---- classes. ASCII and Latin-1 are exact; above U+00FF the ranges below
 * cover the common blocks, and anything not listed counts as a letter (most
 * assigned code points in the BMP and beyond are letters: CJK, Hangul, the
 * alphabetic scripts). Ranges are inclusive and sorted. */
typedef struct tp_range {
  uint32_t lo, hi;
  uint8_t cls;
} tp_range;

static const tp_range tp_class_ranges[] = {
    {0x0300, 0x036F, TP_CHAR_OTHER},  /* combining diacritics (Mn) */
    {0x0374, 0x0375, TP_CHAR_OTHER},  {0x037E, 0x037E, TP_CHAR_OTHER},
    {0x0384, 0x0385, TP_CHAR_OTHER},  {0x0387, 0x0387, TP_CHAR_OTHER},
    {0x03F6, 0x03F6, TP_CHAR_OTHER},  {0x0482, 0x0489, TP_CHAR_OTHER},
    {0x055A, 0x055F, TP_CHAR_OTHER},  {0x0589, 0x058A, TP_CHAR_OTHER},
    {0x058D, 0x058F, TP_CHAR_OTHER},  {0x0591, 0x05C7, TP_CHAR_OTHER}, /* Hebrew marks */
    {0x05F3, 0x05F4, TP_CHAR_OTHER},  {0x0600, 0x060F, TP_CHAR_OTHER},
    {0x0610, 0x061A, TP_CHAR_OTHER},  {0x061B, 0x061F, TP_CHAR_OTHER},
    {0x064B, 0x065F, TP_CHAR_OTHER},  {0x0660, 0x0669, TP_CHAR_NUMBER},
    {0x066A, 0x066D, TP_CHAR_OTHER},  {0x0670, 0x0670, TP_CHAR_OTHER},
    {0x06D4, 0x06D4, TP_CHAR_OTHER},  {0x06D6, 0x06ED, TP_CHAR_OTHER},
    {0x06F0, 0x06F9, TP_CHAR_NUMBER}, {0x0900, 0x0903, TP_CHAR_OTHER},
    {0x093A, 0x093C, TP_CHAR_OTHER},  {0x093E, 0x094F, TP_CHAR_OTHER},
    {0x0951, 0x0957, TP_CHAR_OTHER},  {0x0962, 0x0965, TP_CHAR_OTHER},
    {0x0966, 0x096F, TP_CHAR_NUMBER}, {0x0970, 0x0970, TP_CHAR_OTHER},
    {0x09E6, 0x09EF, TP_CHAR_NUMBER}, {0x0A66, 0x0A6F, TP_CHAR_NUMBER},
    {0x0AE6, 0x0AEF, TP_CHAR_NUMBER}, {0x0B66, 0x0B6F, TP_CHAR_NUMBER},
    {0x0BE6, 0x0BF2, TP_CHAR_NUMBER}, {0x0C66, 0x0C6F, TP_CHAR_NUMBER},
    {0x0CE6, 0x0CEF, TP_CHAR_NUMBER}, {0x0D66, 0x0D78, TP_CHAR_NUMBER},
    {0x0E31, 0x0E31, TP_CHAR_OTHER},  {0x0E34, 0x0E3A, TP_CHAR_OTHER},
    {0x0E3F, 0x0E3F, TP_CHAR_OTHER},  {0x0E47, 0x0E4F, TP_CHAR_OTHER},
    {0x0E50, 0x0E59, TP_CHAR_NUMBER}, {0x0E5A, 0x0E5B, TP_CHAR_OTHER},
    {0x0ED0, 0x0ED9, TP_CHAR_NUMBER}, {0x0F20, 0x0F33, TP_CHAR_NUMBER},
    {0x1040, 0x1049, TP_CHAR_NUMBER}, {0x1680, 0x1680, TP_CHAR_SPACE},
    {0x17E0, 0x17E9, TP_CHAR_NUMBER}, {0x1810, 0x1819, TP_CHAR_NUMBER},
    {0x1AB0, 0x1AFF, TP_CHAR_OTHER},  {0x1DC0, 0x1DFF, TP_CHAR_OTHER},
    {0x1FBD, 0x1FBD, TP_CHAR_OTHER},  {0x1FBF, 0x1FC1, TP_CHAR_OTHER},
    {0x1FCD, 0x1FCF, TP_CHAR_OTHER},  {0x1FDD, 0x1FDF, TP_CHAR_OTHER},
    {0x1FED, 0x1FEF, TP_CHAR_OTHER},  {0x1FFD, 0x1FFE, TP_CHAR_OTHER},
    {0x2000, 0x200A, TP_CHAR_SPACE},  {0x200B, 0x2027, TP_CHAR_OTHER},
    {0x2028, 0x2029, TP_CHAR_SPACE},  {0x202A, 0x202E, TP_CHAR_OTHER},
    {0x202F, 0x202F, TP_CHAR_SPACE},  {0x2030, 0x205E, TP_CHAR_OTHER},
    {0x205F, 0x205F, TP_CHAR_SPACE},  {0x2060, 0x206F, TP_CHAR_OTHER},
    {0x2070, 0x2070, TP_CHAR_NUMBER}, {0x2074, 0x2079, TP_CHAR_NUMBER},
    {0x207A, 0x207E, TP_CHAR_OTHER},  {0x2080, 0x2089, TP_CHAR_NUMBER},
    {0x208A, 0x208E, TP_CHAR_OTHER},  {0x20A0, 0x20FF, TP_CHAR_OTHER}, /* currency, marks */
    {0x2100, 0x2101, TP_CHAR_OTHER},  {0x2103, 0x2106, TP_CHAR_OTHER},
    {0x2108, 0x2109, TP_CHAR_OTHER},  {0x2114, 0x2114, TP_CHAR_OTHER},
    {0x2116, 0x2118, TP_CHAR_OTHER},  {0x211E, 0x2123, TP_CHAR_OTHER},
    {0x2125, 0x2125, TP_CHAR_OTHER},  {0x2127, 0x2127, TP_CHAR_OTHER},
    {0x2129, 0x2129, TP_CHAR_OTHER},  {0x212E, 0x212E, TP_CHAR_OTHER},
    {0x213A, 0x213B, TP_CHAR_OTHER},  {0x2140, 0x2144, TP_CHAR_OTHER},
    {0x214A, 0x214D, TP_CHAR_OTHER},  {0x214F, 0x214F, TP_CHAR_OTHER},
    {0x2150, 0x2182, TP_CHAR_NUMBER}, {0x2185, 0x2189, TP_CHAR_NUMBER},
    {0x218A, 0x245F, TP_CHAR_OTHER},  /* arrows, math, technical */
    {0x2460, 0x249B, TP_CHAR_NUMBER}, {0x249C, 0x24E9, TP_CHAR_OTHER},
    {0x24EA, 0x24FF, TP_CHAR_NUMBER}, {0x2500, 0x2775, TP_CHAR_OTHER}, /* box, shapes, dingbats */
    {0x2776, 0x2793, TP_CHAR_NUMBER}, {0x2794, 0x2BFF, TP_CHAR_OTHER},
    {0x2CFD, 0x2CFD, TP_CHAR_NUMBER}, {0x2E00, 0x2E7F, TP_CHAR_OTHER},
    {0x2E80, 0x2FFF, TP_CHAR_OTHER},  /* CJK radicals (So) */
    {0x3000, 0x3000, TP_CHAR_SPACE},  {0x3001, 0x3004, TP_CHAR_OTHER},
    {0x3007, 0x3007, TP_CHAR_NUMBER}, {0x3008, 0x3020, TP_CHAR_OTHER},
    {0x3021, 0x3029, TP_CHAR_NUMBER}, {0x302A, 0x3030, TP_CHAR_OTHER},
    {0x3036, 0x3037, TP_CHAR_OTHER},  {0x3038, 0x303A, TP_CHAR_NUMBER},
    {0x303D, 0x303F, TP_CHAR_OTHER},  {0x3099, 0x309C, TP_CHAR_OTHER},
    {0x30A0, 0x30A0, TP_CHAR_OTHER},  {0x30FB, 0x30FB, TP_CHAR_OTHER},
    {0x3190, 0x3195, TP_CHAR_NUMBER}, {0x3220, 0x3229, TP_CHAR_NUMBER},
    {0x3248, 0x324F, TP_CHAR_NUMBER}, {0x3251, 0x325F, TP_CHAR_NUMBER},
    {0x3280, 0x3289, TP_CHAR_NUMBER}, {0x32B1, 0x32BF, TP_CHAR_NUMBER},
    {0xA620, 0xA629, TP_CHAR_NUMBER}, {0xA8D0, 0xA8D9, TP_CHAR_NUMBER},
    {0xA900, 0xA909, TP_CHAR_NUMBER}, {0xA9D0, 0xA9D9, TP_CHAR_NUMBER},
    {0xAA50, 0xAA59, TP_CHAR_NUMBER}, {0xABF0, 0xABF9, TP_CHAR_NUMBER},
    {0xD800, 0xF8FF, TP_CHAR_OTHER},  /* surrogates (never decoded), private use */
    {0xFD3E, 0xFD3F, TP_CHAR_OTHER},  {0xFE00, 0xFE0F, TP_CHAR_OTHER}, /* variation selectors */
    {0xFE10, 0xFE19, TP_CHAR_OTHER},  {0xFE20, 0xFE6B, TP_CHAR_OTHER},
    {0xFEFF, 0xFEFF, TP_CHAR_OTHER},  {0xFF01, 0xFF0F, TP_CHAR_OTHER}, /* fullwidth punct */
    {0xFF10, 0xFF19, TP_CHAR_NUMBER}, {0xFF1A, 0xFF20, TP_CHAR_OTHER},
    {0xFF3B, 0xFF40, TP_CHAR_OTHER},  {0xFF5B, 0xFF65, TP_CHAR_OTHER},
    {0xFFE0, 0xFFFF, TP_CHAR_OTHER},  {0x10107, 0x10133, TP_CHAR_NUMBER},
    {0x104A0, 0x104A9, TP_CHAR_NUMBER}, {0x1D000, 0x1D24F, TP_CHAR_OTHER}, /* music */
    {0x1D2E0, 0x1D37F, TP_CHAR_NUMBER}, {0x1D7CE, 0x1D7FF, TP_CHAR_NUMBER},
    {0x1E950, 0x1E959, TP_CHAR_NUMBER}, {0x1F000, 0x1F0FF, TP_CHAR_OTHER}, /* tiles, cards */
    {0x1F100, 0x1F10C, TP_CHAR_NUMBER}, {0x1F10D, 0x1FBEF, TP_CHAR_OTHER}, /* emoji, symbols */
    {0x1FBF0, 0x1FBF9, TP_CHAR_NUMBER}, {0xE0000, 0xE007F, TP_CHAR_OTHER}, /* tags */
    {0xE0100, 0xE01EF, TP_CHAR_OTHER},  /* variation selectors supplement */
    {0xF0000, 0x10FFFF, TP_CHAR_OTHER}, /* private use planes */
};

static tp_char_class tp_latin1_class(uint32_t cp) {
  if (cp >= '0' && cp <= '9') return TP_CHAR_NUMBER;
  if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return TP_CHAR_LETTER;
  if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0) return TP_CHAR_SPACE;
  if (cp < 0xA0) return TP_CHAR_OTHER; /* ASCII punctuation, C0/C1 controls */
  if (cp == 0xAA || cp == 0xB5 || cp == 0xBA) return TP_CHAR_LETTER; /* ª µ º */
  if (cp == 0xB2 || cp == 0xB3 || cp == 0xB9 || (cp >= 0xBC && cp <= 0xBE)) return TP_CHAR_NUMBER;
  if (cp < 0xC0 || cp == 0xD7 || cp == 0xF7) return TP_CHAR_OTHER;
  return TP_CHAR_LETTER;
}

tp_char_class tp_char_class_of(uint32_t cp) {
  if (cp == TP_UTF8_INVALID) return TP_CHAR_OTHER;
  if (cp <= 0xFF) return tp_latin1_class(cp);
  size_t lo = 0, hi = sizeof tp_class_ranges / sizeof tp_class_ranges[0];
  while (lo < hi) { /* first range with hi >= cp */
    size_t mid = lo + (hi - lo) / 2;
    if (tp_class_ranges[mid].hi < cp)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < sizeof tp_class_ranges / sizeof tp_class_ranges[0] && tp_class_ranges[lo].lo <= cp)
    return (tp_char_class)tp_class_ranges[lo].cls;
  return TP_CHAR_LETTER;
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
