/* Writer -> reader round trips (every key/value type, every tensor type incl.
 * raw quantized blocks), typed getters, zero-copy tensors over the mapping. */
#include <stdlib.h>

#include "base/error.h"
#include "test.h"

static const uint32_t tt_nan_bits = 0x7fc00123u; /* a NaN payload must survive */

/* Deterministic filler bytes. */
static void tt_fill(void *p, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    ((uint8_t *)p)[i] = (uint8_t)(x >> 56);
  }
}

/* Adds one key of every scalar type and arrays of every element type. */
static topos_status tt_add_all_kv(topos_gguf_writer *w) {
  float nan_f;
  memcpy(&nan_f, &tt_nan_bits, 4);
  TP_TRY(topos_gguf_writer_add_u8(w, "t.u8", 200));
  TP_TRY(topos_gguf_writer_add_i8(w, "t.i8", -5));
  TP_TRY(topos_gguf_writer_add_u16(w, "t.u16", 60000));
  TP_TRY(topos_gguf_writer_add_i16(w, "t.i16", -30000));
  TP_TRY(topos_gguf_writer_add_u32(w, "t.u32", 4000000000u));
  TP_TRY(topos_gguf_writer_add_i32(w, "t.i32", -2000000000));
  TP_TRY(topos_gguf_writer_add_u64(w, "t.u64", (1ull << 63) + 5));
  TP_TRY(topos_gguf_writer_add_i64(w, "t.i64", -(1ll << 62)));
  TP_TRY(topos_gguf_writer_add_f32(w, "t.f32", 1.5f));
  TP_TRY(topos_gguf_writer_add_f32(w, "t.f32nan", nan_f));
  TP_TRY(topos_gguf_writer_add_f64(w, "t.f64", 3.141592653589793));
  TP_TRY(topos_gguf_writer_add_bool(w, "t.bool", 1));
  TP_TRY(topos_gguf_writer_add_string(w, "t.str", "hello \xc3\xa9"));
  TP_TRY(topos_gguf_writer_add_string_n(w, "t.strnul", "a\0b", 3));
  TP_TRY(topos_gguf_writer_add_string(w, "t.empty", ""));
  uint8_t u8s[3] = {1, 2, 255};
  int8_t i8s[3] = {-1, 0, 127};
  uint16_t u16s[3] = {1, 2, 65535};
  int16_t i16s[3] = {-32768, 0, 7};
  uint32_t u32s[3] = {1, 0, 4294967295u};
  int32_t i32s[3] = {-1, 6, 3};
  float f32s[3] = {0.5f, -0.0f, nan_f};
  uint8_t bools[3] = {1, 0, 1};
  uint64_t u64s[3] = {UINT64_MAX, 0, 9};
  int64_t i64s[3] = {INT64_MIN, -1, INT64_MAX};
  double f64s[3] = {1e300, -2.5, 0.1};
  TP_TRY(topos_gguf_writer_add_array(w, "a.u8", TOPOS_GGUF_U8, u8s, 3));
  TP_TRY(topos_gguf_writer_add_array(w, "a.i8", TOPOS_GGUF_I8, i8s, 3));
  TP_TRY(topos_gguf_writer_add_array(w, "a.u16", TOPOS_GGUF_U16, u16s, 3));
  TP_TRY(topos_gguf_writer_add_array(w, "a.i16", TOPOS_GGUF_I16, i16s, 3));
  TP_TRY(topos_gguf_writer_add_array(w, "a.u32", TOPOS_GGUF_U32, u32s, 3));
  TP_TRY(topos_gguf_writer_add_array(w, "a.i32", TOPOS_GGUF_I32, i32s, 3));
  TP_TRY(topos_gguf_writer_add_array(w, "a.f32", TOPOS_GGUF_F32, f32s, 3));
  TP_TRY(topos_gguf_writer_add_array(w, "a.bool", TOPOS_GGUF_BOOL, bools, 3));
  TP_TRY(topos_gguf_writer_add_array(w, "a.u64", TOPOS_GGUF_U64, u64s, 3));
  TP_TRY(topos_gguf_writer_add_array(w, "a.i64", TOPOS_GGUF_I64, i64s, 3));
  TP_TRY(topos_gguf_writer_add_array(w, "a.f64", TOPOS_GGUF_F64, f64s, 3));
  TP_TRY(topos_gguf_writer_add_array(w, "a.none", TOPOS_GGUF_I32, NULL, 0));
  const char *strs[4] = {"<s>", "", "\xe2\x96\x81the", "x\0y"};
  size_t lens[4] = {3, 0, 6, 3};
  TP_TRY(topos_gguf_writer_add_string_array(w, "a.str", strs, lens, 4));
  return TOPOS_OK;
}

