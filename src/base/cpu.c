/* CPU feature detection: what the processor implements AND the OS saves in
 * its context switches (a feature the OS does not save would corrupt
 * registers silently), detected once and cached.
 *
 * x86-64: cpuid leaves 1 and 7 for the instructions, xgetbv(XCR0) for the
 * register state the OS enabled, and on Linux a per-process permission
 * request for AMX tile data. arm64: auxiliary-vector hwcaps (Linux) or
 * sysctl (macOS). TOPOS_DISABLE_ISA masks features off afterwards. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "base/cpu.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define TP_CPU_X86 1
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#elif defined(__aarch64__) || defined(_M_ARM64)
#define TP_CPU_ARM64 1
#if defined(__linux__)
#include <sys/auxv.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#endif
#endif

static const char *const tp_cpu_names[TOPOS_CPU_FEATURE_COUNT] = {
    [TOPOS_CPU_SSE42] = "sse4.2",         [TOPOS_CPU_AVX] = "avx",
    [TOPOS_CPU_AVX2] = "avx2",            [TOPOS_CPU_FMA] = "fma",
    [TOPOS_CPU_F16C] = "f16c",            [TOPOS_CPU_AVX512F] = "avx512f",
    [TOPOS_CPU_AVX512BW] = "avx512bw",    [TOPOS_CPU_AVX512DQ] = "avx512dq",
    [TOPOS_CPU_AVX512VL] = "avx512vl",    [TOPOS_CPU_AVX512VNNI] = "avx512vnni",
    [TOPOS_CPU_AVX512BF16] = "avx512bf16", [TOPOS_CPU_AVX512FP16] = "avx512fp16",
    [TOPOS_CPU_AVXVNNI] = "avxvnni",      [TOPOS_CPU_AMX_INT8] = "amx-int8",
    [TOPOS_CPU_AMX_BF16] = "amx-bf16",    [TOPOS_CPU_NEON] = "neon",
    [TOPOS_CPU_DOTPROD] = "dotprod",      [TOPOS_CPU_I8MM] = "i8mm",
    [TOPOS_CPU_SVE] = "sve",
};

#define TP_F(f) TP_CPU_BIT(TOPOS_CPU_##f)
#define TP_CPU_GROUP_AMX (TP_F(AMX_INT8) | TP_F(AMX_BF16))
#define TP_CPU_GROUP_AVX512                                                              \
  (TP_F(AVX512F) | TP_F(AVX512BW) | TP_F(AVX512DQ) | TP_F(AVX512VL) | TP_F(AVX512VNNI) | TP_F(AVX512BF16) | \
   TP_F(AVX512FP16) | TP_CPU_GROUP_AMX)
#define TP_CPU_GROUP_AVX2 (TP_F(AVX2) | TP_F(FMA) | TP_F(F16C) | TP_F(AVXVNNI) | TP_CPU_GROUP_AVX512)
#define TP_CPU_GROUP_AVX (TP_F(AVX) | TP_CPU_GROUP_AVX2)
#define TP_CPU_GROUP_VNNI (TP_F(AVX512VNNI) | TP_F(AVXVNNI))
#define TP_CPU_GROUP_NEON (TP_F(NEON) | TP_F(DOTPROD) | TP_F(I8MM) | TP_F(SVE))
#define TP_CPU_ALL ((UINT32_C(1) << TOPOS_CPU_FEATURE_COUNT) - 1u)

uint32_t tp_cpu_close_dependencies(uint32_t f) {
  if (!(f & TP_F(AVX))) f &= ~TP_CPU_GROUP_AVX;
  /* AVX-512 kernels are compiled with AVX2+FMA+F16C as well. */
  if ((f & (TP_F(AVX2) | TP_F(FMA) | TP_F(F16C))) != (TP_F(AVX2) | TP_F(FMA) | TP_F(F16C)))
    f &= ~TP_CPU_GROUP_AVX512;
  if (!(f & TP_F(AVX2))) f &= ~TP_F(AVXVNNI);
  if (!(f & TP_F(AVX512F))) f &= ~TP_CPU_GROUP_AVX512;
  if (!(f & TP_F(NEON))) f &= ~TP_CPU_GROUP_NEON;
  return f;
}

/* Compares token [begin, end) with name, ignoring case. */
static int tp_token_is(const char *begin, const char *end, const char *name) {
  size_t length = (size_t)(end - begin);
  if (strlen(name) != length) return 0;
  for (size_t i = 0; i < length; ++i)
    if (tolower((unsigned char)begin[i]) != tolower((unsigned char)name[i])) return 0;
  return 1;
}

