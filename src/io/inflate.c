/* DEFLATE (RFC 1951) decoder and gzip (RFC 1952) container, written for the
 * data loaders (MNIST ships as .gz) so topos needs no zlib. Canonical Huffman
 * decoding by code length counts (one bit at a time: simple, and data
 * loading is not the hot path). Every read is bounds-checked; a corrupt or
 * truncated stream returns TOPOS_ERR_FORMAT / TOPOS_ERR_TRUNCATED, output is
 * capped by the caller's limit (no decompression bombs). */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "topos/data.h"

#define TP_MAX_BITS 15

typedef struct {
  const uint8_t *src;
  size_t size, pos; /* pos: next byte */
  uint32_t bitbuf;
  int bitcount;
  uint8_t *out;
  size_t out_len, out_cap, out_max;
  int truncated;
} tp_inflater;

typedef struct {
  uint16_t count[TP_MAX_BITS + 1];
  uint16_t symbol[320];
} tp_huffman;

static int tp_bits(tp_inflater *s, int need, uint32_t *value) {
  uint32_t v = s->bitbuf;
  while (s->bitcount < need) {
    if (s->pos >= s->size) {
      s->truncated = 1;
      return 0;
    }
    v |= (uint32_t)s->src[s->pos++] << s->bitcount;
    s->bitcount += 8;
  }
  s->bitbuf = v >> need;
  s->bitcount -= need;
  *value = need == 32 ? v : v & ((1u << need) - 1u);
  return 1;
}

static topos_status tp_emit(tp_inflater *s, uint8_t byte) {
  if (s->out_len == s->out_cap) {
    if (s->out_len >= s->out_max)
      return tp_fail(TOPOS_ERR_RANGE, "inflate: output exceeds the limit of %zu bytes", s->out_max);
    size_t cap = s->out_cap ? s->out_cap * 2 : 65536;
    if (cap > s->out_max || cap < s->out_cap) cap = s->out_max;
    uint8_t *grown = realloc(s->out, cap);
    if (!grown) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "inflate: %zu bytes", cap);
    s->out = grown;
    s->out_cap = cap;
  }
  s->out[s->out_len++] = byte;
  return TOPOS_OK;
}

/* Builds the decoding table; rejects over-subscribed code sets. Incomplete
 * sets are allowed (a lone distance code is legal), a code not in the set
 * fails at decode time. */
static int tp_huffman_build(tp_huffman *h, const uint8_t *lengths, int n) {
  uint16_t offs[TP_MAX_BITS + 1];
  memset(h->count, 0, sizeof h->count);
  for (int i = 0; i < n; ++i) h->count[lengths[i]]++;
  if (h->count[0] == n) return 1; /* no codes: decodes nothing */
  int left = 1;
  for (int len = 1; len <= TP_MAX_BITS; ++len) {
    left <<= 1;
    left -= h->count[len];
    if (left < 0) return 0;
  }
  offs[1] = 0;
  for (int len = 1; len < TP_MAX_BITS; ++len) offs[len + 1] = offs[len] + h->count[len];
  for (int i = 0; i < n; ++i)
    if (lengths[i]) h->symbol[offs[lengths[i]]++] = (uint16_t)i;
  return 1;
}

/* -1 truncated, -2 invalid code */
static int tp_decode(tp_inflater *s, const tp_huffman *h) {
  int code = 0, first = 0, index = 0;
  for (int len = 1; len <= TP_MAX_BITS; ++len) {
    uint32_t bit;
    if (!tp_bits(s, 1, &bit)) return -1;
    code |= (int)bit;
    int count = h->count[len];
    if (code - count < first) return h->symbol[index + (code - first)];
    index += count;
    first += count;
    first <<= 1;
    code <<= 1;
  }
  return -2;
}

