/* The SIMD backend's packed GEMM: argument checks, the blocking table, the
 * thread partition of C and ISA dispatch. The loop nest and packing are in
 * gemm_driver_template.h (one definition, instantiated for f32 and f64); the
 * microkernels are the only ISA-specific code (gemm_kernels_*.c). */
#include "backend/simd/gemm.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/simd/gemm_kernels.h"
#include "base/error.h"
#include "base/threads.h"

#define TP_STRINGIFY_(x) #x
#define TP_STRINGIFY(x) TP_STRINGIFY_(x)

static int64_t tp_gemm_round_up(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/* Packing workspace. Large blocks from malloc are fresh mmaps, and touching
 * a fresh multi-megabyte buffer page by page costs about as much as packing
 * into it, so the last workspace is kept for the next call (one slot: a
 * concurrent GEMM just allocates its own). It stays reachable until exit. */
typedef struct {
  void *ptr;
  size_t bytes;
} tp_gemm_workspace;

static _Atomic(tp_gemm_workspace *) tp_gemm_cached_workspace;

static tp_gemm_workspace *tp_gemm_workspace_acquire(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (!rounded) rounded = 64;
  tp_gemm_workspace *ws = atomic_exchange(&tp_gemm_cached_workspace, NULL);
  if (ws && ws->bytes >= rounded) return ws;
  if (ws) {
    free(ws->ptr);
  } else {
    ws = malloc(sizeof *ws);
    if (!ws) return NULL;
  }
  ws->ptr = aligned_alloc(64, rounded);
  ws->bytes = ws->ptr ? rounded : 0;
  if (!ws->ptr) {
    free(ws);
    return NULL;
  }
  return ws;
}

static void tp_gemm_workspace_release(tp_gemm_workspace *ws) {
  /* Park it; a workspace another GEMM parked meanwhile is freed. */
  tp_gemm_workspace *other = atomic_exchange(&tp_gemm_cached_workspace, ws);
  if (other) {
    free(other->ptr);
    free(other);
  }
}

/* |extent - 1| * |stride| summed over the axes fits int64 (and a margin for
 * the packing buffers): every index the driver forms is then representable. */
static int tp_gemm_span_ok(int64_t rows, int64_t row_stride, int64_t cols, int64_t col_stride,
                           int64_t elem) {
  int64_t x, y, s;
  if (rows > 0 && cols > 0) {
    if (__builtin_mul_overflow(rows - 1, row_stride, &x)) return 0;
    if (__builtin_mul_overflow(cols - 1, col_stride, &y)) return 0;
    if (__builtin_add_overflow(x, y, &s)) return 0;
    if (__builtin_add_overflow(s, 1, &s)) return 0;
    if (__builtin_mul_overflow(s, elem, &s)) return 0;
  }
  return 1;
}

static topos_status tp_gemm_check_args(const char *dtype, int64_t m, int64_t n, int64_t k,
                                       const void *a, int64_t ars, int64_t acs, const void *b,
                                       int64_t brs, int64_t bcs, const void *c, int64_t ldc,
                                       int64_t elem) {
  if (m < 0 || n < 0 || k < 0)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT,
                   "simd gemm %s: negative extent m=%lld n=%lld k=%lld", dtype, (long long)m,
                   (long long)n, (long long)k);
  if (ldc < n || ldc < 1)
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "simd gemm %s: ldc=%lld is less than n=%lld", dtype,
                   (long long)ldc, (long long)n);
  if (m == 0 || n == 0) return TOPOS_OK;
  if (!c || (k > 0 && (!a || !b)))
    return tp_fail(TOPOS_ERR_INVALID_ARGUMENT, "simd gemm %s: NULL buffer for m=%lld n=%lld k=%lld",
                   dtype, (long long)m, (long long)n, (long long)k);
  if (ars <= 0 || acs <= 0 || brs <= 0 || bcs <= 0)
    return tp_fail(TOPOS_UNSUPPORTED,
                   "simd gemm %s: strides must be positive (A %lld,%lld; B %lld,%lld): "
                   "broadcast or reversed operands go to another path",
                   dtype, (long long)ars, (long long)acs, (long long)brs, (long long)bcs);
  /* The margin covers the blocking constants added to extents. */
  const int64_t margin = INT64_C(1) << 20;
  if (m > INT64_MAX / 4 - margin || n > INT64_MAX / 4 - margin || k > INT64_MAX / 4 - margin ||
      !tp_gemm_span_ok(m, ars, k, acs, elem) || !tp_gemm_span_ok(k, brs, n, bcs, elem) ||
      !tp_gemm_span_ok(m, ldc, n, 1, elem))
    return tp_fail(TOPOS_UNSUPPORTED,
                   "simd gemm %s: index arithmetic overflows int64 (m=%lld n=%lld k=%lld, "
                   "A strides %lld,%lld, B strides %lld,%lld, ldc=%lld)",
                   dtype, (long long)m, (long long)n, (long long)k, (long long)ars, (long long)acs,
                   (long long)brs, (long long)bcs, (long long)ldc);
  return TOPOS_OK;
}