static uint32_t tp_cpu_token_mask(const char *begin, const char *end) {
  static const struct {
    const char *name;
    uint32_t bits;
  } groups[] = {
      {"all", TP_CPU_ALL},           {"avx512", TP_CPU_GROUP_AVX512}, {"avx2", TP_CPU_GROUP_AVX2},
      {"avx", TP_CPU_GROUP_AVX},     {"vnni", TP_CPU_GROUP_VNNI},     {"amx", TP_CPU_GROUP_AMX},
      {"neon", TP_CPU_GROUP_NEON},
  };
  for (size_t i = 0; i < sizeof groups / sizeof groups[0]; ++i)
    if (tp_token_is(begin, end, groups[i].name)) return groups[i].bits;
  for (int f = 0; f < TOPOS_CPU_FEATURE_COUNT; ++f)
    if (tp_token_is(begin, end, tp_cpu_names[f])) return TP_CPU_BIT(f);
  return 0;
}

uint32_t tp_cpu_disable_mask(const char *spec, int *unknown) {
  uint32_t mask = 0;
  int unknown_count = 0;
  const char *p = spec ? spec : "";
  while (*p) {
    const char *end = p;
    while (*end && *end != ',') ++end;
    const char *a = p, *b = end;
    while (a < b && isspace((unsigned char)*a)) ++a;
    while (b > a && isspace((unsigned char)b[-1])) --b;
    if (a < b) {
      uint32_t bits = tp_cpu_token_mask(a, b);
      if (bits)
        mask |= bits;
      else
        ++unknown_count;
    }
    p = *end ? end + 1 : end;
  }
  if (unknown) *unknown = unknown_count;
  return mask;
}

