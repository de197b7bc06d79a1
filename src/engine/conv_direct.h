/* Internal (engine): the f32 kernels of patterns conv_forward and
 * conv_wgrad (patterns_conv_direct.c), compiled once per ISA from
 * conv_direct_template.h. */
#ifndef TP_ENGINE_CONV_DIRECT_H
#define TP_ENGINE_CONV_DIRECT_H

#include <stdint.h>

typedef struct tp_cd_args {
  const float *x;      /* the image [B, C, H, W], contiguous */
  const float *k;      /* forward: the kernel matrix [C*KH*KW, F], contiguous */
  const float *g;      /* weight gradient: the output's gradient [B*OH*OW, F], contiguous */
  const float *bias;   /* forward: bias value of f at bias[f * bias_stride], or NULL */
  float *out;          /* forward [B*OH*OW, F]; weight gradient [C*KH*KW, F] */
  int64_t B, C, H, W, OH, OW, KH, KW, F, top, left, bias_stride;
  int product_first;   /* the bias add's operand order: product + bias */
  int wgrad_rows;      /* weight gradient: rows of dW per register block (TP_CD_WGRAD_ROWS) */
} tp_cd_args;

/* The weight gradient's register blocks: (F <= 8) 12 or 5 rows, (F <= 16)
 * 24 or 12. Each dW element's sum is the same whatever block holds it; the
 * smaller blocks give a second thread a share of a conv with few rows. */
#define TP_CD_WGRAD_ROWS(F, small) ((F) <= 8 ? ((small) ? 5 : 12) : ((small) ? 12 : 24))

/* forward: images [b0, b1); weight gradient: rows [i0, i1) of dW (F <= 16).
 * 0, or -1 when scratch could not be had. */
int tp_cd_forward_f32_baseline(const tp_cd_args *a, int64_t b0, int64_t b1);
int tp_cd_wgrad_f32_baseline(const tp_cd_args *a, int64_t i0, int64_t i1);
#if defined(__x86_64__)
int tp_cd_forward_f32_avx2(const tp_cd_args *a, int64_t b0, int64_t b1);
int tp_cd_wgrad_f32_avx2(const tp_cd_args *a, int64_t i0, int64_t i1);
int tp_cd_forward_f32_avx512(const tp_cd_args *a, int64_t b0, int64_t b1);
int tp_cd_wgrad_f32_avx512(const tp_cd_args *a, int64_t i0, int64_t i1);
#endif

#endif
