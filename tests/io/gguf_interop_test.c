/* Interop with gguf-py through scripts/gguf_interop.py: we read a file gguf-py
 * wrote, and gguf-py reads (and checks) a file we wrote with the same content.
 * Needs env TOPOS_GGUF_PY = a python with `gguf` and `numpy` installed
 * (scripts/setup-gguf-py.sh creates one); SKIPs otherwise. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "test.h"

/* Repository root from this file's path (CMake passes absolute paths). */
static const char *tt_repo_root(void) {
  static char root[1024];
  const char *file = __FILE__, *tail = strstr(file, "tests/io/gguf_interop_test.c");
  if (!tail || (size_t)(tail - file) >= sizeof root) return NULL;
  memcpy(root, file, (size_t)(tail - file));
  root[tail - file] = '\0';
  if (root[0] == '\0') strcpy(root, "./");
  return root;
}

/* Runs the interop script; 0 on success. Output goes to a log printed on failure. */
static int tt_run_script(const char *py, const char *verb, const char *path) {
  char cmd[4096], log[600];
  snprintf(log, sizeof log, "%s/interop-%s.log", tt_tmpdir(), verb);
  snprintf(cmd, sizeof cmd, "'%s' '%sscripts/gguf_interop.py' %s '%s' > '%s' 2>&1", py,
           tt_repo_root(), verb, path, log);
  int rc = system(cmd);
  if (rc != 0) {
    FILE *f = fopen(log, "r");
    char line[512];
    printf("  --- %s (exit %d)\n", cmd, WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
    while (f && fgets(line, sizeof line, f)) printf("  | %s", line);
    if (f) fclose(f);
  }
  return rc;
}

/* The mirrored content of EXPECTED / tensors() in the script. */
static void tt_src(float *src) {
  for (int i = 0; i < 64; ++i) src[i] = ((float)((i * 37) % 64) - 31.5f) / 7.0f;
}

static topos_status tt_write_ours(const char *path) {
  topos_gguf_writer *w;
  TP_TRY(topos_gguf_writer_create(&w));
  topos_status st = TOPOS_OK;
#define TT_ADD(call) \
  if (st == TOPOS_OK) st = (call)
  TT_ADD(topos_gguf_writer_add_string(w, "general.architecture", "llama"));
  TT_ADD(topos_gguf_writer_add_string(w, "general.name", "gguf-py interop"));
  TT_ADD(topos_gguf_writer_add_u8(w, "test.u8", 200));
  TT_ADD(topos_gguf_writer_add_i8(w, "test.i8", -5));
  TT_ADD(topos_gguf_writer_add_u16(w, "test.u16", 60000));
  TT_ADD(topos_gguf_writer_add_i16(w, "test.i16", -30000));
  TT_ADD(topos_gguf_writer_add_u32(w, "test.u32", 4000000000u));
  TT_ADD(topos_gguf_writer_add_i32(w, "test.i32", -2000000000));
  TT_ADD(topos_gguf_writer_add_u64(w, "test.u64", (1ull << 63) + 5));
  TT_ADD(topos_gguf_writer_add_i64(w, "test.i64", -(1ll << 62)));
  TT_ADD(topos_gguf_writer_add_f32(w, "test.f32", 1.5f));
  TT_ADD(topos_gguf_writer_add_f64(w, "test.f64", 3.141592653589793));
  TT_ADD(topos_gguf_writer_add_bool(w, "test.bool", 1));
  TT_ADD(topos_gguf_writer_add_string(w, "test.string", "h\xc3\xa9llo w\xc3\xb6rld"));
  int32_t ints[3] = {1, -2, 3};
  float floats[3] = {0.5f, -2.0f, 0.25f};
  const char *strs[3] = {"<s>", "a", "\xe2\x96\x81the"};
  uint8_t bools[3] = {1, 0, 1};
  TT_ADD(topos_gguf_writer_add_array(w, "test.arr_i32", TOPOS_GGUF_I32, ints, 3));
  TT_ADD(topos_gguf_writer_add_array(w, "test.arr_f32", TOPOS_GGUF_F32, floats, 3));
  TT_ADD(topos_gguf_writer_add_string_array(w, "test.arr_str", strs, NULL, 3));
  TT_ADD(topos_gguf_writer_add_array(w, "test.arr_bool", TOPOS_GGUF_BOOL, bools, 3));
  float f32[24], src[64];
  uint16_t f16[32];
  uint8_t q[68];
  for (int i = 0; i < 24; ++i) f32[i] = ((float)i - 12.0f) / 4.0f;
  for (int i = 0; i < 32; ++i) f16[i] = topos_f32_to_f16((float)i / 8.0f);
  tt_src(src);
  TT_ADD(topos_quantize_row(TOPOS_Q8_0, src, q, 64));
  int64_t ne_f32[2] = {8, 3}, ne_f16[1] = {32}, ne_q[2] = {32, 2};
  TT_ADD(topos_gguf_writer_add_tensor_raw(w, "t.f32", 0, 2, ne_f32, f32, sizeof f32));
  TT_ADD(topos_gguf_writer_add_tensor_raw(w, "t.f16", 1, 1, ne_f16, f16, sizeof f16));
  TT_ADD(topos_gguf_writer_add_tensor_raw(w, "t.q8_0.src", 0, 2, ne_q, src, sizeof src));
  TT_ADD(topos_gguf_writer_add_tensor_raw(w, "t.q8_0", 8, 2, ne_q, q, sizeof q));
  TT_ADD(topos_gguf_writer_write(w, path));
#undef TT_ADD
  topos_gguf_writer_destroy(w);
  return st;
}

TEST(gguf_interop_gguf_py) {
  const char *py = getenv("TOPOS_GGUF_PY");
  if (!py || access(py, X_OK) != 0)
    SKIP("TOPOS_GGUF_PY is not set to a python with gguf-py (run scripts/setup-gguf-py.sh)");
  if (!tt_repo_root()) SKIP("cannot locate scripts/gguf_interop.py");

  /* gguf-py -> topos */
  char path[600];
  snprintf(path, sizeof path, "%s/from_gguf_py.gguf", tt_tmpdir());
  CHECK_EQ_INT(tt_run_script(py, "write", path), 0);
  topos_gguf *g;
  CHECK_OK(topos_gguf_open(path, &g));
  uint32_t u32;
  int32_t i32;
  uint64_t u64;
  int64_t i64;
  float f;
  double d;
  int b;
  const char *s;
  size_t len;
  topos_gguf_array a;
  int ok = 1;
  ok &= topos_gguf_get_string(g, "general.architecture", &s, &len) == TOPOS_OK && strcmp(s, "llama") == 0;
  ok &= topos_gguf_get_u32(g, "test.u8", &u32) == TOPOS_OK && u32 == 200;
  ok &= topos_gguf_get_i32(g, "test.i8", &i32) == TOPOS_OK && i32 == -5;
  ok &= topos_gguf_get_u32(g, "test.u16", &u32) == TOPOS_OK && u32 == 60000;
  ok &= topos_gguf_get_i32(g, "test.i16", &i32) == TOPOS_OK && i32 == -30000;
  ok &= topos_gguf_get_u32(g, "test.u32", &u32) == TOPOS_OK && u32 == 4000000000u;
  ok &= topos_gguf_get_i32(g, "test.i32", &i32) == TOPOS_OK && i32 == -2000000000;
  ok &= topos_gguf_get_u64(g, "test.u64", &u64) == TOPOS_OK && u64 == (1ull << 63) + 5;
  ok &= topos_gguf_get_i64(g, "test.i64", &i64) == TOPOS_OK && i64 == -(1ll << 62);
  ok &= topos_gguf_get_f32(g, "test.f32", &f) == TOPOS_OK && f == 1.5f;
  ok &= topos_gguf_get_f64(g, "test.f64", &d) == TOPOS_OK && d == 3.141592653589793;
  ok &= topos_gguf_get_bool(g, "test.bool", &b) == TOPOS_OK && b == 1;
  ok &= topos_gguf_get_string(g, "test.string", &s, &len) == TOPOS_OK &&
        strcmp(s, "h\xc3\xa9llo w\xc3\xb6rld") == 0;
  ok &= topos_gguf_get_array(g, "test.arr_i32", &a) == TOPOS_OK && a.count == 3 &&
        a.element_type == TOPOS_GGUF_I32 && topos_gguf_array_int(g, a.kv_index, 1, &i64) == TOPOS_OK &&
        i64 == -2;
  ok &= topos_gguf_get_array(g, "test.arr_f32", &a) == TOPOS_OK &&
        topos_gguf_array_float(g, a.kv_index, 2, &d) == TOPOS_OK && d == 0.25;
  ok &= topos_gguf_get_array(g, "test.arr_str", &a) == TOPOS_OK &&
        topos_gguf_array_string(g, a.kv_index, 2, &s, &len) == TOPOS_OK && len == 6 &&
        memcmp(s, "\xe2\x96\x81the", 6) == 0;
  ok &= topos_gguf_get_array(g, "test.arr_bool", &a) == TOPOS_OK && a.element_type == TOPOS_GGUF_BOOL;
  /* Tensors: shapes reversed, f32/f16 values, and q8_0 bytes equal to ours. */
  topos_tensor *t32 = NULL, *t16 = NULL;
  float back[32], src[64];
  uint8_t q[68];
  tt_src(src);
  ok &= topos_gguf_tensor(g, "t.f32", &t32) == TOPOS_OK && topos_tensor_shape(t32)[0] == 3 &&
        topos_tensor_shape(t32)[1] == 8 && topos_tensor_read_f32(t32, back, 24) == TOPOS_OK &&
        back[0] == -3.0f && back[23] == 2.75f;
  ok &= topos_gguf_tensor(g, "t.f16", &t16) == TOPOS_OK &&
        topos_tensor_read_f32(t16, back, 32) == TOPOS_OK && back[31] == 3.875f;
  topos_tensor_release(t32);
  topos_tensor_release(t16);
  int64_t qi;
  const void *qdata;
  size_t qbytes;
  ok &= topos_gguf_find_tensor(g, "t.q8_0", &qi) == TOPOS_OK &&
        topos_gguf_tensor_bytes(g, qi, &qdata, &qbytes) == TOPOS_OK && qbytes == 68 &&
        topos_quantize_row(TOPOS_Q8_0, src, q, 64) == TOPOS_OK && memcmp(q, qdata, 68) == 0;
  topos_gguf_close(g);
  CHECK_MSG(ok, "a value read from the gguf-py file differs (%s)", topos_last_error());

  /* topos -> gguf-py */
  snprintf(path, sizeof path, "%s/from_topos.gguf", tt_tmpdir());
  CHECK_OK(tt_write_ours(path));
  CHECK_EQ_INT(tt_run_script(py, "check", path), 0);
}
