/* The blas rung: cblas_sgemm / cblas_dgemm (OpenBLAS by default; BLIS or
 * MKL with TOPOS_BLAS_VENDOR). Operands go straight from the views: each is
 * classified as no-transpose or transpose with its leading dimension
 * (operand.h), never copied; strides BLAS cannot express decline. */
#include <stdatomic.h>
#include <stdio.h>

#if defined(TOPOS_BLAS_VENDOR_mkl)
#include <mkl_cblas.h>
#else
#include <cblas.h>
#endif

#include "backend/backend_internal.h"
#include "backend/operand.h"
#include "backend/platform.h"

#if defined(TOPOS_BLAS_VENDOR_openblas)
static atomic_int tp_blas_threads;
/* OpenBLAS runs its own threads; give it the same count as the rest. */
static void tp_blas_sync_threads(void) {
  int want = tp_backend_threads();
  if (atomic_exchange(&tp_blas_threads, want) != want) openblas_set_num_threads(want);
}
#else
static void tp_blas_sync_threads(void) {}
#endif

static bool tp_blas_plan(const topos_gemm_task *t, tp_operand *a, tp_operand *b) {
  if (t->c_row_stride > INT_MAX || t->k > INT_MAX) return false;
  return tp_operand_classify(t->m, t->k, t->a_row_stride, t->a_col_stride, a) &&
         tp_operand_classify(t->k, t->n, t->b_row_stride, t->b_col_stride, b);
}

#define TP_BLAS_GEMM(T, sfx, fn)                                                          \
  static topos_status tp_blas_gemm_##sfx(const topos_gemm_task *t) {                       \
    tp_operand a, b;                                                                      \
    if (!tp_blas_plan(t, &a, &b))                                                         \
      return tp_fail(TOPOS_UNSUPPORTED, "blas: strides A (%lld,%lld) B (%lld,%lld) have " \
                     "no transpose/leading-dimension form",                               \
                     (long long)t->a_row_stride, (long long)t->a_col_stride,              \
                     (long long)t->b_row_stride, (long long)t->b_col_stride);             \
    tp_blas_sync_threads();                                                               \
    fn(CblasRowMajor, a.transposed ? CblasTrans : CblasNoTrans,                           \
       b.transposed ? CblasTrans : CblasNoTrans, (int)t->m, (int)t->n, (int)t->k, (T)1,   \
       (const T *)t->a, a.ld, (const T *)t->b, b.ld, (T)0, (T *)t->c,                     \
       (int)(t->c_row_stride < t->n ? t->n : t->c_row_stride));                           \
    return TOPOS_OK;                                                                      \
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
