/* topos — quantized matrix products: out[m, n] = a[m, k] · w[n, k]ᵀ + bias[n].
 *
 * Weights are stored [n, k] row-major as in GGUF: row j is k contiguous
 * elements of wtype (for block-quantized types, k / block_size contiguous
 * blocks). Activations a are f32 [m, k] row-major, out is f32 [m, n]
 * row-major, bias (nullable) has n entries. The caller owns every buffer; w
 * must hold n * (bytes of k elements of wtype) bytes.
 *
 * Paths:
 *   REFERENCE  the specification: each activation row is quantized to the
 *              weight type's partner format with the reference quantizer
 *              (topos_quantize_row; Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for
 *              Q4_1/Q5_1, Q8_K for the K-quants, f32 kept as is for f32,
 *              f16 and bf16 weights), then every output is one reference
 *              vec dot (ggml's *_generic order) plus bias. f16/bf16 weights:
 *              the exactly widened weight times the f32 activation in f32,
 *              summed in f64 in ascending k, rounded once (activations are
 *              not rounded to 16 bits as ggml does). Portable C, any CPU.
 *   FAST       kernels picked at run time: AMX-INT8 tiles for block-quantized
 *              weights when m >= 4 and AMX is granted (AMX-BF16 tiles for
 *              f16/bf16 weights from m = 24); AVX-512 VNNI; AVX2;
 *              NEON + dotprod on arm64; else portable C ("generic", about
 *              reference speed). See topos_qmatmul_fast_isa. Activations
 *              are quantized once per product to exactly the integers and
 *              scales of the reference; integer dot products are exact; only
 *              the float scaling and summation order differ (reassociation),
 *              bounded in tests/quant/qmatmul_test.c. f16/bf16 weights are
 *              widened exactly to f32 and activations are not rounded,
 *              except on the AMX-BF16 tiles, where an activation is carried
 *              as two bf16 parts (within 2^-16 of it; the bound is stated in
 *              src/quant/qk_amx_float.h and tested). The
 *              bits depend on the kernel (ISA, and AMX vs VNNI by m), except
 *              Q4_K, Q5_K and Q6_K, whose AMX and AVX-512 VNNI kernels
 *              compute one definition (the same bits at every m).
 *              TOPOS_UNSUPPORTED where no kernel serves a weight type.
 *   AUTO       FAST when it can serve, else REFERENCE.
 *
 * Every path splits work over output rows n only, never over k: results
 * are bitwise identical for any thread count and from run to run. */
#ifndef TOPOS_QMATMUL_H
#define TOPOS_QMATMUL_H

#include "base.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum topos_qmatmul_path {
  TOPOS_QMATMUL_AUTO = 0,
  TOPOS_QMATMUL_REFERENCE = 1,
  TOPOS_QMATMUL_FAST = 2,
} topos_qmatmul_path;

/* Weight types: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K,
 * Q4_K, Q5_K, Q6_K. Errors: TOPOS_ERR_INVALID_ARGUMENT (NULL buffers, m, n
 * or k < 1, unknown path), TOPOS_ERR_DTYPE (a weight type with no product),
 * TOPOS_ERR_SHAPE (k not a multiple of the type's block size),
 * TOPOS_ERR_OVERFLOW, TOPOS_ERR_OUT_OF_MEMORY, TOPOS_UNSUPPORTED (FAST only).
 * Threads: topos_threads(). */
TOPOS_API topos_status topos_qmatmul(const float *a, int64_t m, int64_t k, const void *w,
                                     topos_dtype wtype, int64_t n, const float *bias,
                                     float *out, topos_qmatmul_path path);

/* topos_qmatmul with weight rows w_row_bytes apart (0: packed, as above):
 * for f32, f16 and bf16 weights, a stride of at least k elements and a whole
 * number of elements — a view of a larger matrix, such as the first keys of
 * a KV cache's value rows, read in place. Same bits as the packed product of
 * the same rows. Block-quantized weights must be packed
 * (TOPOS_ERR_INVALID_ARGUMENT otherwise). */
TOPOS_API topos_status topos_qmatmul_rows(const float *a, int64_t m, int64_t k, const void *w,
                                          size_t w_row_bytes, topos_dtype wtype, int64_t n,
                                          const float *bias, float *out, topos_qmatmul_path path);

/* One product of several weight matrices with the same activations:
 * parts[i].out[m, n_i] = a · parts[i].wᵀ + parts[i].bias, each part a
 * packed [n_i, k] matrix of its own type; a part whose `a` is set reads
 * those [m, k] activations instead (a mixture's experts, each on its own
 * input) (for example a layer's q, k and v
 * weights where the file does not store them back to back). The bits of
 * each part are those of topos_qmatmul on it alone, on the same path. When
 * decoding (m = 1) with AVX-512 VNNI kernels for every part (the 32-element
 * block types, Q4_K, Q5_K, Q6_K; up to 8 parts) the parts run as one
 * parallel dispatch over their rows together, so short products share the
 * threads; otherwise one after another. Errors: those of topos_qmatmul,
 * naming the part. */
typedef struct topos_qmatmul_part {
  const void *w;     /* [n, k] packed rows of wtype */
  topos_dtype wtype;
  int64_t n;
  const float *bias; /* NULL or n entries */
  float *out;        /* [m, n] */
  const float *a;    /* NULL: the product's activations; else this part's own [m, k] */
} topos_qmatmul_part;
TOPOS_API topos_status topos_qmatmul_multi(const float *a, int64_t m, int64_t k,
                                           const topos_qmatmul_part *parts, size_t count,
                                           topos_qmatmul_path path);

/* The kernel family the FAST path would use for wtype right now
 * ("avx512vnni+amx": AMX tiles for block-quantized weights from the m above,
 * AVX-512 VNNI below; "avx512vnni", "avx2", "neon-dotprod", "generic"), or
 * NULL when FAST cannot serve it. Static string. */
TOPOS_API const char *topos_qmatmul_fast_isa(topos_dtype wtype);

#ifdef __cplusplus
}
#endif
#endif
