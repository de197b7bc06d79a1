/* Internal to the quant tier: block layouts, the per-dtype traits table and
 * the rounding helpers every format shares.
 *
 * Block structs mirror ggml's `block_*` layouts field for field (little-endian
 * host assumed, as in ggml). Code never casts caller memory to a block
 * pointer: blocks are memcpy'd in and out, so buffers need no alignment. */
#ifndef TP_QUANT_INTERNAL_H
#define TP_QUANT_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "quant/mxfp4.h"
#include "topos/quant.h"
#include "topos/tensor.h"

/* Block geometry straight from TOPOS_DTYPE_LIST, so sizes live in one place:
 * TP_BLOCK_ELEMENTS_TOPOS_Q4_K, TP_BLOCK_BYTES_TOPOS_Q4_K, ... */
#define TP_QUANT_GEOMETRY_ROW(e, name, be, bb, gg, kind) \
  TP_BLOCK_ELEMENTS_##e = (be), TP_BLOCK_BYTES_##e = (bb),
enum { TOPOS_DTYPE_LIST(TP_QUANT_GEOMETRY_ROW) };
#undef TP_QUANT_GEOMETRY_ROW

#define TP_QK 32   /* elements per block of the legacy formats */
#define TP_QK_K 256 /* elements per super-block of the K formats */

/* ---- block layouts (ggml-common.h order; f16 fields hold IEEE half bits) */
typedef struct tp_block_q4_0 {
  uint16_t d;
  uint8_t qs[TP_QK / 2]; /* byte j: element j low nibble, element j+16 high nibble */
} tp_block_q4_0;

typedef struct tp_block_q4_1 {
  uint16_t d, m;
  uint8_t qs[TP_QK / 2];
} tp_block_q4_1;

typedef struct tp_block_q5_0 {
  uint16_t d;
  uint8_t qh[4]; /* bit j of the little-endian u32: 5th bit of element j */
  uint8_t qs[TP_QK / 2];
} tp_block_q5_0;

typedef struct tp_block_q5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[TP_QK / 2];
} tp_block_q5_1;

typedef struct tp_block_q8_0 {
  uint16_t d;
  int8_t qs[TP_QK];
} tp_block_q8_0;

typedef struct tp_block_q8_1 {
  uint16_t d;
  uint16_t s; /* f16 of d * sum(qs), d taken in f32 */
  int8_t qs[TP_QK];
} tp_block_q8_1;

typedef struct tp_block_q2_K {
  uint8_t scales[TP_QK_K / 16]; /* low nibble scale, high nibble min, per 16 elements */
  uint8_t qs[TP_QK_K / 4];
  uint16_t d, dmin;
} tp_block_q2_K;

typedef struct tp_block_q3_K {
  uint8_t hmask[TP_QK_K / 8]; /* element j: bit j/32 of hmask[j%32] (set = no -4) */
  uint8_t qs[TP_QK_K / 4];
  uint8_t scales[12]; /* 16 six-bit scales, biased by 32 */
  uint16_t d;
} tp_block_q3_K;

typedef struct tp_block_q4_K {
  uint16_t d, dmin;
  uint8_t scales[12]; /* 8 six-bit scales and 8 six-bit mins */
  uint8_t qs[TP_QK_K / 2];
} tp_block_q4_K;

typedef struct tp_block_q5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[TP_QK_K / 8];
  uint8_t qs[TP_QK_K / 2];
} tp_block_q5_K;

typedef struct tp_block_q6_K {
  uint8_t ql[TP_QK_K / 2];
  uint8_t qh[TP_QK_K / 4];
  int8_t scales[TP_QK_K / 16];
  uint16_t d;
} tp_block_q6_K;

typedef struct tp_block_q8_K {
  float d; /* f32, not f16: Q8_K never goes to files */
  int8_t qs[TP_QK_K];
  int16_t bsums[TP_QK_K / 16]; /* sum of each 16 consecutive qs */
} tp_block_q8_K;

/* MXFP4: an E8M0 exponent, no f16 field (quant/mxfp4.h) */
typedef struct tp_block_mxfp4 {
  uint8_t e;
  uint8_t qs[TP_QK / 2]; /* byte j: element j low nibble, element j+16 high nibble */
} tp_block_mxfp4;