/* The ggml ids a raw-bytes tensor is written for: every known type. */
static const uint32_t tt_raw_types[] = {0,  1,  2,  3,  6,  7,  8,  9,  10, 11, 12, 13,
                                        14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
                                        26, 27, 28, 29, 30, 34, 35, 39, 40, 41, 42};
#define TT_N_RAW (sizeof tt_raw_types / sizeof tt_raw_types[0])

typedef struct tt_model {
  uint8_t *raw[TT_N_RAW];
  size_t raw_bytes[TT_N_RAW];
  topos_tensor *plain[8];
} tt_model;

static void tt_model_free(tt_model *m) {
  for (size_t i = 0; i < TT_N_RAW; ++i) free(m->raw[i]);
  for (int i = 0; i < 8; ++i) topos_tensor_release(m->plain[i]);
}

/* Two rows of 256 elements of every type as raw blocks, plus topos tensors of
 * the plain dtypes with ranks 1..4. */
static topos_status tt_add_all_tensors(topos_gguf_writer *w, tt_model *m) {
  memset(m, 0, sizeof *m);
  for (size_t i = 0; i < TT_N_RAW; ++i) {
    topos_ggml_type_info info;
    TP_TRY(topos_ggml_type_info_get(tt_raw_types[i], &info));
    int64_t ne[2] = {256, 2};
    m->raw_bytes[i] = (size_t)(512 / info.block_size * info.block_bytes);
    m->raw[i] = malloc(m->raw_bytes[i]);
    if (!m->raw[i]) return TOPOS_ERR_OUT_OF_MEMORY;
    tt_fill(m->raw[i], m->raw_bytes[i], 100 + i);
    char name[32];
    snprintf(name, sizeof name, "raw.%s", info.name);
    TP_TRY(topos_gguf_writer_add_tensor_raw(w, name, tt_raw_types[i], 2, ne, m->raw[i],
                                              m->raw_bytes[i]));
  }
  const topos_dtype dts[8] = {TOPOS_F32, TOPOS_F16, TOPOS_BF16, TOPOS_F64,
                              TOPOS_I32, TOPOS_I8,  TOPOS_I16,  TOPOS_I64};
  const int64_t shapes[4][4] = {{5}, {3, 7}, {2, 3, 4}, {2, 1, 3, 2}};
  for (int i = 0; i < 8; ++i) {
    int rank = i % 4 + 1;
    int64_t volume = 1;
    for (int d = 0; d < rank; ++d) volume *= shapes[rank - 1][d];
    size_t bytes;
    TP_TRY(topos_dtype_bytes(dts[i], volume, &bytes));
    uint8_t buf[512];
    tt_fill(buf, bytes, 7 + (uint64_t)i);
    TP_TRY(topos_tensor_from_data(dts[i], rank, shapes[rank - 1], buf, bytes, &m->plain[i]));
    char name[32];
    snprintf(name, sizeof name, "plain.%s", topos_dtype_name(dts[i]));
    TP_TRY(topos_gguf_writer_add_tensor(w, name, m->plain[i]));
  }
  return TOPOS_OK;
}

