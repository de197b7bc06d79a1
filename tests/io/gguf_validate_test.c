/* Handcrafted bad GGUF files: one per validation rule, each asserting its
 * status and a fragment of the message (which must name the key/tensor and
 * the offending value). */
#include "io/gguf_builder.h"
#include "test.h"

#define EXPECT_REJECT(b, status, fragment)                                  \
  do {                                                                      \
    topos_gguf *g_ = (topos_gguf *)1;                                       \
    CHECK_STATUS(topos_gguf_open_memory((b)->p, (b)->len, &g_), (status));  \
    CHECK(g_ == NULL);                                                      \
    CHECK_ERROR_HAS(fragment);                                              \
  } while (0)

#define EXPECT_OPENS(b, gout)                                     \
  do {                                                            \
    CHECK_OK(topos_gguf_open_memory((b)->p, (b)->len, (gout)));   \
  } while (0)

/* A valid file: one key, one f32 tensor {4, 2}, default alignment. */
static void tt_valid_file(gb *b) {
  b->len = 0;
  gb_header(b, 3, 1, 1);
  gb_kv_str(b, "general.architecture", "llama");
  uint64_t ne[2] = {4, 2};
  gb_tensor(b, "w", 2, ne, 0, 0);
  gb_pad(b, 32);
  for (int i = 0; i < 8; ++i) {
    float f = (float)i;
    gb_bytes(b, &f, 4);
  }
}

TEST(gguf_valid_minimal_opens) {
  gb b;
  tt_valid_file(&b);
  topos_gguf *g;
  EXPECT_OPENS(&b, &g);
  CHECK_EQ_INT(topos_gguf_version(g), 3);
  CHECK_EQ_INT(topos_gguf_kv_count(g), 1);
  CHECK_EQ_INT(topos_gguf_tensor_count(g), 1);
  CHECK_EQ_INT(topos_gguf_data_offset(g) % 32, 0);
  topos_gguf_close(g);
}

TEST(gguf_reject_short_file) {
  gb b = {.len = 0};
  gb_bytes(&b, "GGU", 3);
  EXPECT_REJECT(&b, TOPOS_ERR_TRUNCATED, "too short");
  b.len = 0;
  topos_gguf *g;
  CHECK_STATUS(topos_gguf_open_memory(NULL, 0, &g), TOPOS_ERR_TRUNCATED);
}

TEST(gguf_reject_bad_magic) {
  gb b;
  tt_valid_file(&b);
  memcpy(b.p, "GGML", 4);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_MAGIC, "invalid magic 'GGML'");
}

TEST(gguf_reject_versions) {
  gb b;
  tt_valid_file(&b);
  b.p[4] = 1;
  EXPECT_REJECT(&b, TOPOS_ERR_VERSION, "version 1 is no longer supported");
  b.p[4] = 0;
  EXPECT_REJECT(&b, TOPOS_ERR_VERSION, "version 0");
  b.p[4] = 4;
  EXPECT_REJECT(&b, TOPOS_ERR_VERSION, "version 4 is newer");
  b.p[4] = 2; /* v2 has the same layout as v3 for little-endian files */
  topos_gguf *g;
  EXPECT_OPENS(&b, &g);
  CHECK_EQ_INT(topos_gguf_version(g), 2);
  topos_gguf_close(g);
}

TEST(gguf_reject_big_endian) {
  gb b;
  tt_valid_file(&b);
  b.p[4] = 0; b.p[5] = 0; b.p[6] = 0; b.p[7] = 3; /* version 3 stored big-endian */
  EXPECT_REJECT(&b, TOPOS_ERR_ENDIAN, "big-endian");
  CHECK_ERROR_HAS("version 3");
}

TEST(gguf_reject_truncated_header) {
  gb b = {.len = 0};
  gb_bytes(&b, "GGUF", 4);
  gb_u32(&b, 3);
  gb_u64(&b, 0);
  EXPECT_REJECT(&b, TOPOS_ERR_TRUNCATED, "n_kv");
}

TEST(gguf_reject_huge_counts) {
  gb b = {.len = 0};
  gb_header(&b, 3, 1ull << 62, 0);
  EXPECT_REJECT(&b, TOPOS_ERR_FORMAT, "n_tensors = 4611686018427387904");
  b.len = 0;
  gb_header(&b, 3, 0, UINT64_MAX);
  EXPECT_REJECT(&b, TOPOS_ERR_FORMAT, "n_kv = 18446744073709551615");
  /* Within the cap but more than the bytes that follow could hold. */
  b.len = 0;
  gb_header(&b, 3, 1000, 1000);
  gb_zeros(&b, 100);
  EXPECT_REJECT(&b, TOPOS_ERR_TRUNCATED, "declares 1000 key/values and 1000 tensors");
}

