/* `topos llama-make`, `topos generate` and `topos bench llm` end to end on a
 * tiny random-weight model. Uses the topos binary next to the test binary;
 * SKIPs when it is not there. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static const char *lc_binary(void) {
  static char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 16);
  if (n <= 0) return NULL;
  path[n] = '\0';
  char *slash = strrchr(path, '/');
  if (!slash) return NULL;
  strcpy(slash + 1, "topos");
  return access(path, X_OK) == 0 ? path : NULL;
}

static int lc_run(const char *args, char *log, size_t log_size) {
  char cmd[8192];
  snprintf(log, log_size, "%s/llama-cli.log", tt_tmpdir());
  snprintf(cmd, sizeof cmd, "'%s' %s > '%s' 2>&1", lc_binary(), args, log);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int lc_has(const char *log, const char *text) {
  FILE *f = fopen(log, "r");
  if (!f) return 0;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strstr(buf, text) != NULL;
}

TEST(llama_cli_make_generate_bench) {
  if (!lc_binary()) SKIP("topos binary not found next to the test binary");
  char model[600], args[2048], log[600];
  snprintf(model, sizeof model, "%s/llama-cli-tiny.gguf", tt_tmpdir());
  snprintf(args, sizeof args, "llama-make '%s' --shape tiny --type q4_K_M", model);
  CHECK_EQ_INT(lc_run(args, log, sizeof log), 0);
  snprintf(args, sizeof args, "generate '%s' -p hello -n 5 --temp 0 --threads 2 --ctx 32", model);
  CHECK_EQ_INT(lc_run(args, log, sizeof log), 0);
  CHECK(lc_has(log, "hello"));
  CHECK(lc_has(log, "prompt: 9 tokens")); /* <s> + byte tokens of "\u2581hello" */
  CHECK(lc_has(log, "generation: "));
  CHECK(lc_has(log, "tokens/s (2 threads, fast)"));
  snprintf(args, sizeof args, "generate '%s' -p hello -n 3 --kv f16 --exact --seed 3", model);
  CHECK_EQ_INT(lc_run(args, log, sizeof log), 0);
  snprintf(args, sizeof args, "bench llm '%s' --json --reps 1 --threads 1 --tests pp8,tg4", model);
  CHECK_EQ_INT(lc_run(args, log, sizeof log), 0);
  CHECK(lc_has(log, "{\"bench\":\"llm\",\"model\":\"llama-cli-tiny.gguf\",\"test\":\"pp8\",\"threads\":1,"));
  CHECK(lc_has(log, "\"test\":\"tg4\""));
  CHECK(lc_has(log, "\"peak_rss_mb\":"));
  /* errors: a missing file, a prompt longer than the context, a bad test name */
  snprintf(args, sizeof args, "generate '%s/absent.gguf' -p hi", tt_tmpdir());
  CHECK_EQ_INT(lc_run(args, log, sizeof log), 1);
  CHECK(lc_has(log, "absent.gguf"));
  snprintf(args, sizeof args, "generate '%s' -p 'a long prompt here' --ctx 4", model);
  CHECK_EQ_INT(lc_run(args, log, sizeof log), 1);
  CHECK(lc_has(log, "the context only 4"));
  snprintf(args, sizeof args, "bench llm '%s' --tests xx3", model);
  CHECK_EQ_INT(lc_run(args, log, sizeof log), 2);
  CHECK_EQ_INT(lc_run("generate", log, sizeof log), 2);
  CHECK(lc_has(log, "usage: topos generate"));
  remove(model);
}