static void tt_check_kv(topos_gguf *g) {
  uint32_t u32;
  int32_t i32;
  uint64_t u64;
  int64_t i64;
  float f32;
  double f64;
  int b;
  const char *s;
  size_t len;
  CHECK_OK(topos_gguf_get_u32(g, "t.u8", &u32));
  CHECK_EQ_INT(u32, 200);
  CHECK_OK(topos_gguf_get_i32(g, "t.i8", &i32));
  CHECK_EQ_INT(i32, -5);
  CHECK_OK(topos_gguf_get_u32(g, "t.u16", &u32));
  CHECK_EQ_INT(u32, 60000);
  CHECK_OK(topos_gguf_get_i64(g, "t.i16", &i64));
  CHECK_EQ_INT(i64, -30000);
  CHECK_OK(topos_gguf_get_u32(g, "t.u32", &u32));
  CHECK(u32 == 4000000000u);
  CHECK_OK(topos_gguf_get_i32(g, "t.i32", &i32));
  CHECK_EQ_INT(i32, -2000000000);
  CHECK_OK(topos_gguf_get_u64(g, "t.u64", &u64));
  CHECK(u64 == (1ull << 63) + 5);
  CHECK_OK(topos_gguf_get_i64(g, "t.i64", &i64));
  CHECK(i64 == -(1ll << 62));
  CHECK_OK(topos_gguf_get_f32(g, "t.f32", &f32));
  CHECK_BITS_F32(f32, 1.5f);
  CHECK_OK(topos_gguf_get_f32(g, "t.f32nan", &f32));
  CHECK(tt_f32_bits(f32) == tt_nan_bits);
  CHECK_OK(topos_gguf_get_f64(g, "t.f64", &f64));
  CHECK_BITS_F64(f64, 3.141592653589793);
  CHECK_OK(topos_gguf_get_bool(g, "t.bool", &b));
  CHECK_EQ_INT(b, 1);
  CHECK_OK(topos_gguf_get_string(g, "t.str", &s, &len));
  CHECK(len == 8 && strcmp(s, "hello \xc3\xa9") == 0);
  CHECK_OK(topos_gguf_get_string(g, "t.strnul", &s, &len));
  CHECK(len == 3 && memcmp(s, "a\0b", 4) == 0);
  CHECK_OK(topos_gguf_get_string(g, "t.empty", &s, &len));
  CHECK(len == 0 && s[0] == '\0');

  /* Arrays: element types, counts and every element. */
  topos_gguf_array a;
  int64_t iv;
  uint64_t uv;
  double dv;
  CHECK_OK(topos_gguf_get_array(g, "a.u8", &a));
  CHECK(a.element_type == TOPOS_GGUF_U8 && a.count == 3);
  CHECK_OK(topos_gguf_array_int(g, a.kv_index, 2, &iv));
  CHECK_EQ_INT(iv, 255);
  CHECK_OK(topos_gguf_get_array(g, "a.i8", &a));
  CHECK_OK(topos_gguf_array_int(g, a.kv_index, 0, &iv));
  CHECK_EQ_INT(iv, -1);
  CHECK_OK(topos_gguf_get_array(g, "a.u16", &a));
  CHECK_OK(topos_gguf_array_uint(g, a.kv_index, 2, &uv));
  CHECK_EQ_INT(uv, 65535);
  CHECK_OK(topos_gguf_get_array(g, "a.i16", &a));
  CHECK_OK(topos_gguf_array_int(g, a.kv_index, 0, &iv));
  CHECK_EQ_INT(iv, -32768);
  CHECK_OK(topos_gguf_get_array(g, "a.u32", &a));
  CHECK_OK(topos_gguf_array_uint(g, a.kv_index, 2, &uv));
  CHECK(uv == 4294967295u);
  CHECK_OK(topos_gguf_get_array(g, "a.i32", &a));
  CHECK_OK(topos_gguf_array_int(g, a.kv_index, 1, &iv));
  CHECK_EQ_INT(iv, 6);
  CHECK_OK(topos_gguf_get_array(g, "a.f32", &a));
  CHECK(a.element_type == TOPOS_GGUF_F32);
  CHECK_OK(topos_gguf_array_float(g, a.kv_index, 1, &dv));
  CHECK(dv == 0.0 && signbit(dv));
  uint32_t raw;
  memcpy(&raw, (const uint8_t *)a.data + 8, 4); /* little-endian host */
  CHECK(raw == tt_nan_bits);
  CHECK_OK(topos_gguf_get_array(g, "a.bool", &a));
  CHECK(a.element_type == TOPOS_GGUF_BOOL);
  CHECK_OK(topos_gguf_array_int(g, a.kv_index, 1, &iv));
  CHECK_EQ_INT(iv, 0);
  CHECK_OK(topos_gguf_get_array(g, "a.u64", &a));
  CHECK_OK(topos_gguf_array_uint(g, a.kv_index, 0, &uv));
  CHECK(uv == UINT64_MAX);
  CHECK_STATUS(topos_gguf_array_int(g, a.kv_index, 0, &iv), TOPOS_ERR_RANGE);
  CHECK_OK(topos_gguf_get_array(g, "a.i64", &a));
  CHECK_OK(topos_gguf_array_int(g, a.kv_index, 0, &iv));
  CHECK(iv == INT64_MIN);
  CHECK_STATUS(topos_gguf_array_uint(g, a.kv_index, 1, &uv), TOPOS_ERR_RANGE);
  CHECK_OK(topos_gguf_get_array(g, "a.f64", &a));
  CHECK_OK(topos_gguf_array_float(g, a.kv_index, 2, &dv));
  CHECK_BITS_F64(dv, 0.1);
  CHECK_STATUS(topos_gguf_array_float(g, a.kv_index, 3, &dv), TOPOS_ERR_RANGE);
  CHECK_OK(topos_gguf_get_array(g, "a.none", &a));
  CHECK(a.count == 0 && a.element_type == TOPOS_GGUF_I32);
  CHECK_OK(topos_gguf_get_array(g, "a.str", &a));
  CHECK(a.element_type == TOPOS_GGUF_STRING && a.count == 4 && a.data == NULL);
  CHECK_OK(topos_gguf_array_string(g, a.kv_index, 0, &s, &len));
  CHECK(len == 3 && memcmp(s, "<s>", 3) == 0);
  CHECK_OK(topos_gguf_array_string(g, a.kv_index, 1, &s, &len));
  CHECK(len == 0);
  CHECK_OK(topos_gguf_array_string(g, a.kv_index, 2, &s, &len));
  CHECK(len == 6 && memcmp(s, "\xe2\x96\x81the", 6) == 0);
  CHECK_OK(topos_gguf_array_string(g, a.kv_index, 3, &s, &len));
  CHECK(len == 3 && memcmp(s, "x\0y", 3) == 0);
  CHECK_STATUS(topos_gguf_array_int(g, a.kv_index, 0, &iv), TOPOS_ERR_BAD_TYPE);
}