TEST(gguf_reject_bad_keys) {
  gb b = {.len = 0};
  gb_header(&b, 3, 0, 1);
  gb_str(&b, "");
  gb_u32(&b, TOPOS_GGUF_U8);
  gb_u8(&b, 1);
  gb_zeros(&b, 8);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_STRING, "#0 has an empty key");

  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_u64(&b, 70000);
  gb_zeros(&b, 64);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_STRING, "key length 70000 exceeds 65535");

  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_u64(&b, 5000); /* a plausible length, but the file ends first */
  gb_zeros(&b, 64);
  EXPECT_REJECT(&b, TOPOS_ERR_TRUNCATED, "string of 5000 bytes");

  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_u64(&b, 3);
  gb_bytes(&b, "a\0b", 3);
  gb_u32(&b, TOPOS_GGUF_U8);
  gb_u8(&b, 1);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_STRING, "byte 0x00 at position 1");

  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_u64(&b, 3);
  gb_bytes(&b, "a\xff" "b", 3);
  gb_u32(&b, TOPOS_GGUF_U8);
  gb_u8(&b, 1);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_STRING, "byte 0xff at position 1 that is not valid UTF-8");

  /* Overlong encoding of '/' (C0 AF) is not valid UTF-8 either. */
  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_u64(&b, 2);
  gb_bytes(&b, "\xc0\xaf", 2);
  gb_u32(&b, TOPOS_GGUF_U8);
  gb_u8(&b, 1);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_STRING, "position 0");
}

TEST(gguf_reject_duplicate_key) {
  gb b = {.len = 0};
  gb_header(&b, 3, 0, 3);
  gb_kv_u32(&b, "a.b", 1);
  gb_kv_u32(&b, "a.c", 2);
  gb_kv_str(&b, "a.b", "x");
  EXPECT_REJECT(&b, TOPOS_ERR_DUPLICATE, "duplicate key 'a.b' (key/values #0 and #2)");
}

TEST(gguf_reject_bad_value_types) {
  gb b = {.len = 0};
  gb_header(&b, 3, 0, 1);
  gb_str(&b, "k.x");
  gb_u32(&b, 13);
  gb_u32(&b, 0);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_TYPE, "key 'k.x' has unknown value type 13");

  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_str(&b, "k.nested");
  gb_u32(&b, TOPOS_GGUF_ARRAY);
  gb_u32(&b, TOPOS_GGUF_ARRAY);
  gb_u64(&b, 1);
  gb_u32(&b, TOPOS_GGUF_U8);
  gb_u64(&b, 1);
  gb_u8(&b, 0);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_TYPE, "key 'k.nested': arrays of arrays");

  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_str(&b, "k.arr");
  gb_u32(&b, TOPOS_GGUF_ARRAY);
  gb_u32(&b, 99);
  gb_u64(&b, 0);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_TYPE, "key 'k.arr': unknown array element type 99");
}

TEST(gguf_reject_array_past_end) {
  gb b = {.len = 0};
  gb_header(&b, 3, 0, 1);
  gb_str(&b, "k.arr");
  gb_u32(&b, TOPOS_GGUF_ARRAY);
  gb_u32(&b, TOPOS_GGUF_U64);
  gb_u64(&b, 1ull << 61); /* count * 8 wraps to 0 in 64 bits: must not pass */
  gb_zeros(&b, 16);
  EXPECT_REJECT(&b, TOPOS_ERR_TRUNCATED, "array of 2305843009213693952 u64 elements");

  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_str(&b, "tokenizer.ggml.tokens");
  gb_u32(&b, TOPOS_GGUF_ARRAY);
  gb_u32(&b, TOPOS_GGUF_STRING);
  gb_u64(&b, UINT64_MAX);
  gb_zeros(&b, 16);
  EXPECT_REJECT(&b, TOPOS_ERR_TRUNCATED, "array of 18446744073709551615 strings");

  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_str(&b, "tokenizer.ggml.tokens");
  gb_u32(&b, TOPOS_GGUF_ARRAY);
  gb_u32(&b, TOPOS_GGUF_STRING);
  gb_u64(&b, 2);
  gb_str(&b, "ok");
  gb_u64(&b, UINT64_MAX); /* length + 1 would wrap: CVE-class gguf_fread_str */
  gb_zeros(&b, 8);
  EXPECT_REJECT(&b, TOPOS_ERR_TRUNCATED, "string element [1]");
}

