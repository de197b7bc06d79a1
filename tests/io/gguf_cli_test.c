/* The `topos gguf` commands end to end: make-test-llama writes a llama-shaped
 * file, quantize re-quantizes it (bytes equal to topos_quantize_row), inspect
 * and errors give the right exit codes. Uses the topos binary next to the
 * test binary; SKIPs when it is not there. */
#include "cli_util.h"
#include "io/gguf_quantized_util.h"

TEST(gguf_cli_make_inspect_quantize) {
  if (!tt_topos_binary()) SKIP("topos binary not found next to the test binary");
  char in[600], out[600], args[2048], log[600];
  snprintf(in, sizeof in, "%s/cli-llama.gguf", tt_tmpdir());
  snprintf(out, sizeof out, "%s/cli-llama-q8.gguf", tt_tmpdir());
  snprintf(args, sizeof args, "gguf make-test-llama '%s' --dim 64 --layers 1 --vocab 300 --seed 7", in);
  CHECK_EQ_INT(tt_topos_run(args, "cli.log", log, sizeof log), 0);
  snprintf(args, sizeof args, "gguf inspect '%s'", in);
  CHECK_EQ_INT(tt_topos_run(args, "cli.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "blk.0.ffn_down.weight"));
  CHECK(tt_log_has(log, "tokenizer.ggml.tokens"));
  CHECK(tt_log_has(log, "string[300]"));
  CHECK(tt_log_has(log, "total: 12 tensors"));
  snprintf(args, sizeof args, "gguf quantize '%s' '%s' q8_0", in, out);
  CHECK_EQ_INT(tt_topos_run(args, "cli.log", log, sizeof log), 0);

  topos_gguf *a, *b;
  CHECK_OK(topos_gguf_open(in, &a));
  topos_status st = topos_gguf_open(out, &b);
  if (st != TOPOS_OK) topos_gguf_close(a);
  CHECK_OK(st);
  uint32_t ftype = 0, qv = 0, layers = 0;
  int n_quantized = 0;
  int ok = topos_gguf_get_u32(b, "general.file_type", &ftype) == TOPOS_OK && ftype == 7 &&
           topos_gguf_get_u32(b, "general.quantization_version", &qv) == TOPOS_OK && qv == 2 &&
           topos_gguf_get_u32(b, "llama.block_count", &layers) == TOPOS_OK && layers == 1 &&
           topos_gguf_kv_count(b) == topos_gguf_kv_count(a) + 1 &&
           tq_quantized_rows(a, b, TOPOS_Q8_0, 8, &n_quantized);
  topos_gguf_close(a);
  topos_gguf_close(b);
  CHECK(ok);
  CHECK_EQ_INT(n_quantized, 9);
}

TEST(gguf_cli_errors_exit_nonzero) {
  if (!tt_topos_binary()) SKIP("topos binary not found next to the test binary");
  char bad[600], args[2048], log[600];
  snprintf(bad, sizeof bad, "%s/garbage.gguf", tt_tmpdir());
  FILE *f = fopen(bad, "wb");
  CHECK(f != NULL);
  fputs("GGMLxxxxxxxxxxxxxxxxxxxxxxxx", f);
  fclose(f);
  snprintf(args, sizeof args, "gguf inspect '%s'", bad);
  CHECK_EQ_INT(tt_topos_run(args, "cli.log", log, sizeof log), 1);
  CHECK(tt_log_has(log, "invalid magic 'GGML'"));
  CHECK(tt_log_has(log, "TOPOS_ERR_BAD_MAGIC"));
  snprintf(args, sizeof args, "gguf inspect '%s/missing.gguf'", tt_tmpdir());
  CHECK_EQ_INT(tt_topos_run(args, "cli.log", log, sizeof log), 1);
  snprintf(args, sizeof args, "gguf quantize '%s' '%s/x.gguf' q9_9", bad, tt_tmpdir());
  CHECK_EQ_INT(tt_topos_run(args, "cli.log", log, sizeof log), 1);
  CHECK_EQ_INT(tt_topos_run("gguf frobnicate", "cli.log", log, sizeof log), 2);
  CHECK_EQ_INT(tt_topos_run("gguf inspect", "cli.log", log, sizeof log), 2);
}
