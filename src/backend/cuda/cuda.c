/* The cuda member: cuBLAS products. cudart and cuBLAS are opened with dlopen
 * at first use, so the build never needs the CUDA toolkit and a missing
 * library or device is a status answer ("unavailable: ..."), not a build or
 * link failure. Setup also warms up (handle creation and one small product),
 * so the first large product does not pay it.
 *
 * Row-major C = A B is the column-major C^T = B^T A^T: the operands are
 * classified as for BLAS (operand.h), copied to the device as the spans they
 * cover (no host-side packing), multiplied and copied back; synchronous.
 * Any CUDA or cuBLAS error poisons the member (the chain falls back). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "backend/operand.h"

enum { TP_CUDA_H2D = 1, TP_CUDA_D2H = 2, TP_CUBLAS_OP_N = 0, TP_CUBLAS_OP_T = 1 };

static struct {
  int (*get_device_count)(int *);
  int (*malloc_)(void **, size_t);
  int (*free_)(void *);
  int (*memcpy_)(void *, const void *, size_t, int);
  int (*synchronize)(void);
  const char *(*error_string)(int);
  int (*runtime_version)(int *);
  int (*create)(void **);
  int (*sgemm)(void *, int, int, int, int, int, const float *, const float *, int, const float *,
               int, const float *, float *, int);
  int (*dgemm)(void *, int, int, int, int, int, const double *, const double *, int,
               const double *, int, const double *, double *, int);
  void *handle;
  int devices, version;
  char library[64];
} tp_cu;

static pthread_mutex_t tp_cuda_lock = PTHREAD_MUTEX_INITIALIZER;

static void *tp_cuda_open(const char *const *names, char *opened, size_t size, char *why,
                          size_t why_size) {
  for (int i = 0; names[i]; ++i) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      snprintf(opened, size, "%s", names[i]);
      return h;
    }
    if (i == 0) snprintf(why, why_size, "%s", dlerror());
  }
  return NULL;
}

#define TP_CUDA_SYM(lib, field, name)                                                 \
  do {                                                                                \
    *(void **)&tp_cu.field = dlsym(lib, name);                                        \
    if (!tp_cu.field)                                                                 \
      return tp_fail(TOPOS_ERR_BACKEND, "%s lacks %s", #lib, name);                   \
  } while (0)

static topos_status tp_cuda_setup(void) {
  static const char *const cudart[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so", NULL};
  static const char *const cublas[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL};
  char why[256] = "", name[64];
  void *rt = tp_cuda_open(cudart, name, sizeof name, why, sizeof why);
  if (!rt) return tp_fail(TOPOS_ERR_BACKEND, "libcudart not found (%s)", why);
  TP_CUDA_SYM(rt, get_device_count, "cudaGetDeviceCount");
  TP_CUDA_SYM(rt, malloc_, "cudaMalloc");
  TP_CUDA_SYM(rt, free_, "cudaFree");
  TP_CUDA_SYM(rt, memcpy_, "cudaMemcpy");
  TP_CUDA_SYM(rt, synchronize, "cudaDeviceSynchronize");
  TP_CUDA_SYM(rt, error_string, "cudaGetErrorString");
  TP_CUDA_SYM(rt, runtime_version, "cudaRuntimeGetVersion");
  tp_cu.runtime_version(&tp_cu.version);
  int err = tp_cu.get_device_count(&tp_cu.devices);
  if (err != 0 || tp_cu.devices < 1)
    return tp_fail(TOPOS_ERR_BACKEND, "no CUDA device (cudaGetDeviceCount: %s, %d devices)",
                   err ? tp_cu.error_string(err) : "ok", err ? 0 : tp_cu.devices);
  void *bl = tp_cuda_open(cublas, tp_cu.library, sizeof tp_cu.library, why, sizeof why);
  if (!bl) return tp_fail(TOPOS_ERR_BACKEND, "libcublas not found (%s)", why);
  TP_CUDA_SYM(bl, create, "cublasCreate_v2");
  TP_CUDA_SYM(bl, sgemm, "cublasSgemm_v2");
  TP_CUDA_SYM(bl, dgemm, "cublasDgemm_v2");
  int st = tp_cu.create(&tp_cu.handle);
  if (st != 0) return tp_fail(TOPOS_ERR_BACKEND, "cublasCreate failed (status %d)", st);
  /* Warm-up: one small product pays context creation and kernel loading. */
  float *d = NULL;
  const float one = 1, zero = 0;
  err = tp_cu.malloc_((void **)&d, 3 * 64 * sizeof(float));
  if (err) return tp_fail(TOPOS_ERR_BACKEND, "cudaMalloc (warm-up): %s", tp_cu.error_string(err));
  st = tp_cu.sgemm(tp_cu.handle, TP_CUBLAS_OP_N, TP_CUBLAS_OP_N, 8, 8, 8, &one, d, 8, d + 64, 8,
                   &zero, d + 128, 8);
  err = tp_cu.synchronize();
  tp_cu.free_(d);
  if (st || err)
    return tp_fail(TOPOS_ERR_BACKEND, "warm-up product failed (cublas %d, cuda %s)", st,
                   tp_cu.error_string(err));
  return TOPOS_OK;
}

