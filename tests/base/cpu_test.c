#include <stdlib.h>

#include "base/cpu.h"
#include "test.h"

#define BIT(f) TP_CPU_BIT(TOPOS_CPU_##f)

TEST(cpu_feature_names_are_distinct_and_out_of_range_is_safe) {
  for (int a = 0; a < TOPOS_CPU_FEATURE_COUNT; ++a) {
    const char *name = topos_cpu_feature_name((topos_cpu_feature)a);
    CHECK(name && name[0] && strcmp(name, "unknown") != 0);
    for (int b = 0; b < a; ++b) CHECK(strcmp(name, topos_cpu_feature_name((topos_cpu_feature)b)) != 0);
  }
  CHECK(strcmp(topos_cpu_feature_name(TOPOS_CPU_FEATURE_COUNT), "unknown") == 0);
  CHECK(strcmp(topos_cpu_feature_name((topos_cpu_feature)-1), "unknown") == 0);
  CHECK_EQ_INT(topos_cpu_has(TOPOS_CPU_FEATURE_COUNT), 0);
  CHECK_EQ_INT(topos_cpu_has((topos_cpu_feature)-1), 0);
}

TEST(cpu_describe_lists_exactly_the_present_features) {
  char buf[512];
  topos_cpu_describe(buf, sizeof buf);
  int listed = 0;
  for (char *token = strtok(buf, " "); token; token = strtok(NULL, " ")) {
    int found = -1;
    for (int f = 0; f < TOPOS_CPU_FEATURE_COUNT; ++f)
      if (strcmp(token, topos_cpu_feature_name((topos_cpu_feature)f)) == 0) found = f;
    CHECK_MSG(found >= 0, "unknown token %s", token);
    CHECK(topos_cpu_has((topos_cpu_feature)found));
    ++listed;
  }
  int present = 0;
  for (int f = 0; f < TOPOS_CPU_FEATURE_COUNT; ++f) present += topos_cpu_has((topos_cpu_feature)f);
  CHECK_EQ_INT(listed, present);
}

TEST(cpu_describe_truncates_to_whole_names) {
  char small[6];
  memset(small, 'x', sizeof small);
  topos_cpu_describe(small, sizeof small);
  CHECK(memchr(small, '\0', sizeof small) != NULL);
  size_t length = strlen(small);
  if (length) { /* whatever fits is a prefix made of whole names */
    char full[512];
    topos_cpu_describe(full, sizeof full);
    CHECK(strncmp(small, full, length) == 0);
    CHECK(full[length] == ' ' || full[length] == '\0');
  }
  char one = 'x';
  topos_cpu_describe(&one, 1);
  CHECK_EQ_INT(one, '\0');
  topos_cpu_describe(NULL, 0); /* no write, no crash */
}

TEST(cpu_disable_mask_groups) {
  int unknown = -1;
  uint32_t avx512 = tp_cpu_disable_mask("avx512", &unknown);
  CHECK_EQ_INT(unknown, 0);
  CHECK(avx512 & BIT(AVX512F));
  CHECK(avx512 & BIT(AVX512FP16));
  CHECK(avx512 & BIT(AMX_INT8));
  CHECK(avx512 & BIT(AMX_BF16));
  CHECK(!(avx512 & BIT(AVX2)));
  CHECK(!(avx512 & BIT(AVXVNNI)));
  uint32_t avx2 = tp_cpu_disable_mask("avx2", NULL);
  CHECK_EQ_INT(avx2 & avx512, avx512);
  CHECK(avx2 & BIT(FMA));
  CHECK(avx2 & BIT(F16C));
  CHECK(avx2 & BIT(AVXVNNI));
  CHECK(!(avx2 & BIT(AVX)));
  CHECK(!(avx2 & BIT(SSE42)));
  CHECK_EQ_INT(tp_cpu_disable_mask("vnni", NULL), BIT(AVX512VNNI) | BIT(AVXVNNI));
  CHECK_EQ_INT(tp_cpu_disable_mask("amx", NULL), BIT(AMX_INT8) | BIT(AMX_BF16));
  CHECK_EQ_INT(tp_cpu_disable_mask("neon", NULL),
               BIT(NEON) | BIT(DOTPROD) | BIT(I8MM) | BIT(SVE));
  CHECK_EQ_INT(tp_cpu_disable_mask("all", NULL), (UINT32_C(1) << TOPOS_CPU_FEATURE_COUNT) - 1);
}

