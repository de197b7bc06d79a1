/* IDX files (the MNIST container) and whole-file reads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "topos/data.h"

topos_status topos_read_file(const char *path, size_t max_bytes, void **out, size_t *size) {
  if (out) *out = NULL;
  if (size) *size = 0;
  if (!path || !out || !size) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "read_file: arguments");
  FILE *f = fopen(path, "rb");
  if (!f) return tp_fail(TOPOS_ERR_IO, "read_file: cannot open '%s': %s", path, strerror(errno));
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  topos_status s = buf ? TOPOS_OK : tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "read_file: buffer");
  while (s == TOPOS_OK) {
    if (len == cap) {
      size_t grown_cap = cap * 2;
      uint8_t *grown = grown_cap > cap ? realloc(buf, grown_cap) : NULL;
      if (!grown) {
        s = tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "read_file: '%s' beyond %zu bytes", path, cap);
        break;
      }
      buf = grown;
      cap = grown_cap;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (len > max_bytes) s = tp_fail(TOPOS_ERR_RANGE, "read_file: '%s' exceeds %zu bytes", path,
                                     max_bytes);
    else if (got == 0) {
      if (ferror(f)) s = tp_fail(TOPOS_ERR_IO, "read_file: error reading '%s'", path);
      break;
    }
  }
  fclose(f);
  if (s != TOPOS_OK) {
    free(buf);
    return s;
  }
  *out = buf;
  *size = len;
  return TOPOS_OK;
}

static uint32_t tp_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static double tp_idx_element(const uint8_t *p, int type) {
  switch (type) {
    case 0x08: return p[0];
    case 0x09: return (int8_t)p[0];
    case 0x0B: return (int16_t)(uint16_t)(p[0] << 8 | p[1]);
    case 0x0C: return (int32_t)tp_be32(p);
    case 0x0D: {
      uint32_t u = tp_be32(p);
      float f;
      memcpy(&f, &u, 4);
      return f;
    }
    default: {
      uint64_t u = (uint64_t)tp_be32(p) << 32 | tp_be32(p + 4);
      double d;
      memcpy(&d, &u, 8);
      return d;
    }
  }
}

static topos_status tp_idx_plain(const uint8_t *p, size_t size, topos_dtype dtype,
                                 topos_tensor **out) {
  if (size < 4) return tp_fail(TOPOS_ERR_TRUNCATED, "idx: %zu bytes, no header", size);
  if (p[0] != 0 || p[1] != 0) return tp_fail(TOPOS_ERR_BAD_MAGIC, "idx: magic %02x%02x is not 0000",
                                             p[0], p[1]);
  int type = p[2], rank = p[3];
  size_t width;
  switch (type) {
    case 0x08: case 0x09: width = 1; break;
    case 0x0B: width = 2; break;
    case 0x0C: case 0x0D: width = 4; break;
    case 0x0E: width = 8; break;
    default: return tp_fail(TOPOS_ERR_BAD_TYPE, "idx: element type 0x%02x unknown", type);
  }
  if (rank < 1 || rank > TOPOS_MAX_RANK)
    return tp_fail(TOPOS_ERR_BAD_DIMS, "idx: rank %d (1..%d supported)", rank, TOPOS_MAX_RANK);
  if (size < 4 + 4 * (size_t)rank) return tp_fail(TOPOS_ERR_TRUNCATED, "idx: extents cut off");
  int64_t shape[TOPOS_MAX_RANK];
  size_t volume = 1;
  for (int i = 0; i < rank; ++i) {
    uint32_t e = tp_be32(p + 4 + 4 * i);
    if (e == 0) return tp_fail(TOPOS_ERR_BAD_DIMS, "idx: axis %d has extent 0", i);
    if (volume > SIZE_MAX / e / 8) return tp_fail(TOPOS_ERR_OVERFLOW, "idx: volume overflows");
    volume *= e;
    shape[i] = e;
  }
  size_t header = 4 + 4 * (size_t)rank;
  if ((size - header) / width < volume)
    return tp_fail(TOPOS_ERR_TRUNCATED, "idx: %zu elements declared, %zu bytes of data", volume,
                   size - header);
  if (size - header != volume * width)
    return tp_fail(TOPOS_ERR_FORMAT, "idx: %zu bytes after the data", size - header -
                   volume * width);
  if (dtype == TOPOS_F32 || dtype == TOPOS_I32 || dtype == TOPOS_F64) {
    /* direct fill: MNIST's 47M pixels need no f64 staging copy */
    TP_TRY(topos_tensor_zeros(dtype, rank, shape, out));
    void *dst = topos_tensor_data_mut(*out);
    for (size_t i = 0; i < volume; ++i) {
      double v = tp_idx_element(p + header + i * width, type);
      if (dtype == TOPOS_F32) ((float *)dst)[i] = (float)v;
      else if (dtype == TOPOS_F64) ((double *)dst)[i] = v;
      else if (type == 0x0D || type == 0x0E) {
        topos_tensor_release(*out);
        *out = NULL;
        return tp_fail(TOPOS_ERR_DTYPE, "idx: float data into i32");
      } else ((int32_t *)dst)[i] = (int32_t)v;
    }
    return TOPOS_OK;
  }
  double *values = malloc(volume * sizeof *values);
  if (!values) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "idx: %zu elements", volume);
  for (size_t i = 0; i < volume; ++i) values[i] = tp_idx_element(p + header + i * width, type);
  topos_status s = topos_tensor_from_f64(dtype, rank, shape, values, out);
  free(values);
  return s;
}

topos_status topos_idx_parse(const void *bytes, size_t size, topos_dtype dtype,
                             topos_tensor **out) {
  const uint8_t *p = bytes;
  if (out) *out = NULL;
  if (!out || (!bytes && size)) return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "idx: arguments");
  if (size >= 2 && p[0] == 0x1f && p[1] == 0x8b) {
    void *plain = NULL;
    size_t n = 0;
    TP_TRY(topos_gunzip(bytes, size, (size_t)1 << 32, &plain, &n));
    topos_status s = tp_idx_plain(plain, n, dtype, out);
    free(plain);
    return s;
  }
  return tp_idx_plain(p, size, dtype, out);
}

topos_status topos_idx_load(const char *path, topos_dtype dtype, topos_tensor **out) {
  void *bytes = NULL;
  size_t size = 0;
  if (out) *out = NULL;
  TP_TRY(topos_read_file(path, (size_t)1 << 32, &bytes, &size));
  topos_status s = topos_idx_parse(bytes, size, dtype, out);
  free(bytes);
  if (s != TOPOS_OK) return tp_fail_context(s, "%s", path);
  return s;
}
