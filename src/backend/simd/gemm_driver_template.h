/* Internal: the GEMM driver for one dtype, included by gemm.c once per dtype
 * with TP_T (element type) and TP_S (suffix: f32, f64) defined.
 *
 * Loop nest over one thread's rectangle of C (BLIS order, with our row-major
 * C the vector dimension is n, so the roles of A and B are swapped against
 * BLIS's column-major description):
 *
 *   for ic in m step MC:            packed A block (MC x KC) lives in L3
 *     for pc in k step KC:          depth panels, ascending — never reordered
 *       pack A[ic.., pc..]
 *       for jc in n step NC:        packed B block (KC x NC) lives in L2
 *         pack B[pc.., jc..]
 *         for ir in mc step MR:     A micro-panel (MR x KC) stays in L1
 *           for jr in nc step NR:   B micro-panels stream from L2
 *             microkernel(C tile, accumulate = pc > 0)
 *
 * Each C element is touched once per depth panel, in ascending pc, and the
 * kernel continues the element's FMA chain from the stored value: the bits do
 * not depend on MC/NC/KC, on which thread owns the element, or on the ISA. */

#define TP_CAT_(a, b) a##b
#define TP_CAT(a, b) TP_CAT_(a, b)
#define TP_FN(name) TP_CAT(name, TP_S)

typedef struct {
  tp_simd_isa isa;
  const char *name;
  int mr, nr;
  int64_t mc, kc, nc; /* mc multiple of mr, nc multiple of nr */
  void (*kernel)(int64_t kc, const TP_T *a, const TP_T *b, TP_T *c, int64_t ldc, int accumulate);
} TP_FN(tp_gemm_blocking_);

/* A[0..mc)[0..kc) -> MR-row panels: panel q holds dst[q*kc*MR + p*MR + r] =
 * A[q*MR + r][p], rows past mc are zero. */
static inline void TP_FN(tp_gemm_pack_a_panel_)(int64_t rows, int64_t kc, const TP_T *a, int64_t ars,
                                                int64_t acs, int mr, TP_T *restrict dst) {
  if (acs == 1) {
    /* Row-major source: read each row contiguously, scatter into the panel. */
    for (int64_t r = 0; r < rows; ++r) {
      const TP_T *src = a + r * ars;
      for (int64_t p = 0; p < kc; ++p) dst[p * mr + r] = src[p];
    }
  } else {
    for (int64_t p = 0; p < kc; ++p) {
      const TP_T *src = a + p * acs;
      for (int64_t r = 0; r < rows; ++r) dst[p * mr + r] = src[r * ars];
    }
  }
  if (rows < mr)
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t r = rows; r < mr; ++r) dst[p * mr + r] = 0;
}

