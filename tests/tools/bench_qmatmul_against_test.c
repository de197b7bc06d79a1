/* `topos bench-qmatmul --against LIB` opens another build's shared library
 * and times its fast products against this build's in one process. Here the
 * other build is this one's own libtopos.so (build/lib beside build/bin), so
 * every row must report the same bits; a library that is not there is
 * refused with its path named. SKIPs without the binary or the library. */
#include "cli_util.h"

TEST(bench_qmatmul_against_another_build) {
  if (!tt_topos_binary()) SKIP("topos binary not found next to the test binary");
  char lib[2048];
  const char *exe = tt_topos_binary();
  if (strlen(exe) + 16 >= sizeof lib) SKIP("the build's path is too long for this test");
  memcpy(lib, exe, strlen(exe) + 1);
  char *bin = strstr(lib, "/bin/topos");
  if (!bin) SKIP("the topos binary is not in a bin/ folder");
  strcpy(bin, "/lib/libtopos.so");
  if (access(lib, R_OK) != 0) SKIP("no lib/libtopos.so beside bin/ (static-only build)");

  static const char *const shapes[] = {"--type q4_0 --shape 8x256x256", "--type q8_0 --shape 19x256x64",
                                       "--type q4_K --shape 1x512x40"};
  char args[2600], log[600];
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
    snprintf(args, sizeof args, "bench-qmatmul --no-stream --quick %s --against '%s'", shapes[i], lib);
    CHECK_EQ_INT(tt_topos_run(args, "bench-against.log", log, sizeof log), 0);
    CHECK_MSG(tt_log_has(log, "other/this"), "%s: no table header", shapes[i]);
    CHECK_MSG(tt_log_has(log, " same"), "%s: no row with the same bits", shapes[i]);
    CHECK_MSG(!tt_log_has(log, "DIFF"), "%s: this build's bits differ from its own library's", shapes[i]);
  }
  snprintf(args, sizeof args, "bench-qmatmul --no-stream --quick --type q4_0 --against '%s' --json", lib);
  CHECK_EQ_INT(tt_topos_run(args, "bench-against.log", log, sizeof log), 0);
  CHECK(tt_log_has(log, "{\"bench\":\"qmatmul_against\",\"type\":\"q4_0\",\"m\":1,\"n\":256,\"k\":256,\"threads\":1,"));
  CHECK(tt_log_has(log, "\"same_bits\":true"));

  CHECK_EQ_INT(tt_topos_run("bench-qmatmul --no-stream --against /nonexistent/libtopos.so", "bench-against.log", log,
                            sizeof log),
               1);
  CHECK(tt_log_has(log, "--against /nonexistent/libtopos.so:"));
}
