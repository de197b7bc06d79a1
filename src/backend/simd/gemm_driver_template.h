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
 * not depend on MC/NC/KC, on which thread owns the element, or on the ISA.
 *
 * With several threads C is cut into rectangles (tp_gemm_grid in gemm.c).
 * Independent mode runs the nest above per rectangle; shared mode (rows-only
 * cuts) runs the pc/jc steps as a pipeline with B packed by all threads —
 * see tp_gemm_shared_region_. */

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
#define TP_GEMM_BANDS_PER_THREAD 4
#define TP_GEMM_SHARED_MAX_A (64.0 * 1024 * 1024)
#define TP_GEMM_SHARED_MIN_ROWS 768
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
  TP_T *work; /* per rectangle: apack then bpack (shared mode: apacks, then two bpacks) */
  int64_t apack_elems, bpack_elems;
  /* shared mode: steps are (depth panel, shared column block) pairs in
   * order; region r computes step r - 1 and packs step r. The work of a
   * region is 2 x chunks.row_rects pieces claimed from `next`. */
  int64_t shared_width, blocks_per_panel, steps, region;
  tp_gemm_grid chunks;
  atomic_llong next;
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

/* Shared mode. The work is a sequence of steps, one per (depth panel,
 * shared column block) in ascending depth; B of a step is packed by all
 * threads together into one of two buffers. Region r of the pipeline (one
 * tp_parallel_for) computes step r - 1 from the buffer packed in region
 * r - 1 and packs step r into the other buffer, so there is one fork-join
 * per step and no thread repacks all of B. Every C element still gets its
 * depth panels in ascending order: step s + 1 starts only after the region
 * computing step s has joined. */
static tp_gemm_step TP_FN(tp_gemm_step_)(const TP_FN(tp_gemm_job_) * job, int64_t s) {
  const int64_t kc_max = job->bl->kc;
  tp_gemm_step st;
  st.pc = s / job->blocks_per_panel * kc_max;
  st.kc = job->k - st.pc < kc_max ? job->k - st.pc : kc_max;
  st.jc = s % job->blocks_per_panel * job->shared_width;
  st.nc = job->n - st.jc < job->shared_width ? job->n - st.jc : job->shared_width;
  return st;
}

static TP_T *TP_FN(tp_gemm_shared_bpack_)(const TP_FN(tp_gemm_job_) * job, int64_t s) {
  return job->work + job->chunks.row_rects * job->apack_elems + (s & 1) * job->bpack_elems;
}

/* A region's work comes in pieces — compute row band i (pieces 0..C-1),
 * pack B panel group i (pieces C..2C-1), C = chunks.row_rects, a few per
 * thread — claimed one at a time by whichever thread is free. On a busy
 * machine a thread that loses its core for a while then delays its region
 * by one piece, not by its whole share. Who computes a band never changes
 * its bits. */
