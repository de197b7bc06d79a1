/* Reference matmul: [..., m, k] x [..., k, n] -> [..., m, n] with identical
 * batch axes. Each output element is its own accumulator, seeded with the
 * FIRST product a[i,0]*b[0,j] (not with zero, so a sum of -0.0 products stays
 * -0.0), then k ascending. The loops run i, k, j so each row of b is read
 * contiguously when b is; the per-element summation order is still exactly
 * k = 0, 1, ..., K-1. bf16/f16 accumulate in f32 and round once. */
#include <stdlib.h>

#include "backend/backend_internal.h"
#include "ops/kernel.h"

#define TP_MATMUL_KERNEL(sfx, DT, S, C, LD, ST, unused)                                   \
  static void tp_matmul_##sfx(const topos_tensor *a, const topos_tensor *b,               \
                              topos_tensor *out, C *acc) {                                \
    int r = a->rank;                                                                      \
    int64_t m = a->shape[r - 2], kk = a->shape[r - 1], n = b->shape[r - 1];               \
    int64_t sai = a->strides[r - 2], sak = a->strides[r - 1];                             \
    int64_t sbk = b->strides[r - 2], sbj = b->strides[r - 1];                             \
    const S *pa = TP_ELEMS(const S, a), *pb = TP_ELEMS(const S, b);                       \
    S *po = (S *)tp_tensor_base(out);                                                     \
    int64_t batches = a->volume / (m * kk);                                               \
    int64_t index[TOPOS_MAX_RANK] = {0}; /* batch position; last two stay 0 */            \
    for (int64_t batch = 0; batch < batches; ++batch) {                                   \
      const S *ba = pa + tp_tensor_element_offset(a, index);                              \
      const S *bb = pb + tp_tensor_element_offset(b, index);                              \
      for (int64_t i = 0; i < m; ++i) {                                                   \
        const S *arow = ba + i * sai;                                                     \
        C first = LD(arow[0]);                                                            \
        for (int64_t j = 0; j < n; ++j) acc[j] = first * LD(bb[j * sbj]);                 \
        for (int64_t k = 1; k < kk; ++k) {                                                \
          C aik = LD(arow[k * sak]);                                                      \
          const S *brow = bb + k * sbk;                                                   \
          for (int64_t j = 0; j < n; ++j) acc[j] += aik * LD(brow[j * sbj]);              \
        }                                                                                 \
        for (int64_t j = 0; j < n; ++j) *po++ = ST(acc[j]);                               \
      }                                                                                   \
      if (r > 2) tp_index_next(r - 2, a->shape, index);                                   \
    }                                                                                     \
  }
TP_FLOAT_DTYPES(TP_MATMUL_KERNEL, 0)

topos_status tp_forward_matmul(topos_tensor *const *in, const topos_op_attrs *attrs,
                               const topos_tensor_desc *desc, topos_tensor **out) {
  (void)attrs;
  TP_TRY(tp_kernel_float("matmul", desc->dtype));
  const topos_tensor *a = in[0], *b = in[1];
  topos_status offered = tp_backend_matmul(a, b, out); /* the acceleration chain */
  if (offered != TOPOS_UNSUPPORTED) return offered;
  int64_t n = b->shape[b->rank - 1];
  void *acc; /* one row of accumulators */
  bool heap;
  TP_TRY(tp_accumulators("matmul", desc->dtype, n, &acc, &heap));
  topos_tensor *result;
  topos_status status = tp_new_output(desc, &result);
  if (status != TOPOS_OK) {
    tp_scratch_free(acc, heap);
    return status;
  }
  TP_DISPATCH_FLOAT(desc->dtype, tp_matmul, a, b, result, acc);
  tp_scratch_free(acc, heap);
  *out = result;
  return TOPOS_OK;
}