TEST(gguf_reject_string_value_past_end) {
  gb b = {.len = 0};
  gb_header(&b, 3, 0, 1);
  gb_str(&b, "general.name");
  gb_u32(&b, TOPOS_GGUF_STRING);
  gb_u64(&b, 1000);
  gb_bytes(&b, "short", 5);
  EXPECT_REJECT(&b, TOPOS_ERR_TRUNCATED, "key 'general.name' value: string of 1000 bytes");

  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_str(&b, "k.u64");
  gb_u32(&b, TOPOS_GGUF_U64);
  gb_u32(&b, 7); /* 4 of 8 bytes */
  EXPECT_REJECT(&b, TOPOS_ERR_TRUNCATED, "key 'k.u64' value");
}

TEST(gguf_reject_bad_bools) {
  gb b = {.len = 0};
  gb_header(&b, 3, 0, 1);
  gb_str(&b, "tokenizer.ggml.add_bos_token");
  gb_u32(&b, TOPOS_GGUF_BOOL);
  gb_u8(&b, 2);
  EXPECT_REJECT(&b, TOPOS_ERR_FORMAT, "'tokenizer.ggml.add_bos_token': bool value 2 is not 0 or 1");

  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_str(&b, "k.flags");
  gb_u32(&b, TOPOS_GGUF_ARRAY);
  gb_u32(&b, TOPOS_GGUF_BOOL);
  gb_u64(&b, 3);
  gb_u8(&b, 1);
  gb_u8(&b, 7);
  gb_u8(&b, 0);
  EXPECT_REJECT(&b, TOPOS_ERR_FORMAT, "bool element [1] is 7");
}

TEST(gguf_reject_bad_alignment) {
  gb b = {.len = 0};
  gb_header(&b, 3, 0, 1);
  gb_str(&b, "general.alignment");
  gb_u32(&b, TOPOS_GGUF_U64);
  gb_u64(&b, 64);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_TYPE, "general.alignment' has type u64, must be u32");

  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_kv_u32(&b, "general.alignment", 0);
  EXPECT_REJECT(&b, TOPOS_ERR_ALIGNMENT, "general.alignment = 0");

  b.len = 0;
  gb_header(&b, 3, 0, 1);
  gb_kv_u32(&b, "general.alignment", 24);
  EXPECT_REJECT(&b, TOPOS_ERR_ALIGNMENT, "general.alignment = 24 is not a non-zero power of two");
}

/* One tensor info with the given fields after a header; data area of `data` bytes. */
static void tt_one_tensor(gb *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                          uint32_t type, uint64_t offset, size_t data) {
  b->len = 0;
  gb_header(b, 3, 1, 0);
  gb_tensor(b, name, n_dims, ne, type, offset);
  gb_pad(b, 32);
  gb_zeros(b, data);
}

TEST(gguf_reject_bad_tensor_names) {
  gb b;
  uint64_t ne[1] = {8};
  tt_one_tensor(&b, "", 1, ne, 0, 0, 32);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_STRING, "tensor #0 has an empty name");
  char long_name[65];
  memset(long_name, 'x', 64);
  long_name[64] = '\0';
  tt_one_tensor(&b, long_name, 1, ne, 0, 0, 32);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_STRING, "name length 64 exceeds 63");
  long_name[63] = '\0'; /* 63 bytes: the longest allowed */
  tt_one_tensor(&b, long_name, 1, ne, 0, 0, 32);
  topos_gguf *g;
  EXPECT_OPENS(&b, &g);
  topos_gguf_close(g);
  tt_one_tensor(&b, "bad\xfe", 1, ne, 0, 0, 32);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_STRING, "tensor #0 'bad\\xfe' has byte 0xfe");
}

TEST(gguf_reject_duplicate_tensor_name) {
  gb b = {.len = 0};
  uint64_t ne[1] = {8};
  gb_header(&b, 3, 2, 0);
  gb_tensor(&b, "blk.0.attn_q.weight", 1, ne, 0, 0);
  gb_tensor(&b, "blk.0.attn_q.weight", 1, ne, 0, 32);
  gb_pad(&b, 32);
  gb_zeros(&b, 64);
  EXPECT_REJECT(&b, TOPOS_ERR_DUPLICATE,
                "duplicate tensor name 'blk.0.attn_q.weight' (tensors #0 and #1)");
}