TEST(cpu_disable_mask_parsing) {
  int unknown = -1;
  CHECK_EQ_INT(tp_cpu_disable_mask(NULL, &unknown), 0);
  CHECK_EQ_INT(unknown, 0);
  CHECK_EQ_INT(tp_cpu_disable_mask("", &unknown), 0);
  CHECK_EQ_INT(tp_cpu_disable_mask(" AMX , Vnni ,,", &unknown),
               BIT(AMX_INT8) | BIT(AMX_BF16) | BIT(AVX512VNNI) | BIT(AVXVNNI));
  CHECK_EQ_INT(unknown, 0);
  CHECK_EQ_INT(tp_cpu_disable_mask("f16c,bogus,avx5122", &unknown), BIT(F16C));
  CHECK_EQ_INT(unknown, 2);
  CHECK_EQ_INT(tp_cpu_disable_mask("sse4.2,amx-int8", &unknown), BIT(SSE42) | BIT(AMX_INT8));
  CHECK_EQ_INT(unknown, 0);
}

TEST(cpu_dependencies_close_over_missing_bases) {
  uint32_t all = (UINT32_C(1) << TOPOS_CPU_FEATURE_COUNT) - 1;
  CHECK_EQ_INT(tp_cpu_close_dependencies(all), all);
  uint32_t no_avx512f = tp_cpu_close_dependencies(all & ~BIT(AVX512F));
  CHECK(!(no_avx512f & (BIT(AVX512BW) | BIT(AVX512VNNI) | BIT(AMX_INT8))));
  CHECK(no_avx512f & BIT(AVXVNNI));
  uint32_t no_f16c = tp_cpu_close_dependencies(all & ~BIT(F16C));
  CHECK(!(no_f16c & BIT(AVX512F)));
  CHECK(no_f16c & BIT(AVX2));
  uint32_t no_avx = tp_cpu_close_dependencies(all & ~BIT(AVX));
  CHECK_EQ_INT(no_avx & tp_cpu_disable_mask("avx", NULL), 0);
  CHECK(no_avx & BIT(SSE42));
  uint32_t no_neon = tp_cpu_close_dependencies(all & ~BIT(NEON));
  CHECK_EQ_INT(no_neon & tp_cpu_disable_mask("neon", NULL), 0);
}

TEST(cpu_detected_features_are_consistent) {
  uint32_t have = tp_cpu_features(), raw = tp_cpu_features_unmasked();
  CHECK_EQ_INT(have & ~raw, 0);
  CHECK_EQ_INT(tp_cpu_close_dependencies(have), have);
  CHECK_EQ_INT(have & tp_cpu_disable_mask(getenv("TOPOS_DISABLE_ISA"), NULL), 0);
  for (int f = 0; f < TOPOS_CPU_FEATURE_COUNT; ++f)
    CHECK_EQ_INT(topos_cpu_has((topos_cpu_feature)f), (have >> f) & 1u);
#if defined(__aarch64__)
  if (!getenv("TOPOS_DISABLE_ISA")) CHECK(topos_cpu_has(TOPOS_CPU_NEON));
#endif
#if defined(__x86_64__)
  CHECK(!(raw & tp_cpu_disable_mask("neon", NULL)));
#endif
}

#if defined(__x86_64__) && defined(__linux__)
/* The first /proc/cpuinfo line starting with key, into line: 1 found, 0 not
 * listed, -1 no /proc/cpuinfo. */