/* ---- thread partition: C is cut into row_rects x col_rects rectangles whose
 * edges fall on MR / NR multiples; each rectangle is computed whole by one
 * worker. The partition never changes a bit (see gemm_driver_template.h), so
 * it is chosen purely for speed. */

typedef struct {
  int64_t m, n, mr, nr;
  int64_t row_panels, col_panels; /* ceil(m / mr), ceil(n / nr) */
  int64_t row_rects, col_rects;
  int64_t rows_per_rect, cols_per_rect; /* upper bounds, in elements */
} tp_gemm_grid;

/* Below this many flops per extra thread, threads cost more than they give. */
#define TP_GEMM_MIN_FLOPS_PER_THREAD (INT64_C(4) << 20)

static tp_simd_gemm_tuning tp_gemm_tuning; /* zeros: the defaults */
static _Thread_local int64_t tp_gemm_last_rects;

void tp_simd_gemm_set_tuning(const tp_simd_gemm_tuning *tuning) {
  if (tuning)
    tp_gemm_tuning = *tuning;
  else
    memset(&tp_gemm_tuning, 0, sizeof tp_gemm_tuning);
}

int64_t tp_simd_gemm_last_rectangles(void) { return tp_gemm_last_rects; }

/* The table's blocking with the test overrides applied. */
static void tp_gemm_tuned_blocking(int mr, int nr, int64_t *mc, int64_t *kc, int64_t *nc) {
  if (tp_gemm_tuning.mc > 0) *mc = (tp_gemm_tuning.mc + mr - 1) / mr * mr;
  if (tp_gemm_tuning.kc > 0) *kc = tp_gemm_tuning.kc;
  if (tp_gemm_tuning.nc > 0) *nc = (tp_gemm_tuning.nc + nr - 1) / nr * nr;
}

static void tp_gemm_grid_choose(tp_gemm_grid *g, int64_t m, int64_t n, int64_t k, int mr, int nr,
                                int threads) {
  g->m = m;
  g->n = n;
  g->mr = mr;
  g->nr = nr;
  g->row_panels = (m + mr - 1) / mr;
  g->col_panels = (n + nr - 1) / nr;
  /* flops = 2mnk, computed in double: the extents may be large. */
  double flops = 2.0 * (double)m * (double)n * (double)k;
  int64_t min_flops = tp_gemm_tuning.min_flops_per_thread > 0 ? tp_gemm_tuning.min_flops_per_thread
                                                              : TP_GEMM_MIN_FLOPS_PER_THREAD;
  double useful = flops / (double)min_flops;
  int64_t limit = threads < 1 ? 1 : threads;
  if (useful < (double)limit) limit = useful < 1.0 ? 1 : (int64_t)useful;
  double best_cost = -1.0;
  g->row_rects = g->col_rects = 1;
  for (int64_t tm = 1; tm <= limit && tm <= g->row_panels; ++tm) {
    for (int64_t tn = 1; tm * tn <= limit && tn <= g->col_panels; ++tn) {
      double rows = (double)(((g->row_panels + tm - 1) / tm) * mr);
      double cols = (double)(((g->col_panels + tn - 1) / tn) * nr);
      /* Compute of the largest rectangle plus its packing (A rows cost about
       * twice B columns: a transpose against a copy), in depth units. A
       * rows-only partition packs B together (see the driver). */
      double b_cols = tn == 1 ? cols / (double)tm : cols;
      double cost = rows * cols + 32.0 * (2.0 * rows + b_cols);
      if (best_cost < 0 || cost < best_cost * (1 - 1e-12)) {
        best_cost = cost;
        g->row_rects = tm;
        g->col_rects = tn;
      }
    }
  }
  g->rows_per_rect = ((g->row_panels + g->row_rects - 1) / g->row_rects) * mr;
  g->cols_per_rect = ((g->col_panels + g->col_rects - 1) / g->col_rects) * nr;
}

