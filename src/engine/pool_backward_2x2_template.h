/* Pattern pool_backward's 2x2 / stride-2 f32 planes in 16-lane compiler
 * vectors (one AVX-512 register, two AVX2, four SSE), compiled once per ISA
 * file with TP_PB2_SUFFIX defined. Sixteen windows per step: the two input
 * rows' 32 values split into left and right columns, the composed chain
 * (patterns_pool_backward.c: running maxima with the masked maximum, steps,
 * the products and seeds in their order) lane by lane, the four results
 * interleaved back. A row's last windows (fewer than 16) go through
 * zero-padded copies; only their real outputs are written. */
#include <string.h>

#include "engine/pool_backward_2x2.h"

#define TP_PB2_CAT_(a, b) a##b
#define TP_PB2_CAT(a, b) TP_PB2_CAT_(a, b)
#define TP_PB2_V TP_PB2_CAT(tp_pb2_v_, TP_PB2_SUFFIX)
#define TP_PB2_M TP_PB2_CAT(tp_pb2_m_, TP_PB2_SUFFIX)

typedef float TP_PB2_V __attribute__((vector_size(64)));
typedef int32_t TP_PB2_M __attribute__((vector_size(64)));

/* the library's masked maximum (ops/kernel.h) and step(a, b) = a >= b ? 1 : 0,
 * lane by lane (macros: no 64-byte vector crosses a call) */
#ifndef TP_PB2_MAX
/* (vec4.h's form: a where a > b or a is NaN, else b, equal operands the
 * AND of their bits; a NaN b falls to "b" by itself) */
#define TP_PB2_MAX(M, out, a, b)                  \
  do {                                            \
    M ua_ = (M)(a), ub_ = (M)(b);                 \
    M ta_ = ((a) > (b)) | ((a) != (a)), eq_ = (a) == (b); \
    M r_ = (ta_ & ua_) | (~ta_ & ub_ & (ua_ | ~eq_)); \
    memcpy(&(out), &r_, sizeof r_);               \
  } while (0)
#define TP_PB2_STEP(M, out, a, b, one)            \
  do {                                            \
    M s_ = ((a) >= (b)) & (M)(one);               \
    memcpy(&(out), &s_, sizeof s_);               \
  } while (0)
#endif

/* 16 windows: r0/r1 the two input rows from the windows' first column (32
 * values each), gr their 16 gradients, w0/w1 the two output rows (32). */
