/* base/utf8: the strict decoder shared by the GGUF name checks and the
 * tokenizer. Each malformed form is rejected at its first byte. */
#include "base/utf8.h"
#include "test.h"

#define BYTES(s) ((const uint8_t *)(s)), (sizeof(s) - 1)

TEST(utf8_decode_accepts_each_length_and_rejects_malformed_forms) {
  uint32_t cp;
  CHECK_EQ_INT(tp_utf8_decode((const unsigned char *)"A", 1, &cp), 1);
  CHECK_EQ_INT(cp, 0x41);
  CHECK_EQ_INT(tp_utf8_decode((const unsigned char *)"\xC3\xA9", 2, &cp), 2);
  CHECK_EQ_INT(cp, 0xE9);
  CHECK_EQ_INT(tp_utf8_decode((const unsigned char *)"\xE2\x82\xAC", 3, &cp), 3);
  CHECK_EQ_INT(cp, 0x20AC);
  CHECK_EQ_INT(tp_utf8_decode((const unsigned char *)"\xF4\x8F\xBF\xBF", 4, &cp), 4);
  CHECK_EQ_INT(cp, 0x10FFFF);
  static const char *const bad[] = {
      "\xC0\xAF",         /* overlong '/' */
      "\xE0\x80\xAF",     /* overlong, three bytes */
      "\xED\xA0\x80",     /* UTF-16 surrogate U+D800 */
      "\xF4\x90\x80\x80", /* U+110000 */
      "\x80",             /* lone continuation byte */
      "\xFF",             /* never a lead byte */
      "\xC3\x41",         /* continuation missing */
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    size_t n = tp_utf8_decode((const unsigned char *)bad[i], strlen(bad[i]), &cp);
    CHECK_MSG(n == 1 && cp == TP_UTF8_INVALID, "form %zu: length %zu, cp 0x%x", i, n, cp);
  }
  /* a sequence cut by the end of the buffer */
  CHECK_EQ_INT(tp_utf8_decode((const unsigned char *)"\xE2\x82\xAC", 2, &cp), 1);
  CHECK_EQ_INT(cp, TP_UTF8_INVALID);
}

TEST(utf8_encode_round_trips_through_decode) {
  static const uint32_t points[] = {0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF,
                                    0x10000, 0x10FFFF};
  for (size_t i = 0; i < sizeof points / sizeof *points; ++i) {
    unsigned char buf[4];
    uint32_t back;
    size_t n = tp_utf8_encode(points[i], buf);
    CHECK_EQ_INT(tp_utf8_decode(buf, n, &back), n);
    CHECK_EQ_INT(back, points[i]);
  }
}

TEST(utf8_first_invalid_names_the_offending_byte_and_refuses_nul) {
  CHECK_EQ_INT(tp_utf8_first_invalid(BYTES("blk.0.attn_q.weight")), 19);
  CHECK_EQ_INT(tp_utf8_first_invalid(BYTES("caf\xC3\xA9")), 5);
  CHECK_EQ_INT(tp_utf8_first_invalid(BYTES("ab\0cd")), 2);
  CHECK_EQ_INT(tp_utf8_first_invalid(BYTES("a\xC0\xAF")), 1);
  CHECK_EQ_INT(tp_utf8_first_invalid(BYTES("ab\xE2\x82")), 2);
  CHECK_EQ_INT(tp_utf8_first_invalid(BYTES("")), 0);
  /* the tokenizer's validity check accepts NUL, refuses the rest alike */
  CHECK(tp_utf8_valid("ab\0cd", 5));
  CHECK(!tp_utf8_valid("a\xC0\xAF", 3));
}
