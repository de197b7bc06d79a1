/* Reference reductions: sum, sum_along, log_softmax, log_sum_exp.
 *
 * Fixed order (the specification every faster path must reproduce):
 *   sum:         all elements in row-major logical order, seeded with the
 *                first element (not zero), then left to right;
 *   sum_along:   per output element, seeded with the first element along the
 *                axis, then ascending;
 *   log_softmax: per lane along the axis, peak = maximum over the lane
 *                (ascending, NaN-propagating), s = sum of exp(x - peak) seeded
 *                with the first term, ascending; y = (x - peak) - ln(s);
 *   log_sum_exp: the same peak and s; y = peak + ln(s), the axis removed.
 * Non-finite peaks: log_softmax follows its formula, so a lane holding +inf,
 * a NaN, or only -inf is NaN throughout (there is no distribution).
 * log_sum_exp returns the peak itself when it is infinite: a lane of only
 * -inf gives -inf (the log of an empty sum) and a lane holding +inf gives
 * +inf; a NaN anywhere in the lane gives NaN.
 * bf16/f16 compute in f32 end to end and round once per output element. */
#include "ops/kernel.h"

/* ---- sum */
#define TP_SUM_KERNEL(sfx, DT, S, C, LD, ST, unused)                     \
  static void tp_sum_##sfx(const topos_tensor *a, topos_tensor *out) {   \
    const S *pa = TP_ELEMS(const S, a);                                  \
    int64_t inner = tp_inner_extent(a), sa = tp_inner_stride(a);         \
    int64_t rows = a->volume / inner;                                    \
    int64_t index[TOPOS_MAX_RANK] = {0};                                 \
    C acc = LD(pa[a->offset]);                                           \
    for (int64_t row = 0; row < rows; ++row) {                           \
      const S *ra = pa + tp_tensor_element_offset(a, index);             \
      for (int64_t j = row == 0 ? 1 : 0; j < inner; ++j) acc += LD(ra[j * sa]); \
      tp_next_row(a, index);                                             \
    }                                                                    \
    *(S *)tp_tensor_base(out) = ST(acc);                                 \
  }
TP_FLOAT_DTYPES(TP_SUM_KERNEL, 0)

topos_status tp_forward_sum(topos_tensor *const *in, const topos_op_attrs *attrs,
                            const topos_tensor_desc *desc, topos_tensor **out) {
  (void)attrs;
  TP_TRY(tp_kernel_float("sum", desc->dtype));
  topos_tensor *result;
  TP_TRY(tp_new_output(desc, &result));
  TP_DISPATCH_FLOAT(desc->dtype, tp_sum, in[0], result);
  *out = result;
  return TOPOS_OK;
}

/* Lanes along `axis`: `lanes` holds a's shape with the axis set to 1, so an
 * odometer over it visits each lane's first element in row-major order of
 * the remaining axes — which is the row-major order of the reduced output. */
static int64_t tp_lane_shape(const topos_tensor *a, int axis, int64_t *lanes) {
  int64_t count = 1;
  for (int i = 0; i < a->rank; ++i) {
    lanes[i] = i == axis ? 1 : a->shape[i];
    count *= lanes[i];
  }
  return count;
}

