/* The blas rung: cblas_sgemm / cblas_dgemm (OpenBLAS by default; BLIS or
 * MKL with TOPOS_BLAS_VENDOR). Operands go straight from the views: each is
 * classified as no-transpose or transpose with its leading dimension
 * (operand.h), never copied; strides BLAS cannot express decline. */
#include <pthread.h>
#include <stdio.h>

#if defined(TOPOS_BLAS_VENDOR_mkl)
#include <mkl_cblas.h>
#else
#include <cblas.h>
#endif

#include "backend/backend_internal.h"
#include "backend/operand.h"
#include "backend/platform.h"

/* Thread count never changes a bit, but a BLAS's results may depend on the
 * threads it runs and on the shape of each call: OpenBLAS 0.3.21 on a Zen 3
 * core (its Haswell kernels) gave different bits for one product at 1, 2 and
 * 3 threads, and for a product computed whole or in row slices. So the
 * library runs on one thread, and a product is cut into tiles of C of a
 * fixed size (a function of m and n only), one call each, spread over
 * topos's threads: the calls, and so the bits, are the same at every thread
 * count. The extra packing is (BM + BN) / (BM * BN) of the work, ~1 %. */
#define TP_BLAS_TILE_M 128
#define TP_BLAS_TILE_N 512

#if defined(TOPOS_BLAS_VENDOR_openblas)
static void tp_blas_set_one_thread(void) { openblas_set_num_threads(1); }
/* Once, and finished before any call: a worker that saw a flag set while
 * the setter was still inside openblas_set_num_threads could call sgemm
 * on OpenBLAS's default threads. */
static void tp_blas_one_thread(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, tp_blas_set_one_thread);
}
#else /* BLIS and MKL: their default threading is left alone (not measured here) */
static void tp_blas_one_thread(void) {}
#endif

static bool tp_blas_plan(const topos_gemm_task *t, tp_operand *a, tp_operand *b) {
  if (t->c_row_stride > INT_MAX || t->k > INT_MAX) return false;
  return tp_operand_classify(t->m, t->k, t->a_row_stride, t->a_col_stride, a) &&
         tp_operand_classify(t->k, t->n, t->b_row_stride, t->b_col_stride, b);
}

typedef struct {
  const topos_gemm_task *t;
  tp_operand a, b;
  int64_t tiles_n; /* tiles per row of tiles */
} tp_blas_job;

#define TP_BLAS_GEMM(T, sfx, fn)                                                                      \
  static void tp_blas_tiles_##sfx(void *vjob, int64_t begin, int64_t end) {                         \
    const tp_blas_job *j = vjob;                                                                      \
    const topos_gemm_task *t = j->t;                                                                  \
    const int64_t ldc = t->c_row_stride < t->n ? t->n : t->c_row_stride;                              \
    for (int64_t tile = begin; tile < end; ++tile) {                                                  \
      const int64_t i0 = tile / j->tiles_n * TP_BLAS_TILE_M, j0 = tile % j->tiles_n * TP_BLAS_TILE_N; \
      const int64_t mm = t->m - i0 < TP_BLAS_TILE_M ? t->m - i0 : TP_BLAS_TILE_M;                     \
      const int64_t nn = t->n - j0 < TP_BLAS_TILE_N ? t->n - j0 : TP_BLAS_TILE_N;                     \
      fn(CblasRowMajor, j->a.transposed ? CblasTrans : CblasNoTrans,                                  \
         j->b.transposed ? CblasTrans : CblasNoTrans, (int)mm, (int)nn, (int)t->k, (T)1,              \
         (const T *)t->a + i0 * t->a_row_stride, j->a.ld, (const T *)t->b + j0 * t->b_col_stride,     \
         j->b.ld, (T)0, (T *)t->c + i0 * ldc + j0, (int)ldc);                                         \
    }                                                                                                 \
  }                                                                                                   \
  static topos_status tp_blas_gemm_##sfx(const topos_gemm_task *t) {                                  \
    tp_blas_job job = {t, {0}, {0}, (t->n + TP_BLAS_TILE_N - 1) / TP_BLAS_TILE_N};                    \
    if (!tp_blas_plan(t, &job.a, &job.b))                                                             \
      return tp_fail(TOPOS_UNSUPPORTED, "blas: strides A (%lld,%lld) B (%lld,%lld) have "             \
                     "no transpose/leading-dimension form",                                           \
                     (long long)t->a_row_stride, (long long)t->a_col_stride,                          \
                     (long long)t->b_row_stride, (long long)t->b_col_stride);                         \
    const int64_t tiles = (t->m + TP_BLAS_TILE_M - 1) / TP_BLAS_TILE_M * job.tiles_n;                 \
    tp_blas_one_thread();                                                                             \
    tp_backend_parallel_for(tiles, 1, tp_blas_tiles_##sfx, &job);                                     \
    return TOPOS_OK;                                                                                  \
  }
TP_BLAS_GEMM(float, f32, cblas_sgemm)
TP_BLAS_GEMM(double, f64, cblas_dgemm)

static const char *tp_blas_describe(void) {
  static char text[160];
#if defined(TOPOS_BLAS_VENDOR_openblas)
  snprintf(text, sizeof text, "%s, core %s", openblas_get_config(), openblas_get_corename());
#elif defined(TOPOS_BLAS_VENDOR_blis)
  snprintf(text, sizeof text, "BLIS (CBLAS)");
#else
  snprintf(text, sizeof text, "MKL (CBLAS)");
#endif
  return text;
}

const tp_kernels tp_kernels_blas = {NULL, tp_blas_gemm_f32, tp_blas_gemm_f64, NULL, NULL,
                                    tp_blas_describe};