/* The same extents cut into `chunks` row bands only (shared mode). */
static void tp_gemm_grid_rows_only(tp_gemm_grid *g, int64_t chunks) {
  if (chunks > g->row_panels) chunks = g->row_panels;
  if (chunks < 1) chunks = 1;
  g->row_rects = chunks;
  g->col_rects = 1;
  g->rows_per_rect = ((g->row_panels + chunks - 1) / chunks) * g->mr;
  g->cols_per_rect = g->col_panels * g->nr;
}

static void tp_gemm_grid_rect(const tp_gemm_grid *g, int64_t t, int64_t *r0, int64_t *r1, int64_t *c0,
                              int64_t *c1) {
  int64_t ti = t / g->col_rects, tj = t % g->col_rects;
  *r0 = ti * g->row_panels / g->row_rects * g->mr;
  *r1 = (ti + 1) * g->row_panels / g->row_rects * g->mr;
  *c0 = tj * g->col_panels / g->col_rects * g->nr;
  *c1 = (tj + 1) * g->col_panels / g->col_rects * g->nr;
  if (*r1 > g->m) *r1 = g->m;
  if (*c1 > g->n) *c1 = g->n;
}

/* One step of the shared-B pipeline (see gemm_driver_template.h): depth
 * panel [pc, pc + kc) times columns [jc, jc + nc). */
typedef struct {
  int64_t pc, kc, jc, nc;
} tp_gemm_step;

/* ---- the driver, per dtype */

#define TP_T float
#define TP_S f32
#include "backend/simd/gemm_driver_template.h"
#undef TP_T
#undef TP_S

#define TP_T double
#define TP_S f64
#include "backend/simd/gemm_driver_template.h"
#undef TP_T
#undef TP_S

/* ---- blocking table: register tile from the kernel, cache blocks per ISA.
 *   kc: depth of a panel — the A micro-panel (MR x kc) stays in L1;
 *   nc: B block (kc x nc) stays in L2;  mc: A block (mc x kc), L3.
 * Tuned on a Xeon with AVX-512 (48 KiB L1d, 2 MiB L2 per core). */

static const tp_gemm_blocking_f32 tp_gemm_table_f32[] = {
    {TP_SIMD_ISA_SCALAR, "scalar f32 4x4", TP_GEMM_SCALAR_F32_MR, TP_GEMM_SCALAR_F32_NR, 256, 256, 512,
     tp_gemm_ukernel_scalar_f32},
#if defined(__x86_64__)
    {TP_SIMD_ISA_AVX2, "avx2 f32 6x16", TP_GEMM_AVX2_F32_MR, TP_GEMM_AVX2_F32_NR, 3072, 384, 512,
     tp_gemm_ukernel_avx2_f32},
    {TP_SIMD_ISA_AVX512, "avx512 f32 14x32", TP_GEMM_AVX512_F32_MR, TP_GEMM_AVX512_F32_NR, 3072,
     384, 512, tp_gemm_ukernel_avx512_f32},
#endif
#if defined(__aarch64__)
    {TP_SIMD_ISA_NEON, "neon f32 8x12", TP_GEMM_NEON_F32_MR, TP_GEMM_NEON_F32_NR, 2048, 256, 384,
     tp_gemm_ukernel_neon_f32},
#endif
};

