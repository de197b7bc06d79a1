#include "test.h"

TEST(f16_known_values) {
  CHECK_EQ_INT(topos_f32_to_f16(1.0f), 0x3c00);
  CHECK_EQ_INT(topos_f32_to_f16(-2.0f), 0xc000);
  CHECK_EQ_INT(topos_f32_to_f16(65504.0f), 0x7bff);
  CHECK_EQ_INT(topos_f32_to_f16(65520.0f), 0x7c00); /* tie above max rounds to inf */
  CHECK_EQ_INT(topos_f32_to_f16(0x1p-24f), 0x0001);
  CHECK_EQ_INT(topos_f32_to_f16(0x1p-25f), 0x0000);  /* tie to even (zero) */
  CHECK_EQ_INT(topos_f32_to_f16(-0.0f), 0x8000);
  CHECK_BITS_F32(topos_f16_to_f32(0x0001), 0x1p-24f);
  CHECK(isnan(topos_f16_to_f32(topos_f32_to_f16(NAN))));
}

TEST(bf16_known_values) {
  CHECK_EQ_INT(topos_f32_to_bf16(1.0f), 0x3f80);
  CHECK_EQ_INT(topos_f32_to_bf16(-0.0f), 0x8000);
  CHECK_BITS_F32(topos_bf16_to_f32(0x3f80), 1.0f);
  CHECK(isnan(topos_bf16_to_f32(topos_f32_to_bf16(NAN))));
}
