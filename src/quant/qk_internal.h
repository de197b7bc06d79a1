/* Internal to the quantized products: the task, the type traits the fast
 * engine needs, and the ISA entry points.
 *
 * Fast engine model (one definition in qk_engine_body.h, instantiated per
 * ISA): every block-quantized weight row is decoded into unsigned bytes q and
 * two floats per 16 elements, s and mn, such that
 *     w[i] = s[i/16] * (q[i] - bias) - mn[i/16]
 * (bias a per-type constant, mn zero for types without a min). Activations
 * are quantized once per product to the partner format's integers qa and
 * scales, laid out per lane of 4 elements: da (scale), init = -bias * sum of
 * the 4 qa, g = the min term's activation sum (Q8_1: its s / 8; Q8_K: da
 * times each 16 qa's sum, per 16). One lane's integer sum
 *     t = init + sum_4 q * qa = sum_4 (q - bias) * qa
 * is exact (vpdpbusd / maddubs), and the float accumulator of one output is
 *     acc += float(t) * (s * da) - mn * g
 * lane by lane, reduced once at the end. Rows are padded with zeros to a
 * multiple of TP_QK_STEP elements. The 32-element types on AVX-512 VNNI and
 * the AMX tiles differ: each 32-element block's sum is one exact integer,
 * scaled once (qk_block32_avx512vnni.h); so do Q4_K, Q5_K and Q6_K on
 * AVX-512 VNNI: a super-block's scaled sums and min term are exact
 * integers, converted once each (qk_ksum_avx512vnni.h). */
#ifndef TP_QUANT_QK_INTERNAL_H
#define TP_QUANT_QK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/temp.h"
#include "quant/quant_internal.h"
#include "topos/qmatmul.h"

#define TP_QK_STEP 64 /* k padding granularity: one AVX-512 step */

typedef struct tp_qk_task {
  const float *a;
  int64_t m, k;
  const void *w;
  topos_dtype wtype;
  int64_t n;
  const float *bias;
  float *out;
  size_t row_bytes; /* bytes of one weight row */
  int threads;      /* <= 0: library default */
} tp_qk_task;

typedef enum tp_qk_act_format {
  TP_QK_ACT_F32,  /* float weights: activations used as they are */
  TP_QK_ACT_Q8_0, /* per 32: d = f16(amax/127), q = roundf(x/d) */
  TP_QK_ACT_Q8_1, /* Q8_0 plus s = f16(d * sum q) for the min term */
  TP_QK_ACT_Q8_K, /* per 256: f32 d, q = nearest_int(x * -127/max) */
} tp_qk_act_format;

typedef struct tp_qk_traits {
  tp_qk_act_format act;
  int bias;    /* w = s * (q - bias) - mn */
  int has_min; /* mn != 0 */
} tp_qk_traits;

/* Traits of a weight type; 0 when it has no product. */
int tp_qk_traits_of(topos_dtype wtype, tp_qk_traits *out);

/* FAST entry points (TOPOS_UNSUPPORTED when the type is not served). */
topos_status tp_qk_fast_avx512vnni(const tp_qk_task *task);
/* Tasks of one m below the tile width (decoding), each of a type the
 * matrix-vector kernels take, run as one parallel dispatch with the bits of
 * each run alone (qk_avx512vnni.c); TOPOS_UNSUPPORTED for any other set
 * (the caller runs the tasks one by one). */
#define TP_QK_MULTI_MAX 8
topos_status tp_qk_fast_avx512vnni_multi(const tp_qk_task *tasks, int count);
topos_status tp_qk_fast_avx2(const tp_qk_task *task);
topos_status tp_qk_fast_avx2_multi(const tp_qk_task *tasks, int count); /* as the AVX-512 one */
topos_status tp_qk_fast_generic(const tp_qk_task *task); /* portable C, any CPU */
/* t as consecutive products of at most `per` rows each (sizes balanced,
 * 7 = 3 + 2 + 2) through run: the ISA files send products a little wider
 * than their matrix-vector kernels take there, where the prompt tiles cost
 * their full width of rows whatever m is. */
