/* Internal: one definition of the broadcast-FMA register-tile microkernel,
 * instantiated per ISA and dtype by the *_avx2.c / *_avx512.c kernel files
 * (see gemm_kernels.h for the contract).
 *
 * The tile is MR rows x NV vectors of W lanes. Per depth step: load NV
 * vectors of packed B, then for each row broadcast one packed A value and do
 * NV FMAs. MR * NV accumulators + NV B vectors + 1 broadcast must fit the
 * register file, so the fully unrolled loops stay in registers.
 *
 *   PREFETCH_B(ptr) prefetches packed B some steps ahead (B streams from L2);
 *   the A micro-panel is reused across a whole row of tiles and sits in L1.
 *   PREFETCH_C(ptr) fetches the C tile of the next call (the tile to the right). */
#ifndef TP_BACKEND_SIMD_GEMM_UKERNEL_TEMPLATE_H
#define TP_BACKEND_SIMD_GEMM_UKERNEL_TEMPLATE_H

#define TP_GEMM_PRAGMA_UNROLL _Pragma("GCC unroll 32")

#define TP_GEMM_UKERNEL(NAME, T, VT, W, MR, NV, LOAD, STORE, SET1, FMA, ZERO, PREFETCH_B,       \
                        PREFETCH_C)                                                              \
  void NAME(int64_t kc, const T *a, const T *b, T *c, int64_t ldc, int accumulate) {            \
    VT acc[MR][NV];                                                                              \
    if (accumulate) {                                                                            \
      TP_GEMM_PRAGMA_UNROLL for (int r = 0; r < MR; ++r) {                                       \
        TP_GEMM_PRAGMA_UNROLL for (int v = 0; v < NV; ++v) acc[r][v] = LOAD(c + r * ldc + v * W); \
      }                                                                                          \
    } else {                                                                                     \
      TP_GEMM_PRAGMA_UNROLL for (int r = 0; r < MR; ++r) {                                       \
        TP_GEMM_PRAGMA_UNROLL for (int v = 0; v < NV; ++v) acc[r][v] = ZERO();                   \
      }                                                                                          \
    }                                                                                            \
    /* The next tile to the right is usually next: start fetching its C. */                     \
    TP_GEMM_PRAGMA_UNROLL for (int r = 0; r < MR; ++r) {                                         \
      TP_GEMM_PRAGMA_UNROLL for (int v = 0; v < NV; ++v) PREFETCH_C(c + r * ldc + (NV + v) * W); \
    }                                                                                            \
    for (int64_t p = 0; p < kc; ++p) {                                                           \
      VT bv[NV];                                                                                 \
      PREFETCH_B(b);                                                                             \
      TP_GEMM_PRAGMA_UNROLL for (int v = 0; v < NV; ++v) bv[v] = LOAD(b + v * W);                \
      TP_GEMM_PRAGMA_UNROLL for (int r = 0; r < MR; ++r) {                                       \
        VT ar = SET1(a[r]);                                                                      \
        TP_GEMM_PRAGMA_UNROLL for (int v = 0; v < NV; ++v) acc[r][v] = FMA(ar, bv[v], acc[r][v]); \
      }                                                                                          \
      a += MR;                                                                                   \
      b += NV * W;                                                                               \
    }                                                                                            \
    TP_GEMM_PRAGMA_UNROLL for (int r = 0; r < MR; ++r) {                                         \
      TP_GEMM_PRAGMA_UNROLL for (int v = 0; v < NV; ++v) STORE(c + r * ldc + v * W, acc[r][v]);  \
    }                                                                                            \
  }

#endif
