/* Internal: what the reference kernels share — the per-dtype list that
 * generates them, type-generic math, and layout walking.
 *
 * Every float kernel is written once as a macro over
 *   (suffix, storage type S, compute type C, LOAD: S -> C, STORE: C -> S)
 * and instantiated by TP_FLOAT_DTYPES for f32, f64, bf16 and f16. bf16 and
 * f16 compute in f32 (C = float) and round to nearest even once, when the
 * op's result is stored; reductions therefore accumulate in f32. */
#ifndef TP_OPS_KERNEL_H
#define TP_OPS_KERNEL_H

#include <math.h>
#include <string.h>

#include "base/error.h"
#include "ops/op_table.h"
#include "tensor/tensor_internal.h"

static inline float tp_ld_f32(float v) { return v; }
static inline double tp_ld_f64(double v) { return v; }
static inline float tp_st_f32(float v) { return v; }
static inline double tp_st_f64(double v) { return v; }

/* X(suffix, dtype, S, C, LOAD, STORE, extra...) — extra arguments are passed
 * through so a second list (ops) can nest over this one. */
#define TP_FLOAT_DTYPES(X, ...)                                                   \
  X(f32, TOPOS_F32, float, float, tp_ld_f32, tp_st_f32, __VA_ARGS__)            \
  X(f64, TOPOS_F64, double, double, tp_ld_f64, tp_st_f64, __VA_ARGS__)          \
  X(bf16, TOPOS_BF16, uint16_t, float, topos_bf16_to_f32, topos_f32_to_bf16, __VA_ARGS__) \
  X(f16, TOPOS_F16, uint16_t, float, topos_f16_to_f32, topos_f32_to_f16, __VA_ARGS__)

/* Dispatch on a float dtype to fn##_<suffix>(args). Only reached after the
 * shape rule accepted the operands, so every other dtype is impossible here;
 * callers check topos_dtype_is_float() before allocating anyway. */
#define TP_DISPATCH_CASE_(sfx, DT, S, C, LD, ST, fn, ...) \
  case DT:                                                \
    fn##_##sfx(__VA_ARGS__);                              \
    break;
#define TP_DISPATCH_FLOAT(dtype, fn, ...)                 \
  do {                                                    \
    switch (dtype) {                                      \
      TP_FLOAT_DTYPES(TP_DISPATCH_CASE_, fn, __VA_ARGS__) \
      default:                                            \
        break;                                            \
    }                                                     \
  } while (0)

/* The guard every float kernel entry runs before allocating. */
static inline topos_status tp_kernel_float(const char *op, topos_dtype dtype) {
  if (topos_dtype_is_float(dtype)) return TOPOS_OK;
  return tp_fail(TOPOS_ERR_INTERNAL, "%s: dtype %s reached a float kernel", op,
                 topos_dtype_name(dtype));
}

/* libm by compute type: f32 functions for f32 (and the 16-bit types), f64
 * functions for f64. */
#define TP_EXP(x) _Generic((x), float: expf, double: exp)(x)
#define TP_LOG(x) _Generic((x), float: logf, double: log)(x)
#define TP_SQRT(x) _Generic((x), float: sqrtf, double: sqrt)(x)
#define TP_TANH(x) _Generic((x), float: tanhf, double: tanh)(x)
#define TP_POW(x, y) _Generic((x), float: powf, double: pow)(x, y)

/* a OP b returning the first operand's NaN (quieted) when both are NaN, as
 * x86's addss / mulss return their first source's. The compiler may swap the
 * operands of a commutative operation (clang does, to save a register move),
 * which would hand out the second NaN and make the bits depend on the
 * compiler; a NaN first operand is therefore returned explicitly (a + a: a
 * itself, quieted). One NaN operand comes out whichever order. Every add and
 * mul kernel (reference, default rung, fused steps replaying composed
 * elementwise steps) computes through this. Both results are computed and
 * one is picked by a mask: a conditional `a != a ? a + a : a * b` keeps gcc
 * and clang from vectorising the loop (measured 3-5x slower at -O3). */
#define TP_NAN_FIRST_BODY_(T, U)                                \
  static inline T tp_nan_first_##T(T a, T r) {                  \
    const T q = a + a;                                          \
    U ur, uq;                                                   \
    const U nan = (U)0 - (U)(a != a);                           \
    memcpy(&ur, &r, sizeof r);                                  \
    memcpy(&uq, &q, sizeof q);                                  \
    ur = (ur & ~nan) | (uq & nan);                              \
    memcpy(&r, &ur, sizeof r);                                  \
    return r;                                                   \
  }
