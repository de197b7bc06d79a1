/* The Fast attention products without packing, one definition instanced per
 * ISA (patterns_attention_avx512.c, patterns_attention_avx2.c), which
 * includes the lane operations (base/vlanes_*.h) and defines TP_VMATH_SUFFIX
 * first.
 *
 * C = A B for the small products of one block of query rows: scores (A the
 * queries, B the keys with keys adjacent) and values (A the probabilities, B
 * the value rows). B's rows are read in place — a block's keys or values sit
 * in L2 — so nothing is packed per call, where the chain's gemm packs B for
 * every block. Tiles of 6 (AVX2) or 4 rows x 2 vectors of columns (fewer
 * rows: wider tiles), one FMA chain per element: c = 0, then c = fma(a[r, t], b[t, c], c)
 * for t ascending, whatever the tile. Every
 * lane runs that same chain, so AVX-512 and AVX2 give the same bits. */
#include <stdint.h>

#ifndef TP_VM_FN
#define TP_VM_CAT_(a, b) a##b
#define TP_VM_CAT(a, b) TP_VM_CAT_(a, b)
#define TP_VM_FN(name) TP_VM_CAT(name, TP_VMATH_SUFFIX)
#endif

/* R rows (R <= 6) x V vectors of columns (V <= 8, R * V <= 12): R * V
 * independent FMA chains, enough to cover the FMA latency (4-5 cycles at 2
 * per cycle) where the block allows */
