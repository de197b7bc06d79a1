/* Decoding: token ids back to bytes, one piece per token. */
#include <string.h>

#include "base/error.h"
#include "base/text.h"
#include "models/tokenizer_internal.h"

/* One token's piece into the sink; strip drops one leading ' '. */
static void tp_piece(const topos_tokenizer *t, int32_t id, unsigned flags, tp_text *out) {
  size_t n;
  const char *s = tp_tok_text(t, id, &n);
  int strip = !!(flags & TOPOS_DECODE_STRIP_LEADING_SPACE);
  uint8_t type = t->types[id];
  if (type == TOPOS_TOKEN_BYTE) {
    char b = (char)t->byte_value[id];
    if (!(strip && b == ' ')) tp_text_put(out, &b, 1);
    return;
  }
  if (type == TOPOS_TOKEN_UNUSED) return;
  if (type == TOPOS_TOKEN_CONTROL && !(flags & TOPOS_DECODE_SPECIAL)) return;
  if (type == TOPOS_TOKEN_CONTROL || (t->kind != TOPOS_TOKENIZER_SPM && type != TOPOS_TOKEN_NORMAL &&
                                      type != TOPOS_TOKEN_UNDEFINED)) {
    /* control text, and BPE added tokens, are stored raw (not byte-mapped,
     * ▁ kept) */
    if (strip && n && s[0] == ' ') s++, n--;
    tp_text_put(out, s, n);
    return;
  }
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    size_t len = tp_utf8_decode(u + i, n - i, &cp);
    char byte;
    const char *bytes = s + i;
    size_t nbytes = len;
    if (t->kind != TOPOS_TOKENIZER_BPE) { /* SPM, gemma4: ▁ is a space */
      if (cp == 0x2581) byte = ' ', bytes = &byte, nbytes = 1;
    } else {
      int b = cp == TP_UTF8_INVALID ? -1 : tp_unicode_to_byte(cp);
      if (b >= 0) byte = (char)b, bytes = &byte, nbytes = 1;
    }
    if (!(strip && i == 0 && nbytes == 1 && bytes[0] == ' ')) tp_text_put(out, bytes, nbytes);
    i += len;
  }
}

static topos_status tp_finish(tp_text *s, const char *who, size_t *len) {
  *len = s->length;
  if (s->length > s->size)
    return tp_fail(TOPOS_ERR_RANGE, "%s: %zu bytes do not fit capacity %zu", who, s->length, s->size);
  return TOPOS_OK;
}

topos_status topos_tokenizer_decode_token_ex(const topos_tokenizer *t, int32_t id, unsigned flags,
                                             char *buf, size_t cap, size_t *len) {
  if (len) *len = 0;
  if (!t || !len || (!buf && cap))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "tokenizer_decode_token: tokenizer, len and buf (when cap > 0) must be set");
  if (id < 0 || id >= t->n_tokens)
    return tp_fail(TOPOS_ERR_RANGE, "tokenizer_decode_token: id %d outside 0..%d", (int)id,
                   (int)t->n_tokens - 1);
  tp_text s = {buf, cap, 0};
  tp_piece(t, id, flags, &s);
  return tp_finish(&s, "tokenizer_decode_token", len);
}

topos_status topos_tokenizer_decode_token(const topos_tokenizer *t, int32_t id, char *buf,
                                          size_t cap, size_t *len) {
  return topos_tokenizer_decode_token_ex(t, id, 0, buf, cap, len);
}

topos_status topos_tokenizer_decode(const topos_tokenizer *t, const int32_t *ids, size_t n_ids,
                                    unsigned flags, char *buf, size_t cap, size_t *len) {
  if (len) *len = 0;
  if (!t || !len || (!ids && n_ids) || (!buf && cap))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "tokenizer_decode: tokenizer, len, ids (when n_ids > 0) and buf (when "
                   "cap > 0) must be set");
  for (size_t i = 0; i < n_ids; i++)
    if (ids[i] < 0 || ids[i] >= t->n_tokens)
      return tp_fail(TOPOS_ERR_RANGE, "tokenizer_decode: ids[%zu] = %d outside 0..%d", i,
                     (int)ids[i], (int)t->n_tokens - 1);
  tp_text s = {buf, cap, 0};
  size_t first = 0;
  /* as llama.cpp's detokenize: the BOS that encoding adds is not text */
  if (n_ids && t->add_bos && t->bos >= 0 && ids[0] == t->bos && !(flags & TOPOS_DECODE_SPECIAL))
    first = 1;
  for (size_t i = first; i < n_ids; i++) {
    unsigned f = flags & TOPOS_DECODE_SPECIAL;
    if (i == first && t->add_space_prefix) f |= TOPOS_DECODE_STRIP_LEADING_SPACE;
    tp_piece(t, ids[i], f, &s);
  }
  return tp_finish(&s, "tokenizer_decode", len);
}