static const uint16_t tp_len_base[29] = {3,  4,  5,  6,   7,   8,   9,   10,  11, 13,
                                         15, 17, 19, 23,  27,  31,  35,  43,  51, 59,
                                         67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t tp_len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                         2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t tp_dist_base[30] = {
    1,   2,   3,   4,   5,    7,    9,    13,   17,   25,   33,   49,    65,    97,    129,
    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t tp_dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                          6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

static topos_status tp_truncated(void) {
  return tp_fail(TOPOS_ERR_TRUNCATED, "inflate: stream ends inside a block");
}

static topos_status tp_codes(tp_inflater *s, const tp_huffman *lit, const tp_huffman *dist) {
  for (;;) {
    int sym = tp_decode(s, lit);
    if (sym == -1) return tp_truncated();
    if (sym < 0) return tp_fail(TOPOS_ERR_FORMAT, "inflate: invalid literal/length code");
    if (sym < 256) {
      TP_TRY(tp_emit(s, (uint8_t)sym));
      continue;
    }
    if (sym == 256) return TOPOS_OK;
    sym -= 257;
    if (sym >= 29) return tp_fail(TOPOS_ERR_FORMAT, "inflate: length symbol %d invalid", sym + 257);
    uint32_t extra;
    if (!tp_bits(s, tp_len_extra[sym], &extra)) return tp_truncated();
    size_t len = tp_len_base[sym] + extra;
    int dsym = tp_decode(s, dist);
    if (dsym == -1) return tp_truncated();
    if (dsym < 0 || dsym >= 30) return tp_fail(TOPOS_ERR_FORMAT, "inflate: invalid distance code");
    if (!tp_bits(s, tp_dist_extra[dsym], &extra)) return tp_truncated();
    size_t distance = tp_dist_base[dsym] + extra;
    if (distance > s->out_len)
      return tp_fail(TOPOS_ERR_FORMAT, "inflate: distance %zu reaches before the output start",
                     distance);
    for (size_t i = 0; i < len; ++i) TP_TRY(tp_emit(s, s->out[s->out_len - distance]));
  }
}

static topos_status tp_stored(tp_inflater *s) {
  s->bitbuf = 0;
  s->bitcount = 0; /* to the byte boundary */
  if (s->size - s->pos < 4) return tp_truncated();
  unsigned len = s->src[s->pos] | (unsigned)s->src[s->pos + 1] << 8;
  unsigned nlen = s->src[s->pos + 2] | (unsigned)s->src[s->pos + 3] << 8;
  s->pos += 4;
  if (len != (~nlen & 0xffffu))
    return tp_fail(TOPOS_ERR_FORMAT, "inflate: stored block length %u does not match its "
                   "complement", len);
  if (s->size - s->pos < len) return tp_truncated();
  for (unsigned i = 0; i < len; ++i) TP_TRY(tp_emit(s, s->src[s->pos + i]));
  s->pos += len;
  return TOPOS_OK;
}

static topos_status tp_fixed(tp_inflater *s) {
  uint8_t lengths[320];
  tp_huffman lit, dist;
  int i = 0;
  for (; i < 144; ++i) lengths[i] = 8;
  for (; i < 256; ++i) lengths[i] = 9;
  for (; i < 280; ++i) lengths[i] = 7;
  for (; i < 288; ++i) lengths[i] = 8;
  tp_huffman_build(&lit, lengths, 288);
  for (i = 0; i < 30; ++i) lengths[i] = 5;
  tp_huffman_build(&dist, lengths, 30);
  return tp_codes(s, &lit, &dist);
}

static topos_status tp_dynamic(tp_inflater *s) {
  static const uint8_t order[19] = {16, 17, 18, 0,  8, 7,  9, 6,  10, 5,
                                    11, 4,  12, 3, 13, 2, 14, 1, 15};
  uint32_t hlit, hdist, hclen, v;
  if (!tp_bits(s, 5, &hlit) || !tp_bits(s, 5, &hdist) || !tp_bits(s, 4, &hclen))
    return tp_truncated();
  hlit += 257;
  hdist += 1;
  hclen += 4;
  if (hlit > 286 || hdist > 30)
    return tp_fail(TOPOS_ERR_FORMAT, "inflate: %u literal or %u distance codes", hlit, hdist);
  uint8_t lengths[320] = {0};
  for (uint32_t i = 0; i < hclen; ++i) {
    if (!tp_bits(s, 3, &v)) return tp_truncated();
    lengths[order[i]] = (uint8_t)v;
  }
  tp_huffman lencode, lit, dist;
  if (!tp_huffman_build(&lencode, lengths, 19))
    return tp_fail(TOPOS_ERR_FORMAT, "inflate: over-subscribed code length code");
  uint32_t index = 0;
  memset(lengths, 0, sizeof lengths);
  while (index < hlit + hdist) {
    int sym = tp_decode(s, &lencode);
    if (sym == -1) return tp_truncated();
    if (sym < 0) return tp_fail(TOPOS_ERR_FORMAT, "inflate: invalid code length code");
    if (sym < 16) {
      lengths[index++] = (uint8_t)sym;
      continue;
    }
    uint8_t fill = 0;
    uint32_t repeat;
    if (sym == 16) {
      if (index == 0) return tp_fail(TOPOS_ERR_FORMAT, "inflate: repeat with no previous length");
      fill = lengths[index - 1];
      if (!tp_bits(s, 2, &repeat)) return tp_truncated();
      repeat += 3;
    } else if (sym == 17) {
      if (!tp_bits(s, 3, &repeat)) return tp_truncated();
      repeat += 3;
    } else {
      if (!tp_bits(s, 7, &repeat)) return tp_truncated();
      repeat += 11;
    }
    if (index + repeat > hlit + hdist)
      return tp_fail(TOPOS_ERR_FORMAT, "inflate: code lengths overrun the table");
    while (repeat--) lengths[index++] = fill;
  }
  if (lengths[256] == 0) return tp_fail(TOPOS_ERR_FORMAT, "inflate: no end-of-block code");
  if (!tp_huffman_build(&lit, lengths, (int)hlit) ||
      !tp_huffman_build(&dist, lengths + hlit, (int)hdist))
    return tp_fail(TOPOS_ERR_FORMAT, "inflate: over-subscribed literal or distance code");
  return tp_codes(s, &lit, &dist);
}

static topos_status tp_inflate_run(tp_inflater *s) {
  uint32_t last = 0, type;
  do {
    if (!tp_bits(s, 1, &last) || !tp_bits(s, 2, &type)) return tp_truncated();
    if (type == 0) TP_TRY(tp_stored(s));
    else if (type == 1) TP_TRY(tp_fixed(s));
    else if (type == 2) TP_TRY(tp_dynamic(s));
    else return tp_fail(TOPOS_ERR_FORMAT, "inflate: reserved block type 3");
  } while (!last);
  return TOPOS_OK;
}

topos_status topos_inflate(const void *src, size_t size, size_t max_out, void **out,
                           size_t *out_size, size_t *consumed) {
  if (out) *out = NULL;
  if (out_size) *out_size = 0;
  if ((!src && size) || !out || !out_size)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "inflate: needs input and outputs");
  tp_inflater s = {.src = src, .size = size, .out_max = max_out};
  topos_status st = tp_inflate_run(&s);
  if (st != TOPOS_OK) {
    free(s.out);
    return st;
  }
  if (consumed) *consumed = s.pos;
  if (!s.out) s.out = malloc(1); /* an empty stream still gives a buffer to free */
  if (!s.out) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "inflate: output");
  *out = s.out;
  *out_size = s.out_len;
  return TOPOS_OK;
}

