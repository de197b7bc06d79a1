/* `topos llama-make`, `topos generate`, `topos tokenize` and `topos bench llm`
 * end to end on a tiny random-weight model: one table of command lines, each
 * with its exit status, texts its output must hold and one it must not. Uses
 * the topos binary next to the test binary; SKIPs when it is not there. */
#include "cli_util.h"
#include "models/llama_util.h" /* lt_smollm2_path */

typedef struct {
  const char *args; /* "%s" where the model's path goes (at most once) */
  int rc;
  const char *has[3];
  const char *lacks;
} lc_case;

static const lc_case lc_cases[] = {
    {"generate '%s' -p hello -n 5 --temp 0 --threads 2 --ctx 32", 0,
     {"hello", "prompt: 9 tokens", "tokens/s (2 threads, fast)"}, NULL}, /* <s> + bytes of "\u2581hello" */
    {"generate '%s' -p hello -n 3 --kv f16 --exact --seed 3", 0, {"(2 threads, exact)"}, NULL},
    /* the bandwidth read (about a second per row) and the fraction of its bound */
    {"bench llm '%s' --json --reps 1 --threads 1 --tests tg4", 0,
     {"{\"bench\":\"llm\",\"model\":\"llama-cli-tiny.gguf\",\"test\":\"tg4\",\"threads\":1,", "\"peak_rss_mb\":",
      "\"of_bound\":"},
     NULL},
    {"bench llm '%s' --json --reps 1 --threads 1 --tests pp8,tg4 --no-stream", 0,
     {"\"test\":\"pp8\",\"threads\":1,", "\"test\":\"tg4\"", "\"peak_rss_mb\":"}, "stream_gbs"},
    /* tests at a depth: a 6-token prompt first, untimed */
    {"bench llm '%s' --json --reps 1 --threads 1 --tests tg2@d6,pp4@d6 --no-stream", 0,
     {"\"test\":\"tg2@d6\",\"threads\":1,", "\"test\":\"pp4@d6\"", "\"depth\":6}"}, NULL},
    /* a prompt longer than the context */
    {"generate '%s' -p 'a long prompt here' --ctx 4", 1, {"more than the context's 4 (--ctx)"}, NULL},
    /* the prompt alone (-n 0), and a context that fills before -n: the last
     * token that fits is sampled and printed, not evaluated (seeded sampling
     * over Exact logits, the same bits in every build; this seed draws no
     * end-of-generation token; slots 9, 10, 11 evaluated, the 4th printed) */
    {"generate '%s' -p hello -n 0", 0, {"generation: 0 tokens"}, NULL},
    {"generate '%s' -p hello -n 20 --ctx 12 --seed 1 --exact", 0,
     {"prompt: 9 tokens", "generation: 4 tokens", "stopped after 4 of 20 tokens: the context of 12 tokens is full"},
     NULL},
    /* the sampling flags reach the sampler */
    {"generate '%s' -p hello -n 3 --min-p 0.1 --repeat-penalty 1.2 --repeat-last-n 8", 0, {"generation: 3 tokens"},
     NULL},
    /* values that are not numbers or out of range: exit 2 with the flag
     * named, before any work (bench llm: before its table starts) */
    {"generate '%s' -p hello -n abc", 2, {"-n wants"}, NULL},
    {"generate '%s' -p hello -n -2", 2, {"-n wants"}, NULL},
    {"generate '%s' -p hello --temp 0.5x", 2, {"--temp wants"}, NULL},
    {"generate '%s' -p hello --top-p 2", 2, {"--top-p wants"}, NULL},
    {"generate '%s' -p hello --min-p -0.1", 2, {"--min-p wants"}, NULL},
    {"generate '%s' -p hello --seed -1", 2, {"--seed wants"}, NULL},
    {"generate '%s' -p hello --repeat-penalty 0", 2, {"--repeat-penalty wants"}, NULL},
    {"generate '%s' -p hello --ctx 12x", 2, {"--ctx wants"}, NULL},
    {"generate '%s' -p hello --kv q4_0x", 2, {"--kv wants"}, NULL},
    {"bench llm '%s' --tests xx3", 2, {"'xx3' is not ppN or tgN"}, "| model"},
    {"bench llm '%s' --tests tg2@d0", 2, {"'tg2@d0' is not ppN or tgN", "D in 1..16384"}, "| model"},
    {"bench llm '%s' --tests tg2@x4", 2, {"'tg2@x4' is not ppN or tgN"}, "| model"},
    {"bench llm '%s' --tests pp8 --threads 1,x", 2, {"'x' is not a thread count"}, "| model"},
    {"bench llm '%s' --tests pp8 --reps 0", 2, {"--reps wants a count"}, "| model"},
    {"bench llm '%s' --tests pp8 --kv q4_0x", 2, {"topos bench llm: --kv wants f32, f16 or bf16, got 'q4_0x'"}, "| model"},
    {"llama-make '%s.x' --shape tiny --seed 12x", 2, {"--seed wants an unsigned 64-bit integer"}, NULL},
    {"llama-make '%s.x' --shape tiny --layers 0", 2, {"--layers wants a block count from 1 to 4096"}, NULL},
    /* --chat needs the file's chat template; --system needs --chat */
    {"generate '%s' -p hello --chat", 1, {"--chat: the file has no tokenizer.chat_template"}, NULL},
    {"generate '%s' -p hello --system 'be brief'", 2, {"--system needs --chat"}, NULL},
    {"generate '%s' -p hello -i", 2, {"-i (a conversation, one user turn per line of input) needs --chat"}, NULL},
    /* tokenize: pieces of a text; ids back to text, control tokens as
     * nothing or (--special) as their text; a bad id */
    {"tokenize '%s' hello", 0, {"8 tokens", "\"<0x68>\"  -> \"h\""}, NULL},
    {"tokenize '%s' --decode 2 107 104 111", 0, {"hel"}, "</s>"},
    {"tokenize '%s' --decode --special 2 107", 0, {"</s>h"}, NULL},
    {"tokenize '%s' --decode 1x", 2, {"\"1x\" is not a token id"}, NULL},
    {"generate '%s/../absent.gguf' -p hi", 1, {"absent.gguf"}, NULL},
    {"generate", 2, {"usage: topos generate"}, NULL},
};