static inline __attribute__((always_inline)) void TP_VM_FN(tp_attn_tile_)(
    int R, int V, int64_t k, const float *a, int64_t a_rs, int64_t a_cs, const float *b, int64_t ldb,
    float *c, int64_t ldc, int resume) {
  TP_V acc[6][8];
  for (int r = 0; r < R; ++r) /* resume: the chains go on from C's values (exact: floats stored, loaded) */
    for (int v = 0; v < V; ++v) acc[r][v] = resume ? TP_VLOAD(c + r * ldc + v * TP_VW) : TP_VSET(0.0f);
  for (int64_t t = 0; t < k; ++t) {
    const float *bt = b + t * ldb;
    TP_V bv[8];
    for (int v = 0; v < V; ++v) bv[v] = TP_VLOAD(bt + v * TP_VW);
    for (int r = 0; r < R; ++r) {
      const TP_V ar = TP_VSET(a[r * a_rs + t * a_cs]);
      for (int v = 0; v < V; ++v) acc[r][v] = TP_VFMA(ar, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) TP_VSTORE(c + r * ldc + v * TP_VW, acc[r][v]);
}

/* R rows of C: tiles of `wide` vectors of columns, then what is left (fewer
 * than `wide` vectors) as one tile, so a value product's dv columns (48:
 * 6 vectors of 8) run as many chains as they have vectors. R and wide are
 * constants at every call, and each case names its width: GCC turns a
 * run-time V into accumulators on the stack. */
static inline __attribute__((always_inline)) void TP_VM_FN(tp_attn_cols_)(
    int R, int wide, int64_t n, int64_t k, const float *a, int64_t a_rs, int64_t a_cs,
    const float *b, int64_t ldb, float *c, int64_t ldc, int resume) {
  int64_t c0 = 0;
  for (; c0 + wide * TP_VW <= n; c0 += wide * TP_VW)
    TP_VM_FN(tp_attn_tile_)(R, wide, k, a, a_rs, a_cs, b + c0, ldb, c + c0, ldc, resume);
  const float *bt = b + c0;
  float *ct = c + c0;
  switch ((n - c0) / TP_VW) {
#define TP_ATTN_TAIL(V) \
    case V: if (V < wide) TP_VM_FN(tp_attn_tile_)(R, V, k, a, a_rs, a_cs, bt, ldb, ct, ldc, resume); break;
    TP_ATTN_TAIL(1) TP_ATTN_TAIL(2) TP_ATTN_TAIL(3) TP_ATTN_TAIL(4) TP_ATTN_TAIL(5)
    TP_ATTN_TAIL(6) TP_ATTN_TAIL(7)
#undef TP_ATTN_TAIL
    default: break;
  }
}

/* Rows of B per pass over C's columns, for the rows left after 4-row
 * blocks (decoding's queries): the tiles walk B's first TP_ATTN_KB rows
 * across all columns, then the next TP_ATTN_KB resuming from C, so B is
 * read row after row — once, as one stream — instead of a column strip
 * per tile: a decoded token's keys and values come from memory (the
 * weights streamed since evicted them), and strips of 64 bytes per row ran
 * at half the memory's rate. The same chains, so the same bits. */
#define TP_ATTN_KB 16

static inline __attribute__((always_inline)) void TP_VM_FN(tp_attn_rows_)(
    int R, int wide, int64_t n, int64_t k, const float *a, int64_t a_rs, int64_t a_cs,
    const float *b, int64_t ldb, float *c, int64_t ldc) {
  int64_t t0 = 0;
  do {
    const int64_t kb = k - t0 < TP_ATTN_KB ? k - t0 : TP_ATTN_KB;
    TP_VM_FN(tp_attn_cols_)(R, wide, n, kb, a + t0 * a_cs, a_rs, a_cs, b + t0 * ldb, ldb, c, ldc, t0 > 0);
    t0 += kb;
  } while (t0 < k);
}

/* Rows of C when a row of B fits one tile (n <= 8 vectors: a value
 * product, B the value rows) and there are many of them: each row of
 * C in one tile of 8 chains, over blocks of B's rows small enough to stay
 * in L1 while the rows of C take turns on them. B is then read front to
 * back, each row whole: the 3 x 2 tiles read a row's 64-byte strips a
 * column tile at a time, and from memory (a long cache's values, evicted
 * by the weights) that ran at half the rate of the scores' products (8
 * against 15-17 GB/s, one thread, Zen 3; whole rows: 13-14). The same
 * chains, so the same bits. */
static inline __attribute__((always_inline)) void TP_VM_FN(tp_attn_whole_rows_)(
    int64_t rows, int64_t n, int64_t k, const float *a, int64_t a_rs, int64_t a_cs, const float *b,
    int64_t ldb, float *c, int64_t ldc) {
  int64_t block = (int64_t)(8192 / sizeof(float)) / n / TP_ATTN_KB * TP_ATTN_KB; /* 8 KiB of B */
  if (block < TP_ATTN_KB) block = TP_ATTN_KB;
  for (int64_t t0 = 0; t0 < k; t0 += block) {
    const int64_t kb = k - t0 < block ? k - t0 : block;
    for (int64_t r = 0; r < rows; ++r)
      TP_VM_FN(tp_attn_cols_)(1, 8, n, kb, a + r * a_rs + t0 * a_cs, a_rs, a_cs, b + t0 * ldb, ldb, c + r * ldc,
                              ldc, t0 > 0);
  }
}

/* C[m x n] (row stride ldc) = A[m x k] (strides a_rs, a_cs) B[k x n] (row
 * stride ldb, columns adjacent); n a multiple of 16. Blocks of 6 rows (AVX2:
 * 12 chains in 16 registers, so each pass over B serves 6 rows; AVX-512
 * keeps 4), then of 4, take tiles of 2 vectors; the rows left over (a decoded token's G query rows
 * per kv head: 1, 2 or 3 of them) take 3 x 2, 2 x 4 and 1 x 8, so a lone
 * row (G = 1) runs 8 chains, not 4, and reads each row of B once per 8
 * vectors of its columns. Where a row of B fits 8 vectors and B has more
 * rows than one pass (a value product), those rows left over, or all rows
 * when there are at most 8 (a decoded token's G: TinyLlama's 8 read a long
 * cache's values twice, once per 4-row block), go whole (tp_attn_whole_rows_). */
void TP_VM_FN(tp_attn_gemm_)(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_rs,
                             int64_t a_cs, const float *b, int64_t ldb, float *c, int64_t ldc) {
  const int value_like = n <= 8 * TP_VW && k > TP_ATTN_KB; /* rows of B fit a tile; many of them */
  int64_t r0 = 0;
  if (!value_like || m > 8) { /* a decoded token's G rows (at most 8) all go whole */
    for (; r0 + 6 <= m && TP_VW == 8; r0 += 6)
      TP_VM_FN(tp_attn_cols_)(6, 2, n, k, a + r0 * a_rs, a_rs, a_cs, b, ldb, c + r0 * ldc, ldc, 0);
    for (; r0 + 4 <= m; r0 += 4)
      TP_VM_FN(tp_attn_cols_)(4, 2, n, k, a + r0 * a_rs, a_rs, a_cs, b, ldb, c + r0 * ldc, ldc, 0);
  }
  const float *ar = a + r0 * a_rs;
  float *cr = c + r0 * ldc;
  if (value_like && m > r0) {
    TP_VM_FN(tp_attn_whole_rows_)(m - r0, n, k, ar, a_rs, a_cs, b, ldb, cr, ldc);
    return;
  }
  switch (m - r0) {
    case 3: TP_VM_FN(tp_attn_rows_)(3, 2, n, k, ar, a_rs, a_cs, b, ldb, cr, ldc); break;
    case 2: TP_VM_FN(tp_attn_rows_)(2, 4, n, k, ar, a_rs, a_cs, b, ldb, cr, ldc); break;
    case 1: TP_VM_FN(tp_attn_rows_)(1, 8, n, k, ar, a_rs, a_cs, b, ldb, cr, ldc); break;
    default: break;
  }
}
