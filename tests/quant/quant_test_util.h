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

/* splitmix64 (kept local so the quant tests need nothing beyond the quant tier). */
static inline uint64_t qt_splitmix64_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Deterministic test data: uniform in [-scale, scale). */
static inline void qt_fill_uniform(float *x, int64_t n, uint64_t seed, float scale) {
  uint64_t state = seed;
  for (int64_t i = 0; i < n; ++i)
    x[i] = (float)((double)(qt_splitmix64_next(&state) >> 11) * 0x1p-52 - 1.0) * scale;
}

/* Standard normal values (Box-Muller). */
static inline void qt_fill_gaussian(float *x, int64_t n, uint64_t seed) {
  uint64_t state = seed;
  for (int64_t i = 0; i < n; ++i) {
    const double u1 = (double)((qt_splitmix64_next(&state) >> 11) + 1) * 0x1p-53;
    const double u2 = (double)(qt_splitmix64_next(&state) >> 11) * 0x1p-53;
    x[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
  }
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
