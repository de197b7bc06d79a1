/* Loading and storing one element of a plain dtype as a tp_value, with the
 * conversion rules of topos_tensor_convert:
 *  - float -> float: widening is exact; narrowing rounds to nearest even;
 *    f64 -> f16/bf16 goes through f32 (as the reference does).
 *  - int -> float: one rounding to nearest even (to f16/bf16: through f32).
 *  - float -> int: rounds toward zero, saturates at the type's range; NaN is
 *    refused (tp_store returns false).
 *  - int -> int: saturates. */
#include <math.h>
#include <string.h>

#include "tensor/tensor_internal.h"

#define TP_INT_TYPES(X) \
  X(TOPOS_I8, int8_t, INT8_MIN, INT8_MAX)       \
  X(TOPOS_I16, int16_t, INT16_MIN, INT16_MAX)   \
  X(TOPOS_I32, int32_t, INT32_MIN, INT32_MAX)   \
  X(TOPOS_I64, int64_t, INT64_MIN, INT64_MAX)

tp_value tp_load(topos_dtype dtype, const void *p) {
  tp_value v = {false, 0, 0.0};
  switch (dtype) {
    case TOPOS_F32: {
      float x;
      memcpy(&x, p, sizeof x);
      v.f = x;
      break;
    }
    case TOPOS_F64: memcpy(&v.f, p, sizeof v.f); break;
    case TOPOS_F16: {
      uint16_t h;
      memcpy(&h, p, sizeof h);
      v.f = topos_f16_to_f32(h);
      break;
    }
    case TOPOS_BF16: {
      uint16_t h;
      memcpy(&h, p, sizeof h);
      v.f = topos_bf16_to_f32(h);
      break;
    }
#define TP_LOAD_INT(e, type, lo, hi) \
  case e: {                          \
    type x;                          \
    memcpy(&x, p, sizeof x);         \
    v.is_int = true;                 \
    v.i = x;                         \
    v.f = (double)x;                 \
    break;                           \
  }
      TP_INT_TYPES(TP_LOAD_INT)
#undef TP_LOAD_INT
    default: break;
  }
  return v;
}

float tp_value_f32(tp_value v) { return v.is_int ? (float)v.i : (float)v.f; }

double tp_value_f64(tp_value v) { return v.is_int ? (double)v.i : v.f; }

static int64_t tp_clamp_i64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

bool tp_store(topos_dtype dtype, void *p, tp_value v) {
  int64_t i = 0;
  if (tp_dtype_is_integer(dtype)) {
    if (v.is_int) {
      i = v.i;
    } else {
      if (isnan(v.f)) return false;
      /* 2^63 is exact in double; anything at or past it saturates. */
      if (v.f >= 9223372036854775808.0)
        i = INT64_MAX;
      else if (v.f < -9223372036854775808.0)
        i = INT64_MIN;
      else
        i = (int64_t)v.f; /* C conversion truncates toward zero */
    }
  }
  switch (dtype) {
    case TOPOS_F32: {
      float x = tp_value_f32(v);
      memcpy(p, &x, sizeof x);
      return true;
    }
    case TOPOS_F64: {
      double x = tp_value_f64(v);
      memcpy(p, &x, sizeof x);
      return true;
    }
    case TOPOS_F16: {
      uint16_t h = topos_f32_to_f16(tp_value_f32(v));
      memcpy(p, &h, sizeof h);
      return true;
    }
    case TOPOS_BF16: {
      uint16_t h = topos_f32_to_bf16(tp_value_f32(v));
      memcpy(p, &h, sizeof h);
      return true;
    }
#define TP_STORE_INT(e, type, lo, hi)       \
  case e: {                                 \
    type x = (type)tp_clamp_i64(i, lo, hi); \
    memcpy(p, &x, sizeof x);                \
    return true;                            \
  }
      TP_INT_TYPES(TP_STORE_INT)
#undef TP_STORE_INT
    default: return false;
  }
}
