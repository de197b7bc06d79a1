/* Strict UTF-8 decoding and encoding (see utf8.h). */
#include "base/utf8.h"

size_t tp_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned char c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t len;
  uint32_t value, min;
  if ((c & 0xE0) == 0xC0) {
    len = 2, value = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, value = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, value = c & 0x07, min = 0x10000;
  } else {
    *cp = TP_UTF8_INVALID;
    return 1;
  }
  if (len > n) {
    *cp = TP_UTF8_INVALID;
    return 1;
  }
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) {
      *cp = TP_UTF8_INVALID;
      return 1;
    }
    value = (value << 6) | (s[i] & 0x3F);
  }
  /* Overlong forms, UTF-16 surrogates and values past U+10FFFF are invalid. */
  if (value < min || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
    *cp = TP_UTF8_INVALID;
    return 1;
  }
  *cp = value;
  return len;
}

int tp_utf8_valid(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    uint32_t cp;
    i += tp_utf8_decode(u + i, n - i, &cp);
    if (cp == TP_UTF8_INVALID) return 0;
  }
  return 1;
}

size_t tp_utf8_encode(uint32_t cp, unsigned char *out) {
  if (cp < 0x80) {
    out[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (unsigned char)(0xC0 | (cp >> 6));
    out[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (unsigned char)(0xE0 | (cp >> 12));
    out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (unsigned char)(0xF0 | (cp >> 18));
  out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

size_t tp_utf8_first_invalid(const uint8_t *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    if (s[i] == 0) return i;
    uint32_t cp;
    size_t n = tp_utf8_decode(s + i, len - i, &cp);
    if (cp == TP_UTF8_INVALID) return i;
    i += n;
  }
  return len;
}
