/* NEON (aarch64) GEMM microkernels. f32: 8 rows x 3 q-registers (8x12),
 * f64: 8 rows x 3 q-registers (8x6). 24 accumulators, 3 B vectors and the
 * 8 packed A values (2 or 4 q-registers) of the 32 vector registers; each A
 * value is used in place with a by-lane FMA (fmla v.4s, v.4s, v.s[lane]),
 * which is fused per lane like every other kernel. */
#include <arm_neon.h>

#include "backend/simd/gemm_kernels.h"

#if TP_GEMM_NEON_F32_MR != 8 || TP_GEMM_NEON_F32_NR != 12 || TP_GEMM_NEON_F64_MR != 8 || \
    TP_GEMM_NEON_F64_NR != 6
#error "gemm_kernels_neon.c is written for 8x12 (f32) and 8x6 (f64) tiles"
#endif

/* Lanes must be literal constants, so the rows are spelled out. */
#define TP_NEON_ROWS(X) X(0, 0, 0) X(1, 0, 1) X(2, 0, 2) X(3, 0, 3) X(4, 1, 0) X(5, 1, 1) X(6, 1, 2) X(7, 1, 3)

void tp_gemm_ukernel_neon_f32(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                              int accumulate) {
  float32x4_t acc[8][3];
#define TP_NEON_F32_INIT(r, q, lane)                                                   \
  acc[r][0] = accumulate ? vld1q_f32(c + (r) * ldc + 0) : vdupq_n_f32(0.0f);            \
  acc[r][1] = accumulate ? vld1q_f32(c + (r) * ldc + 4) : vdupq_n_f32(0.0f);            \
  acc[r][2] = accumulate ? vld1q_f32(c + (r) * ldc + 8) : vdupq_n_f32(0.0f);
  TP_NEON_ROWS(TP_NEON_F32_INIT)
#undef TP_NEON_F32_INIT
  for (int64_t p = 0; p < kc; ++p) {
    float32x4_t av[2] = {vld1q_f32(a), vld1q_f32(a + 4)};
    float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
#define TP_NEON_F32_STEP(r, q, lane)                           \
  acc[r][0] = vfmaq_laneq_f32(acc[r][0], b0, av[q], lane);      \
  acc[r][1] = vfmaq_laneq_f32(acc[r][1], b1, av[q], lane);      \
  acc[r][2] = vfmaq_laneq_f32(acc[r][2], b2, av[q], lane);
    TP_NEON_ROWS(TP_NEON_F32_STEP)
#undef TP_NEON_F32_STEP
    a += 8;
    b += 12;
  }
#define TP_NEON_F32_STORE(r, q, lane)           \
  vst1q_f32(c + (r) * ldc + 0, acc[r][0]);      \
  vst1q_f32(c + (r) * ldc + 4, acc[r][1]);      \
  vst1q_f32(c + (r) * ldc + 8, acc[r][2]);
  TP_NEON_ROWS(TP_NEON_F32_STORE)
#undef TP_NEON_F32_STORE
}

/* f64: row r's A value is lane (r % 2) of register r / 2. */
#define TP_NEON_ROWS64(X) X(0, 0, 0) X(1, 0, 1) X(2, 1, 0) X(3, 1, 1) X(4, 2, 0) X(5, 2, 1) X(6, 3, 0) X(7, 3, 1)

void tp_gemm_ukernel_neon_f64(int64_t kc, const double *a, const double *b, double *c, int64_t ldc,
                              int accumulate) {
  float64x2_t acc[8][3];
#define TP_NEON_F64_INIT(r, q, lane)                                                   \
  acc[r][0] = accumulate ? vld1q_f64(c + (r) * ldc + 0) : vdupq_n_f64(0.0);             \
  acc[r][1] = accumulate ? vld1q_f64(c + (r) * ldc + 2) : vdupq_n_f64(0.0);             \
  acc[r][2] = accumulate ? vld1q_f64(c + (r) * ldc + 4) : vdupq_n_f64(0.0);
  TP_NEON_ROWS64(TP_NEON_F64_INIT)
#undef TP_NEON_F64_INIT
  for (int64_t p = 0; p < kc; ++p) {
    float64x2_t av[4] = {vld1q_f64(a), vld1q_f64(a + 2), vld1q_f64(a + 4), vld1q_f64(a + 6)};
    float64x2_t b0 = vld1q_f64(b), b1 = vld1q_f64(b + 2), b2 = vld1q_f64(b + 4);
#define TP_NEON_F64_STEP(r, q, lane)                           \
  acc[r][0] = vfmaq_laneq_f64(acc[r][0], b0, av[q], lane);      \
  acc[r][1] = vfmaq_laneq_f64(acc[r][1], b1, av[q], lane);      \
  acc[r][2] = vfmaq_laneq_f64(acc[r][2], b2, av[q], lane);
    TP_NEON_ROWS64(TP_NEON_F64_STEP)
#undef TP_NEON_F64_STEP
    a += 8;
    b += 6;
  }
#define TP_NEON_F64_STORE(r, q, lane)           \
  vst1q_f64(c + (r) * ldc + 0, acc[r][0]);      \
  vst1q_f64(c + (r) * ldc + 2, acc[r][1]);      \
  vst1q_f64(c + (r) * ldc + 4, acc[r][2]);
  TP_NEON_ROWS64(TP_NEON_F64_STORE)
#undef TP_NEON_F64_STORE
}
