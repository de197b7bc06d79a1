/* The bench commands refuse values that are not numbers in range (exit 2,
 * naming the flag and the value) before they measure anything; a value was
 * read by atoi before (`--steps 1x` ran one step, `--sizes 512,abc` ran one
 * size). Uses the topos binary next to the test binary; SKIPs without it. */
#include "cli_util.h"

TEST(bench_commands_refuse_bad_values) {
  if (!tt_topos_binary()) SKIP("topos binary not found next to the test binary");
  static const char *const cases[][2] = {
      {"bench plan --steps x", "--steps wants a count"},
      {"bench plan --steps 0", "--steps wants a count"},
      {"bench throughput --batch 0", "--batch wants a batch size"},
      {"bench throughput --steps 2x", "--steps wants a count"},
      {"bench train --steps 1x --no-peer", "--steps wants a count"},
      {"bench train 0 --no-peer", "bad thread count '0'"},
      {"bench train 2x --no-peer", "bad thread count '2x'"},
      {"bench threads --work -1", "--work wants a count"},
      {"bench threads --iterations abc", "--iterations wants a count"},
      {"bench ladder --sizes 512,abc", "--sizes wants up to 8 sizes"},
      {"bench ladder --naive-max q", "--naive-max wants a size"},
  };
  char log[600];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    CHECK_EQ_INT(tt_topos_run(cases[i][0], "bench-args.log", log, sizeof log), 2);
    CHECK_MSG(tt_log_has(log, cases[i][1]), "%s: no '%s' in the output", cases[i][0], cases[i][1]);
  }
  /* a good value still runs */
  CHECK_EQ_INT(tt_topos_run("bench plan --steps 2", "bench-args.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "training plan"));
}
