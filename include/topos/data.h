/* topos — data loading for training programs: files, gzip/DEFLATE (our own,
 * no zlib) and the IDX format of MNIST-style data sets.
 *
 * Ownership: buffers returned through `void **out` are malloc'd and belong to
 * the caller (free()); tensors carry one new reference. Every parser checks
 * every length against the bytes it was given: a corrupt file is an error
 * with the reason, never a crash. */
#ifndef TOPOS_DATA_H
#define TOPOS_DATA_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads a whole file (at most max_bytes, else TOPOS_ERR_RANGE). */
TOPOS_API topos_status topos_read_file(const char *path, size_t max_bytes, void **out,
                                       size_t *size);
/* CRC-32 (IEEE, as gzip and zip); pass 0 to start, the previous value to continue. */
TOPOS_API uint32_t topos_crc32(uint32_t crc, const void *data, size_t size);
/* Raw DEFLATE stream (RFC 1951). Output is capped at max_out bytes
 * (TOPOS_ERR_RANGE beyond). *consumed (may be NULL) gets the input bytes used. */
TOPOS_API topos_status topos_inflate(const void *src, size_t size, size_t max_out, void **out,
                                     size_t *out_size, size_t *consumed);
/* One gzip member (RFC 1952): header, DEFLATE data, CRC-32 and size checked. */
TOPOS_API topos_status topos_gunzip(const void *src, size_t size, size_t max_out, void **out,
                                    size_t *out_size);

/* IDX (big-endian magic 0 0 type rank, rank u32 extents, data): types u8,
 * i8, i16, i32, f32, f64. Elements are converted to dtype (exact for u8 into
 * f32/i32). Gzip-compressed bytes are recognised by their magic. */
TOPOS_API topos_status topos_idx_parse(const void *bytes, size_t size, topos_dtype dtype,
                                       topos_tensor **out);
/* Reads path (plain or .gz) and parses it. */
TOPOS_API topos_status topos_idx_load(const char *path, topos_dtype dtype, topos_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