static const tp_gemm_blocking_f64 tp_gemm_table_f64[] = {
    {TP_SIMD_ISA_SCALAR, "scalar f64 4x4", TP_GEMM_SCALAR_F64_MR, TP_GEMM_SCALAR_F64_NR, 256, 256, 512,
     tp_gemm_ukernel_scalar_f64},
#if defined(__x86_64__)
    {TP_SIMD_ISA_AVX2, "avx2 f64 6x8", TP_GEMM_AVX2_F64_MR, TP_GEMM_AVX2_F64_NR, 3072, 256, 512,
     tp_gemm_ukernel_avx2_f64},
    {TP_SIMD_ISA_AVX512, "avx512 f64 14x16", TP_GEMM_AVX512_F64_MR, TP_GEMM_AVX512_F64_NR, 3072,
     256, 256, tp_gemm_ukernel_avx512_f64},
#endif
#if defined(__aarch64__)
    {TP_SIMD_ISA_NEON, "neon f64 8x6", TP_GEMM_NEON_F64_MR, TP_GEMM_NEON_F64_NR, 2048, 256, 384,
     tp_gemm_ukernel_neon_f64},
#endif
};

#define TP_GEMM_LOOKUP(S)                                                                       \
  static const tp_gemm_blocking_##S *tp_gemm_lookup_##S(tp_simd_isa isa) {                      \
    for (size_t i = 0; i < sizeof tp_gemm_table_##S / sizeof tp_gemm_table_##S[0]; ++i)         \
      if (tp_gemm_table_##S[i].isa == isa) return &tp_gemm_table_##S[i];                        \
    return NULL;                                                                                \
  }
TP_GEMM_LOOKUP(f32)
TP_GEMM_LOOKUP(f64)

#define TP_GEMM_ENTRY(T, S)                                                                      \
  topos_status tp_simd_gemm_##S##_isa(tp_simd_isa isa, int64_t m, int64_t n, int64_t k,          \
                                      const T *a, int64_t ars, int64_t acs, const T *b,          \
                                      int64_t brs, int64_t bcs, T *c, int64_t ldc) {             \
    const tp_gemm_blocking_##S *bl = tp_gemm_lookup_##S(isa);                                    \
    if (!bl || !tp_simd_isa_available(isa))                                                      \
      return tp_fail(TOPOS_UNSUPPORTED, "simd gemm " #S ": no %s kernel on this machine/build",  \
                     tp_simd_isa_name(isa));                                                     \
    return tp_gemm_run_##S(bl, m, n, k, a, ars, acs, b, brs, bcs, c, ldc);                       \
  }                                                                                              \
  topos_status tp_simd_gemm_##S(int64_t m, int64_t n, int64_t k, const T *a, int64_t ars,        \
                                int64_t acs, const T *b, int64_t brs, int64_t bcs, T *c,         \
                                int64_t ldc) {                                                   \
    return tp_simd_gemm_##S##_isa(tp_simd_isa_best(), m, n, k, a, ars, acs, b, brs, bcs, c, ldc); \
  }
TP_GEMM_ENTRY(float, f32)
TP_GEMM_ENTRY(double, f64)

const char *tp_simd_gemm_describe(int dtype_bits) {
  /* One buffer per dtype, so both descriptions can be printed together. */
  static _Thread_local char texts[2][128];
  char *text = texts[dtype_bits == 64];
  tp_simd_isa isa = tp_simd_isa_best();
  const char *name = NULL;
  int64_t mc = 0, kc = 0, nc = 0;
  if (dtype_bits == 64) {
    const tp_gemm_blocking_f64 *bl = tp_gemm_lookup_f64(isa);
    if (bl) name = bl->name, mc = bl->mc, kc = bl->kc, nc = bl->nc;
    if (bl) tp_gemm_tuned_blocking(bl->mr, bl->nr, &mc, &kc, &nc);
  } else {
    const tp_gemm_blocking_f32 *bl = tp_gemm_lookup_f32(isa);
    if (bl) name = bl->name, mc = bl->mc, kc = bl->kc, nc = bl->nc;
    if (bl) tp_gemm_tuned_blocking(bl->mr, bl->nr, &mc, &kc, &nc);
  }
  if (!name) return "none";
  snprintf(text, sizeof texts[0], "%s mc=%lld kc=%lld nc=%lld", name, (long long)mc, (long long)kc,
           (long long)nc);
  return text;
}
