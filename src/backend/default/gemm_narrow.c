/* The default rung's route for a C at most one vector wide: blocks of C rows
 * held in registers over the whole k loop (gemm_narrow_template.h), no
 * packing of B, and none of A when A's rows are adjacent in memory (a
 * transposed row-major matrix: a conv's weight gradient patchesᵀ · g).
 *
 * Bits: the reference's (one accumulator per element from the first
 * product, k ascending, rounded multiply then rounded add). k is cut into
 * blocks between which C holds the running sums exactly; threads split row
 * blocks, never k. Reads past the last valid element of A or B (the kernel
 * reads whole vectors of B and whole row blocks of A) are avoided by giving
 * the last k steps copies padded with zeros. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "backend/default/gemm_narrow.h"
#include "backend/platform.h"

#define TP_NK_DECL(isa)                                                                        \
  void tp_default_narrow_f32_##isa(int64_t kc, const float *ap, int64_t ap_step,               \
                                   const float *b, int64_t ldb, float *c, int64_t ldc,         \
                                   int first, int h, int n);                                   \
  void tp_default_narrow_f64_##isa(int64_t kc, const double *ap, int64_t ap_step,              \
                                   const double *b, int64_t ldb, double *c, int64_t ldc,       \
                                   int first, int h, int n);
TP_NK_DECL(baseline)
#if defined(__x86_64__)
TP_NK_DECL(avx2)
TP_NK_DECL(avx512)
#endif

typedef void (*tp_nk_f32)(int64_t, const float *, int64_t, const float *, int64_t, float *,
                          int64_t, int, int, int);
typedef void (*tp_nk_f64)(int64_t, const double *, int64_t, const double *, int64_t, double *,
                          int64_t, int, int, int);

/* k steps per block: a block of A's rows (up to 24 x 512 values read in
 * place from a 72-wide patch matrix) and of B stay in L2 across row blocks */
enum { TP_NK_KC = 512, TP_NK_MAX_ROWS = 24, TP_NK_MAX_LANES = 16 };

typedef struct tp_nk_choice {
  tp_nk_f32 f32;
  tp_nk_f64 f64;
  int vector_bytes, rows;
} tp_nk_choice;

/* The narrowest vector the CPU has that holds a C row of `row_bytes`. */
static bool tp_nk_pick(int64_t row_bytes, tp_nk_choice *out) {
  if (row_bytes <= 16) {
    *out = (tp_nk_choice){tp_default_narrow_f32_baseline, tp_default_narrow_f64_baseline, 16, 12};
    return true;
  }
#if defined(__x86_64__)
  tp_vector_isa best = tp_vector_isa_best();
  if (row_bytes <= 32 && best >= TP_VECTOR_AVX2) {
    *out = (tp_nk_choice){tp_default_narrow_f32_avx2, tp_default_narrow_f64_avx2, 32, 12};
    return true;
  }
  if (row_bytes <= 64 && best >= TP_VECTOR_AVX512) {
    *out = (tp_nk_choice){tp_default_narrow_f32_avx512, tp_default_narrow_f64_avx512, 64, 24};
    return true;
  }
#endif
  return false;
}