static void tt_check_tensors(topos_gguf *g, const tt_model *m) {
  CHECK_EQ_INT(topos_gguf_tensor_count(g), TT_N_RAW + 8);
  for (size_t i = 0; i < TT_N_RAW; ++i) {
    topos_gguf_tensor_info info;
    CHECK_OK(topos_gguf_tensor_at(g, (int64_t)i, &info));
    CHECK(info.ggml_type == tt_raw_types[i]);
    CHECK(info.n_dims == 2 && info.ne[0] == 256 && info.ne[1] == 2);
    CHECK(info.shape[0] == 2 && info.shape[1] == 256);
    CHECK(info.bytes == m->raw_bytes[i]);
    CHECK(info.offset % topos_gguf_alignment(g) == 0);
    const void *data;
    size_t bytes;
    CHECK_OK(topos_gguf_tensor_bytes(g, (int64_t)i, &data, &bytes));
    CHECK(bytes == m->raw_bytes[i] && memcmp(data, m->raw[i], bytes) == 0);
    topos_tensor *t = NULL;
    topos_status st = topos_gguf_tensor_by_index(g, (int64_t)i, &t);
    CHECK(st == (info.has_dtype ? TOPOS_OK : TOPOS_ERR_DTYPE));
    if (t) {
      CHECK(topos_tensor_data(t) == data); /* zero copies */
      CHECK(topos_tensor_dtype(t) == info.dtype);
      topos_tensor_release(t);
    }
  }
  for (int i = 0; i < 8; ++i) {
    char name[32];
    snprintf(name, sizeof name, "plain.%s", topos_dtype_name(topos_tensor_dtype(m->plain[i])));
    topos_tensor *t;
    CHECK_OK(topos_gguf_tensor(g, name, &t));
    CHECK_TENSOR_BITS(t, m->plain[i]);
    CHECK(topos_tensor_storage_kind(t) == TOPOS_STORAGE_MAPPED);
    topos_tensor_release(t);
  }
}