TEST(gguf_reject_bad_dims) {
  gb b;
  uint64_t ne[5] = {8, 1, 1, 1, 1};
  tt_one_tensor(&b, "t", 0, ne, 0, 0, 32);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_DIMS, "tensor 't' has n_dims = 0, outside 1..4");
  tt_one_tensor(&b, "t", 5, ne, 0, 0, 32);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_DIMS, "n_dims = 5");
  uint64_t zero[2] = {8, 0};
  tt_one_tensor(&b, "t", 2, zero, 0, 0, 32);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_DIMS, "tensor 't' has ne[1] = 0");
  uint64_t neg[2] = {8, (uint64_t)-3};
  tt_one_tensor(&b, "t", 2, neg, 0, 0, 32);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_DIMS, "ne[1] = -3");
}

TEST(gguf_reject_size_overflow) {
  gb b;
  /* Element count overflows int64 (CVE-2026-33298 class). */
  uint64_t big[4] = {1ull << 32, 1ull << 32, 2, 1};
  tt_one_tensor(&b, "t", 3, big, 0, 0, 32);
  EXPECT_REJECT(&b, TOPOS_ERR_OVERFLOW, "tensor 't' element count overflows int64 at ne[1]");
  /* Element count fits but the byte size (x8 for f64) does not. */
  uint64_t fits[2] = {1ull << 31, 1ull << 31};
  tt_one_tensor(&b, "t", 2, fits, 28, 0, 32);
  EXPECT_REJECT(&b, TOPOS_ERR_OVERFLOW, "overflow the size type");
}

TEST(gguf_reject_unknown_tensor_types) {
  gb b;
  uint64_t ne[1] = {32};
  tt_one_tensor(&b, "t", 1, ne, 4, 0, 64); /* removed Q4_2 */
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_TYPE, "tensor 't' has unknown ggml type id 4");
  tt_one_tensor(&b, "t", 1, ne, 43, 0, 64);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_TYPE, "id 43");
  tt_one_tensor(&b, "t", 1, ne, 0xFFFFFFFFu, 0, 64);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_TYPE, "id 4294967295");
}

TEST(gguf_reject_partial_blocks) {
  gb b;
  uint64_t ne[2] = {31, 2};
  tt_one_tensor(&b, "q", 2, ne, 8 /* q8_0 */, 0, 128);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_DIMS,
                "tensor 'q': row of ne[0] = 31 elements is not a whole number of 32-element q8_0");
}

TEST(gguf_reject_misaligned_offset) {
  gb b;
  uint64_t ne[1] = {8};
  tt_one_tensor(&b, "t", 1, ne, 0, 4, 64);
  EXPECT_REJECT(&b, TOPOS_ERR_ALIGNMENT, "tensor 't' offset 4 is not a multiple of the alignment 32");
}

TEST(gguf_reject_offset_outside_data) {
  gb b;
  uint64_t ne[1] = {8};
  tt_one_tensor(&b, "t", 1, ne, 0, 1ull << 40, 64);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_OFFSET, "tensor 't' offset 1099511627776 lies beyond");
  /* Starts inside, ends past the end of the file: a truncated download. */
  tt_one_tensor(&b, "t", 1, ne, 0, 32, 48);
  EXPECT_REJECT(&b, TOPOS_ERR_TRUNCATED, "tensor 't' data [32, +32) is not within the file");
  /* offset + bytes would wrap: still rejected. */
  tt_one_tensor(&b, "t", 1, ne, 0, UINT64_MAX - 31, 64);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_OFFSET, "lies beyond");
}

TEST(gguf_reject_data_section_missing) {
  gb b = {.len = 0};
  uint64_t ne[1] = {8};
  gb_header(&b, 3, 1, 0);
  gb_tensor(&b, "t", 1, ne, 0, 0);
  /* No padding, no data: the data section would start past the end. */
  EXPECT_REJECT(&b, TOPOS_ERR_TRUNCATED, "tensor data would start at offset");
}

TEST(gguf_reject_overlapping_tensors) {
  gb b = {.len = 0};
  uint64_t ne[1] = {16}; /* 64 bytes each */
  gb_header(&b, 3, 2, 0);
  gb_tensor(&b, "a", 1, ne, 0, 0);
  gb_tensor(&b, "b", 1, ne, 0, 32);
  gb_pad(&b, 32);
  gb_zeros(&b, 128);
  EXPECT_REJECT(&b, TOPOS_ERR_BAD_OFFSET, "tensors 'a' [0, 64) and 'b' [32, 96) overlap");
}

