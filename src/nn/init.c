/* Initializers: splitmix64 draws in f64, row-major, converted once to the
 * dtype (topos_tensor_from_f64), so a seed gives the same bits everywhere. */
#include <math.h>
#include <stdlib.h>

#include "base/error.h"
#include "topos/nn.h"

topos_status topos_init_fans(int rank, const int64_t *shape, int64_t *fan_in, int64_t *fan_out) {
  if (rank < 1 || rank > TOPOS_MAX_RANK || !shape || !fan_in || !fan_out)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "init: fans need a shape of rank 1..%d, got %d",
                   TOPOS_MAX_RANK, rank);
  for (int i = 0; i < rank; ++i)
    if (shape[i] <= 0)
      return tp_fail(TOPOS_ERR_SHAPE, "init: extent %lld of axis %d must be positive",
                     (long long)shape[i], i);
  if (rank == 1) {
    *fan_in = *fan_out = shape[0];
  } else if (rank == 2) {
    *fan_in = shape[0];
    *fan_out = shape[1];
  } else {
    int64_t field = 1;
    for (int i = 2; i < rank; ++i) field *= shape[i];
    *fan_in = shape[1] * field;
    *fan_out = shape[0] * field;
  }
  return TOPOS_OK;
}

typedef double (*tp_draw_fn)(topos_rng *rng, double a, double b);

static double tp_draw_uniform(topos_rng *rng, double low, double high) {
  return low + (high - low) * topos_rng_unit(rng);
}

static double tp_draw_normal(topos_rng *rng, double mean, double std) {
  return mean + std * topos_rng_normal(rng);
}

static topos_status tp_init_fill(topos_rng *rng, topos_dtype dtype, int rank, const int64_t *shape,
                                 tp_draw_fn draw, double a, double b, topos_tensor **out) {
  if (out) *out = NULL;
  if (!rng || !out || rank < 0 || rank > TOPOS_MAX_RANK || (rank > 0 && !shape))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "init: needs a generator, a shape and an output");
  if (!topos_dtype_is_float(dtype))
    return tp_fail(TOPOS_ERR_DTYPE, "init: dtype %s is not a float type", topos_dtype_name(dtype));
  int64_t volume = 1;
  for (int i = 0; i < rank; ++i) {
    if (shape[i] <= 0)
      return tp_fail(TOPOS_ERR_SHAPE, "init: extent %lld of axis %d must be positive",
                     (long long)shape[i], i);
    if (volume > INT64_MAX / shape[i] || volume * shape[i] > (int64_t)(SIZE_MAX / sizeof(double)))
      return tp_fail(TOPOS_ERR_OVERFLOW, "init: volume overflows");
    volume *= shape[i];
  }
  double *values = malloc((size_t)volume * sizeof *values);
  if (!values) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "init: %lld values", (long long)volume);
  for (int64_t i = 0; i < volume; ++i) values[i] = draw(rng, a, b);
  topos_status s = topos_tensor_from_f64(dtype, rank, shape, values, out);
  free(values);
  return s;
}

topos_status topos_init_uniform(topos_rng *rng, topos_dtype dtype, int rank, const int64_t *shape,
                                double low, double high, topos_tensor **out) {
  return tp_init_fill(rng, dtype, rank, shape, tp_draw_uniform, low, high, out);
}

topos_status topos_init_normal(topos_rng *rng, topos_dtype dtype, int rank, const int64_t *shape,
                               double mean, double std, topos_tensor **out) {
  return tp_init_fill(rng, dtype, rank, shape, tp_draw_normal, mean, std, out);
}

topos_status topos_init_xavier(topos_rng *rng, topos_dtype dtype, int rank, const int64_t *shape,
                               topos_tensor **out) {
  int64_t fan_in, fan_out;
  if (out) *out = NULL;
  TP_TRY(topos_init_fans(rank, shape, &fan_in, &fan_out));
  double bound = sqrt(6.0 / (double)(fan_in + fan_out));
  return tp_init_fill(rng, dtype, rank, shape, tp_draw_uniform, -bound, bound, out);
}

topos_status topos_init_kaiming(topos_rng *rng, topos_dtype dtype, int rank, const int64_t *shape,
                                topos_tensor **out) {
  int64_t fan_in, fan_out;
  if (out) *out = NULL;
  TP_TRY(topos_init_fans(rank, shape, &fan_in, &fan_out));
  return tp_init_fill(rng, dtype, rank, shape, tp_draw_normal, 0.0, sqrt(2.0 / (double)fan_in),
                      out);
}
