/* MXFP4 (ggml type 39) through GGUF: the writer writes it, the reader maps it
 * as TOPOS_MXFP4 (a view of the file's bytes, not a copy) and qlinear runs on
 * the mapped weights with the bits of topos_qmatmul on the raw blocks; `topos
 * gguf quantize IN OUT mxfp4` writes ggml type 39 with topos_quantize_row's
 * bytes and llama.cpp's file type 38 (MOSTLY_MXFP4_MOE). */
#include <stdlib.h>

#include "cli_util.h"
#include "io/gguf_quantized_util.h"

enum { GM_N = 24, GM_K = 96, GM_M = 5 };

static float gm_value(int i, double f) { return (float)(sin(f * (i + 1)) * (1.0 + (i % 7))); }

/* qlinear over the mapped weight, under one numerics posture, against
 * topos_qmatmul over the file's raw bytes on the matching path. */
static int gm_qlinear_is_qmatmul(topos_tensor *x, topos_tensor *w, const float *xv, const void *raw,
                                 topos_numerics numerics, topos_qmatmul_path path) {
  topos_numerics saved = topos_numerics_enter(numerics);
  topos_tensor *y = NULL;
  float got[GM_M * GM_N], want[GM_M * GM_N];
  int ok = topos_qlinear(x, w, &y) == TOPOS_OK && topos_tensor_read_f32(y, got, GM_M * GM_N) == TOPOS_OK &&
           topos_qmatmul(xv, GM_M, GM_K, raw, TOPOS_MXFP4, GM_N, NULL, want, path) == TOPOS_OK &&
           memcmp(got, want, sizeof got) == 0;
  topos_numerics_restore(saved);
  topos_tensor_release(y);
  return ok;
}

TEST(gguf_mxfp4_tensor_writes_maps_and_runs) {
  static float wv[GM_N * GM_K], xv[GM_M * GM_K];
  for (int i = 0; i < GM_N * GM_K; ++i) wv[i] = gm_value(i, 0.37);
  for (int i = 0; i < GM_M * GM_K; ++i) xv[i] = gm_value(i, 0.11);
  int64_t ws[2] = {GM_N, GM_K}, xs[2] = {GM_M, GM_K};
  topos_tensor *wf = NULL, *w = NULL, *x = NULL, *mapped = NULL;
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 2, ws, wv, &wf));
  CHECK_OK(topos_tensor_from_f32(TOPOS_F32, 2, xs, xv, &x));
  CHECK_OK(topos_quantize(wf, TOPOS_MXFP4, &w));
  CHECK_EQ_INT(topos_tensor_dtype(w), TOPOS_MXFP4);
  char path[600];
  snprintf(path, sizeof path, "%s/mxfp4.gguf", tt_tmpdir());
  topos_gguf_writer *wr = NULL;
  CHECK_OK(topos_gguf_writer_create(&wr));
  topos_status st = topos_gguf_writer_add_tensor(wr, "blk.0.ffn_down_exps.weight", w);
  if (st == TOPOS_OK) st = topos_gguf_writer_write(wr, path);
  topos_gguf_writer_destroy(wr);
  CHECK_OK(st);

  topos_gguf *g = NULL;
  CHECK_OK(topos_gguf_open(path, &g));
  topos_gguf_tensor_info info;
  const void *raw = NULL;
  size_t bytes = 0;
  st = topos_gguf_tensor_at(g, 0, &info);
  if (st == TOPOS_OK) st = topos_gguf_tensor_bytes(g, 0, &raw, &bytes);
  if (st == TOPOS_OK) st = topos_gguf_tensor(g, "blk.0.ffn_down_exps.weight", &mapped);
  int ok = st == TOPOS_OK && info.ggml_type == 39 && info.has_dtype && info.dtype == TOPOS_MXFP4 &&
           strcmp(info.type_name, "mxfp4") == 0 && info.ne[0] == GM_K && info.ne[1] == GM_N &&
           bytes == (size_t)GM_N * (GM_K / 32) * 17 && memcmp(raw, topos_tensor_data(w), bytes) == 0 &&
           topos_tensor_dtype(mapped) == TOPOS_MXFP4 && topos_tensor_data(mapped) == raw;
  /* Exact: the reference dot per output; Fast: the fast path's bits */
  ok = ok && gm_qlinear_is_qmatmul(x, mapped, xv, raw, TOPOS_NUMERICS_EXACT, TOPOS_QMATMUL_REFERENCE);
  ok = ok && gm_qlinear_is_qmatmul(x, mapped, xv, raw, TOPOS_NUMERICS_FAST, TOPOS_QMATMUL_AUTO);
  const char *err = st == TOPOS_OK ? "" : topos_last_error();
  topos_tensor_release(mapped);
  topos_gguf_close(g);
  topos_tensor *rs[] = {wf, w, x};
  for (size_t i = 0; i < sizeof rs / sizeof rs[0]; ++i) topos_tensor_release(rs[i]);
  CHECK_MSG(ok, "mxfp4 tensor through GGUF: %s", err);
}

/* Rows that are not whole 32-element blocks are refused by the writer (and,
 * in files, by the reader's partial-block check, gguf_validate_test.c). */
TEST(gguf_mxfp4_partial_blocks_refused) {
  uint8_t blocks[4 * 17] = {0};
  const int64_t ne[2] = {48, 1};
  topos_gguf_writer *wr = NULL;
  CHECK_OK(topos_gguf_writer_create(&wr));
  topos_status st = topos_gguf_writer_add_tensor_raw(wr, "w", 39, 2, ne, blocks, sizeof blocks);
  topos_gguf_writer_destroy(wr);
  CHECK(st != TOPOS_OK);
  CHECK_ERROR_HAS("mxfp4");
}

TEST(gguf_cli_quantize_mxfp4) {
  if (!tt_topos_binary()) SKIP("topos binary not found next to the test binary");
  char in[600], out[600], args[2048], log[600];
  snprintf(in, sizeof in, "%s/cli-mx.gguf", tt_tmpdir());
  snprintf(out, sizeof out, "%s/cli-mx-mxfp4.gguf", tt_tmpdir());
  snprintf(args, sizeof args, "gguf make-test-llama '%s' --dim 64 --layers 1 --vocab 300 --seed 9", in);
  CHECK_EQ_INT(tt_topos_run(args, "cli-mx.log", log, sizeof log), 0);
  snprintf(args, sizeof args, "gguf quantize '%s' '%s' MXFP4", in, out);
  CHECK_EQ_INT(tt_topos_run(args, "cli-mx.log", log, sizeof log), 0);
  snprintf(args, sizeof args, "gguf inspect '%s'", out);
  CHECK_EQ_INT(tt_topos_run(args, "cli-mx.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "mxfp4"));

  topos_gguf *a, *b;
  CHECK_OK(topos_gguf_open(in, &a));
  topos_status st = topos_gguf_open(out, &b);
  if (st != TOPOS_OK) topos_gguf_close(a);
  CHECK_OK(st);
  uint32_t ftype = 0;
  int n_quantized = 0;
  int ok = topos_gguf_get_u32(b, "general.file_type", &ftype) == TOPOS_OK && ftype == 38 &&
           tq_quantized_rows(a, b, TOPOS_MXFP4, 39, &n_quantized);
  topos_gguf_close(a);
  topos_gguf_close(b);
  CHECK(ok);
  CHECK_EQ_INT(n_quantized, 9);
}
