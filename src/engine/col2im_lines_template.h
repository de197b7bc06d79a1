/* The f32 lines kernel of pattern col2im (see patterns_col2im.c for the sum
 * order), compiled once per ISA file with TP_C2I_SUFFIX defined. Written with
 * 16-lane compiler vectors (one AVX-512 register, two AVX2 ones, four SSE
 * ones), a multiply then an add, each rounded (-ffp-contract=off).
 *
 * Per image b and output row oh, G's block [OW, F] is laid out as F lines of
 * 16 lanes (ow along the line) with 16 zeros either side. For a shift
 * s = left - kw, lane x of the line read at offset s holds G[b,oh,x+s,j], so
 *   v(c,kh,kw)[x] = K[c,kh,kw,0]*G[..x+s..,0] + ... (j ascending)
 * is D[b,oh,ow = x+s, c,kh,kw] — the matmul's element, same products (a*b ==
 * b*a), same order — for the lanes whose ow is inside [0, OW); the rest are
 * masked to +0. Then, per (c, kh) and with y = oh + kh - top,
 *   acc[c][y] += ((+0 + (0 + v(kw=KW-1))) + (0 + v(KW-2))) + ...
 * kw descending = ow ascending, oh ascending across the rows: the two folds'
 * order. Rows of (c, kh) go 8 at a time (8 accumulators, clamped at the
 * end: a repeated row is computed and not stored). */
#include <stdlib.h>
#include <string.h>

#include "engine/col2im_lines.h"

#define TP_C2I_CAT_(a, b) a##b
#define TP_C2I_CAT(a, b) TP_C2I_CAT_(a, b)

int TP_C2I_CAT(tp_c2i_lines_f32_, TP_C2I_SUFFIX)(const tp_c2i_lines_args *q, int64_t b0,
                                                  int64_t b1) {
  typedef float V __attribute__((vector_size(64)));
  typedef int32_t M __attribute__((vector_size(64)));
  enum { L = 16, PAD = 48, RB = 8 };
  const int64_t F = q->F, KW = q->KW, rows = q->C * q->KH;
  float *lines = calloc((size_t)(F * PAD), sizeof(float));
  float *acc = malloc((size_t)(q->C * q->H * L + 1) * sizeof(float));
  float *vbuf = malloc((size_t)(rows * KW * L) * sizeof(float));
  int32_t *masks = malloc((size_t)(KW * L) * sizeof(int32_t));
  if (!lines || !acc || !vbuf || !masks) {
    free(lines), free(acc), free(vbuf), free(masks);
    return -1;
  }
  for (int64_t kw = 0; kw < KW; ++kw)
    for (int l = 0; l < L; ++l) {
      int64_t ow = l + q->left - kw;
      masks[kw * L + l] = ow >= 0 && ow < q->OW ? -1 : 0;
    }
  for (int64_t b = b0; b < b1; ++b) {
    memset(acc, 0, (size_t)(q->C * q->H * L) * sizeof(float));
    for (int64_t oh = 0; oh < q->OH; ++oh) {
      const float *grow = q->g + (b * q->OH + oh) * q->OW * F;
      for (int64_t l = 0; l < q->OW; ++l)
        for (int64_t j = 0; j < F; ++j) lines[j * PAD + L + l] = grow[l * F + j];
      /* v for every (c, kh) row and kw, into vbuf[(r * KW + kw) * L] */
      for (int64_t kw = 0; kw < KW; ++kw) {
        const float *at = lines + L + q->left - kw;
        for (int64_t r0 = 0; r0 < rows; r0 += RB) {
          const float *kr[RB];
          for (int i = 0; i < RB; ++i) {
            int64_t r = r0 + i < rows ? r0 + i : rows - 1;
            kr[i] = q->k + (r * KW + kw) * F;
          }
          V v[RB], gv;
          memcpy(&gv, at, sizeof gv);
          _Pragma("GCC unroll 8") for (int i = 0; i < RB; ++i) v[i] = (kr[i][0] - (V){0}) * gv;
          for (int64_t j = 1; j < F; ++j) {
            memcpy(&gv, at + j * PAD, sizeof gv);
            _Pragma("GCC unroll 8") for (int i = 0; i < RB; ++i) v[i] += (kr[i][j] - (V){0}) * gv;
          }
          M mask;
          memcpy(&mask, masks + kw * L, sizeof mask);
          for (int i = 0; i < RB && r0 + i < rows; ++i) {
            M bits;
            memcpy(&bits, &v[i], sizeof bits);
            bits &= mask;
            memcpy(vbuf + ((r0 + i) * KW + kw) * L, &bits, sizeof bits);
          }
        }
      }
      for (int64_t c = 0; c < q->C; ++c)
        for (int64_t kh = 0; kh < q->KH; ++kh) {
          int64_t y = oh + kh - q->top;
          if (y < 0 || y >= q->H) continue;
          const float *vr = vbuf + (c * q->KH + kh) * KW * L;
          V t = {0}, v, a;
          for (int64_t kw = KW - 1; kw >= 0; --kw) {
            memcpy(&v, vr + kw * L, sizeof v);
            t += (V){0} + v;
          }
          float *arow = acc + (c * q->H + y) * L;
          memcpy(&a, arow, sizeof a);
          a += t;
          memcpy(arow, &a, sizeof a);
        }
    }
    for (int64_t r = 0; r < q->C * q->H; ++r)
      memcpy(q->out + (b * q->C * q->H + r) * q->W, acc + r * L, (size_t)q->W * sizeof(float));
  }
  free(lines), free(acc), free(vbuf), free(masks);
  return 0;
}
