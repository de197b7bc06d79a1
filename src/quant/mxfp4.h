/* MXFP4 (OCP microscaling FP4; ggml type 39, the expert weights of
 * gpt-oss): the two facts every path shares, defined once here and included
 * by the quant tier's reference code and by the fast engines' decoders.
 *
 * A block is 32 elements in 17 bytes: an E8M0 exponent byte e, then 16
 * bytes whose byte j holds element j in its low nibble and element j + 16
 * in its high nibble (Q4_0's order). A nibble n is an E2M1 number; stored
 * doubled, those are the integers TP_MXFP4_LEVELS, so the block's scale is
 * half the E8M0 value: element = tp_e8m0_half(e) * level[n]. */
#ifndef TP_QUANT_MXFP4_H
#define TP_QUANT_MXFP4_H

#include <stdint.h>
#include <string.h>

/* The doubled E2M1 values by nibble (sign in bit 3; nibble 8 is -0). A list
 * rather than an array so SIMD code can build its shuffle table from it
 * (_mm_setr_epi8(TP_MXFP4_LEVELS)) with no copy of the numbers. */
#define TP_MXFP4_LEVELS 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12

/* -(the smallest level): level + TP_MXFP4_BIAS is 0..24, the unsigned bytes
 * the fast engines multiply (w = s * (q - bias), qk_internal.h). */
#define TP_MXFP4_BIAS 12

/* The level of nibble n (0..15). */
static inline int tp_mxfp4_level(unsigned n) {
  static const int8_t levels[16] = {TP_MXFP4_LEVELS};
  return levels[n & 15];
}

/* The block scale 2^(e - 128) as f32, for every byte: e = 0 and 1 are the
 * denormals 2^-128 and 2^-127; e = 255 (NaN in the OCP spec, refused by
 * ggml's row validation but decoded by its conversion the same way) gives
 * 2^127. Bits as ggml's ggml_e8m0_to_fp32_half builds them. */
static inline float tp_e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? UINT32_C(0x00200000) << e : (uint32_t)(e - 1) << 23;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

#endif