static void TP_FN(tp_gemm_shared_region_)(void *ctx, int64_t begin, int64_t end) {
  TP_FN(tp_gemm_job_) *job = ctx;
  const TP_FN(tp_gemm_blocking_) *bl = job->bl;
  const int64_t pieces = job->chunks.row_rects, r = job->region;
  (void)begin;
  (void)end;
  for (;;) {
    int64_t i = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
    if (i >= 2 * pieces) return;
    if (i < pieces) {
      if (r < 1) continue;
      /* compute step r - 1 for row band i */
      tp_gemm_step st = TP_FN(tp_gemm_step_)(job, r - 1);
      const TP_T *bpack = TP_FN(tp_gemm_shared_bpack_)(job, r - 1);
      int64_t r0, r1, c0, c1;
      tp_gemm_grid_rect(&job->chunks, i, &r0, &r1, &c0, &c1);
      TP_T *apack = job->work + i * job->apack_elems;
      if (r0 < r1 && st.jc == 0) /* A rows once per depth panel */
        TP_FN(tp_gemm_pack_a_)(r1 - r0, st.kc, job->a + r0 * job->ars + st.pc * job->acs, job->ars,
                               job->acs, bl->mr, apack);
      /* The shared block spans several L2-sized column blocks: one at a
       * time (panels are consecutive: block j starts at column j). */
      for (int64_t j = 0; r0 < r1 && j < st.nc; j += bl->nc) {
        int64_t width = st.nc - j < bl->nc ? st.nc - j : bl->nc;
        TP_FN(tp_gemm_macro_)(bl, r1 - r0, width, st.kc, apack, bpack + j * st.kc,
                              job->c + r0 * job->ldc + st.jc + j, job->ldc, st.pc > 0);
      }
    } else {
      if (r >= job->steps) continue;
      /* pack panel group i - pieces of step r's B */
      int64_t g = i - pieces;
      tp_gemm_step st = TP_FN(tp_gemm_step_)(job, r);
      int64_t panels = (st.nc + bl->nr - 1) / bl->nr;
      int64_t p0 = g * panels / pieces, p1 = (g + 1) * panels / pieces;
      int64_t j0 = p0 * bl->nr, j1 = p1 * bl->nr < st.nc ? p1 * bl->nr : st.nc;
      if (j0 < j1)
        TP_FN(tp_gemm_pack_b_)(st.kc, j1 - j0, job->b + st.pc * job->brs + (st.jc + j0) * job->bcs,
                               job->brs, job->bcs, bl->nr,
                               TP_FN(tp_gemm_shared_bpack_)(job, r) + j0 * st.kc);
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
  TP_FN(tp_gemm_job_) job;
  memset(&job, 0, sizeof job);
  job.bl = bl, job.m = m, job.n = n, job.k = k, job.a = a, job.ars = ars, job.acs = acs;
  job.b = b, job.brs = brs, job.bcs = bcs, job.c = c, job.ldc = ldc;
  tp_gemm_grid_choose(&job.grid, m, n, k, bl->mr, bl->nr, topos_threads());
  int64_t rects = job.grid.row_rects * job.grid.col_rects;
  int64_t kc = k < bl->kc ? k : bl->kc;
  /* Shared mode costs a fork-join per step, independent mode repacks B in
   * every rectangle (a cost that shrinks relative to the work as the rows
   * per thread grow). Measured on the 2-core AVX-512 Xeon (busy with other
   * jobs): independent was faster at 512 and 1024 square, shared at 2048;
   * hence shared from TP_GEMM_SHARED_MIN_ROWS rows per thread (tuning
   * shared_b overrides, for tests and the bench).
   * Rows-only partitions share packed B (shared mode, above), up to
   * TP_GEMM_SHARED_BLOCKS column blocks of a depth panel per step, with the
   * rows cut into a few bands per thread (each at most mc rows). Every band
   * keeps its A rows packed: all of A's depth panel, so only while that is
   * modest (TP_GEMM_SHARED_MAX_A bytes); else independent mode. */
  job.chunks = job.grid;
  int64_t mc_panels = bl->mc / bl->mr;
  int64_t bands = rects * TP_GEMM_BANDS_PER_THREAD;
  if (bands < (job.grid.row_panels + mc_panels - 1) / mc_panels)
    bands = (job.grid.row_panels + mc_panels - 1) / mc_panels;
  tp_gemm_grid_rows_only(&job.chunks, bands);
  int shared = rects > 1 && job.grid.col_rects == 1 && tp_gemm_tuning.shared_b != 1 &&
               (job.grid.rows_per_rect >= TP_GEMM_SHARED_MIN_ROWS || tp_gemm_tuning.shared_b == 2) &&
               (double)job.chunks.row_rects * (double)job.chunks.rows_per_rect * (double)kc *
                       (double)sizeof(TP_T) <= TP_GEMM_SHARED_MAX_A;
  int64_t shared_width = bl->nc * TP_GEMM_SHARED_BLOCKS;
  /* Packing buffers sized for the largest rectangle or band (extents already
   * fit int64 with room: checked above). */
  int64_t rows = tp_gemm_round_up(shared ? job.chunks.rows_per_rect : job.grid.rows_per_rect, bl->mr);
  int64_t cols = tp_gemm_round_up(shared ? n : job.grid.cols_per_rect, bl->nr);
  if (rows > bl->mc) rows = bl->mc;
  if (cols > (shared ? shared_width : bl->nc)) cols = shared ? shared_width : bl->nc;
  /* Round to a cache line so every panel of every rectangle stays aligned. */
  int64_t line = 64 / (int64_t)sizeof(TP_T);
  job.apack_elems = tp_gemm_round_up(rows * kc, line);
  job.bpack_elems = tp_gemm_round_up(cols * kc, line);
  size_t bytes = (size_t)(shared ? job.chunks.row_rects * job.apack_elems + 2 * job.bpack_elems
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
    job.shared_width = shared_width;
    job.blocks_per_panel = (n + shared_width - 1) / shared_width;
    job.steps = (k + bl->kc - 1) / bl->kc * job.blocks_per_panel;
    for (job.region = 0; job.region <= job.steps; ++job.region) {
      atomic_store(&job.next, 0);
      tp_parallel_for(rects, 1, TP_FN(tp_gemm_shared_region_), &job);
    }
  }
  tp_gemm_workspace_release(ws);
  return TOPOS_OK;
}

#undef TP_FN
#undef TP_CAT
#undef TP_CAT_