#define TP_CUDA_TRY(expr, what)                                                              \
  do {                                                                                       \
    int tp_e_ = (expr);                                                                      \
    if (tp_e_) {                                                                             \
      status = tp_fail(TOPOS_ERR_BACKEND, "cuda %s: %s", what, tp_cu.error_string(tp_e_));  \
      goto done;                                                                             \
    }                                                                                        \
  } while (0)

#define TP_CUDA_GEMM(T, sfx, fn)                                                               \
  static topos_status tp_cuda_gemm_##sfx(const topos_gemm_task *t) {                          \
    tp_operand a, b;                                                                         \
    if (t->m == 1 || t->n == 1)                                                              \
      return tp_fail(TOPOS_UNSUPPORTED, "cuda: vector products stay on the host");           \
    if (t->c_row_stride != t->n || t->k > INT_MAX ||                                         \
        !tp_operand_classify(t->m, t->k, t->a_row_stride, t->a_col_stride, &a) ||            \
        !tp_operand_classify(t->k, t->n, t->b_row_stride, t->b_col_stride, &b))              \
      return tp_fail(TOPOS_UNSUPPORTED, "cuda: strides have no BLAS form");                  \
    topos_status status = TOPOS_OK;                                                          \
    T *da = NULL, *db = NULL, *dc = NULL;                                                    \
    const T one = 1, zero = 0;                                                               \
    size_t sc = (size_t)(t->m * t->n) * sizeof(T);                                           \
    pthread_mutex_lock(&tp_cuda_lock);                                                       \
    TP_CUDA_TRY(tp_cu.malloc_((void **)&da, (size_t)a.span * sizeof(T)), "cudaMalloc A");    \
    TP_CUDA_TRY(tp_cu.malloc_((void **)&db, (size_t)b.span * sizeof(T)), "cudaMalloc B");    \
    TP_CUDA_TRY(tp_cu.malloc_((void **)&dc, sc), "cudaMalloc C");                            \
    TP_CUDA_TRY(tp_cu.memcpy_(da, t->a, (size_t)a.span * sizeof(T), TP_CUDA_H2D), "copy A"); \
    TP_CUDA_TRY(tp_cu.memcpy_(db, t->b, (size_t)b.span * sizeof(T), TP_CUDA_H2D), "copy B"); \
    {                                                                                        \
      int st = tp_cu.fn(tp_cu.handle, b.transposed ? TP_CUBLAS_OP_T : TP_CUBLAS_OP_N,        \
                        a.transposed ? TP_CUBLAS_OP_T : TP_CUBLAS_OP_N, (int)t->n, (int)t->m, \
                        (int)t->k, &one, db, b.ld, da, a.ld, &zero, dc, (int)t->n);          \
      if (st) {                                                                              \
        status = tp_fail(TOPOS_ERR_BACKEND, "cublas gemm failed (status %d)", st);           \
        goto done;                                                                           \
      }                                                                                      \
    }                                                                                        \
    TP_CUDA_TRY(tp_cu.memcpy_(t->c, dc, sc, TP_CUDA_D2H), "copy C");                        \
  done:                                                                                      \
    if (da) tp_cu.free_(da);                                                                 \
    if (db) tp_cu.free_(db);                                                                 \
    if (dc) tp_cu.free_(dc);                                                                 \
    pthread_mutex_unlock(&tp_cuda_lock);                                                     \
    return status;                                                                           \
  }
TP_CUDA_GEMM(float, f32, sgemm)
TP_CUDA_GEMM(double, f64, dgemm)

static const char *tp_cuda_describe(void) {
  static char text[160];
  snprintf(text, sizeof text, "cuBLAS (%s), CUDA runtime %d, %d device(s), copies per product",
           tp_cu.library, tp_cu.version, tp_cu.devices);
  return text;
}

const tp_kernels tp_kernels_cuda = {tp_cuda_setup, tp_cuda_gemm_f32, tp_cuda_gemm_f64, NULL, NULL,
                                    tp_cuda_describe};