TP_NAN_FIRST_BODY_(float, uint32_t)
TP_NAN_FIRST_BODY_(double, uint64_t)
#undef TP_NAN_FIRST_BODY_
#define TP_FIRST_NAN(a, b, op) \
  _Generic((a), float: tp_nan_first_float, double: tp_nan_first_double)((a), (a)op(b))

/* maximum: NaN in either operand gives that NaN (the first one when both);
 * -0 < +0, so maximum(-0, +0) = maximum(+0, -0) = +0; otherwise the larger. */
#define TP_MAXIMUM_BODY_(T)                   \
  static inline T tp_maximum_##T(T a, T b) {  \
    if (a != a) return a;                     \
    if (b != b) return b;                     \
    if (a == b) return signbit(a) ? b : a;    \
    return a > b ? a : b;                     \
  }
TP_MAXIMUM_BODY_(float)
TP_MAXIMUM_BODY_(double)
#undef TP_MAXIMUM_BODY_
#define TP_MAXIMUM(x, y) _Generic((x), float: tp_maximum_float, double: tp_maximum_double)(x, y)

/* The same function with masks instead of branches (equal operands: the AND
 * of the bits, which is -0 only when both are -0). Fast paths use it: a
 * max-pool or relu over random signs and many equal zeros mispredicted the
 * branches. Tested against TP_MAXIMUM over all pairs of special values. */
#define TP_MAXIMUM_MASKED_BODY_(T, U)                                         \
  static inline T tp_maximum_masked_##T(T a, T b) {                           \
    U ua, ub, ug, r;                                                          \
    T g = a > b ? a : b;                                                      \
    memcpy(&ua, &a, sizeof a);                                                \
    memcpy(&ub, &b, sizeof b);                                                \
    memcpy(&ug, &g, sizeof g);                                                \
    U eq = (U)0 - (U)(a == b), an = (U)0 - (U)(a != a);                       \
    U bn = ((U)0 - (U)(b != b)) & ~an;                                        \
    r = (ug & ~eq) | (ua & ub & eq);                                          \
    r = (r & ~an) | (ua & an);                                                \
    r = (r & ~bn) | (ub & bn);                                                \
    memcpy(&g, &r, sizeof g);                                                 \
    return g;                                                                 \
  }
TP_MAXIMUM_MASKED_BODY_(float, uint32_t)
TP_MAXIMUM_MASKED_BODY_(double, uint64_t)
#undef TP_MAXIMUM_MASKED_BODY_
#define TP_MAXIMUM_MASKED(x, y) \
  _Generic((x), float: tp_maximum_masked_float, double: tp_maximum_masked_double)(x, y)

/* Typed element pointer of a tensor's storage (element offsets index it). */
#define TP_ELEMS(S, t) ((S *)(t)->storage->data)

/* Row walk: a tensor's logical elements in row-major order as rows of the last
 * axis. `index` holds the row's position (last entry always 0). */
static inline int64_t tp_inner_extent(const topos_tensor *t) {
  return t->rank > 0 ? t->shape[t->rank - 1] : 1;
}
static inline int64_t tp_inner_stride(const topos_tensor *t) {
  return t->rank > 0 ? t->strides[t->rank - 1] : 0;
}
/* Advances index over the outer axes (all but the last). */
static inline void tp_next_row(const topos_tensor *t, int64_t *index) {
  if (t->rank > 1) tp_index_next(t->rank - 1, t->shape, index);
}

/* count accumulators in dtype's compute type (f64 for f64, else f32): a plan
 * run's scratch when one is installed, else the heap. Release with
 * tp_scratch_free(*acc, *heap). count is an output's extent or volume, so the
 * byte size cannot wrap. */
static inline topos_status tp_accumulators(const char *op, topos_dtype dtype, int64_t count,
                                           void **acc, bool *heap) {
  size_t size = dtype == TOPOS_F64 ? sizeof(double) : sizeof(float);
  *acc = tp_scratch_alloc((size_t)count * size, heap);
  if (!*acc)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "%s: no memory for %lld accumulators", op,
                   (long long)count);
  return TOPOS_OK;
}

/* A new contiguous output described by desc. */
static inline topos_status tp_new_output(const topos_tensor_desc *desc, topos_tensor **out) {
  return tp_tensor_empty(desc->dtype, desc->rank, desc->shape, out);
}

#endif
