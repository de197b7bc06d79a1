/* The default rung's route for a C of few rows (gemm_short_template.h): B's
 * rows read in place, the C rows of a column chunk held in registers over the
 * whole k loop. Decoding's attention products (8 query rows against the
 * cached keys, then the probabilities against the cached values) took the
 * packed tile route, which copied all of B for one use.
 *
 * Bits: the reference's (see the template). Columns past the last whole
 * vector take the reference loop; threads split column chunks, never k. */
#include <stdbool.h>

#include "backend/backend_internal.h"
#include "backend/default/gemm_short.h"
#include "backend/platform.h"

#define TP_SK_DECL(isa)                                                                         \
  void tp_default_short_f32_##isa(int64_t k, const float *a, int64_t lda, int64_t astep,         \
                                  const float *b, int64_t ldb, float *c, int64_t ldc, int h,     \
                                  int64_t cols);                                                 \
  void tp_default_short_f64_##isa(int64_t k, const double *a, int64_t lda, int64_t astep,        \
                                  const double *b, int64_t ldb, double *c, int64_t ldc, int h,   \
                                  int64_t cols);
TP_SK_DECL(baseline)
#if defined(__x86_64__)
TP_SK_DECL(avx2)
TP_SK_DECL(avx512)
#endif

/* one row block: a second would read B again, where the tile route reads it once */
enum { TP_SK_ROWS = 8, TP_SK_MAX_M = 8 };

typedef void (*tp_sk_f32)(int64_t, const float *, int64_t, int64_t, const float *, int64_t,
                          float *, int64_t, int, int64_t);
typedef void (*tp_sk_f64)(int64_t, const double *, int64_t, int64_t, const double *, int64_t,
                          double *, int64_t, int, int64_t);

typedef struct tp_sk_choice {
  tp_sk_f32 f32;
  tp_sk_f64 f64;
  int vector_bytes, vectors; /* a kernel pass covers `vectors` vectors of C's row */
} tp_sk_choice;

static tp_sk_choice tp_sk_pick(void) {
#if defined(__x86_64__)
  switch (tp_vector_isa_best()) {
    case TP_VECTOR_AVX512: return (tp_sk_choice){tp_default_short_f32_avx512, tp_default_short_f64_avx512, 64, 2};
    case TP_VECTOR_AVX2: return (tp_sk_choice){tp_default_short_f32_avx2, tp_default_short_f64_avx2, 32, 1};
    default: break;
  }
#endif
  return (tp_sk_choice){tp_default_short_f32_baseline, tp_default_short_f64_baseline, 16, 1};
}

#define TP_SHORT_GEMM(T, sfx)                                                                    \
  typedef struct tp_sk_job_##sfx {                                                               \
    const topos_gemm_task *task;                                                                 \
    tp_sk_##sfx kernel;                                                                          \
    int64_t chunk, cols; /* columns per thread range; columns in whole vectors */                \
  } tp_sk_job_##sfx;                                                                             \
                                                                                                 \
  static void tp_sk_columns_##sfx(void *ctx, int64_t begin, int64_t end) {                       \
    const tp_sk_job_##sfx *job = ctx;                                                            \
    const topos_gemm_task *t = job->task;                                                        \
    const T *a = t->a, *b = t->b;                                                                \
    T *c = t->c;                                                                                 \
    int64_t j0 = begin * job->chunk, j1 = end * job->chunk < job->cols ? end * job->chunk : job->cols; \
    int64_t cols = j1 - j0;                                                                      \
    for (int64_t i0 = 0; i0 < t->m; i0 += TP_SK_ROWS) {                                          \
      int h = (int)(t->m - i0 < TP_SK_ROWS ? t->m - i0 : TP_SK_ROWS);                            \
      job->kernel(t->k, a + i0 * t->a_row_stride, t->a_row_stride, t->a_col_stride, b + j0,      \
                  t->b_row_stride, c + i0 * t->c_row_stride + j0, t->c_row_stride, h, cols);     \
    }                                                                                            \
  }                                                                                              \
                                                                                                 \
  bool tp_default_short_gemm_##sfx(const topos_gemm_task *t) {                                   \
    tp_sk_choice pick = tp_sk_pick();                                                            \
    int64_t width = pick.vector_bytes / (int64_t)sizeof(T), cols = t->n / width * width;         \
    if (t->m > TP_SK_MAX_M || t->k < 1 || t->b_col_stride != 1 || cols < 1) return false;       \
    int64_t chunk = width * pick.vectors, chunks = (cols + chunk - 1) / chunk;                   \
    tp_sk_job_##sfx job = {t, pick.sfx, chunk, cols};                                            \
    double flops = 2.0 * (double)t->m * (double)t->n * (double)t->k;                             \
    if (flops < 1e6 || tp_backend_threads() == 1 || chunks == 1)                                 \
      tp_sk_columns_##sfx(&job, 0, chunks);                                                      \
    else                                                                                         \
      tp_backend_parallel_for(chunks, 1, tp_sk_columns_##sfx, &job);                             \
    if (cols < t->n) { /* the last part-vector of columns: the reference loop over them alone */ \
      topos_gemm_task rest = *t;                                                                 \
      rest.b = (const T *)t->b + cols;                                                           \
      rest.c = (T *)t->c + cols;                                                                 \
      rest.n = t->n - cols;                                                                      \
      tp_reference_gemm_##sfx(&rest);                                                            \
    }                                                                                            \
    return true;                                                                                 \
  }

TP_SHORT_GEMM(float, f32)
TP_SHORT_GEMM(double, f64)
