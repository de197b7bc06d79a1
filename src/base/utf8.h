/* Internal: strict UTF-8 (shortest form only, no UTF-16 surrogates, nothing
 * above U+10FFFF), shared by the GGUF name checks and the tokenizer. */
#ifndef TP_BASE_UTF8_H
#define TP_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define TP_UTF8_INVALID 0xFFFFFFFFu
/* Decodes one code point of s[0..n) (n >= 1). Returns its byte length (1..4).
 * Invalid, overlong, surrogate or truncated sequences give length 1 and
 * *cp = TP_UTF8_INVALID, so every byte of the input is consumed exactly once. */
size_t tp_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* 1 if all n bytes form valid UTF-8 (NUL is a valid code point here). */
int tp_utf8_valid(const char *s, size_t n);
/* Position of the first byte that does not start a valid code point or is
 * NUL (names that become C strings), or len when there is none. */
size_t tp_utf8_first_invalid(const uint8_t *s, size_t len);
/* Encodes cp (<= 0x10FFFF) into out (4 bytes room), returns the length. */
size_t tp_utf8_encode(uint32_t cp, unsigned char *out);

#endif
