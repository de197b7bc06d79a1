/* TEMPORARY until branch `quant` is merged: weak stand-ins so the library
 * links; the quant tier's real definitions replace them. */
#include "base/error.h"
#include "quant/qk_internal.h"


__attribute__((weak)) topos_status topos_quantize_row(topos_dtype dtype, const float *src, void *dst,
                                                      int64_t n) {
  (void)dtype, (void)src, (void)dst, (void)n;
  return tp_fail(TOPOS_UNSUPPORTED, "quantize_row: quant tier not merged yet");
}
__attribute__((weak)) topos_status tp_vec_dot_ref(topos_dtype wtype, int64_t n, const void *w_row,
                                                  const void *act, float *out) {
  (void)wtype, (void)n, (void)w_row, (void)act, (void)out;
  return tp_fail(TOPOS_UNSUPPORTED, "vec_dot_ref: quant tier not merged yet");
}