static int proc_cpuinfo_line(const char *key, char *line, int size) {
  FILE *file = fopen("/proc/cpuinfo", "r");
  if (!file) return -1;
  int found = 0;
  while (!found && fgets(line, size, file)) found = strncmp(line, key, strlen(key)) == 0;
  fclose(file);
  return found;
}

/* The kernel's own view: a flag it does not list must not be detected (it
 * clears AVX-512 flags when it does not save ZMM state, for instance). */
TEST(cpu_detected_features_appear_in_proc_cpuinfo) {
  static const char *const flags[TOPOS_CPU_FEATURE_COUNT] = {
      [TOPOS_CPU_SSE42] = "sse4_2",          [TOPOS_CPU_AVX] = "avx",
      [TOPOS_CPU_AVX2] = "avx2",             [TOPOS_CPU_FMA] = "fma",
      [TOPOS_CPU_F16C] = "f16c",             [TOPOS_CPU_AVX512F] = "avx512f",
      [TOPOS_CPU_AVX512BW] = "avx512bw",     [TOPOS_CPU_AVX512DQ] = "avx512dq",
      [TOPOS_CPU_AVX512VL] = "avx512vl",     [TOPOS_CPU_AVX512VNNI] = "avx512_vnni",
      [TOPOS_CPU_AVX512BF16] = "avx512_bf16", [TOPOS_CPU_AVX512FP16] = "avx512_fp16",
      [TOPOS_CPU_AVXVNNI] = "avx_vnni",      [TOPOS_CPU_AMX_INT8] = "amx_int8",
      [TOPOS_CPU_AMX_BF16] = "amx_bf16",
  };
  static char line[1 << 16];
  const int found = proc_cpuinfo_line("flags", line, (int)sizeof line);
  if (found < 0) SKIP("no /proc/cpuinfo");
  if (!found) SKIP("no flags line in /proc/cpuinfo");
  uint32_t raw = tp_cpu_features_unmasked();
  for (int f = 0; f < TOPOS_CPU_FEATURE_COUNT; ++f) {
    if (!flags[f] || !((raw >> f) & 1u)) continue;
    char needle[64];
    snprintf(needle, sizeof needle, " %s", flags[f]);
    const char *at = line;
    int listed = 0;
    while ((at = strstr(at, needle))) {
      char after = at[strlen(needle)];
      if (after == ' ' || after == '\n' || after == '\0') listed = 1;
      at += 1;
    }
    CHECK_MSG(listed, "detected %s but /proc/cpuinfo lacks %s", topos_cpu_feature_name(f),
              flags[f]);
  }
}

/* The maker tp_cpu_vendor reports (kernel tuning; docs/LLM.md) is the one
 * /proc/cpuinfo names, and the same on every call (not under valgrind,
 * which answers CPUID with a synthetic Intel processor whatever the host). */
TEST(cpu_vendor_matches_proc_cpuinfo) {
  const tp_cpu_vendor_id v = tp_cpu_vendor();
  CHECK(tp_cpu_vendor() == v);
  if (tt_under_valgrind()) SKIP("under valgrind, CPUID names valgrind's synthetic processor, not the host's");
  char line[512];
  const int found = proc_cpuinfo_line("vendor_id", line, (int)sizeof line);
  if (found < 0) SKIP("no /proc/cpuinfo");
  if (!found) SKIP("no vendor_id line in /proc/cpuinfo");
  const tp_cpu_vendor_id want = strstr(line, "GenuineIntel")   ? TP_CPU_VENDOR_INTEL
                                : strstr(line, "AuthenticAMD") ? TP_CPU_VENDOR_AMD
                                                               : TP_CPU_VENDOR_OTHER;
  CHECK_MSG(v == want, "tp_cpu_vendor %d, /proc/cpuinfo: %s", (int)v, line);
}
#endif