#define TP_NARROW_GEMM(T, sfx)                                                                 \
  typedef struct tp_nk_job_##sfx {                                                             \
    const topos_gemm_task *task;                                                               \
    tp_nk_##sfx kernel;                                                                        \
    int rows, lanes;                                                                           \
    bool direct_a; /* A's rows adjacent (a_row_stride 1): read in place */                     \
    atomic_int failed;                                                                         \
  } tp_nk_job_##sfx;                                                                           \
                                                                                               \
  /* k steps [p, p + 1) one at a time from zero-padded copies */                              \
  static void tp_nk_padded_##sfx(const tp_nk_job_##sfx *job, int64_t i0, int h, int64_t p,    \
                                 int64_t p_end, T *cblk) {                                     \
    const topos_gemm_task *t = job->task;                                                      \
    const T *a = t->a, *b = t->b;                                                              \
    T arow[TP_NK_MAX_ROWS], brow[TP_NK_MAX_LANES];                                             \
    for (; p < p_end; ++p) {                                                                   \
      for (int r = 0; r < job->rows; ++r)                                                      \
        arow[r] = r < h ? a[(i0 + r) * t->a_row_stride + p * t->a_col_stride] : 0;             \
      for (int j = 0; j < job->lanes; ++j) brow[j] = j < t->n ? b[p * t->b_row_stride + j] : 0; \
      job->kernel(1, arow, job->rows, brow, job->lanes, cblk, t->c_row_stride, p == 0, h,      \
                  (int)t->n);                                                                  \
    }                                                                                          \
  }                                                                                            \
                                                                                               \
  static void tp_nk_chunk_##sfx(void *ctx, int64_t blk_begin, int64_t blk_end) {               \
    tp_nk_job_##sfx *job = ctx;                                                                \
    const topos_gemm_task *t = job->task;                                                      \
    const int R = job->rows;                                                                   \
    const T *a = t->a, *b = t->b;                                                              \
    T *pack = NULL;                                                                            \
    if (!job->direct_a) {                                                                      \
      pack = malloc((size_t)R * TP_NK_KC * sizeof(T));                                         \
      if (!pack) {                                                                             \
        atomic_store(&job->failed, 1);                                                         \
        return;                                                                                \
      }                                                                                        \
    }                                                                                          \
    /* B's rows a whole vector can be read from: the last ones may end early */               \
    int64_t b_end = t->k;                                                                      \
    if (job->lanes > t->n)                                                                     \
      b_end = t->k - (job->lanes - t->n + t->b_row_stride - 1) / t->b_row_stride;              \
    for (int64_t p0 = 0; p0 < t->k; p0 += TP_NK_KC) {                                          \
      int64_t kc = t->k - p0 < TP_NK_KC ? t->k - p0 : TP_NK_KC;                                \
      for (int64_t blk = blk_begin; blk < blk_end; ++blk) {                                    \
        int64_t i0 = blk * R;                                                                  \
        int h = (int)(t->m - i0 < R ? t->m - i0 : R);                                          \
        T *cblk = (T *)t->c + i0 * t->c_row_stride;                                            \
        int64_t end = p0 + kc;                                                                 \
        if (end > b_end) end = b_end;                                                          \
        const T *ap;                                                                           \
        int64_t step;                                                                          \
        if (job->direct_a) {                                                                   \
          /* a row block past m reads into A's next k row: the last ones may end early */      \
          if (h < R) {                                                                         \
            int64_t over = (R - h + t->a_col_stride - 1) / t->a_col_stride;                    \
            if (end > t->k - over) end = t->k - over;                                          \
          }                                                                                    \
          ap = a + i0 + p0 * t->a_col_stride;                                                  \
          step = t->a_col_stride;                                                              \
        } else {                                                                               \
          for (int64_t p = 0; p < kc; ++p) {                                                   \
            T *dst = pack + p * R;                                                             \
            const T *src = a + i0 * t->a_row_stride + (p0 + p) * t->a_col_stride;             \
            for (int r = 0; r < h; ++r) dst[r] = src[r * t->a_row_stride];                     \
            for (int r = h; r < R; ++r) dst[r] = 0;                                            \
          }                                                                                    \
          ap = pack;                                                                           \
          step = R;                                                                            \
        }                                                                                      \
        if (end > p0)                                                                          \
          job->kernel(end - p0, ap, step, b + p0 * t->b_row_stride, t->b_row_stride, cblk,     \
                      t->c_row_stride, p0 == 0, h, (int)t->n);                                 \
        else                                                                                   \
          end = p0;                                                                            \
        tp_nk_padded_##sfx(job, i0, h, end, p0 + kc, cblk);                                    \
      }                                                                                        \
    }                                                                                          \
    free(pack);                                                                                \
  }                                                                                            \
                                                                                               \
  bool tp_default_narrow_gemm_##sfx(const topos_gemm_task *t, topos_status *status) {          \
    tp_nk_choice pick;                                                                         \
    if (!tp_nk_pick(t->n * (int64_t)sizeof(T), &pick)) return false;                           \
    if (t->b_col_stride != 1 || t->b_row_stride < t->n || t->k < 1) return false;              \
    bool direct_a = t->a_row_stride == 1 && t->a_col_stride >= t->m;                           \
    if (!direct_a && t->a_col_stride != 1) return false;                                       \
    if (t->a_row_stride < 0 || t->a_col_stride < 0) return false;                              \
    tp_nk_job_##sfx job = {t, pick.sfx, pick.rows, pick.vector_bytes / (int)sizeof(T),         \
                           direct_a, 0};                                                       \
    int64_t blocks = (t->m + pick.rows - 1) / pick.rows;                                       \
    double flops = 2.0 * (double)t->m * (double)t->n * (double)t->k;                           \
    if (flops < 1e6 || tp_backend_threads() == 1 || blocks == 1)                               \
      tp_nk_chunk_##sfx(&job, 0, blocks);                                                      \
    else                                                                                       \
      tp_backend_parallel_for(blocks, 1, tp_nk_chunk_##sfx, &job);                             \
    *status = atomic_load(&job.failed)                                                         \
                  ? tp_fail(TOPOS_ERR_OUT_OF_MEMORY,                                           \
                            "default gemm " #sfx ": no memory for the packing buffer")         \
                  : TOPOS_OK;                                                                  \
    return true;                                                                               \
  }

TP_NARROW_GEMM(float, f32)
TP_NARROW_GEMM(double, f64)