TEST(gguf_roundtrip_memory_all_types) {
  topos_gguf_writer *w;
  CHECK_OK(topos_gguf_writer_create(&w));
  tt_model m;
  topos_status st = tt_add_all_kv(w);
  if (st == TOPOS_OK) st = tt_add_all_tensors(w, &m);
  void *bytes = NULL;
  size_t size = 0;
  if (st == TOPOS_OK) st = topos_gguf_writer_write_memory(w, &bytes, &size);
  topos_gguf *g = NULL;
  if (st == TOPOS_OK) st = topos_gguf_open_memory(bytes, size, &g);
  if (st == TOPOS_OK) {
    tt_check_kv(g);
    tt_check_tensors(g, &m);
    CHECK_EQ_INT(topos_gguf_version(g), 3);
    CHECK_EQ_INT(topos_gguf_kv_count(g), 28);
    /* Keys come back in insertion order. */
    topos_gguf_kv kv;
    CHECK_OK(topos_gguf_kv_at(g, 0, &kv));
    CHECK(strcmp(kv.key, "t.u8") == 0 && kv.type == TOPOS_GGUF_U8 && kv.count == 1);
    CHECK_OK(topos_gguf_kv_at(g, 27, &kv));
    CHECK(strcmp(kv.key, "a.str") == 0 && kv.type == TOPOS_GGUF_ARRAY);
    CHECK(kv.element_type == TOPOS_GGUF_STRING && kv.count == 4);
    CHECK_STATUS(topos_gguf_kv_at(g, 28, &kv), TOPOS_ERR_RANGE);
  }
  topos_gguf_close(g);
  free(bytes);
  tt_model_free(&m);
  topos_gguf_writer_destroy(w);
  CHECK_OK(st);
}

TEST(gguf_roundtrip_file_alignment_and_copy) {
  /* Write with alignment 64 to a file, reopen via mmap, copy every key into a
   * second writer, and check that the second file is byte-identical. */
  char path[512], path2[512];
  snprintf(path, sizeof path, "%s/rt.gguf", tt_tmpdir());
  snprintf(path2, sizeof path2, "%s/rt2.gguf", tt_tmpdir());
  topos_gguf_writer *w, *w2;
  CHECK_OK(topos_gguf_writer_create(&w));
  CHECK_OK(topos_gguf_writer_set_alignment(w, 64));
  tt_model m;
  topos_status st = tt_add_all_kv(w);
  if (st == TOPOS_OK) st = tt_add_all_tensors(w, &m);
  if (st == TOPOS_OK) st = topos_gguf_writer_write(w, path);
  topos_gguf *g = NULL;
  if (st == TOPOS_OK) st = topos_gguf_open(path, &g);
  if (st == TOPOS_OK) {
    CHECK_EQ_INT(topos_gguf_alignment(g), 64);
    CHECK_EQ_INT(topos_gguf_data_offset(g) % 64, 0);
    tt_check_kv(g);
    tt_check_tensors(g, &m);
    CHECK_OK(topos_gguf_writer_create(&w2));
    for (int64_t i = 0; i < topos_gguf_kv_count(g) && st == TOPOS_OK; ++i)
      st = topos_gguf_writer_copy_kv(w2, g, i);
    for (int64_t i = 0; i < topos_gguf_tensor_count(g) && st == TOPOS_OK; ++i) {
      topos_gguf_tensor_info info;
      const void *data;
      size_t n;
      st = topos_gguf_tensor_at(g, i, &info);
      if (st == TOPOS_OK) st = topos_gguf_tensor_bytes(g, i, &data, &n);
      if (st == TOPOS_OK)
        st = topos_gguf_writer_add_tensor_raw(w2, info.name, info.ggml_type, info.n_dims, info.ne,
                                              data, n);
    }
    if (st == TOPOS_OK) st = topos_gguf_writer_write(w2, path2);
    topos_gguf_writer_destroy(w2);
    if (st == TOPOS_OK) {
      void *a, *b;
      size_t na, nb;
      FILE *f = fopen(path, "rb");
      fseek(f, 0, SEEK_END);
      na = (size_t)ftell(f);
      fclose(f);
      CHECK_OK(topos_gguf_writer_write_memory(w, &a, &na));
      f = fopen(path2, "rb");
      fseek(f, 0, SEEK_END);
      nb = (size_t)ftell(f);
      rewind(f);
      b = malloc(nb);
      CHECK(fread(b, 1, nb, f) == nb);
      fclose(f);
      CHECK_EQ_INT(na, nb);
      int same = memcmp(a, b, na) == 0;
      free(a);
      free(b);
      CHECK(same);
    }
  }
  topos_gguf_close(g);
  tt_model_free(&m);
  topos_gguf_writer_destroy(w);
  CHECK_OK(st);
}

