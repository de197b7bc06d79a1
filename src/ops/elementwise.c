/* Reference kernels of the elementwise ops. Operands may have any layout
 * (strided, narrowed, transposed, stride-0 broadcast); they are read through
 * logical indices in row-major order and the reference kernels write a new
 * contiguous tensor. The backend is offered each op first and may answer
 * differently shaped in memory (never in value): a unary map over a broadcast
 * view computes the distinct elements once and returns them as a broadcast
 * view (backend/dispatch.c). One definition per op generates the f32, f64,
 * bf16 and f16 kernels (16-bit types compute in f32 and round once per
 * element). */
#include "backend/backend_internal.h"
#include "ops/kernel.h"

/* Scalar bodies over the compute type. */
#define TP_E_ADD(a, b) TP_FIRST_NAN(a, b, +)
#define TP_E_SUB(a, b) ((a) - (b))
#define TP_E_MUL(a, b) TP_FIRST_NAN(a, b, *)
#define TP_E_DIV(a, b) ((a) / (b))
#define TP_E_POW(a, b) TP_POW(a, b)
#define TP_E_MAXIMUM(a, b) TP_MAXIMUM(a, b)
/* step(a, t) = 1 when a >= t (ties give 1; NaN in either gives 0). */
#define TP_E_STEP(a, b) ((a) >= (b) ? 1 : 0)
#define TP_E_NEG(a) (-(a))
#define TP_E_EXP(a) TP_EXP(a)
#define TP_E_LN(a) TP_LOG(a)
#define TP_E_SQRT(a) TP_SQRT(a)
#define TP_E_TANH(a) TP_TANH(a)
/* relu(x) = maximum(x, 0): relu(-0) = +0, relu(NaN) = NaN (the masked
 * maximum: the same bits without sign-dependent branches). */
#define TP_E_RELU(a) TP_MAXIMUM_MASKED(a, 0)

#define TP_BINARY_OPS(X) \
  X(add, TP_E_ADD)       \
  X(sub, TP_E_SUB)       \
  X(mul, TP_E_MUL)       \
  X(div, TP_E_DIV)       \
  X(pow, TP_E_POW)       \
  X(maximum, TP_E_MAXIMUM) \
  X(step, TP_E_STEP)

#define TP_UNARY_OPS(X) \
  X(neg, TP_E_NEG)      \
  X(exp, TP_E_EXP)      \
  X(ln, TP_E_LN)        \
  X(sqrt, TP_E_SQRT)    \
  X(tanh, TP_E_TANH)    \
  X(relu, TP_E_RELU)

/* ---- binary: both operands have the output's shape */
#define TP_BINARY_KERNEL(sfx, DT, S, C, LD, ST, name, BODY)                               \
  static void tp_bin_##name##_##sfx(const topos_tensor *a, const topos_tensor *b,         \
                                    topos_tensor *out) {                                  \
    const S *pa = TP_ELEMS(const S, a), *pb = TP_ELEMS(const S, b);                       \
    S *po = (S *)tp_tensor_base(out);                                                     \
    int64_t inner = tp_inner_extent(a), sa = tp_inner_stride(a), sb = tp_inner_stride(b); \
    int64_t rows = a->volume / inner, k = 0;                                              \
    int64_t index[TOPOS_MAX_RANK] = {0};                                                  \
    for (int64_t row = 0; row < rows; ++row) {                                            \
      const S *ra = pa + tp_tensor_element_offset(a, index);                              \
      const S *rb = pb + tp_tensor_element_offset(b, index);                              \
      for (int64_t j = 0; j < inner; ++j) {                                               \
        C x = LD(ra[j * sa]), y = LD(rb[j * sb]);                                         \
        po[k++] = ST(BODY(x, y));                                                         \
      }                                                                                   \
      tp_next_row(a, index);                                                              \
    }                                                                                     \
  }
#define TP_BINARY_KERNELS(name, BODY) TP_FLOAT_DTYPES(TP_BINARY_KERNEL, name, BODY)
TP_BINARY_OPS(TP_BINARY_KERNELS)

#define TP_BINARY_FORWARD(name, BODY)                                                 \
  topos_status tp_forward_##name(topos_tensor *const *in, const topos_op_attrs *attrs,  \
                                 const topos_tensor_desc *desc, topos_tensor **out) {   \
    (void)attrs;                                                                        \
    TP_TRY(tp_kernel_float(#name, desc->dtype));                                        \
    topos_status offered = tp_backend_binary(tp_op_id_##name, in[0], in[1], out);       \
    if (offered != TOPOS_UNSUPPORTED) return offered;                                   \
    topos_tensor *result;                                                               \
    TP_TRY(tp_new_output(desc, &result));                                               \
    TP_DISPATCH_FLOAT(desc->dtype, tp_bin_##name, in[0], in[1], result);                       \
    *out = result;                                                                      \
    return TOPOS_OK;                                                                    \
  }
TP_BINARY_OPS(TP_BINARY_FORWARD)

/* ---- unary */
#define TP_UNARY_KERNEL(sfx, DT, S, C, LD, ST, name, BODY)                    \
  static void tp_un_##name##_##sfx(const topos_tensor *a, topos_tensor *out) { \
    const S *pa = TP_ELEMS(const S, a);                                       \
    S *po = (S *)tp_tensor_base(out);                                         \
    int64_t inner = tp_inner_extent(a), sa = tp_inner_stride(a);              \
    int64_t rows = a->volume / inner, k = 0;                                  \
    int64_t index[TOPOS_MAX_RANK] = {0};                                      \
    for (int64_t row = 0; row < rows; ++row) {                                \
      const S *ra = pa + tp_tensor_element_offset(a, index);                  \
      for (int64_t j = 0; j < inner; ++j) {                                   \
        C x = LD(ra[j * sa]);                                                 \
        po[k++] = ST(BODY(x));                                                \
      }                                                                       \
      tp_next_row(a, index);                                                  \
    }                                                                         \
  }
#define TP_UNARY_KERNELS(name, BODY) TP_FLOAT_DTYPES(TP_UNARY_KERNEL, name, BODY)
TP_UNARY_OPS(TP_UNARY_KERNELS)

#define TP_UNARY_FORWARD(name, BODY)                                                 \
  topos_status tp_forward_##name(topos_tensor *const *in, const topos_op_attrs *attrs,  \
                                 const topos_tensor_desc *desc, topos_tensor **out) {   \
    (void)attrs;                                                                        \
    TP_TRY(tp_kernel_float(#name, desc->dtype));                                        \
    topos_status offered = tp_backend_unary(tp_op_id_##name, in[0], out);               \
    if (offered != TOPOS_UNSUPPORTED) return offered;                                   \
    topos_tensor *result;                                                               \
    TP_TRY(tp_new_output(desc, &result));                                               \
    TP_DISPATCH_FLOAT(desc->dtype, tp_un_##name, in[0], result);                       \
    *out = result;                                                                      \
    return TOPOS_OK;                                                                    \
  }
TP_UNARY_OPS(TP_UNARY_FORWARD)