TEST(gguf_accepts_any_order_without_overlap) {
  gb b = {.len = 0};
  uint64_t ne[1] = {8}; /* 32 bytes */
  gb_header(&b, 3, 2, 0);
  gb_tensor(&b, "second", 1, ne, 0, 32);
  gb_tensor(&b, "first", 1, ne, 0, 0);
  gb_pad(&b, 32);
  for (int i = 0; i < 16; ++i) {
    float f = (float)i;
    gb_bytes(&b, &f, 4);
  }
  topos_gguf *g;
  EXPECT_OPENS(&b, &g);
  const void *data;
  size_t bytes;
  CHECK_OK(topos_gguf_tensor_bytes(g, 0, &data, &bytes));
  float f;
  memcpy(&f, data, 4);
  CHECK_BITS_F32(f, 8.0f);
  topos_gguf_close(g);
}

TEST(gguf_reject_truncated_tensor_info) {
  gb b = {.len = 0};
  gb_header(&b, 3, 1, 0);
  gb_str(&b, "t");
  gb_u32(&b, 4);
  gb_u64(&b, 8);
  gb_u64(&b, 8);
  gb_u64(&b, 8); /* ne[3], type and offset missing; passes the header's size bound */
  EXPECT_REJECT(&b, TOPOS_ERR_TRUNCATED, "tensor 't' info");
}

TEST(gguf_custom_alignment_is_honoured) {
  gb b = {.len = 0};
  uint64_t ne[1] = {8};
  gb_header(&b, 3, 2, 1);
  gb_kv_u32(&b, "general.alignment", 64);
  gb_tensor(&b, "a", 1, ne, 0, 0);
  gb_tensor(&b, "b", 1, ne, 0, 64);
  gb_pad(&b, 64);
  gb_zeros(&b, 128);
  topos_gguf *g;
  EXPECT_OPENS(&b, &g);
  CHECK_EQ_INT(topos_gguf_alignment(g), 64);
  CHECK_EQ_INT(topos_gguf_data_offset(g) % 64, 0);
  topos_gguf_close(g);
  /* With alignment 64, offset 32 is misaligned. */
  b.len = 0;
  gb_header(&b, 3, 1, 1);
  gb_kv_u32(&b, "general.alignment", 64);
  gb_tensor(&b, "a", 1, ne, 0, 32);
  gb_pad(&b, 64);
  gb_zeros(&b, 128);
  EXPECT_REJECT(&b, TOPOS_ERR_ALIGNMENT, "alignment 64");
}

TEST(gguf_unknown_dtype_lists_but_refuses_tensor) {
  gb b;
  uint64_t ne[2] = {256, 2};
  tt_one_tensor(&b, "blk.0.ffn_down.weight", 2, ne, 16 /* iq2_xxs: 66 bytes/256 */, 0, 132);
  topos_gguf *g;
  EXPECT_OPENS(&b, &g);
  topos_gguf_tensor_info info;
  CHECK_OK(topos_gguf_tensor_at(g, 0, &info));
  CHECK(strcmp(info.type_name, "iq2_xxs") == 0);
  CHECK_EQ_INT(info.has_dtype, 0);
  CHECK_EQ_INT(info.bytes, 132);
  topos_tensor *t = (topos_tensor *)1;
  CHECK_STATUS(topos_gguf_tensor(g, "blk.0.ffn_down.weight", &t), TOPOS_ERR_DTYPE);
  CHECK_ERROR_HAS("iq2_xxs");
  CHECK(t == NULL);
  topos_gguf_close(g);
}

TEST(gguf_open_rejects_non_files) {
  topos_gguf *g = (topos_gguf *)1;
  CHECK_STATUS(topos_gguf_open(tt_tmpdir(), &g), TOPOS_ERR_IO);
  CHECK_ERROR_HAS("is not a regular file");
  CHECK(g == NULL);
  char path[600];
  snprintf(path, sizeof path, "%s/empty.gguf", tt_tmpdir());
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  fclose(f);
  CHECK_STATUS(topos_gguf_open(path, &g), TOPOS_ERR_TRUNCATED);
  CHECK_ERROR_HAS("is empty");
  snprintf(path, sizeof path, "%s/absent.gguf", tt_tmpdir());
  CHECK_STATUS(topos_gguf_open(path, &g), TOPOS_ERR_IO);
  CHECK_ERROR_HAS("absent.gguf");
}