TEST(llama_cli_make_generate_bench) {
  if (!tt_topos_binary()) SKIP("topos binary not found next to the test binary");
  char model[600], args[2048], log[600];
  snprintf(model, sizeof model, "%s/llama-cli-tiny.gguf", tt_tmpdir());
  snprintf(args, sizeof args, "llama-make '%s' --shape tiny --type q4_K_M", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  for (size_t i = 0; i < sizeof lc_cases / sizeof lc_cases[0]; ++i) {
    const lc_case *c = &lc_cases[i];
    snprintf(args, sizeof args, c->args, model);
    const int rc = tt_topos_run(args, "llama-cli.log", log, sizeof log);
    CHECK_MSG(rc == c->rc, "topos %s: exit %d, want %d", c->args, rc, c->rc);
    for (int k = 0; k < 3 && c->has[k]; ++k)
      CHECK_MSG(tt_log_has(log, c->has[k]), "topos %s: no '%s' in the output", c->args, c->has[k]);
    if (c->lacks) CHECK_MSG(!tt_log_has(log, c->lacks), "topos %s: '%s' in the output", c->args, c->lacks);
  }
#ifdef __linux__
  /* the text table ends with the model mapping's resident and 2 MiB-page
   * share (smaps); a tiny file is not asked for huge pages */
  snprintf(args, sizeof args, "bench llm '%s' --reps 1 --threads 1 --tests tg2 --no-stream", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "|         - |         - |")); /* no bandwidth, no fraction of a bound */
  CHECK(tt_log_has(log, "model mapping: "));
  CHECK(tt_log_has(log, "MiB of it in 2 MiB pages"));
#endif
  /* the q3_K_M recipe: its types where llama.cpp puts them, and it runs */
  snprintf(args, sizeof args, "llama-make '%s' --shape tiny --type q3_K_M", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  snprintf(args, sizeof args, "gguf inspect '%s'", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  const char *q3m[] = {"blk.0.attn_q.weight                  q3_K", "blk.0.attn_v.weight                  q5_K",
                       "blk.0.attn_output.weight             q4_K", "blk.1.ffn_down.weight                q4_K",
                       "output.weight                        q6_K"};
  for (size_t i = 0; i < sizeof q3m / sizeof q3m[0]; ++i) CHECK_MSG(tt_log_has(log, q3m[i]), "no '%s'", q3m[i]);
  snprintf(args, sizeof args, "generate '%s' -p hello -n 3 --seed 1", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  /* a mixture of experts (olmoe): its expert tensors, and it generates */
  snprintf(args, sizeof args, "llama-make '%s' --shape olmoe-tiny --type q4_K_M", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  snprintf(args, sizeof args, "gguf inspect '%s'", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "olmoe.expert_count") && tt_log_has(log, "blk.1.ffn_down_exps.weight"));
  snprintf(args, sizeof args, "generate '%s' -p hello -n 3 --seed 1", model);
  CHECK_EQ_INT(tt_topos_run(args, "llama-cli.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "generation: "));
  remove(model);
}

/* A conversation (--chat -i) with a real model: each line of input is the
 * next user turn, answered after the previous reply in the same cache, so
 * the model keeps the thread ("And of Italy?" alone names no country). A
 * reply cut by -n is evaluated before the next turn; input that ends at once
 * after -p is one turn. Greedy, so the text is the model's best. */
TEST(llama_cli_chat_conversation_smollm2) {
  const char *path = lt_smollm2_path();
  if (!path) SKIP("SmolLM2 GGUF absent: set TOPOS_SMOLLM2_GGUF or run scripts/setup-smollm2.sh");
  if (!tt_topos_binary()) SKIP("topos binary not found next to the test binary");
  if (getenv("TOPOS_TEST_EMULATOR"))
    SKIP("under an emulator (TOPOS_TEST_EMULATOR): four SmolLM2 conversations take minutes there");
  char input[600], args[2048], log[600];
  snprintf(input, sizeof input, "%s/chat-input.txt", tt_tmpdir());
  FILE *f = fopen(input, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs("What is the capital of Germany?\nAnd of Italy?\n", f);
  fclose(f);
  snprintf(args, sizeof args, "generate '%s' --chat -i -p 'What is the capital of France?' --temp 0 -n 40 < '%s'",
           path, input);
  CHECK_EQ_INT(tt_topos_run(args, "chat.log", log, sizeof log), 0);
  const char *want[] = {"Paris", "Berlin", "Rome", "3 turns; prompt: "};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) CHECK_MSG(tt_log_has(log, want[i]), "no '%s'", want[i]);
  /* replies cut at 3 tokens: the next turn evaluates the cut reply's last token first */
  snprintf(args, sizeof args, "generate '%s' --chat -i -p 'What is the capital of France?' --temp 0 -n 3 < '%s'",
           path, input);
  CHECK_EQ_INT(tt_topos_run(args, "chat.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "3 turns; prompt: "));
  CHECK(tt_log_has(log, "generation: 9 tokens"));
  snprintf(args, sizeof args, "generate '%s' --chat -i -p 'Hi' --temp 0 -n 8 < /dev/null", path);
  CHECK_EQ_INT(tt_topos_run(args, "chat.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "1 turn; prompt: "));
  /* a context too small for the next turn stops the conversation with a note */
  snprintf(args, sizeof args, "generate '%s' --chat -i -p 'What is the capital of France?' --temp 0 --ctx 40 < '%s'",
           path, input);
  CHECK_EQ_INT(tt_topos_run(args, "chat.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "the next turn does not fit the context of 40 tokens"));
  CHECK(tt_log_has(log, "Paris") && tt_log_has(log, "1 turn; prompt: 16 tokens"));
  remove(input);
}
