/* The hardware as a second reference: F16C conversions against ours. This
 * file is compiled with -mavx2 -mfma -mf16c; every test checks the CPU first. */
#include <immintrin.h>

#include "base/cpu.h"
#include "base/half_samples.h"
#include "test.h"

static uint16_t tt_hw_narrow(float x) {
  return (uint16_t)_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

TEST(f32_to_f16_matches_f16c_hardware) {
  if (!tp_cpu_has_avx2_set()) SKIP("no AVX2+FMA+F16C");
  size_t count = 0;
  float *samples = tt_boundary_samples(0x7c00u, tt_f16_value, &count);
  CHECK(samples != NULL);
  int ok = 1;
  for (size_t i = 0; ok && i < count; ++i)
    if (topos_f32_to_f16(samples[i]) != tt_hw_narrow(samples[i])) {
      tt_fail_at(__FILE__, __LINE__, "%a: ours 0x%04x, F16C 0x%04x", (double)samples[i],
                 topos_f32_to_f16(samples[i]), tt_hw_narrow(samples[i]));
      ok = 0;
    }
  free(samples);
  /* all 2^32 patterns with an odd stride, NaNs included: bits must agree */
  for (uint64_t u = 0; ok && u < (UINT64_C(1) << 32); u += 2039) {
    float x = tt_bits_f32((uint32_t)u);
    if (topos_f32_to_f16(x) != tt_hw_narrow(x)) {
      tt_fail_at(__FILE__, __LINE__, "0x%08x: ours 0x%04x, F16C 0x%04x", (uint32_t)u,
                 topos_f32_to_f16(x), tt_hw_narrow(x));
      ok = 0;
    }
  }
  CHECK(ok);
}

TEST(f16_to_f32_matches_f16c_hardware) {
  if (!tp_cpu_has_avx2_set()) SKIP("no AVX2+FMA+F16C");
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    float ours = topos_f16_to_f32((uint16_t)bits), hw = _cvtsh_ss((unsigned short)bits);
    if (isnan(hw)) { /* the hardware also quiets signalling NaNs; ours keeps the payload */
      CHECK(isnan(ours) && (signbit(ours) != 0) == (signbit(hw) != 0));
      CHECK_EQ_INT(tt_f32_bits(ours) | 0x00400000u, tt_f32_bits(hw));
      continue;
    }
    CHECK_BITS_F32(ours, hw);
  }
}
