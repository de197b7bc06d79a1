/* The fused matrix-vector kernels of the K types as a table (included at
 * the end of qk_matvec_avx2.h, which defines the bodies mv_body_k45 (Q4_K /
 * Q5_K) and mv_body_q6_K, and mv_prepare, the per-product preparation its
 * kernels need; AVX-512 has its own K-type products). Each kernel takes a
 * panel of 4 rows at once, or a shorter one row by row. */
#ifndef TP_QUANT_QK_MATVEC_TABLE_H
#define TP_QUANT_QK_MATVEC_TABLE_H

#define MV_DEFINE(name, call)                                                                         \
  static void mv_##name(const uint8_t *const *rows, int nr, const qk_act *act, int64_t c, int64_t k,   \
                        const uint8_t *pf, int64_t pf_step, float *res) {                             \
    if (nr == 4) {                                                                                    \
      call(rows, 4, act, c, k, pf, pf_step, res);                                                     \
      return;                                                                                         \
    }                                                                                                 \
    for (int r = 0; r < nr; ++r) call(rows + r, 1, act, c, k, r ? NULL : pf, pf_step, res + r * QK_C); \
  }
#define MV_Q4_K(rows, NR, act, c, k, pf, st, res) mv_body_k45(rows, NR, act, c, k, pf, st, res, 0)
#define MV_Q5_K(rows, NR, act, c, k, pf, st, res) mv_body_k45(rows, NR, act, c, k, pf, st, res, 1)
MV_DEFINE(q4_K, MV_Q4_K)
MV_DEFINE(q5_K, MV_Q5_K)
MV_DEFINE(q6_K, mv_body_q6_K)

/* Per-product preparation a fused kernel needs (1 ok, 0 out of memory). */
static int qk_matvec_prepare(topos_dtype wtype, qk_act *act) { return mv_prepare(wtype, act); }

/* The fused kernel for a weight type, or NULL (the tile route serves it).
 * K types have k a multiple of 256. */
static qk_matvec_fn qk_matvec_of(topos_dtype wtype, int64_t k) {
  if (k % 256 != 0) return NULL;
  switch (wtype) {
    case TOPOS_Q4_K: return mv_q4_K;
    case TOPOS_Q5_K: return mv_q5_K;
    case TOPOS_Q6_K: return mv_q6_K;
    default: return NULL;
  }
}

#endif
