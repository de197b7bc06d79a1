/* `topos llama-make`, `topos generate` and `topos bench llm` end to end on a
 * tiny random-weight model. Uses the topos binary next to the test binary;
 * SKIPs when it is not there. */
#include "cli_util.h"

TEST(llama_cli_make_generate_bench) {
  if (!tt_topos_binary()) SKIP("topos binary not found next to the test binary");
  char model[600], args[2048], log[600];
  snprintf(model, sizeof model, "%s/llama-cli-tiny.gguf", tt_tmpdir());
  snprintf(args, sizeof args, "llama-make '%s' --shape tiny --type q4_K_M", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  snprintf(args, sizeof args, "generate '%s' -p hello -n 5 --temp 0 --threads 2 --ctx 32", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "hello"));
  CHECK(tt_log_has(log, "prompt: 9 tokens")); /* <s> + byte tokens of "\u2581hello" */
  CHECK(tt_log_has(log, "generation: "));
  CHECK(tt_log_has(log, "tokens/s (2 threads, fast)"));
  snprintf(args, sizeof args, "generate '%s' -p hello -n 3 --kv f16 --exact --seed 3", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  snprintf(args, sizeof args, "bench llm '%s' --json --reps 1 --threads 1 --tests pp8,tg4", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "{\"bench\":\"llm\",\"model\":\"llama-cli-tiny.gguf\",\"test\":\"pp8\",\"threads\":1,"));
  CHECK(tt_log_has(log, "\"test\":\"tg4\""));
  CHECK(tt_log_has(log, "\"peak_rss_mb\":"));
  /* errors: a missing file, a prompt longer than the context, a bad test name */
  snprintf(args, sizeof args, "generate '%s/absent.gguf' -p hi", tt_tmpdir());
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 1);
  CHECK(tt_log_has(log, "absent.gguf"));
  snprintf(args, sizeof args, "generate '%s' -p 'a long prompt here' --ctx 4", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 1);
  CHECK(tt_log_has(log, "more than the context's 4 (--ctx)"));
  /* the prompt alone (-n 0), and a context that fills before -n: the last
   * token that fits is sampled and printed, not evaluated */
  snprintf(args, sizeof args, "generate '%s' -p hello -n 0", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "generation: 0 tokens"));
  /* (seeded sampling over Exact logits, the same bits in every build; this
   * seed draws no end-of-generation token) */
  snprintf(args, sizeof args, "generate '%s' -p hello -n 20 --ctx 12 --seed 1 --exact", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "prompt: 9 tokens"));
  CHECK(tt_log_has(log, "generation: 4 tokens")); /* slots 9, 10, 11 evaluated, the 4th printed */
  CHECK(tt_log_has(log, "stopped after 4 of 20 tokens: the context of 12 tokens is full"));
  /* the sampling flags reach the sampler */
  snprintf(args, sizeof args, "generate '%s' -p hello -n 3 --min-p 0.1 --repeat-penalty 1.2 --repeat-last-n 8", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  /* values that are not numbers or out of range: exit 2 with the flag named,
   * before any work (bench llm: before its table starts) */
  static const char *const bad[][3] = {
      {"generate", "-n abc", "-n wants"},
      {"generate", "-n -2", "-n wants"},
      {"generate", "--temp 0.5x", "--temp wants"},
      {"generate", "--top-p 2", "--top-p wants"},
      {"generate", "--min-p -0.1", "--min-p wants"},
      {"generate", "--seed -1", "--seed wants"},
      {"generate", "--repeat-penalty 0", "--repeat-penalty wants"},
      {"generate", "--ctx 12x", "--ctx wants"},
      {"generate", "--kv q4_0x", "--kv wants"},
      {"bench llm", "--tests xx3", "'xx3' is not ppN or tgN"},
      {"bench llm", "--tests pp8 --threads 1,x", "'x' is not a thread count"},
      {"bench llm", "--tests pp8 --reps 0", "--reps wants a count"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    snprintf(args, sizeof args, "%s '%s' %s%s", bad[i][0], model, bad[i][0][0] == 'g' ? "-p hello " : "", bad[i][1]);
    CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 2);
    CHECK_MSG(tt_log_has(log, bad[i][2]), "%s %s: no '%s' in the output", bad[i][0], bad[i][1], bad[i][2]);
    CHECK(!tt_log_has(log, "| model"));
  }
  /* tokenize: pieces of a text; ids back to text, control tokens as nothing
   * or (--special) as their text; a bad id */
  snprintf(args, sizeof args, "tokenize '%s' hello", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "8 tokens") && tt_log_has(log, "\"<0x68>\"  -> \"h\""));
  snprintf(args, sizeof args, "tokenize '%s' --decode 2 107 104 111", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "hel") && !tt_log_has(log, "</s>"));
  snprintf(args, sizeof args, "tokenize '%s' --decode --special 2 107", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "</s>h"));
  snprintf(args, sizeof args, "tokenize '%s' --decode 1x", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 2);
  CHECK(tt_log_has(log, "\"1x\" is not a token id"));
  /* --chat needs the file's chat template; --system needs --chat */
  snprintf(args, sizeof args, "generate '%s' -p hello --chat", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 1);
  CHECK(tt_log_has(log, "--chat: the file has no tokenizer.chat_template"));
  snprintf(args, sizeof args, "generate '%s' -p hello --system 'be brief'", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 2);
  CHECK(tt_log_has(log, "--system needs --chat"));
  snprintf(args, sizeof args, "llama-make '%s.x' --shape tiny --seed 12x", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 2);
  CHECK(tt_log_has(log, "--seed wants an unsigned 64-bit integer"));
  CHECK_EQ_INT(tt_topos_run("generate", "llama-cli.log", log, sizeof log), 2);
  CHECK(tt_log_has(log, "usage: topos generate"));
  remove(model);
}