static inline __attribute__((always_inline)) void TP_PB2_CAT(tp_pb2_windows_, TP_PB2_SUFFIX)(const float *r0, const float *r1,
                                                              const float *gr, float *w0,
                                                              float *w1, const float *c) {
  typedef TP_PB2_V V;
  V a0, a1, b0, b1, g3;
  memcpy(&a0, r0, sizeof a0);
  memcpy(&a1, r0 + 16, sizeof a1);
  memcpy(&b0, r1, sizeof b0);
  memcpy(&b1, r1 + 16, sizeof b1);
  memcpy(&g3, gr, sizeof g3);
  V l0 = __builtin_shufflevector(a0, a1, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  V l1 = __builtin_shufflevector(a0, a1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  V l2 = __builtin_shufflevector(b0, b1, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  V l3 = __builtin_shufflevector(b0, b1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const V zero = {0};
  const V p1 = c[0] - zero, o1 = c[1] - zero, z1 = c[2] - zero;
  const V p2 = c[3] - zero, o2 = c[4] - zero, z2 = c[5] - zero;
  const V p3 = c[6] - zero, o3 = c[7] - zero, z3 = c[8] - zero;
  /* the chain of TP_PB_WINDOW (patterns_pool_backward.c), lane by lane */
  const V one = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  V m1, m2, s3, s2, s1;
  TP_PB2_MAX(TP_PB2_M, m1, l0, l1);
  TP_PB2_MAX(TP_PB2_M, m2, m1, l2);
  TP_PB2_STEP(TP_PB2_M, s3, m2, l3, one);
  TP_PB2_STEP(TP_PB2_M, s2, m1, l2, one);
  TP_PB2_STEP(TP_PB2_M, s1, l0, l1, one);
  V r3 = o3 - s3, q3 = g3 * r3, t3 = g3 * s3;
  V v3 = z3 + q3;
  V g2 = p3 + t3;
  V r2 = o2 - s2, q2 = g2 * r2, t2 = g2 * s2;
  V v2 = z2 + q2;
  V g1 = p2 + t2;
  V r1_ = o1 - s1, q1 = g1 * r1_, t1 = g1 * s1;
  V v1 = z1 + q1;
  V v0 = p1 + t1;
  /* lane_sum (+ 0), then each fold's zero seed (0 + v) */
  v0 = zero + (zero + (v0 + zero));
  v1 = zero + (zero + (v1 + zero));
  v2 = zero + (zero + (v2 + zero));
  v3 = zero + (zero + (v3 + zero));
  V e0 = __builtin_shufflevector(v0, v1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  V e1 = __builtin_shufflevector(v0, v1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  V f0 = __builtin_shufflevector(v2, v3, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  V f1 = __builtin_shufflevector(v2, v3, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  memcpy(w0, &e0, sizeof e0);
  memcpy(w0 + 16, &e1, sizeof e1);
  memcpy(w1, &f0, sizeof f0);
  memcpy(w1 + 16, &f1, sizeof f1);
}

void TP_PB2_CAT(tp_pb2_planes_f32_, TP_PB2_SUFFIX)(const tp_pb2_args *j, int64_t begin,
                                                    int64_t end) {
  for (int64_t bc = begin; bc < end; ++bc) {
    int64_t b = bc / j->C, ch = bc % j->C;
    float *plane = j->out + bc * j->H * j->W;
    if (j->H != 2 * j->OH || j->W != 2 * j->OW) /* else every element is written below */
      memset(plane, 0, (size_t)(j->H * j->W) * sizeof *plane);
    const float *xb = j->x + b * j->xs0 + ch * j->xs1;
    const float *gb = j->g + bc * j->OH * j->OW;
    for (int64_t oh = 0; oh < j->OH; ++oh) {
      const float *r0 = xb + 2 * oh * j->xs2, *r1 = r0 + j->xs2;
      const float *gr = gb + oh * j->OW;
      float *w0 = plane + 2 * oh * j->W, *w1 = w0 + j->W;
      int64_t ow = 0;
      for (; ow + 16 <= j->OW; ow += 16)
        TP_PB2_CAT(tp_pb2_windows_, TP_PB2_SUFFIX)(r0 + 2 * ow, r1 + 2 * ow, gr + ow, w0 + 2 * ow,
                                                    w1 + 2 * ow, j->c);
      /* Short rows (fewer than 16 windows, exact tiling, x rows adjacent):
       * the kernel reads 32 values of each input row and 16 gradients in
       * place and writes 32 values of each output row in place, all inside
       * this plane. The lanes past the row compute on the next row's values
       * and their stores run past the row: w0's into w1 (stored next), w1's
       * into rows 2oh+2.. which the next oh rewrites whole (same thread, in
       * order) — so no row but the plane's last one needs the copies. */
      if (ow == 0 && j->OW < 16 && j->W == 2 * j->OW && j->H == 2 * j->OH && j->xs2 == j->W &&
          oh + 1 < j->OH && r1 + 32 <= xb + j->H * j->W && gr + 16 <= gb + j->OH * j->OW &&
          w1 + 32 <= plane + j->H * j->W) {
        TP_PB2_CAT(tp_pb2_windows_, TP_PB2_SUFFIX)(r0, r1, gr, w0, w1, j->c);
        continue;
      }
      if (ow < j->OW) { /* the last windows through zero-padded copies */
        /* (element loops, not memcpy: a library call per short row cost more
         * than the windows) */
        int64_t n = j->OW - ow;
        float a[32] = {0}, bb[32] = {0}, g[16] = {0}, o0[32], o1[32];
        for (int64_t k = 0; k < 2 * n; ++k) a[k] = r0[2 * ow + k], bb[k] = r1[2 * ow + k];
        for (int64_t k = 0; k < n; ++k) g[k] = gr[ow + k];
        TP_PB2_CAT(tp_pb2_windows_, TP_PB2_SUFFIX)(a, bb, g, o0, o1, j->c);
        for (int64_t k = 0; k < 2 * n; ++k) w0[2 * ow + k] = o0[k], w1[2 * ow + k] = o1[k];
      }
    }
  }
}