#if TP_CPU_X86
static uint64_t tp_xgetbv0(void) {
  uint32_t lo, hi;
  /* Raw opcode name: needs no -mxsave, only OSXSAVE (checked by the caller). */
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

/* Linux keeps AMX tile data off until a process asks (it is 8 KiB of state
 * per thread); the grant covers every thread of the process. */
static int tp_request_amx_permission(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
  const long arch_get_xcomp_perm = 0x1022, arch_req_xcomp_perm = 0x1023, xtiledata = 18;
  if (syscall(SYS_arch_prctl, arch_req_xcomp_perm, xtiledata) != 0) return 0;
  unsigned long permitted = 0;
  if (syscall(SYS_arch_prctl, arch_get_xcomp_perm, &permitted) != 0) return 0;
  return (permitted >> xtiledata) & 1u;
#else
  return 0;
#endif
}

static uint32_t tp_cpu_detect_hardware(int want_amx) {
  uint32_t f = 0, eax, ebx, ecx, edx;
  unsigned max_leaf = __get_cpuid_max(0, NULL);
  if (max_leaf < 1) return 0;
  __cpuid(1, eax, ebx, ecx, edx);
  if (ecx & (1u << 20)) f |= TP_F(SSE42);
  int osxsave = (ecx & (1u << 27)) != 0;
  uint64_t xcr0 = osxsave ? tp_xgetbv0() : 0;
  const uint64_t xcr0_avx = 0x6;               /* SSE (bit 1) and AVX upper halves (bit 2) */
  const uint64_t xcr0_avx512 = 0xe0;           /* opmask, ZMM0-15 upper, ZMM16-31 (bits 5-7) */
  const uint64_t xcr0_amx = (1u << 17) | (1u << 18); /* tile config, tile data */
  int os_avx = (xcr0 & xcr0_avx) == xcr0_avx;
  int os_avx512 = os_avx && (xcr0 & xcr0_avx512) == xcr0_avx512;
  int os_amx = (xcr0 & xcr0_amx) == xcr0_amx;
  if (os_avx) {
    if (ecx & (1u << 28)) f |= TP_F(AVX);
    if (ecx & (1u << 12)) f |= TP_F(FMA);
    if (ecx & (1u << 29)) f |= TP_F(F16C);
  }
  if (max_leaf >= 7) {
    uint32_t leaf7_max;
    __cpuid_count(7, 0, leaf7_max, ebx, ecx, edx);
    if (os_avx && (ebx & (1u << 5))) f |= TP_F(AVX2);
    if (os_avx512) {
      if (ebx & (1u << 16)) f |= TP_F(AVX512F);
      if (ebx & (1u << 17)) f |= TP_F(AVX512DQ);
      if (ebx & (1u << 30)) f |= TP_F(AVX512BW);
      if (ebx & (1u << 31)) f |= TP_F(AVX512VL);
      if (ecx & (1u << 11)) f |= TP_F(AVX512VNNI);
      if (edx & (1u << 23)) f |= TP_F(AVX512FP16);
    }
    int amx_tile = (edx >> 24) & 1u;
    uint32_t amx = 0;
    if (amx_tile && (edx & (1u << 25))) amx |= TP_F(AMX_INT8);
    if (amx_tile && (edx & (1u << 22))) amx |= TP_F(AMX_BF16);
    /* When the environment masks AMX the permission is not requested; the
     * bits then only say "present" and are masked off right after. */
    if (amx && os_amx && (!want_amx || tp_request_amx_permission())) f |= amx;
    if (leaf7_max >= 1) {
      __cpuid_count(7, 1, eax, ebx, ecx, edx);
      if (os_avx && (eax & (1u << 4))) f |= TP_F(AVXVNNI);
      if (os_avx512 && (eax & (1u << 5))) f |= TP_F(AVX512BF16);
    }
  }
  return f;
}
#elif TP_CPU_ARM64
static uint32_t tp_cpu_detect_hardware(int want_amx) {
  (void)want_amx;
  uint32_t f = TP_F(NEON); /* Advanced SIMD is mandatory on AArch64 */
#if defined(__linux__)
  unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
  if (hwcap & (1ul << 20)) f |= TP_F(DOTPROD); /* HWCAP_ASIMDDP */
  if (hwcap & (1ul << 22)) f |= TP_F(SVE);     /* HWCAP_SVE */
  if (hwcap2 & (1ul << 13)) f |= TP_F(I8MM);   /* HWCAP2_I8MM */
#elif defined(__APPLE__)
  int value = 0;
  size_t size = sizeof value;
  if (sysctlbyname("hw.optional.arm.FEAT_DotProd", &value, &size, NULL, 0) == 0 && value)
    f |= TP_F(DOTPROD);
  value = 0;
  size = sizeof value;
  if (sysctlbyname("hw.optional.arm.FEAT_I8MM", &value, &size, NULL, 0) == 0 && value)
    f |= TP_F(I8MM);
#endif
  return f;
}
#else
static uint32_t tp_cpu_detect_hardware(int want_amx) {
  (void)want_amx;
  return 0;
}
#endif

static pthread_once_t tp_cpu_once = PTHREAD_ONCE_INIT;
static uint32_t tp_cpu_unmasked_bits;
static uint32_t tp_cpu_bits;

static void tp_cpu_detect(void) {
  uint32_t disabled = tp_cpu_disable_mask(getenv("TOPOS_DISABLE_ISA"), NULL);
  /* Asking the kernel for AMX state costs memory on every thread; skip it when masked. */
  int want_amx = (disabled & TP_CPU_GROUP_AMX) != TP_CPU_GROUP_AMX;
  tp_cpu_unmasked_bits = tp_cpu_detect_hardware(want_amx);
  tp_cpu_bits = tp_cpu_close_dependencies(tp_cpu_unmasked_bits & ~disabled);
}

uint32_t tp_cpu_features(void) {
  pthread_once(&tp_cpu_once, tp_cpu_detect);
  return tp_cpu_bits;
}

static tp_cpu_vendor_id tp_cpu_vendor_value;
static pthread_once_t tp_cpu_vendor_once = PTHREAD_ONCE_INIT;
static void tp_cpu_vendor_detect(void) {
#if TP_CPU_X86
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return;
  char name[13];
  memcpy(name, &ebx, 4), memcpy(name + 4, &edx, 4), memcpy(name + 8, &ecx, 4);
  name[12] = '\0';
  if (strcmp(name, "GenuineIntel") == 0) tp_cpu_vendor_value = TP_CPU_VENDOR_INTEL;
  else if (strcmp(name, "AuthenticAMD") == 0) tp_cpu_vendor_value = TP_CPU_VENDOR_AMD;
#endif
}

tp_cpu_vendor_id tp_cpu_vendor(void) {
  pthread_once(&tp_cpu_vendor_once, tp_cpu_vendor_detect);
  return tp_cpu_vendor_value;
}

uint32_t tp_cpu_features_unmasked(void) {
  pthread_once(&tp_cpu_once, tp_cpu_detect);
  return tp_cpu_unmasked_bits;
}

int topos_cpu_has(topos_cpu_feature feature) {
  if ((unsigned)feature >= TOPOS_CPU_FEATURE_COUNT) return 0;
  return (tp_cpu_features() >> feature) & 1u;
}

const char *topos_cpu_feature_name(topos_cpu_feature feature) {
  if ((unsigned)feature >= TOPOS_CPU_FEATURE_COUNT) return "unknown";
  return tp_cpu_names[feature];
}

void topos_cpu_describe(char *buf, size_t size) {
  if (!buf || size == 0) return;
  size_t used = 0;
  buf[0] = '\0';
  uint32_t bits = tp_cpu_features();
  for (int f = 0; f < TOPOS_CPU_FEATURE_COUNT; ++f) {
    if (!((bits >> f) & 1u)) continue;
    const char *name = tp_cpu_names[f];
    size_t length = strlen(name) + (used ? 1 : 0);
    if (used + length >= size) break; /* keep whole names only */
    if (used) buf[used++] = ' ';
    memcpy(buf + used, name, strlen(name));
    used += strlen(name);
    buf[used] = '\0';
  }
}