/* Fixed-MR copy of a full row-major panel, so the compiler unrolls the rows. */
#define TP_GEMM_PACK_A_FIXED(MRV)                                                           \
  static void TP_FN(TP_CAT(tp_gemm_pack_a_rows##MRV, _))(int64_t kc, const TP_T *a,          \
                                                           int64_t ars, TP_T *restrict dst) { \
    for (int64_t p = 0; p < kc; ++p) {                                                      \
      for (int r = 0; r < MRV; ++r) dst[p * MRV + r] = a[r * ars + p];                      \
    }                                                                                       \
  }
TP_GEMM_PACK_A_FIXED(4)
TP_GEMM_PACK_A_FIXED(6)
TP_GEMM_PACK_A_FIXED(8)
TP_GEMM_PACK_A_FIXED(12)
TP_GEMM_PACK_A_FIXED(14)
TP_GEMM_PACK_A_FIXED(16)
#undef TP_GEMM_PACK_A_FIXED

static void TP_FN(tp_gemm_pack_a_)(int64_t mc, int64_t kc, const TP_T *a, int64_t ars, int64_t acs,
                                   int mr, TP_T *restrict dst) {
  for (int64_t i = 0; i < mc; i += mr, dst += kc * mr) {
    int64_t rows = mc - i < mr ? mc - i : mr;
    const TP_T *src = a + i * ars;
    if (acs == 1 && rows == mr) {
      switch (mr) {
        case 4: TP_FN(tp_gemm_pack_a_rows4_)(kc, src, ars, dst); continue;
        case 6: TP_FN(tp_gemm_pack_a_rows6_)(kc, src, ars, dst); continue;
        case 8: TP_FN(tp_gemm_pack_a_rows8_)(kc, src, ars, dst); continue;
        case 12: TP_FN(tp_gemm_pack_a_rows12_)(kc, src, ars, dst); continue;
        case 14: TP_FN(tp_gemm_pack_a_rows14_)(kc, src, ars, dst); continue;
        case 16: TP_FN(tp_gemm_pack_a_rows16_)(kc, src, ars, dst); continue;
        default: break;
      }
    }
    TP_FN(tp_gemm_pack_a_panel_)(rows, kc, src, ars, acs, mr, dst);
  }
}

/* Row-major B, `panels` full NR-panels: walk B row by row (one contiguous
 * run of panels * NR values per depth step, which the hardware prefetcher
 * follows; a panel at a time would touch a new page every NR values) and
 * deal each row out to the panels. Fixed NR so the copies are unrolled. */
#define TP_GEMM_PACK_B_FIXED(NRV)                                                              \
  static void TP_FN(TP_CAT(tp_gemm_pack_b_rows##NRV, _))(int64_t kc, int64_t panels,           \
                                                           const TP_T *b, int64_t brs,         \
                                                           TP_T *restrict dst) {               \
    for (int64_t p = 0; p < kc; ++p) {                                                         \
      const TP_T *row = b + p * brs;                                                           \
      TP_T *out = dst + p * NRV;                                                               \
      for (int64_t q = 0; q < panels; ++q) {                                                   \
        TP_T v[NRV];                                                                           \
        for (int j = 0; j < NRV; ++j) v[j] = row[q * NRV + j];                                 \
        for (int j = 0; j < NRV; ++j) out[q * kc * NRV + j] = v[j];                            \
      }                                                                                        \
    }                                                                                          \
  }
TP_GEMM_PACK_B_FIXED(4)
TP_GEMM_PACK_B_FIXED(6)
TP_GEMM_PACK_B_FIXED(8)
TP_GEMM_PACK_B_FIXED(12)
TP_GEMM_PACK_B_FIXED(16)
TP_GEMM_PACK_B_FIXED(32)
#undef TP_GEMM_PACK_B_FIXED

/* B[0..kc)[0..nc) -> NR-column panels: panel q holds dst[q*kc*NR + p*NR + j] =
 * B[p][q*NR + j], columns past nc are zero. */
static void TP_FN(tp_gemm_pack_b_)(int64_t kc, int64_t nc, const TP_T *b, int64_t brs, int64_t bcs,
                                   int nr, TP_T *restrict dst) {
  int64_t j0 = 0;
  if (bcs == 1 && nc >= nr) {
    int64_t full = nc / nr;
    int done = 1;
    switch (nr) {
      case 4: TP_FN(tp_gemm_pack_b_rows4_)(kc, full, b, brs, dst); break;
      case 6: TP_FN(tp_gemm_pack_b_rows6_)(kc, full, b, brs, dst); break;
      case 8: TP_FN(tp_gemm_pack_b_rows8_)(kc, full, b, brs, dst); break;
      case 12: TP_FN(tp_gemm_pack_b_rows12_)(kc, full, b, brs, dst); break;
      case 16: TP_FN(tp_gemm_pack_b_rows16_)(kc, full, b, brs, dst); break;
      case 32: TP_FN(tp_gemm_pack_b_rows32_)(kc, full, b, brs, dst); break;
      default: done = 0; break;
    }
    if (done) {
      j0 = full * nr;
      dst += full * kc * nr;
    }
  }
  for (; j0 < nc; j0 += nr, dst += kc * nr) {
    int64_t cols = nc - j0 < nr ? nc - j0 : nr;
    const TP_T *src = b + j0 * bcs;
    if (bcs == 1) {
      for (int64_t p = 0; p < kc; ++p) {
        const TP_T *row = src + p * brs;
        TP_T *out = dst + p * nr;
        for (int64_t j = 0; j < cols; ++j) out[j] = row[j];
        for (int64_t j = cols; j < nr; ++j) out[j] = 0;
      }
    } else {
      /* Transposed source: read each column contiguously along the depth. */
      for (int64_t j = 0; j < cols; ++j) {
        const TP_T *col = src + j * bcs;
        for (int64_t p = 0; p < kc; ++p) dst[p * nr + j] = col[p * brs];
      }
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t j = cols; j < nr; ++j) dst[p * nr + j] = 0;
    }
  }
}

/* The macro-kernel: C[0..mc)[0..nc) (+)= packed A block . packed B block. */
static void TP_FN(tp_gemm_macro_)(const TP_FN(tp_gemm_blocking_) * bl, int64_t mc, int64_t nc,
                                  int64_t kc, const TP_T *apack, const TP_T *bpack, TP_T *c,
                                  int64_t ldc, int accumulate) {
  const int mr = bl->mr, nr = bl->nr;
  _Alignas(64) TP_T edge[TP_GEMM_MAX_TILE];
  for (int64_t ir = 0; ir < mc; ir += mr) {
    int64_t rows = mc - ir < mr ? mc - ir : mr;
    const TP_T *ap = apack + ir * kc;
    TP_T *crow = c + ir * ldc;
    for (int64_t jr = 0; jr < nc; jr += nr) {
      int64_t cols = nc - jr < nr ? nc - jr : nr;
      const TP_T *bp = bpack + jr * kc;
      if (rows == mr && cols == nr) {
        bl->kernel(kc, ap, bp, crow + jr, ldc, accumulate);
        continue;
      }
      /* Edge tile: run the full kernel on a buffer, copy the valid part.
       * Valid elements see exactly the operations of a full tile. */
      for (int64_t r = 0; r < mr; ++r)
        for (int64_t j = 0; j < nr; ++j)
          edge[r * nr + j] = accumulate && r < rows && j < cols ? crow[r * ldc + jr + j] : 0;
      bl->kernel(kc, ap, bp, edge, nr, accumulate);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) crow[r * ldc + jr + j] = edge[r * nr + j];
    }
  }
}

