/* Internal (engine): pattern pool_backward's 2x2 / stride-2 f32 kernel in
 * 16-lane vectors (pool_backward_2x2_template.h, one instance per ISA). */
#ifndef TP_ENGINE_POOL_BACKWARD_2X2_H
#define TP_ENGINE_POOL_BACKWARD_2X2_H

#include <stdint.h>

typedef struct tp_pb2_args {
  const float *x;     /* the pooled image, rows contiguous: element (b, c, h, w) at
                         b * xs0 + c * xs1 + h * xs2 + w */
  const float *g;     /* the pool output's gradient [B*C, OH, OW], contiguous */
  float *out;         /* [B*C, H, W], contiguous */
  int64_t xs0, xs1, xs2, C, H, W, OH, OW;
  float c[9];         /* the chain's constants (p, o, z per lane 1..3) */
} tp_pb2_args;

void tp_pb2_planes_f32_baseline(const tp_pb2_args *a, int64_t begin, int64_t end);
#if defined(__x86_64__)
void tp_pb2_planes_f32_avx2(const tp_pb2_args *a, int64_t begin, int64_t end);
void tp_pb2_planes_f32_avx512(const tp_pb2_args *a, int64_t begin, int64_t end);
#endif

#endif
