/* The accelerate member: Apple's BLAS (AMX on Apple Silicon) for products
 * and vForce for maps. The framework is opened with dlopen at first use, so
 * the build needs no framework flags; on other systems the member reports
 * itself not available. Products share the blas rung's operand mapping. */
#include <dlfcn.h>
#include <stdio.h>

#include "backend/backend_internal.h"
#include "backend/operand.h"

enum { TP_ROW_MAJOR = 101, TP_NO_TRANS = 111, TP_TRANS = 112 };
typedef void (*tp_sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                            const float *, int, float, float *, int);
typedef void (*tp_dgemm_fn)(int, int, int, int, int, int, double, const double *, int,
                            const double *, int, double, double *, int);
typedef void (*tp_vf_fn)(float *, const float *, const int *);
typedef void (*tp_vd_fn)(double *, const double *, const int *);

static struct {
  tp_sgemm_fn sgemm;
  tp_dgemm_fn dgemm;
  tp_vf_fn vf[4];
  tp_vd_fn vd[4];
} tp_acc;

static topos_status tp_accelerate_setup(void) {
#if defined(__APPLE__)
  void *h = dlopen("/System/Library/Frameworks/Accelerate.framework/Accelerate", RTLD_NOW | RTLD_LOCAL);
  if (!h) return tp_fail(TOPOS_ERR_BACKEND, "Accelerate.framework not found (%s)", dlerror());
  static const char *const vf[4] = {"vvexpf", "vvlogf", "vvsqrtf", "vvtanhf"};
  static const char *const vd[4] = {"vvexp", "vvlog", "vvsqrt", "vvtanh"};
  *(void **)&tp_acc.sgemm = dlsym(h, "cblas_sgemm");
  *(void **)&tp_acc.dgemm = dlsym(h, "cblas_dgemm");
  for (int i = 0; i < 4; ++i) {
    *(void **)&tp_acc.vf[i] = dlsym(h, vf[i]);
    *(void **)&tp_acc.vd[i] = dlsym(h, vd[i]);
  }
  if (!tp_acc.sgemm || !tp_acc.dgemm)
    return tp_fail(TOPOS_ERR_BACKEND, "Accelerate.framework lacks cblas_sgemm/cblas_dgemm");
  return TOPOS_OK;
#else
  return tp_fail(TOPOS_ERR_BACKEND, "platform unsupported: Accelerate exists only on macOS");
#endif
}

#define TP_ACC_GEMM(T, sfx, field)                                                            \
  static topos_status tp_accelerate_gemm_##sfx(const topos_gemm_task *t) {                     \
    tp_operand a, b;                                                                          \
    if (t->c_row_stride > INT_MAX || t->k > INT_MAX ||                                        \
        !tp_operand_classify(t->m, t->k, t->a_row_stride, t->a_col_stride, &a) ||             \
        !tp_operand_classify(t->k, t->n, t->b_row_stride, t->b_col_stride, &b))               \
      return tp_fail(TOPOS_UNSUPPORTED, "accelerate: strides have no BLAS form");             \
    tp_acc.field(TP_ROW_MAJOR, a.transposed ? TP_TRANS : TP_NO_TRANS,                         \
                 b.transposed ? TP_TRANS : TP_NO_TRANS, (int)t->m, (int)t->n, (int)t->k,      \
                 (T)1, (const T *)t->a, a.ld, (const T *)t->b, b.ld, (T)0, (T *)t->c,         \
                 (int)(t->c_row_stride < t->n ? t->n : t->c_row_stride));                     \
    return TOPOS_OK;                                                                          \
  }
TP_ACC_GEMM(float, f32, sgemm)
TP_ACC_GEMM(double, f64, dgemm)

#define TP_ACC_MAP(T, sfx, table)                                                              \
  static topos_status tp_accelerate_map_##sfx(topos_map_op op, const void *in, void *out,     \
                                              int64_t count) {                                \
    if ((unsigned)op > TOPOS_MAP_TANH || !tp_acc.table[op] || count > INT_MAX)                \
      return TOPOS_UNSUPPORTED;                                                               \
    int n = (int)count;                                                                       \
    tp_acc.table[op]((T *)out, (const T *)in, &n);                                            \
    return TOPOS_OK;                                                                          \
  }
TP_ACC_MAP(float, f32, vf)
TP_ACC_MAP(double, f64, vd)

static const char *tp_accelerate_describe(void) { return "Accelerate BLAS + vForce (dlopen)"; }

const tp_kernels tp_kernels_accelerate = {tp_accelerate_setup, tp_accelerate_gemm_f32,
                                          tp_accelerate_gemm_f64, tp_accelerate_map_f32,
                                          tp_accelerate_map_f64, tp_accelerate_describe};
