/* Internal (engine): the f32 lines kernel of pattern col2im (patterns_col2im.c),
 * compiled once per ISA from col2im_lines_template.h. */
#ifndef TP_ENGINE_COL2IM_LINES_H
#define TP_ENGINE_COL2IM_LINES_H

#include <stdint.h>

typedef struct tp_c2i_lines_args {
  const float *g;   /* G [B*OH*OW, F], contiguous: the conv output's gradient */
  const float *k;   /* K [C*KH*KW, F], contiguous: the kernel matrix */
  float *out;       /* [B, C, H, W], contiguous */
  int64_t B, OH, OW, C, KH, KW, F, top, left, H, W;
} tp_c2i_lines_args;

/* Which shapes the kernel takes: a row of x and of ow in one 16-lane line,
 * and the shifted reads inside the line's zero margins. */
static inline int tp_c2i_lines_fit(const tp_c2i_lines_args *a) {
  return a->OW >= 1 && a->OW <= 16 && a->W >= 1 && a->W <= 16 && a->F >= 1 && a->KW >= 1 &&
         a->left >= 0 && a->left <= 16 && a->KW - 1 - a->left <= 16 && a->top >= 0;
}

/* Images [b0, b1); 0, or -1 when scratch could not be had. */
int tp_c2i_lines_f32_baseline(const tp_c2i_lines_args *a, int64_t b0, int64_t b1);
#if defined(__x86_64__)
int tp_c2i_lines_f32_avx2(const tp_c2i_lines_args *a, int64_t b0, int64_t b1);
int tp_c2i_lines_f32_avx512(const tp_c2i_lines_args *a, int64_t b0, int64_t b1);
#endif

#endif
