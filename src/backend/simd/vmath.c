/* The simd rung's member: the other helper's packed GEMM (gemm.h) for
 * products and the vectorized maps of vmath_template.h, with runtime ISA
 * choice and the thread split. */
#include "backend/simd/vmath.h"

#include <stdio.h>

#include "backend/backend_internal.h"
#include "backend/platform.h"
#include "backend/simd/gemm.h"

#if defined(__x86_64__)
int tp_vmath_f32_avx2(int op, const float *in, float *out, int64_t count);
int tp_vmath_f32_avx512(int op, const float *in, float *out, int64_t count);
#endif

typedef struct tp_vmath_job {
  int (*fn)(int, const float *, float *, int64_t);
  int op;
  const float *in;
  float *out;
} tp_vmath_job;

static void tp_vmath_chunk(void *ctx, int64_t begin, int64_t end) {
  const tp_vmath_job *job = ctx;
  job->fn(job->op, job->in + begin, job->out + begin, end - begin);
}

topos_status tp_vmath_map_f32(topos_map_op op, const float *in, float *out, int64_t count,
                              int isa) {
  if (op != TOPOS_MAP_EXP && op != TOPOS_MAP_LN && op != TOPOS_MAP_SQRT && op != TOPOS_MAP_TANH)
    return TOPOS_UNSUPPORTED;
  tp_vmath_job job = {NULL, (int)op, in, out};
#if defined(__x86_64__)
  tp_vector_isa best = tp_vector_isa_best();
  if ((isa == 0 || isa == 2) && best == TP_VECTOR_AVX512)
    job.fn = tp_vmath_f32_avx512;
  else if ((isa == 0 || isa == 1) && best >= TP_VECTOR_AVX2)
    job.fn = tp_vmath_f32_avx2;
#else
  (void)isa;
#endif
  if (!job.fn) return TOPOS_UNSUPPORTED;
  tp_backend_parallel_for(count, 1 << 15, tp_vmath_chunk, &job);
  return TOPOS_OK;
}

static topos_status tp_simd_map_f32(topos_map_op op, const void *in, void *out, int64_t count) {
  return tp_vmath_map_f32(op, in, out, count, 0);
}

#define TP_SIMD_GEMM(T, sfx)                                                                  \
  static topos_status tp_simd_member_gemm_##sfx(const topos_gemm_task *t) {                   \
    return tp_simd_gemm_##sfx(t->m, t->n, t->k, t->a, t->a_row_stride, t->a_col_stride, t->b, \
                              t->b_row_stride, t->b_col_stride, t->c,                         \
                              t->c_row_stride < t->n ? t->n : t->c_row_stride);               \
  }
TP_SIMD_GEMM(float, f32)
TP_SIMD_GEMM(double, f64)

static const char *tp_simd_describe(void) {
  static char text[256];
  snprintf(text, sizeof text, "gemm %s; maps %s", tp_simd_gemm_describe(32),
           tp_vector_isa_best() >= TP_VECTOR_AVX2 ? tp_vector_isa_name(tp_vector_isa_best())
                                                  : "declined (no AVX2)");
  return text;
}

const tp_kernels tp_kernels_simd = {NULL, tp_simd_member_gemm_f32, tp_simd_member_gemm_f64,
                                    tp_simd_map_f32, NULL, tp_simd_describe};