/* One thread's rectangle: C[0..m)[0..n) = A[0..m)[0..k) . B[0..k)[0..n),
 * packing its own A and B blocks. */
static void TP_FN(tp_gemm_rect_)(const TP_FN(tp_gemm_blocking_) * bl, int64_t m, int64_t n, int64_t k,
                                 const TP_T *a, int64_t ars, int64_t acs, const TP_T *b, int64_t brs,
                                 int64_t bcs, TP_T *c, int64_t ldc, TP_T *apack, TP_T *bpack) {
  for (int64_t ic = 0; ic < m; ic += bl->mc) {
    int64_t mc = m - ic < bl->mc ? m - ic : bl->mc;
    for (int64_t pc = 0; pc < k; pc += bl->kc) {
      int64_t kc = k - pc < bl->kc ? k - pc : bl->kc;
      TP_FN(tp_gemm_pack_a_)(mc, kc, a + ic * ars + pc * acs, ars, acs, bl->mr, apack);
      for (int64_t jc = 0; jc < n; jc += bl->nc) {
        int64_t nc = n - jc < bl->nc ? n - jc : bl->nc;
        TP_FN(tp_gemm_pack_b_)(kc, nc, b + pc * brs + jc * bcs, brs, bcs, bl->nr, bpack);
        TP_FN(tp_gemm_macro_)(bl, mc, nc, kc, apack, bpack, c + ic * ldc + jc, ldc, pc > 0);
      }
    }
  }
}

#ifndef TP_GEMM_SHARED_BLOCKS
#define TP_GEMM_SHARED_BLOCKS 8
#endif

typedef struct {
  const TP_FN(tp_gemm_blocking_) * bl;
  tp_gemm_grid grid;
  int64_t m, n, k;
  const TP_T *a;
  int64_t ars, acs;
  const TP_T *b;
  int64_t brs, bcs;
  TP_T *c;
  int64_t ldc;
  TP_T *work; /* per rectangle: apack then bpack (shared mode: apacks, then one bpack) */
  int64_t apack_elems, bpack_elems;
  /* shared mode: the depth panel and column block in progress */
  int64_t pc, kc, jc, nc;
} TP_FN(tp_gemm_job_);