topos_status tp_qk_row_groups(const tp_qk_task *t, int64_t per, topos_status (*run)(const tp_qk_task *));
topos_status tp_qk_fast_neon(const tp_qk_task *task);    /* arm64 NEON + dotprod */
/* The REFERENCE path's bits for float weights (f32, f16, bf16), weight rows
 * in panels of TP_QK_EXACT_ROWS: panels p0 .. p1 - 1 of t. 0 when its
 * scratch could not be had (nothing written). qk_exact_avx2.c (call only
 * after tp_qk_cpu_avx2()), qk_exact_neon.c. */
#define TP_QK_EXACT_ROWS 16
/* Element i of a float weight row (f32, f16 or bf16) widened to f32 exactly,
 * by the reference's own conversions. */
static inline float tp_qk_float_at(const uint8_t *row, topos_dtype wtype, int64_t i) {
  if (wtype == TOPOS_F32) {
    float v;
    memcpy(&v, row + 4 * i, 4);
    return v;
  }
  uint16_t h;
  memcpy(&h, row + 2 * i, 2);
  return wtype == TOPOS_F16 ? topos_f16_to_f32(h) : topos_bf16_to_f32(h);
}
int tp_qk_exact_float_avx2(const tp_qk_task *t, int64_t p0, int64_t p1);
int tp_qk_exact_float_neon(const tp_qk_task *t, int64_t p0, int64_t p1);
/* The reference dot products of the block-quantized weights on a vector
 * unit, with dot_ref.c's bits (same arguments); NULL for a type they do not
 * cover. qk_exact_quant_avx2.c (only after tp_qk_cpu_avx2()),
 * qk_exact_quant_neon.c; tp_qk_exact_dot picks this CPU's, or NULL
 * (qmatmul.c). */
tp_vec_dot_fn tp_qk_exact_dot_avx2(topos_dtype wtype);
tp_vec_dot_fn tp_qk_exact_dot_neon(topos_dtype wtype);
tp_vec_dot_fn tp_qk_exact_dot(topos_dtype wtype);

/* Prefetch for matrix-vector products. Weight rows are short streams the
 * hardware prefetcher barely ramps up on, and a burst of prefetches at a
 * panel's start stalls the core: the driver passes the bytes of a panel
 * ahead (pf, NULL for none) and iteration u of a kernel's loop fetches its
 * u-th slice of pf_step bytes, so the next panels arrive in address order
 * while this one computes. */
/* The sum of n int8 values (the ISA files' qk_round_away, when asked). */
static inline int qk_sum_bytes(const int8_t *q, int n) {
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += q[i];
  return sum;
}

static inline void qk_prefetch_slice(const uint8_t *pf, int64_t u, int64_t pf_step) {
  if (!pf) return;
  for (int64_t off = u * pf_step; off < (u + 1) * pf_step; off += 64) __builtin_prefetch(pf + off, 0, 2);
}

/* Internal variants of topos_qmatmul(_rows) with an explicit thread count
 * (tests; 0: topos_threads()). */
topos_status tp_qmatmul_threads(const float *a, int64_t m, int64_t k, const void *w,
                                topos_dtype wtype, int64_t n, const float *bias, float *out,
                                topos_qmatmul_path path, int threads);
topos_status tp_qmatmul_rows(const float *a, int64_t m, int64_t k, const void *w, size_t w_row_bytes,
                             topos_dtype wtype, int64_t n, const float *bias, float *out,
                             topos_qmatmul_path path, int threads);
/* topos_qmatmul_multi with a thread count (<= 0: the library's). */
topos_status tp_qmatmul_multi(const float *a, int64_t m, int64_t k, const topos_qmatmul_part *parts,
                              size_t count, topos_qmatmul_path path, int threads);

#endif
