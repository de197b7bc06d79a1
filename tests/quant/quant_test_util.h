/* Helpers shared by the quant tests: dtype lookup by name without the tensor
 * tier, hex decoding of the goldens, deterministic inputs, error measures. */
#ifndef TOPOS_TESTS_QUANT_UTIL_H
#define TOPOS_TESTS_QUANT_UTIL_H

#include <stdlib.h>

#include "test.h"

static inline int qt_dtype_by_name(const char *name, topos_dtype *out) {
  static const struct {
    const char *name;
    topos_dtype dtype;
  } rows[] = {
#define QT_NAME_ROW(e, n, be, bb, gg, kind) {n, e},
      TOPOS_DTYPE_LIST(QT_NAME_ROW)
#undef QT_NAME_ROW
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i)
    if (strcmp(rows[i].name, name) == 0) {
      *out = rows[i].dtype;
      return 1;
    }
  return 0;
}

/* Block geometry from the dtype table (independent of the library's copy). */
static inline void qt_geometry(topos_dtype dtype, int64_t *elements, int64_t *bytes) {
#define QT_GEOM_ROW(e, n, be, bb, gg, kind) \
  if (dtype == e) {                         \
    *elements = be;                         \
    *bytes = bb;                            \
    return;                                 \
  }
  TOPOS_DTYPE_LIST(QT_GEOM_ROW)
#undef QT_GEOM_ROW
  *elements = *bytes = 0;
}

static inline size_t qt_row_bytes(topos_dtype dtype, int64_t n) {
  int64_t be, bb;
  qt_geometry(dtype, &be, &bb);
  return be ? (size_t)(n / be * bb) : 0;
}

static inline int qt_hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes a hex string into a new buffer (caller frees); *size gets the bytes. */
static inline uint8_t *qt_from_hex(const char *hex, size_t *size) {
  size_t n = strlen(hex) / 2;
  uint8_t *out = malloc(n ? n : 1);
  if (!out) return NULL;
  for (size_t i = 0; i < n; ++i)
    out[i] = (uint8_t)(qt_hex_digit(hex[2 * i]) << 4 | qt_hex_digit(hex[2 * i + 1]));
  *size = n;
  return out;
}

/* Deterministic test data: uniform in [-scale, scale) from the splitmix64 generator. */
static inline void qt_fill_uniform(float *x, int64_t n, uint64_t seed, float scale) {
  topos_rng rng = topos_rng_seed(seed);
  for (int64_t i = 0; i < n; ++i) x[i] = (float)(topos_rng_unit(&rng) * 2.0 - 1.0) * scale;
}

/* Relative RMS error: sqrt(sum (y-x)^2 / sum x^2). */
static inline double qt_relative_rmse(const float *x, const float *y, int64_t n) {
  double err = 0.0, sig = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double d = (double)y[i] - (double)x[i];
    err += d * d;
    sig += (double)x[i] * (double)x[i];
  }
  return sig > 0 ? sqrt(err / sig) : sqrt(err);
}

#endif