/* Independent mode: each rectangle packs its own A and B. */
static void TP_FN(tp_gemm_worker_)(void *ctx, int64_t begin, int64_t end) {
  const TP_FN(tp_gemm_job_) *job = ctx;
  for (int64_t t = begin; t < end; ++t) {
    int64_t r0, r1, c0, c1;
    tp_gemm_grid_rect(&job->grid, t, &r0, &r1, &c0, &c1);
    if (r0 >= r1 || c0 >= c1) continue;
    /* Workspace by rectangle index, not by thread: any scheduling works. */
    TP_T *apack = job->work + t * (job->apack_elems + job->bpack_elems);
    TP_T *bpack = apack + job->apack_elems;
    TP_FN(tp_gemm_rect_)(job->bl, r1 - r0, c1 - c0, job->k, job->a + r0 * job->ars, job->ars,
                         job->acs, job->b + c0 * job->bcs, job->brs, job->bcs,
                         job->c + r0 * job->ldc + c0, job->ldc, apack, bpack);
  }
}

/* Shared mode, step 1: NR-panels [begin, end) of the current B block. */
static void TP_FN(tp_gemm_shared_pack_b_)(void *ctx, int64_t begin, int64_t end) {
  const TP_FN(tp_gemm_job_) *job = ctx;
  const int64_t nr = job->bl->nr;
  int64_t j0 = begin * nr, j1 = end * nr < job->nc ? end * nr : job->nc;
  TP_T *bpack = job->work + job->grid.row_rects * job->apack_elems;
  TP_FN(tp_gemm_pack_b_)(job->kc, j1 - j0, job->b + job->pc * job->brs + (job->jc + j0) * job->bcs,
                         job->brs, job->bcs, (int)nr, bpack + j0 * job->kc);
}

/* Shared mode, step 2: row rectangles [begin, end) times the shared B block;
 * each packs its A rows once per depth panel (at the first shared block). */
static void TP_FN(tp_gemm_shared_rows_)(void *ctx, int64_t begin, int64_t end) {
  const TP_FN(tp_gemm_job_) *job = ctx;
  const TP_T *bpack = job->work + job->grid.row_rects * job->apack_elems;
  for (int64_t t = begin; t < end; ++t) {
    int64_t r0, r1, c0, c1;
    tp_gemm_grid_rect(&job->grid, t, &r0, &r1, &c0, &c1);
    if (r0 >= r1) continue;
    TP_T *apack = job->work + t * job->apack_elems;
    if (job->jc == 0)
      TP_FN(tp_gemm_pack_a_)(r1 - r0, job->kc, job->a + r0 * job->ars + job->pc * job->acs,
                             job->ars, job->acs, job->bl->mr, apack);
    /* The shared block spans several L2-sized column blocks: go through
     * them one at a time (panels are consecutive, so block j starts at
     * column j of the packed buffer). */
    for (int64_t j = 0; j < job->nc; j += job->bl->nc) {
      int64_t width = job->nc - j < job->bl->nc ? job->nc - j : job->bl->nc;
      TP_FN(tp_gemm_macro_)(job->bl, r1 - r0, width, job->kc, apack, bpack + j * job->kc,
                            job->c + r0 * job->ldc + job->jc + j, job->ldc, job->pc > 0);
    }
  }
}