/* The entry of each op along an axis: a new output, the dtype's kernel. */
#define TP_AXIS_FORWARD(name)                                                              \
  topos_status tp_forward_##name(topos_tensor *const *in, const topos_op_attrs *attrs,     \
                                 const topos_tensor_desc *desc, topos_tensor **out) {      \
    TP_TRY(tp_kernel_float(#name, desc->dtype));                                           \
    topos_tensor *result;                                                                  \
    TP_TRY(tp_new_output(desc, &result));                                                  \
    TP_DISPATCH_FLOAT(desc->dtype, tp_##name, in[0], attrs->axis, result);                 \
    *out = result;                                                                         \
    return TOPOS_OK;                                                                       \
  }

/* ---- sum_along */
/* W lanes side by side with a constant width (the accumulators stay in
 * registers instead of a stack array reloaded every row); each lane's sum
 * is the same ascending one. */
#define TP_SUM_ALONG_FIXED_(W_, C, LD, ST, x, o, extent, stride)                         \
  do {                                                                                   \
    if ((W_) == 8) {                                                                     \
      C acc_[8];                                                                         \
      for (int i_ = 0; i_ < 8; ++i_) acc_[i_] = LD((x)[i_]);                             \
      for (int64_t k_ = 1; k_ < (extent); ++k_)                                          \
        for (int i_ = 0; i_ < 8; ++i_) acc_[i_] += LD((x)[k_ * (stride) + i_]);          \
      for (int i_ = 0; i_ < 8; ++i_) (o)[i_] = ST(acc_[i_]);                             \
    } else {                                                                             \
      C acc_[16];                                                                        \
      for (int i_ = 0; i_ < 16; ++i_) acc_[i_] = LD((x)[i_]);                            \
      for (int64_t k_ = 1; k_ < (extent); ++k_)                                          \
        for (int i_ = 0; i_ < 16; ++i_) acc_[i_] += LD((x)[k_ * (stride) + i_]);         \
      for (int i_ = 0; i_ < 16; ++i_) (o)[i_] = ST(acc_[i_]);                            \
    }                                                                                    \
  } while (0)
#define TP_SUM_ALONG_KERNEL(sfx, DT, S, C, LD, ST, unused)                               \
  static void tp_sum_along_##sfx(const topos_tensor *a, int axis, topos_tensor *out) {   \
    const S *pa = TP_ELEMS(const S, a);                                                  \
    S *po = (S *)tp_tensor_base(out);                                                    \
    int64_t lanes[TOPOS_MAX_RANK], index[TOPOS_MAX_RANK] = {0};                          \
    int64_t count = tp_lane_shape(a, axis, lanes);                                       \
    int64_t extent = a->shape[axis], stride = a->strides[axis];                          \
    /* the axes after `axis` one contiguous run (a bias gradient's [rows, C]):  */       \
    /* a block of lanes side by side, each still its own ascending sum          */       \
    int64_t inner = 1, expect = 1;                                                       \
    bool run = extent > 1;                                                               \
    for (int i = a->rank - 1; i > axis; --i) {                                           \
      run = run && (a->shape[i] == 1 || a->strides[i] == expect);                        \
      expect *= a->shape[i];                                                             \
      inner *= a->shape[i];                                                              \
    }                                                                                    \
    if (run && inner > 1 && stride == inner) {                                           \
      int64_t outer = count / inner;                                                     \
      for (int64_t o = 0; o < outer; ++o) {                                              \
        const S *x = pa + tp_tensor_element_offset(a, index);                            \
        for (int64_t i0 = 0; i0 < inner; i0 += 64) {                                     \
          int64_t w = inner - i0 < 64 ? inner - i0 : 64;                                 \
          if (w == 8 || w == 16) { /* a bias gradient's channels: sums in registers */  \
            TP_SUM_ALONG_FIXED_(w == 8 ? 8 : 16, C, LD, ST, x + i0, po + o * inner + i0,  \
                                extent, stride);                                         \
            continue;                                                                    \
          }                                                                              \
          C acc[64];                                                                     \
          for (int64_t i = 0; i < w; ++i) acc[i] = LD(x[i0 + i]);                        \
          for (int64_t k = 1; k < extent; ++k)                                           \
            for (int64_t i = 0; i < w; ++i) acc[i] += LD(x[k * stride + i0 + i]);        \
          for (int64_t i = 0; i < w; ++i) po[o * inner + i0 + i] = ST(acc[i]);           \
        }                                                                                \
        for (int64_t i = 0; i < inner; ++i) tp_index_next(a->rank, lanes, index);        \
      }                                                                                  \
      return;                                                                            \
    }                                                                                    \
    for (int64_t lane = 0; lane < count; ++lane) {                                       \
      const S *x = pa + tp_tensor_element_offset(a, index);                              \
      C acc = LD(x[0]);                                                                  \
      for (int64_t k = 1; k < extent; ++k) acc += LD(x[k * stride]);                     \
      po[lane] = ST(acc);                                                                \
      tp_index_next(a->rank, lanes, index);                                              \
    }                                                                                    \
  }
TP_FLOAT_DTYPES(TP_SUM_ALONG_KERNEL, 0)

TP_AXIS_FORWARD(sum_along)

/* ---- log_softmax and log_sum_exp share the lane walk */
#define TP_PEAK_AND_SUM_(C, LD, x, extent, stride, peak, s)                      \
  C peak = LD(x[0]);                                                             \
  for (int64_t k = 1; k < extent; ++k) peak = TP_MAXIMUM(peak, LD(x[k * stride])); \
  C s = TP_EXP(LD(x[0]) - peak);                                                 \
  for (int64_t k = 1; k < extent; ++k) s += TP_EXP(LD(x[k * stride]) - peak);

#define TP_LOG_SOFTMAX_KERNEL(sfx, DT, S, C, LD, ST, unused)                                 \
  static void tp_log_softmax_##sfx(const topos_tensor *a, int axis, topos_tensor *out) {     \
    const S *pa = TP_ELEMS(const S, a);                                                      \
    S *po = TP_ELEMS(S, out);                                                                \
    int64_t lanes[TOPOS_MAX_RANK], index[TOPOS_MAX_RANK] = {0};                              \
    int64_t count = tp_lane_shape(a, axis, lanes);                                           \
    int64_t extent = a->shape[axis], stride = a->strides[axis], ostride = out->strides[axis]; \
    for (int64_t lane = 0; lane < count; ++lane) {                                           \
      const S *x = pa + tp_tensor_element_offset(a, index);                                  \
      S *y = po + tp_tensor_element_offset(out, index);                                      \
      TP_PEAK_AND_SUM_(C, LD, x, extent, stride, peak, s)                                    \
      C log_s = TP_LOG(s);                                                                   \
      for (int64_t k = 0; k < extent; ++k) y[k * ostride] = ST((LD(x[k * stride]) - peak) - log_s); \
      tp_index_next(a->rank, lanes, index);                                                  \
    }                                                                                        \
  }
TP_FLOAT_DTYPES(TP_LOG_SOFTMAX_KERNEL, 0)

#define TP_LOG_SUM_EXP_KERNEL(sfx, DT, S, C, LD, ST, unused)                               \
  static void tp_log_sum_exp_##sfx(const topos_tensor *a, int axis, topos_tensor *out) {   \
    const S *pa = TP_ELEMS(const S, a);                                                    \
    S *po = (S *)tp_tensor_base(out);                                                      \
    int64_t lanes[TOPOS_MAX_RANK], index[TOPOS_MAX_RANK] = {0};                            \
    int64_t count = tp_lane_shape(a, axis, lanes);                                         \
    int64_t extent = a->shape[axis], stride = a->strides[axis];                            \
    for (int64_t lane = 0; lane < count; ++lane) {                                         \
      const S *x = pa + tp_tensor_element_offset(a, index);                                \
      TP_PEAK_AND_SUM_(C, LD, x, extent, stride, peak, s)                                  \
      po[lane] = ST(isinf(peak) ? peak : peak + TP_LOG(s));                                \
      tp_index_next(a->rank, lanes, index);                                                \
    }                                                                                      \
  }
TP_FLOAT_DTYPES(TP_LOG_SUM_EXP_KERNEL, 0)

TP_AXIS_FORWARD(log_softmax)

TP_AXIS_FORWARD(log_sum_exp)
