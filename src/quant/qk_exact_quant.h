/* What the vector twins of dot_ref.c's quantized dot products share
 * (qk_exact_quant_avx2.c, qk_exact_quant_neon.c): the 32-element formats'
 * block geometry, a Q8_K super-block read in place, and the reference's
 * last step over its eight lanes. Scalar C, included by each ISA file. */
#ifndef TP_QUANT_QK_EXACT_QUANT_H
#define TP_QUANT_QK_EXACT_QUANT_H

#include <stddef.h>
#include <string.h>

#include "quant/quant_internal.h"

/* The 32-element weight formats, a constant at every use so each ISA's
 * loop is specialised per format. */
typedef enum { TP_QE_Q4_0, TP_QE_Q4_1, TP_QE_Q5_0, TP_QE_Q5_1, TP_QE_Q8_0, TP_QE_MXFP4 } tp_qe_legacy;

/* Q4_1 and Q5_1 pair with Q8_1 (its s carries the min term), the rest with Q8_0. */
static inline int tp_qe_with_min(tp_qe_legacy f) { return f == TP_QE_Q4_1 || f == TP_QE_Q5_1; }

static inline size_t tp_qe_weight_bytes(tp_qe_legacy f) {
  return f == TP_QE_Q4_0   ? sizeof(tp_block_q4_0)
         : f == TP_QE_Q4_1 ? sizeof(tp_block_q4_1)
         : f == TP_QE_Q5_0 ? sizeof(tp_block_q5_0)
         : f == TP_QE_Q5_1 ? sizeof(tp_block_q5_1)
         : f == TP_QE_Q8_0 ? sizeof(tp_block_q8_0)
                           : sizeof(tp_block_mxfp4);
}

/* The partner block's bytes and the offset of its integers. */
static inline size_t tp_qe_act_bytes(tp_qe_legacy f) {
  return tp_qe_with_min(f) ? sizeof(tp_block_q8_1) : sizeof(tp_block_q8_0);
}
static inline size_t tp_qe_act_qs(tp_qe_legacy f) {
  return tp_qe_with_min(f) ? offsetof(tp_block_q8_1, qs) : offsetof(tp_block_q8_0, qs);
}

/* Super-block i of a Q8_K row, read in place: its scale, its integers, its
 * 16-element sums. */
typedef struct {
  float d;
  const int8_t *qs;
  int16_t bsums[TP_QK_K / 16];
} tp_qe_q8k;

static inline tp_qe_q8k tp_qe_q8k_at(const void *a, int64_t i) {
  const uint8_t *b = (const uint8_t *)a + (size_t)i * sizeof(tp_block_q8_K);
  tp_qe_q8k q;
  memcpy(&q.d, b + offsetof(tp_block_q8_K, d), sizeof q.d);
  memcpy(q.bsums, b + offsetof(tp_block_q8_K, bsums), sizeof q.bsums);
  q.qs = (const int8_t *)(b + offsetof(tp_block_q8_K, qs));
  return q;
}

/* sumf += lanes[0], ..., lanes[7] (dot_ref.c's tp_k_lanes_finish). */
static inline float tp_qe_lanes_finish(float sumf, const float lanes[8]) {
  for (int l = 0; l < 8; ++l) sumf += lanes[l];
  return sumf;
}

/* The ISA file's dot of wtype, its functions named P##_dot_<suffix>; NULL
 * for a type without one. */
#define TP_QE_DOT_OF(wtype, P)                \
  switch (wtype) {                            \
  case TOPOS_Q4_0: return P##_dot_q4_0;       \
  case TOPOS_Q4_1: return P##_dot_q4_1;       \
  case TOPOS_Q5_0: return P##_dot_q5_0;       \
  case TOPOS_Q5_1: return P##_dot_q5_1;       \
  case TOPOS_Q8_0: return P##_dot_q8_0;       \
  case TOPOS_MXFP4: return P##_dot_mxfp4;     \
  case TOPOS_Q2_K: return P##_dot_q2_K;       \
  case TOPOS_Q3_K: return P##_dot_q3_K;       \
  case TOPOS_Q4_K: return P##_dot_q4_K;       \
  case TOPOS_Q5_K: return P##_dot_q5_K;       \
  case TOPOS_Q6_K: return P##_dot_q6_K;       \
  default: return NULL;                       \
  }

#endif