static topos_status TP_FN(tp_gemm_run_)(const TP_FN(tp_gemm_blocking_) * table_entry, int64_t m,
                                        int64_t n, int64_t k, const TP_T *a, int64_t ars,
                                        int64_t acs, const TP_T *b, int64_t brs, int64_t bcs,
                                        TP_T *c, int64_t ldc) {
  TP_TRY(tp_gemm_check_args(TP_STRINGIFY(TP_S), m, n, k, a, ars, acs, b, brs, bcs, c, ldc,
                            (int64_t)sizeof(TP_T)));
  tp_gemm_last_rects = 0;
  if (m == 0 || n == 0) return TOPOS_OK;
  TP_FN(tp_gemm_blocking_) blocking = *table_entry;
  const TP_FN(tp_gemm_blocking_) *bl = &blocking;
  tp_gemm_tuned_blocking(blocking.mr, blocking.nr, &blocking.mc, &blocking.kc, &blocking.nc);
  /* Even depth panels (k = 512 with kc = 384 runs 256 + 256, not 384 + 128:
   * a thin last panel pays the C load/store for little work). The panel
   * edges never change a bit. Same for column blocks. */
  if (k > 0) {
    int64_t panels = (k + blocking.kc - 1) / blocking.kc;
    blocking.kc = (k + panels - 1) / panels;
  }
  {
    int64_t blocks = (n + blocking.nc - 1) / blocking.nc;
    blocking.nc = tp_gemm_round_up((n + blocks - 1) / blocks, blocking.nr);
  }
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = 0;
    return TOPOS_OK;
  }
  TP_FN(tp_gemm_job_) job = {bl, {0}, m, n, k, a, ars, acs, b, brs, bcs, c, ldc, NULL, 0, 0, 0, 0, 0, 0};
  tp_gemm_grid_choose(&job.grid, m, n, k, bl->mr, bl->nr, topos_threads());
  int64_t rects = job.grid.row_rects * job.grid.col_rects;
  /* Rows-only partitions share the packed B of a depth panel (up to
   * TP_GEMM_SHARED_BLOCKS column blocks of it at once), packed by all
   * threads together: no thread repacks all of B, and there are two
   * fork-joins per depth panel (pack, then compute), not per column block.
   * Each rectangle keeps its whole A rows packed (so at most mc of them). */
  int shared = rects > 1 && job.grid.col_rects == 1 && job.grid.rows_per_rect <= bl->mc &&
               !tp_gemm_tuning.no_shared_b;
  int64_t shared_width = bl->nc * TP_GEMM_SHARED_BLOCKS;
  /* Packing buffers sized for the largest rectangle (extents already fit
   * int64 with room: checked above). */
  int64_t kc = k < bl->kc ? k : bl->kc;
  int64_t rows = tp_gemm_round_up(job.grid.rows_per_rect, bl->mr);
  int64_t cols = tp_gemm_round_up(shared ? n : job.grid.cols_per_rect, bl->nr);
  if (rows > bl->mc) rows = bl->mc;
  if (cols > (shared ? shared_width : bl->nc)) cols = shared ? shared_width : bl->nc;
  /* Round to a cache line so every panel of every rectangle stays aligned. */
  int64_t line = 64 / (int64_t)sizeof(TP_T);
  job.apack_elems = tp_gemm_round_up(rows * kc, line);
  job.bpack_elems = tp_gemm_round_up(cols * kc, line);
  size_t bytes = (size_t)(shared ? rects * job.apack_elems + job.bpack_elems
                                 : rects * (job.apack_elems + job.bpack_elems)) *
                 sizeof(TP_T);
  tp_gemm_workspace *ws = tp_gemm_workspace_acquire(bytes);
  job.work = ws ? ws->ptr : NULL;
  if (!job.work)
    return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "simd gemm %s: cannot allocate %zu bytes of packing buffers",
                   TP_STRINGIFY(TP_S), bytes);
  tp_gemm_last_rects = rects;
  if (rects == 1) {
    TP_FN(tp_gemm_worker_)(&job, 0, 1);
  } else if (!shared) {
    tp_parallel_for(rects, 1, TP_FN(tp_gemm_worker_), &job);
  } else {
    for (job.pc = 0; job.pc < k; job.pc += bl->kc) {
      job.kc = k - job.pc < bl->kc ? k - job.pc : bl->kc;
      for (job.jc = 0; job.jc < n; job.jc += shared_width) {
        job.nc = n - job.jc < shared_width ? n - job.jc : shared_width;
        int64_t panels = (job.nc + bl->nr - 1) / bl->nr;
        tp_parallel_for(panels, (panels + rects - 1) / rects, TP_FN(tp_gemm_shared_pack_b_), &job);
        tp_parallel_for(rects, 1, TP_FN(tp_gemm_shared_rows_), &job);
      }
    }
  }
  tp_gemm_workspace_release(ws);
  return TOPOS_OK;
}

#undef TP_FN
#undef TP_CAT
#undef TP_CAT_
