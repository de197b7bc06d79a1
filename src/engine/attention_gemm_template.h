/* The Fast attention products without packing, one definition instanced per
 * ISA (patterns_attention_avx512.c, patterns_attention_avx2.c), which
 * includes the lane operations (base/vlanes_*.h) and defines TP_VMATH_SUFFIX
 * first.
 *
 * C = A B for the small products of one block of query rows: scores (A the
 * queries, B the keys with keys adjacent) and values (A the probabilities, B
 * the value rows). B's rows are read in place — a block's keys or values sit
 * in L2 — so nothing is packed per call, where the chain's gemm packs B for
 * every block. Tiles of 4 rows x 2 vectors of columns (a lone row: 4
 * vectors), one FMA chain per element: c = 0, then c = fma(a[r, t], b[t, c], c)
 * for t ascending. Every
 * lane runs that same chain, so AVX-512 and AVX2 give the same bits. */
#include <stdint.h>

#ifndef TP_VM_FN
#define TP_VM_CAT_(a, b) a##b
#define TP_VM_CAT(a, b) TP_VM_CAT_(a, b)
#define TP_VM_FN(name) TP_VM_CAT(name, TP_VMATH_SUFFIX)
#endif

/* R rows (R <= 4) x V vectors of columns (V <= 4, R * V <= 8 in practice) */
static inline __attribute__((always_inline)) void TP_VM_FN(tp_attn_tile_)(
    int R, int V, int64_t k, const float *a, int64_t a_rs, int64_t a_cs, const float *b, int64_t ldb,
    float *c, int64_t ldc) {
  TP_V acc[4][4];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = TP_VSET(0.0f);
  for (int64_t t = 0; t < k; ++t) {
    const float *bt = b + t * ldb;
    TP_V bv[4];
    for (int v = 0; v < V; ++v) bv[v] = TP_VLOAD(bt + v * TP_VW);
    for (int r = 0; r < R; ++r) {
      const TP_V ar = TP_VSET(a[r * a_rs + t * a_cs]);
      for (int v = 0; v < V; ++v) acc[r][v] = TP_VFMA(ar, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) TP_VSTORE(c + r * ldc + v * TP_VW, acc[r][v]);
}

/* C[m x n] (row stride ldc) = A[m x k] (strides a_rs, a_cs) B[k x n] (row
 * stride ldb, columns adjacent); n a multiple of 16. Blocks of 4 rows take
 * tiles of 2 vectors; a lone row (decoding's single query) 4 vectors, so
 * each row of B is read once per 4 vectors of its columns. */
void TP_VM_FN(tp_attn_gemm_)(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_rs,
                             int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc) {
  int64_t r0 = 0;
  for (; r0 + 4 <= m; r0 += 4) {
    const float *ar = a + r0 * a_rs;
    float *cr = c + r0 * ldc;
    int64_t c0 = 0;
    for (; c0 + 2 * TP_VW <= n; c0 += 2 * TP_VW)
      TP_VM_FN(tp_attn_tile_)(4, 2, k, ar, a_rs, a_cs, b + c0, ldb, cr + c0, ldc);
    for (; c0 < n; c0 += TP_VW) TP_VM_FN(tp_attn_tile_)(4, 1, k, ar, a_rs, a_cs, b + c0, ldb, cr + c0, ldc);
  }
  for (; r0 < m; ++r0) {
    const float *ar = a + r0 * a_rs;
    float *cr = c + r0 * ldc;
    int64_t c0 = 0;
    for (; c0 + 4 * TP_VW <= n; c0 += 4 * TP_VW)
      TP_VM_FN(tp_attn_tile_)(1, 4, k, ar, a_rs, a_cs, b + c0, ldb, cr + c0, ldc);
    for (; c0 + 2 * TP_VW <= n; c0 += 2 * TP_VW)
      TP_VM_FN(tp_attn_tile_)(1, 2, k, ar, a_rs, a_cs, b + c0, ldb, cr + c0, ldc);
    for (; c0 < n; c0 += TP_VW) TP_VM_FN(tp_attn_tile_)(1, 1, k, ar, a_rs, a_cs, b + c0, ldb, cr + c0, ldc);
  }
}
