/* Reference kernel of top_k: the positions of the k largest values of each
 * last-axis lane, largest first.
 *
 * The order is total, so the result is one answer, not one of several: a
 * value ranks above a smaller one; equal values (-0 and +0 included) rank by
 * ascending position; NaN ranks below every number, NaNs by position. Every
 * float dtype widens exactly to double, so one selection serves them all.
 * Small k (a mixture-of-experts router picks 1-8 of 8-256) keeps a sorted
 * list of the best k seen, O(N k); larger k sorts the whole lane. */
#include <stdlib.h>

#include "ops/kernel.h"

typedef struct tp_ranked {
  double value;
  int64_t pos;
} tp_ranked;

/* a ranks above b */
static int tp_above(const tp_ranked *a, const tp_ranked *b) {
  int an = isnan(a->value), bn = isnan(b->value);
  if (an != bn) return bn;
  if (!an && a->value != b->value) return a->value > b->value;
  return a->pos < b->pos;
}

static int tp_ranked_cmp(const void *pa, const void *pb) {
  const tp_ranked *a = pa, *b = pb;
  return tp_above(a, b) ? -1 : tp_above(b, a) ? 1 : 0;
}

/* lane[0..n) -> the k best in lane[0..k), best first */
static void tp_select_lane(tp_ranked *lane, int64_t n, int64_t k) {
  if (k > 16) {
    qsort(lane, (size_t)n, sizeof *lane, tp_ranked_cmp);
    return;
  }
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    tp_ranked c = lane[i];
    if (kept == k && !tp_above(&c, &lane[k - 1])) continue;
    int64_t j = kept < k ? kept++ : k - 1;
    for (; j > 0 && tp_above(&c, &lane[j - 1]); --j) lane[j] = lane[j - 1];
    lane[j] = c;
  }
}

#define TP_TOP_K_LOAD(sfx, DT, S, C, LD, ST, unused)                                   \
  static void tp_top_k_load_##sfx(const topos_tensor *a, const int64_t *index,         \
                                  tp_ranked *lane) {                                   \
    const S *p = TP_ELEMS(const S, a) + tp_tensor_element_offset(a, index);            \
    int64_t n = tp_inner_extent(a), s = tp_inner_stride(a);                            \
    for (int64_t i = 0; i < n; ++i) lane[i] = (tp_ranked){(double)LD(p[i * s]), i};    \
  }
TP_FLOAT_DTYPES(TP_TOP_K_LOAD, 0)

topos_status tp_forward_top_k(topos_tensor *const *in, const topos_op_attrs *attrs,
                              const topos_tensor_desc *desc, topos_tensor **out) {
  const topos_tensor *a = in[0];
  TP_TRY(tp_kernel_float("top_k", a->dtype));
  int64_t n = tp_inner_extent(a), k = attrs->length;
  tp_ranked *lane = malloc((size_t)n * sizeof *lane);
  if (!lane)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "top_k: no memory for a lane of %lld", (long long)n);
  topos_tensor *result;
  topos_status s = tp_new_output(desc, &result);
  if (s != TOPOS_OK) {
    free(lane);
    return s;
  }
  int32_t *dst = (int32_t *)tp_tensor_base(result);
  int64_t index[TOPOS_MAX_RANK] = {0}, rows = a->volume / n;
  for (int64_t row = 0; row < rows; ++row) {
    TP_DISPATCH_FLOAT(a->dtype, tp_top_k_load, a, index, lane);
    tp_select_lane(lane, n, k);
    for (int64_t j = 0; j < k; ++j) dst[row * k + j] = (int32_t)lane[j].pos;
    tp_next_row(a, index);
  }
  free(lane);
  *out = result;
  return TOPOS_OK;
}
