/* topos — base tier: status codes, error messages, versions, CPU features,
 * 16-bit float conversions, the seeded generator and the thread pool size.
 *
 * Error contract: every fallible public function returns a topos_status.
 * On failure it also sets a thread-local message readable with
 * topos_last_error() until the next failing call on the same thread.
 * Library code never aborts, exits or prints on user input. */
#ifndef TOPOS_BASE_H
#define TOPOS_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TOPOS_BUILDING_LIBRARY) && defined(__GNUC__)
#define TOPOS_API __attribute__((visibility("default")))
#else
#define TOPOS_API
#endif

/* Status codes: one X-macro row each (name, value, what it means). New codes
 * are appended; values never change once released. */
#define TOPOS_STATUS_LIST(X)                                                                  \
  X(TOPOS_OK, 0, "ok")                                                                        \
  X(TOPOS_ERR_INVALID_ARGUMENT, 1, "invalid argument")                                        \
  X(TOPOS_ERR_SHAPE, 2, "shape mismatch")                                                     \
  X(TOPOS_ERR_DTYPE, 3, "unsupported or mismatched element type")                             \
  X(TOPOS_ERR_OUT_OF_MEMORY, 4, "out of memory")                                              \
  X(TOPOS_ERR_OVERFLOW, 5, "size arithmetic overflow")                                        \
  X(TOPOS_ERR_RANGE, 6, "index or window out of range")                                       \
  X(TOPOS_ERR_FOREIGN, 7, "symbol belongs to another tape")                                   \
  X(TOPOS_ERR_STATE, 8, "operation not allowed in this state")                                \
  X(TOPOS_ERR_MISSING_FEED, 9, "input not fed")                                               \
  X(TOPOS_ERR_NOT_READABLE, 10, "node was not declared readable")                             \
  X(TOPOS_UNSUPPORTED, 11, "path cannot serve this task")                                     \
  X(TOPOS_ERR_BACKEND, 12, "backend failure")                                                 \
  X(TOPOS_ERR_IO, 13, "input/output error")                                                   \
  X(TOPOS_ERR_NOT_FOUND, 14, "not found")                                                     \
  X(TOPOS_ERR_FORMAT, 15, "malformed file")                                                   \
  X(TOPOS_ERR_TRUNCATED, 16, "file truncated")                                                \
  X(TOPOS_ERR_BAD_MAGIC, 17, "bad magic number")                                              \
  X(TOPOS_ERR_VERSION, 18, "unsupported format version")                                      \
  X(TOPOS_ERR_ENDIAN, 19, "byte order not supported")                                         \
  X(TOPOS_ERR_DUPLICATE, 20, "duplicate key or name")                                         \
  X(TOPOS_ERR_BAD_TYPE, 21, "unknown or wrong value type")                                    \
  X(TOPOS_ERR_BAD_DIMS, 22, "bad dimension count or extent")                                  \
  X(TOPOS_ERR_ALIGNMENT, 23, "bad alignment")                                                 \
  X(TOPOS_ERR_BAD_OFFSET, 24, "data offset out of bounds or out of order")                    \
  X(TOPOS_ERR_BAD_STRING, 25, "bad string length or encoding")                                \
  X(TOPOS_ERR_INTERNAL, 26, "internal error")

typedef enum topos_status {
#define TOPOS_STATUS_ENUM_ROW(name, value, text) name = value,
  TOPOS_STATUS_LIST(TOPOS_STATUS_ENUM_ROW)
#undef TOPOS_STATUS_ENUM_ROW
} topos_status;

/* The message of the last failure on this thread ("" if none). The pointer
 * stays valid until the next topos call on this thread. */
TOPOS_API const char *topos_last_error(void);
/* Clears the thread-local message. */
TOPOS_API void topos_clear_error(void);
/* "TOPOS_ERR_SHAPE" and so on; "TOPOS_UNKNOWN_STATUS" for values not in the list. */
TOPOS_API const char *topos_status_name(topos_status status);
/* One-line human description of a status code. */
TOPOS_API const char *topos_status_text(topos_status status);

TOPOS_API const char *topos_version(void);

/* ---- CPU features (detected once, cached; cpuid+xgetbv on x86-64, hwcaps on arm64) */
typedef enum topos_cpu_feature {
  TOPOS_CPU_SSE42,
  TOPOS_CPU_AVX,
  TOPOS_CPU_AVX2,
  TOPOS_CPU_FMA,
  TOPOS_CPU_F16C,
  TOPOS_CPU_AVX512F,
  TOPOS_CPU_AVX512BW,
  TOPOS_CPU_AVX512DQ,
  TOPOS_CPU_AVX512VL,
  TOPOS_CPU_AVX512VNNI,
  TOPOS_CPU_AVX512BF16,
  TOPOS_CPU_AVX512FP16,
  TOPOS_CPU_AVXVNNI,
  TOPOS_CPU_AMX_INT8,
  TOPOS_CPU_AMX_BF16,
  TOPOS_CPU_NEON,
  TOPOS_CPU_DOTPROD,
  TOPOS_CPU_I8MM,
  TOPOS_CPU_SVE,
  TOPOS_CPU_FEATURE_COUNT
} topos_cpu_feature;

/* 1 when the CPU and the OS (saved register state) both support the feature.
 * TOPOS_DISABLE_ISA=avx512,avx2 in the environment masks features off (for
 * testing fallbacks and running under valgrind). */
TOPOS_API int topos_cpu_has(topos_cpu_feature feature);
TOPOS_API const char *topos_cpu_feature_name(topos_cpu_feature feature);
/* Writes a space-separated list of present features into buf (always NUL-terminated). */
TOPOS_API void topos_cpu_describe(char *buf, size_t size);

/* ---- 16-bit floats. Conversions to 16 bits round to nearest even; NaN stays
 * NaN (quiet), infinities and signed zeros are kept, f16 subnormals are exact. */
TOPOS_API uint16_t topos_f32_to_f16(float value);
TOPOS_API float topos_f16_to_f32(uint16_t bits);
TOPOS_API uint16_t topos_f32_to_bf16(float value);
TOPOS_API float topos_bf16_to_f32(uint16_t bits);

/* ---- splitmix64: the only generator in topos. Seeded, reproducible. */
typedef struct topos_rng {
  uint64_t state;
} topos_rng;
TOPOS_API topos_rng topos_rng_seed(uint64_t seed);
TOPOS_API uint64_t topos_rng_next(topos_rng *rng);
/* Uniform in [0, 1) with 53 random bits: (next >> 11) * 2^-53. */
TOPOS_API double topos_rng_unit(topos_rng *rng);
/* Standard normal, Box-Muller (cos half), computed in f64. */
TOPOS_API double topos_rng_normal(topos_rng *rng);

/* ---- threads. The pool size comes from topos_set_threads(), else the
 * TOPOS_THREADS environment variable, else the number of online cores. The
 * thread count never changes a result bit. */
TOPOS_API topos_status topos_set_threads(int threads);
TOPOS_API int topos_threads(void);

#ifdef __cplusplus
}
#endif
#endif