TEST(gguf_tensor_outlives_reader) {
  char path[512];
  snprintf(path, sizeof path, "%s/outlive.gguf", tt_tmpdir());
  float values[6] = {1, -2, 3.5f, 4, 5, 6.25f};
  int64_t shape[2] = {2, 3};
  topos_tensor *src;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 2, shape, values, &src));
  topos_gguf_writer *w;
  CHECK_OK(topos_gguf_writer_create(&w));
  topos_status st = topos_gguf_writer_add_tensor(w, "x", src);
  topos_tensor_release(src); /* the writer holds its own reference */
  if (st == TOPOS_OK) st = topos_gguf_writer_write(w, path);
  topos_gguf_writer_destroy(w);
  CHECK_OK(st);
  topos_gguf *g;
  CHECK_OK(topos_gguf_open(path, &g));
  topos_tensor *t, *t2;
  st = topos_gguf_tensor(g, "x", &t);
  if (st == TOPOS_OK) st = topos_gguf_tensor(g, "x", &t2);
  topos_gguf_close(g); /* the mapping must stay while t and t2 live */
  CHECK_OK(st);
  CHECK(topos_tensor_rank(t) == 2 && topos_tensor_shape(t)[0] == 2 && topos_tensor_shape(t)[1] == 3);
  CHECK(topos_tensor_data_mut(t) == NULL); /* mapped storage is read-only */
  topos_tensor_release(t);
  float back[6];
  st = topos_tensor_read_f32(t2, back, 6);
  topos_tensor_release(t2);
  CHECK_OK(st);
  for (int i = 0; i < 6; ++i) CHECK_BITS_F32(back[i], values[i]);
}