#define TP_CHECK_BLOCK(type, dtype)                                                     \
  _Static_assert(sizeof(type) == TP_BLOCK_BYTES_##dtype, #type " size differs from the " \
                                                                "dtype table");         \
  _Static_assert(TP_BLOCK_ELEMENTS_##dtype == TP_QK || TP_BLOCK_ELEMENTS_##dtype == TP_QK_K, \
                 #dtype " block size")
TP_CHECK_BLOCK(tp_block_q4_0, TOPOS_Q4_0);
TP_CHECK_BLOCK(tp_block_q4_1, TOPOS_Q4_1);
TP_CHECK_BLOCK(tp_block_q5_0, TOPOS_Q5_0);
TP_CHECK_BLOCK(tp_block_q5_1, TOPOS_Q5_1);
TP_CHECK_BLOCK(tp_block_q8_0, TOPOS_Q8_0);
TP_CHECK_BLOCK(tp_block_q8_1, TOPOS_Q8_1);
TP_CHECK_BLOCK(tp_block_q2_K, TOPOS_Q2_K);
TP_CHECK_BLOCK(tp_block_q3_K, TOPOS_Q3_K);
TP_CHECK_BLOCK(tp_block_q4_K, TOPOS_Q4_K);
TP_CHECK_BLOCK(tp_block_q5_K, TOPOS_Q5_K);
TP_CHECK_BLOCK(tp_block_q6_K, TOPOS_Q6_K);
TP_CHECK_BLOCK(tp_block_q8_K, TOPOS_Q8_K);
TP_CHECK_BLOCK(tp_block_mxfp4, TOPOS_MXFP4);
#undef TP_CHECK_BLOCK

/* ---- per-format kernels. `blocks` counts whole blocks; buffers hold
 * blocks * block_elements floats and blocks * block_bytes bytes. */
typedef void (*tp_quantize_fn)(const float *src, void *dst, int64_t blocks);
typedef void (*tp_dequantize_fn)(const void *src, float *dst, int64_t blocks);
/* Dot product of `blocks` weight blocks with as many activation blocks in the
 * partner format (ggml's *_generic order; see dot_ref.c). */
typedef float (*tp_vec_dot_fn)(int64_t blocks, const void *weights, const void *activations);

/* The formats the quant tier knows, one row each:
 *   X(dtype, suffix, activation partner dtype, dot product)
 * Each row supplies tp_quantize_<suffix> and tp_dequantize_<suffix>; the dot
 * product is tp_vec_dot_<suffix>, or NULL (partner TOPOS_DTYPE_COUNT) for the
 * activation-only formats. */
#define TP_QUANT_FORMAT_LIST(X)                               \
  X(TOPOS_F32, f32, TOPOS_F32, tp_vec_dot_f32)                \
  X(TOPOS_F16, f16, TOPOS_F16, tp_vec_dot_f16)                \
  X(TOPOS_BF16, bf16, TOPOS_BF16, tp_vec_dot_bf16)            \
  X(TOPOS_Q4_0, q4_0, TOPOS_Q8_0, tp_vec_dot_q4_0)            \
  X(TOPOS_Q4_1, q4_1, TOPOS_Q8_1, tp_vec_dot_q4_1)            \
  X(TOPOS_Q5_0, q5_0, TOPOS_Q8_0, tp_vec_dot_q5_0)            \
  X(TOPOS_Q5_1, q5_1, TOPOS_Q8_1, tp_vec_dot_q5_1)            \
  X(TOPOS_Q8_0, q8_0, TOPOS_Q8_0, tp_vec_dot_q8_0)            \
  X(TOPOS_Q8_1, q8_1, TOPOS_DTYPE_COUNT, NULL)                \
  X(TOPOS_Q2_K, q2_K, TOPOS_Q8_K, tp_vec_dot_q2_K)            \
  X(TOPOS_Q3_K, q3_K, TOPOS_Q8_K, tp_vec_dot_q3_K)            \
  X(TOPOS_Q4_K, q4_K, TOPOS_Q8_K, tp_vec_dot_q4_K)            \
  X(TOPOS_Q5_K, q5_K, TOPOS_Q8_K, tp_vec_dot_q5_K)            \
  X(TOPOS_Q6_K, q6_K, TOPOS_Q8_K, tp_vec_dot_q6_K)            \
  X(TOPOS_Q8_K, q8_K, TOPOS_DTYPE_COUNT, NULL)                \
  X(TOPOS_MXFP4, mxfp4, TOPOS_Q8_0, tp_vec_dot_mxfp4)

#define TP_QUANT_DECLARE_ROW(dtype, suffix, partner, dot)                   \
  void tp_quantize_##suffix(const float *src, void *dst, int64_t blocks);   \
  void tp_dequantize_##suffix(const void *src, float *dst, int64_t blocks);
TP_QUANT_FORMAT_LIST(TP_QUANT_DECLARE_ROW)
#undef TP_QUANT_DECLARE_ROW

/* Weight-by-activation dot products (dot_ref.c). */
#define TP_VEC_DOT_DECLARE(suffix) \
  float tp_vec_dot_##suffix(int64_t blocks, const void *weights, const void *activations);
TP_VEC_DOT_DECLARE(f32)
TP_VEC_DOT_DECLARE(f16)
TP_VEC_DOT_DECLARE(bf16)
TP_VEC_DOT_DECLARE(q4_0)
TP_VEC_DOT_DECLARE(q4_1)
TP_VEC_DOT_DECLARE(q5_0)
TP_VEC_DOT_DECLARE(q5_1)
TP_VEC_DOT_DECLARE(q8_0)
TP_VEC_DOT_DECLARE(q2_K)
TP_VEC_DOT_DECLARE(q3_K)
TP_VEC_DOT_DECLARE(q4_K)
TP_VEC_DOT_DECLARE(q5_K)
TP_VEC_DOT_DECLARE(q6_K)
TP_VEC_DOT_DECLARE(mxfp4)
#undef TP_VEC_DOT_DECLARE

typedef struct tp_quant_traits {
  topos_dtype dtype;
  const char *suffix;
  int64_t block_elements;
  int64_t block_bytes;
  tp_quantize_fn quantize;
  tp_dequantize_fn dequantize;
  topos_dtype vec_dot_type; /* TOPOS_DTYPE_COUNT: activation-only format, no dot */
  tp_vec_dot_fn vec_dot;    /* NULL iff vec_dot_type is TOPOS_DTYPE_COUNT */
} tp_quant_traits;

/* Traits of a dtype, or NULL when the quant tier does not handle it (f64,
 * integers, out-of-range values). */
const tp_quant_traits *tp_quant_traits_of(topos_dtype dtype);

/* Checks dtype and n for the row functions; on success *blocks = n / block.
 * `what` names the calling operation in the message. */
topos_status tp_quant_row_blocks(const char *what, topos_dtype dtype, int64_t n,
                                 const tp_quant_traits **traits, int64_t *blocks);

/* Reference dot product of one weight row (wtype) with one activation row in
 * the partner format (topos_quant_vec_dot_type); n elements, a multiple of
 * the block size. The result follows ggml's *_generic order exactly. */
topos_status tp_vec_dot_ref(topos_dtype wtype, int64_t n, const void *w_row,
                            const void *act_row_in_partner_format, float *out);

/* out[r*cols + c] = sum_k dequant(w row c)[k] * x[r*k_dim + k], the plain f32
 * product of x (rows x k_dim, row-major f32) with the dequantized weight rows
 * (cols rows of k_dim elements, stored as wtype, w_row_bytes apart). Sum over
 * k in increasing order, in f64, rounded once to f32: a tight reference for
 * bounding the error of the quantized dot products. */
topos_status tp_qmatmul_ref_dequant(topos_dtype wtype, const void *w, size_t w_row_bytes,
                                    int64_t cols, const float *x, int64_t rows, int64_t k_dim,
                                    float *out);

/* ---- rounding shared by the K formats */

/* Round to nearest, ties to even, as ggml's nearest_int (which adds 1.5*2^23
 * and is only defined for |f| <= 4194303). Out of that range we saturate and
 * NaN gives 0, so hostile input stays defined. */
static inline int tp_nearest_int(float f) {
  if (!(fabsf(f) <= 4194303.0f)) return f != f ? 0 : (f > 0 ? 4194303 : -4194303);
  return (int)rintf(f);
}

/* C's truncating float->int8 conversion used by the legacy quantizers
 * ((int8_t)(x*id + 8.5f)), made total: values outside int8 range saturate
 * instead of being undefined (they cannot occur for finite input). */
static inline int tp_trunc_to_i8(float f) {
  if (!(f > -129.0f)) return f != f ? 0 : -128;
  if (!(f < 128.0f)) return 127;
  return (int)(int8_t)f;
}

/* roundf (ties away from zero) clamped to the int8 range; NaN -> 0. */
static inline int tp_round_to_i8(float f) {
  if (f != f) return 0;
  float r = roundf(f);
  return r > 127.0f ? 127 : r < -128.0f ? -128 : (int)r;
}

static inline float tp_h2f(uint16_t h) { return topos_f16_to_f32(h); }
static inline uint16_t tp_f2h(float f) { return topos_f32_to_f16(f); }

static inline int tp_min_int(int a, int b) { return a < b ? a : b; }
static inline int tp_max_int(int a, int b) { return a > b ? a : b; }
static inline int tp_clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- scale fitting shared by the K formats (k_quants_fit.c) */

/* Asymmetric fit (ggml make_qkx2_quants): levels L[i] in 0..nmax so that
 * x[i] ~ scale*L[i] - *neg_min, minimising the weighted squared (or absolute,
 * use_abs) error over nstep+1 candidate scales (rmin + rdelta*is + nmax)/(max-min).
 * Returns scale; *neg_min receives -min (>= 0). `scratch` has n entries. */
float tp_fit_scale_min(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                       float *neg_min, uint8_t *scratch, float rmin, float rdelta, int nstep,
                       int use_abs);

/* Symmetric fit (ggml make_qx_quants with weights x^2, rmse_type 1, no
 * quant weights): L[i] in 0..2*nmax-1 (biased by nmax). Returns the scale. */
float tp_fit_symmetric(int n, int nmax, const float *x, int8_t *L);

/* Symmetric fit with coordinate descent (ggml make_q3_quants, do_rmse):
 * L[i] in 0..2*nmax-1 (biased by nmax). Returns the scale. */
float tp_fit_symmetric_descent(int n, int nmax, const float *x, int8_t *L);

/* 6-bit scale/min pair j (0..7) of the Q4_K/Q5_K packing. */
static inline void tp_k4_scale_min(int j, const uint8_t *packed, uint8_t *scale, uint8_t *min) {
  if (j < 4) {
    *scale = (uint8_t)(packed[j] & 63);
    *min = (uint8_t)(packed[j + 4] & 63);
  } else {
    *scale = (uint8_t)((packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4));
    *min = (uint8_t)((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
}

/* 4- or 5-bit levels (0..15 / 0..31) of a legacy block in element order;
 * qh NULL for the 4-bit formats. */
void tp_legacy_levels(const uint8_t qs[TP_QK / 2], const uint8_t *qh, int q[TP_QK]);

/* The 32 levels (tp_mxfp4_level of each nibble) of an MXFP4 block in
 * element order, shared by dequantization and the dot product. */
void tp_mxfp4_levels(const uint8_t qs[TP_QK / 2], int q[TP_QK]);

/* Levels of one super-block in element order, shared by dequantization and
 * the dot products: Q2_K 0..3, Q3_K -4..3, Q4_K 0..15 / Q5_K 0..31, Q6_K -32..31. */
void tp_q2_k_levels(const tp_block_q2_K *b, uint8_t q[TP_QK_K]);
void tp_q3_k_levels(const tp_block_q3_K *b, int8_t q[TP_QK_K]);
void tp_k4_levels(const uint8_t qs[TP_QK_K / 2], const uint8_t *qh_or_null, uint8_t q[TP_QK_K]);
void tp_q6_k_levels(const tp_block_q6_K *b, int8_t q[TP_QK_K]);

/* Q3_K's 16 six-bit scales, unpacked and unbiased (-32..31). */
static inline void tp_q3_k_scales(const uint8_t packed[12], int scales[16]) {
  for (int j = 0; j < 16; ++j) {
    int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
    int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = (low | (high << 4)) - 32;
  }
}

#endif