/* Table-driven (one byte per step); the table is built on first use from the
 * reflected polynomial 0xEDB88320. A benign race: every thread writes the
 * same values. */
uint32_t topos_crc32(uint32_t crc, const void *data, size_t size) {
  static uint32_t table[256];
  static volatile int ready;
  if (!ready) {
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
      table[n] = c;
    }
    ready = 1;
  }
  const uint8_t *p = data;
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

topos_status topos_gunzip(const void *src, size_t size, size_t max_out, void **out,
                          size_t *out_size) {
  const uint8_t *p = src;
  if (out) *out = NULL;
  if (out_size) *out_size = 0;
  if ((!src && size) || !out || !out_size)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "gunzip: needs input and outputs");
  if (size < 18) return tp_fail(TOPOS_ERR_TRUNCATED, "gunzip: %zu bytes is too short", size);
  if (p[0] != 0x1f || p[1] != 0x8b) return tp_fail(TOPOS_ERR_BAD_MAGIC, "gunzip: not a gzip file");
  if (p[2] != 8) return tp_fail(TOPOS_ERR_FORMAT, "gunzip: compression method %u", p[2]);
  uint8_t flags = p[3];
  if (flags & 0xe0) return tp_fail(TOPOS_ERR_FORMAT, "gunzip: reserved flags 0x%02x", flags);
  size_t pos = 10;
  if (flags & 4) { /* FEXTRA */
    if (size - pos < 2) return tp_fail(TOPOS_ERR_TRUNCATED, "gunzip: header extra field");
    size_t xlen = p[pos] | (size_t)p[pos + 1] << 8;
    pos += 2;
    if (size - pos < xlen) return tp_fail(TOPOS_ERR_TRUNCATED, "gunzip: header extra field");
    pos += xlen;
  }
  for (int field = 8; field <= 16; field <<= 1) { /* FNAME, FCOMMENT: NUL-terminated */
    if (!(flags & field)) continue;
    while (pos < size && p[pos]) ++pos;
    if (pos >= size) return tp_fail(TOPOS_ERR_TRUNCATED, "gunzip: header name or comment");
    ++pos;
  }
  if (flags & 2) pos += 2; /* FHCRC */
  if (pos > size) return tp_fail(TOPOS_ERR_TRUNCATED, "gunzip: header");
  size_t used = 0;
  void *data = NULL;
  size_t n = 0;
  TP_TRY(topos_inflate(p + pos, size - pos, max_out, &data, &n, &used));
  pos += used;
  if (size - pos < 8) {
    free(data);
    return tp_fail(TOPOS_ERR_TRUNCATED, "gunzip: trailer missing");
  }
  uint32_t crc = p[pos] | (uint32_t)p[pos + 1] << 8 | (uint32_t)p[pos + 2] << 16 |
                 (uint32_t)p[pos + 3] << 24;
  uint32_t isize = p[pos + 4] | (uint32_t)p[pos + 5] << 8 | (uint32_t)p[pos + 6] << 16 |
                   (uint32_t)p[pos + 7] << 24;
  uint32_t actual = topos_crc32(0, data, n);
  if (crc != actual || isize != (uint32_t)n) {
    free(data);
    return tp_fail(TOPOS_ERR_FORMAT, "gunzip: checksum %08x or size %u does not match the data "
                   "(%08x, %zu bytes)", crc, isize, actual, n);
  }
  *out = data;
  *out_size = n;
  return TOPOS_OK;
}