TEST(gguf_getters_type_checks) {
  topos_gguf_writer *w;
  CHECK_OK(topos_gguf_writer_create(&w));
  topos_status st = topos_gguf_writer_add_u64(w, "llama.block_count", 22);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_u64(w, "big", 1ull << 40);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_i32(w, "neg", -1);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_string(w, "general.name", "tiny");
  if (st == TOPOS_OK) st = topos_gguf_writer_add_f64(w, "exact", 0.5);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_f64(w, "inexact", 0.1);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_f32(w, "eps", 1e-5f);
  void *bytes = NULL;
  size_t size;
  if (st == TOPOS_OK) st = topos_gguf_writer_write_memory(w, &bytes, &size);
  topos_gguf_writer_destroy(w);
  CHECK_OK(st);
  topos_gguf *g;
  st = topos_gguf_open_memory(bytes, size, &g);
  if (st != TOPOS_OK) free(bytes);
  CHECK_OK(st);
  uint32_t u32;
  int32_t i32;
  float f;
  double d;
  int b;
  const char *s;
  CHECK_OK(topos_gguf_get_u32(g, "llama.block_count", &u32)); /* u64 in the file */
  CHECK_EQ_INT(u32, 22);
  CHECK_STATUS(topos_gguf_get_u32(g, "big", &u32), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("key 'big' = 1099511627776 (u64) does not fit u32");
  CHECK_STATUS(topos_gguf_get_u32(g, "neg", &u32), TOPOS_ERR_RANGE);
  CHECK_ERROR_HAS("= -1 (i32)");
  CHECK_OK(topos_gguf_get_i32(g, "neg", &i32));
  CHECK_EQ_INT(i32, -1);
  CHECK_STATUS(topos_gguf_get_u32(g, "general.name", &u32), TOPOS_ERR_BAD_TYPE);
  CHECK_ERROR_HAS("key 'general.name' has type string, requested u32");
  CHECK_STATUS(topos_gguf_get_string(g, "llama.block_count", &s, NULL), TOPOS_ERR_BAD_TYPE);
  CHECK_ERROR_HAS("has type u64, requested string");
  CHECK_STATUS(topos_gguf_get_bool(g, "neg", &b), TOPOS_ERR_BAD_TYPE);
  CHECK_STATUS(topos_gguf_get_f32(g, "neg", &f), TOPOS_ERR_BAD_TYPE);
  CHECK_OK(topos_gguf_get_f32(g, "exact", &f));
  CHECK_BITS_F32(f, 0.5f);
  CHECK_STATUS(topos_gguf_get_f32(g, "inexact", &f), TOPOS_ERR_RANGE);
  CHECK_OK(topos_gguf_get_f64(g, "eps", &d));
  CHECK_BITS_F64(d, (double)1e-5f);
  CHECK_STATUS(topos_gguf_get_u32(g, "llama.missing", &u32), TOPOS_ERR_NOT_FOUND);
  CHECK_ERROR_HAS("key 'llama.missing' not found");
  topos_gguf_array a;
  CHECK_STATUS(topos_gguf_get_array(g, "general.name", &a), TOPOS_ERR_BAD_TYPE);
  CHECK_STATUS(topos_gguf_find_tensor(g, "nope", NULL), TOPOS_ERR_NOT_FOUND);
  topos_gguf_close(g);
  free(bytes);
}

TEST(gguf_writer_rejects_bad_input) {
  topos_gguf_writer *w;
  CHECK_OK(topos_gguf_writer_create(&w));
  topos_status s1 = topos_gguf_writer_add_u32(w, "k", 1);
  topos_status s2 = topos_gguf_writer_add_string(w, "k", "again");
  topos_status s3 = topos_gguf_writer_add_u32(w, "", 1);
  topos_status s4 = topos_gguf_writer_add_u64(w, "general.alignment", 64);
  topos_status s5 = topos_gguf_writer_set_alignment(w, 48);
  topos_status s6 = topos_gguf_writer_add_array(w, "nested", TOPOS_GGUF_ARRAY, NULL, 0);
  uint8_t bad_bools[2] = {0, 2};
  topos_status s7 = topos_gguf_writer_add_array(w, "bools", TOPOS_GGUF_BOOL, bad_bools, 2);
  float data[32] = {0};
  int64_t ne[1] = {32};
  topos_status s8 = topos_gguf_writer_add_tensor_raw(w, "t", 0, 1, ne, data, sizeof data);
  topos_status s9 = topos_gguf_writer_add_tensor_raw(w, "t", 0, 1, ne, data, sizeof data);
  topos_status s10 = topos_gguf_writer_add_tensor_raw(w, "u", 0, 1, ne, data, 12);
  int64_t bad_ne[1] = {31};
  topos_status s11 = topos_gguf_writer_add_tensor_raw(w, "q", 8, 1, bad_ne, data, 34);
  topos_status s12 = topos_gguf_writer_add_tensor_raw(w, "z", 4, 1, ne, data, 18);
  topos_gguf_writer_destroy(w);
  CHECK_OK(s1);
  CHECK(s2 == TOPOS_ERR_DUPLICATE);
  CHECK(s3 == TOPOS_ERR_BAD_STRING);
  CHECK(s4 == TOPOS_ERR_BAD_TYPE);
  CHECK(s5 == TOPOS_ERR_ALIGNMENT);
  CHECK(s6 == TOPOS_ERR_BAD_TYPE);
  CHECK(s7 == TOPOS_ERR_FORMAT);
  CHECK_OK(s8);
  CHECK(s9 == TOPOS_ERR_DUPLICATE);
  CHECK(s10 == TOPOS_ERR_SHAPE);
  CHECK(s11 == TOPOS_ERR_BAD_DIMS);
  CHECK(s12 == TOPOS_ERR_BAD_TYPE);
}

TEST(gguf_metadata_only_file_has_no_data_padding) {
  /* No tensors: no data section, so a huge alignment costs nothing. */
  topos_gguf_writer *w;
  CHECK_OK(topos_gguf_writer_create(&w));
  topos_status st = topos_gguf_writer_set_alignment(w, 1u << 30);
  if (st == TOPOS_OK) st = topos_gguf_writer_add_string(w, "general.architecture", "llama");
  void *bytes = NULL;
  size_t size = 0;
  if (st == TOPOS_OK) st = topos_gguf_writer_write_memory(w, &bytes, &size);
  topos_gguf_writer_destroy(w);
  CHECK_OK(st);
  topos_gguf *g;
  st = topos_gguf_open_memory(bytes, size, &g);
  int small = size < 200;
  uint32_t a = st == TOPOS_OK ? topos_gguf_alignment(g) : 0;
  if (st == TOPOS_OK) topos_gguf_close(g);
  free(bytes);
  CHECK_OK(st);
  CHECK(small);
  CHECK_EQ_INT(a, 1u << 30);
}
