/* Internal (engine): four-lane float vectors (compiler vector types, so any
 * target; SSE2 on x86-64) for the fused patterns' fast paths, with the
 * library's maximum and step lane by lane: the same bit operations as
 * TP_MAXIMUM_MASKED (ops/kernel.h) and step(a, b) = a >= b ? 1 : 0. */
#ifndef TP_ENGINE_VEC4_H
#define TP_ENGINE_VEC4_H

#include <stdint.h>
#include <string.h>

typedef float tp_vf4 __attribute__((vector_size(16)));
typedef int32_t tp_vi4 __attribute__((vector_size(16)));

#define TP_VF4_SPLAT(x) ((tp_vf4){(x), (x), (x), (x)})

static inline tp_vf4 tp_vf4_load(const float *p) {
  tp_vf4 v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline void tp_vf4_store(float *p, tp_vf4 v) { memcpy(p, &v, sizeof v); }

/* TP_MAXIMUM_MASKED lane by lane, in fewer operations: a where a > b or a
 * is NaN; otherwise b, except that equal operands give the AND of their
 * bits (+0 unless both are -0). A NaN b with a not NaN falls to "b" by
 * itself (no comparison holds). Tested against TP_MAXIMUM over pairs of
 * special values (tests/engine/vec4_test.c). */
static inline tp_vf4 tp_vf4_max(tp_vf4 a, tp_vf4 b) {
  tp_vi4 ua = (tp_vi4)a, ub = (tp_vi4)b;
  tp_vi4 take_a = (a > b) | (a != a), eq = a == b;
  return (tp_vf4)((take_a & ua) | (~take_a & ub & (ua | ~eq)));
}

static inline tp_vf4 tp_vf4_step(tp_vf4 a, tp_vf4 b) {
  return (tp_vf4)((a >= b) & (tp_vi4)TP_VF4_SPLAT(1.0f));
}

/* lanes 0,2,4,6 and 1,3,5,7 of the eight floats at p (a 2-wide window's
 * left and right columns) */
static inline void tp_vf4_deinterleave(const float *p, tp_vf4 *even, tp_vf4 *odd) {
  tp_vf4 a = tp_vf4_load(p), b = tp_vf4_load(p + 4);
  *even = __builtin_shufflevector(a, b, 0, 2, 4, 6);
  *odd = __builtin_shufflevector(a, b, 1, 3, 5, 7);
}

/* the inverse: p[2i] = even[i], p[2i+1] = odd[i] */
static inline void tp_vf4_interleave(float *p, tp_vf4 even, tp_vf4 odd) {
  tp_vf4_store(p, __builtin_shufflevector(even, odd, 0, 4, 1, 5));
  tp_vf4_store(p + 4, __builtin_shufflevector(even, odd, 2, 6, 3, 7));
}

#endif
