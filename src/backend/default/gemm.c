/* The default rung's matrix product: packing, cache blocking, the thread
 * split and ISA choice around the microkernels of gemm_ukernel_template.h.
 *
 * Bit identity with the reference: every C element is one accumulator that
 * starts from the first product and adds a[i,p]*b[p,j] for p ascending, each
 * step a rounded multiply then a rounded add. Cache blocking over k keeps
 * the running sum in C between blocks (stored exactly in the element type),
 * and threads split C's rows or columns, never k — so the blocking, the
 * thread count and the ISA never change a bit.
 *
 * Packing copies operand values unchanged into the microkernel's order, so
 * any view (transposed, narrowed, stride 0, negative strides) runs here. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_internal.h"
#include "backend/default/gemm_narrow.h"
#include "backend/default/gemm_short.h"
#include "backend/platform.h"

#define TP_UK_DECL(isa)                                                                      \
  void tp_default_ukernel_f32_##isa(int64_t kc, const float *ap, const float *bp, float *c,   \
                                    int64_t ldc, int first, int mr, int nr);                 \
  void tp_default_ukernel_f64_##isa(int64_t kc, const double *ap, const double *bp, double *c, \
                                    int64_t ldc, int first, int mr, int nr);
TP_UK_DECL(baseline)
#if defined(__x86_64__)
TP_UK_DECL(avx2)
TP_UK_DECL(avx512)
#endif

typedef void (*tp_uk_f32)(int64_t, const float *, const float *, float *, int64_t, int, int, int);
typedef void (*tp_uk_f64)(int64_t, const double *, const double *, double *, int64_t, int, int,
                          int);

enum { TP_MR = 6, TP_KC = 256, TP_MC = 96, TP_NC = 512 };

typedef struct tp_uk_choice {
  tp_uk_f32 f32;
  tp_uk_f64 f64;
  int vector_bytes;
} tp_uk_choice;

static tp_uk_choice tp_uk_pick(void) {
#if defined(__x86_64__)
  switch (tp_vector_isa_best()) {
    case TP_VECTOR_AVX512:
      return (tp_uk_choice){tp_default_ukernel_f32_avx512, tp_default_ukernel_f64_avx512, 64};
    case TP_VECTOR_AVX2:
      return (tp_uk_choice){tp_default_ukernel_f32_avx2, tp_default_ukernel_f64_avx2, 32};
    default: break;
  }
#endif
  return (tp_uk_choice){tp_default_ukernel_f32_baseline, tp_default_ukernel_f64_baseline, 16};
}

/* The AVX2 kernels (half the tile width) when the CPU has them, else the
 * current choice. */
static tp_uk_choice tp_uk_narrower(void) {
#if defined(__x86_64__)
  if (tp_vector_isa_best() >= TP_VECTOR_AVX2)
    return (tp_uk_choice){tp_default_ukernel_f32_avx2, tp_default_ukernel_f64_avx2, 32};
#endif
  return tp_uk_pick();
}

const char *tp_default_describe(void) {
  static char text[128];
  tp_uk_choice uk = tp_uk_pick();
  snprintf(text, sizeof text,
           "%s tiles %dx%d f32 / %dx%d f64, kc=%d mc=%d nc=%d, %d threads (bit-identical)",
           tp_vector_isa_name(tp_vector_isa_best()), TP_MR, 2 * uk.vector_bytes / 4, TP_MR,
           2 * uk.vector_bytes / 8, TP_KC, TP_MC, TP_NC, tp_backend_threads());
  return text;
}

static void *tp_gemm_buffer(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  return aligned_alloc(64, rounded ? rounded : 64);
}

/* One definition per element type. A worker owns a rectangle of C (rows
 * [i_begin, i_end) x columns [j_begin, j_end)) and runs the whole k loop on
 * it, with its own packing buffers. */
#define TP_DEFAULT_GEMM(T, sfx)                                                                  \
  typedef struct tp_gemm_job_##sfx {                                                             \
    const topos_gemm_task *task;                                                                 \
    tp_uk_##sfx kernel;                                                                          \
    int nr;                                                                                      \
    int split_rows; /* 1: chunks are MR-row panels; 0: NR-column panels */                       \
    atomic_int failed;                                                                           \
  } tp_gemm_job_##sfx;                                                                           \
                                                                                                 \
  static void tp_gemm_rect_##sfx(tp_gemm_job_##sfx *job, int64_t i_begin, int64_t i_end,         \
                                 int64_t j_begin, int64_t j_end) {                               \
    const topos_gemm_task *t = job->task;                                                        \
    const int nr = job->nr;                                                                      \
    const T *a = t->a, *b = t->b;                                                                \
    T *c = t->c;                                                                                 \
    int64_t nc_max = (TP_NC + nr - 1) / nr * nr;                                                 \
    /* buffers sized to this rectangle, so small products stay small */                         \
    int64_t rows = i_end - i_begin, cols = j_end - j_begin;                                      \
    int64_t kc_max = t->k < TP_KC ? t->k : TP_KC;                                                \
    int64_t mc_max = rows < TP_MC ? (rows + TP_MR - 1) / TP_MR * TP_MR : TP_MC;                  \
    int64_t nb = cols < nc_max ? (cols + nr - 1) / nr * nr : nc_max;                             \
    T *ap = tp_gemm_buffer((size_t)(mc_max * kc_max) * sizeof(T));                               \
    T *bp = tp_gemm_buffer((size_t)(nb * kc_max) * sizeof(T));                                   \
    if (!ap || !bp) {                                                                            \
      free(ap);                                                                                  \
      free(bp);                                                                                  \
      atomic_store(&job->failed, 1);                                                             \
      return;                                                                                    \
    }                                                                                            \
    for (int64_t j0 = j_begin; j0 < j_end; j0 += nc_max) {                                       \
      int64_t nc = j_end - j0 < nc_max ? j_end - j0 : nc_max;                                    \
      for (int64_t p0 = 0; p0 < t->k; p0 += TP_KC) {                                             \
        int64_t kc = t->k - p0 < TP_KC ? t->k - p0 : TP_KC;                                      \
        /* B block kc x nc into NR-column panels, zero past the edge */                          \
        for (int64_t jp = 0; jp < nc; jp += nr) {                                                \
          T *dst = bp + jp * kc;                                                                 \
          int64_t w = nc - jp < nr ? nc - jp : nr;                                               \
          for (int64_t p = 0; p < kc; ++p) {                                                     \
            const T *src = b + (p0 + p) * t->b_row_stride + (j0 + jp) * t->b_col_stride;        \
            T *row = dst + p * nr;                                                               \
            if (t->b_col_stride == 1) {                                                          \
              memcpy(row, src, (size_t)w * sizeof(T));                                           \
            } else {                                                                             \
              for (int64_t j = 0; j < w; ++j) row[j] = src[j * t->b_col_stride];                 \
            }                                                                                    \
            for (int64_t j = w; j < nr; ++j) row[j] = 0;                                         \
          }                                                                                      \
        }                                                                                        \
        for (int64_t i0 = i_begin; i0 < i_end; i0 += TP_MC) {                                   \
          int64_t mc = i_end - i0 < TP_MC ? i_end - i0 : TP_MC;                                  \
          /* A block mc x kc into MR-row panels */                                               \
          for (int64_t ip = 0; ip < mc; ip += TP_MR) {                                           \
            T *dst = ap + ip * kc;                                                               \
            int64_t h = mc - ip < TP_MR ? mc - ip : TP_MR;                                       \
            for (int64_t p = 0; p < kc; ++p) {                                                   \
              const T *src = a + (i0 + ip) * t->a_row_stride + (p0 + p) * t->a_col_stride;      \
              for (int64_t r = 0; r < h; ++r) dst[p * TP_MR + r] = src[r * t->a_row_stride];     \
              for (int64_t r = h; r < TP_MR; ++r) dst[p * TP_MR + r] = 0;                        \
            }                                                                                    \
          }                                                                                      \
          for (int64_t jp = 0; jp < nc; jp += nr) {                                              \
            int w = (int)(nc - jp < nr ? nc - jp : nr);                                          \
            for (int64_t ip = 0; ip < mc; ip += TP_MR) {                                         \
              int h = (int)(mc - ip < TP_MR ? mc - ip : TP_MR);                                  \
              T *tile = c + (i0 + ip) * t->c_row_stride + j0 + jp;                               \
              job->kernel(kc, ap + ip * kc, bp + jp * kc, tile, t->c_row_stride, p0 == 0, h, w); \
            }                                                                                    \
          }                                                                                      \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
    free(ap);                                                                                    \
    free(bp);                                                                                    \
  }                                                                                              \
                                                                                                 \
  static void tp_gemm_chunk_##sfx(void *ctx, int64_t begin, int64_t end) {                       \
    tp_gemm_job_##sfx *job = ctx;                                                                \
    const topos_gemm_task *t = job->task;                                                        \
    if (job->split_rows) {                                                                       \
      int64_t i_end = end * TP_MR < t->m ? end * TP_MR : t->m;                                   \
      tp_gemm_rect_##sfx(job, begin * TP_MR, i_end, 0, t->n);                                    \
    } else {                                                                                     \
      int64_t j_end = end * job->nr < t->n ? end * job->nr : t->n;                               \
      tp_gemm_rect_##sfx(job, 0, t->m, begin * job->nr, j_end);                                  \
    }                                                                                            \
  }                                                                                              \
                                                                                                 \
  topos_status tp_default_gemm_##sfx(const topos_gemm_task *t) {                                 \
    /* a C of a few rows reads B in place: packing it would cost as much */                      \
    if (tp_default_short_gemm_##sfx(t)) return TOPOS_OK;                                          \
    /* Below a few thousand multiply-adds packing costs more than it saves;                      \
     * the plain loops give the same bits. */                                                     \
    if ((double)t->m * (double)t->n * (double)t->k < 4096.0) {                                   \
      tp_reference_gemm_##sfx(t);                                                                \
      return TOPOS_OK;                                                                           \
    }                                                                                            \
    /* a C one vector wide keeps its rows in registers, no packing */                          \
    topos_status narrow_status;                                                                  \
    if (tp_default_narrow_gemm_##sfx(t, &narrow_status)) return narrow_status;                   \
    tp_uk_choice uk = tp_uk_pick();                                                              \
    /* a narrow C (a conv's few output channels) would leave most of a wide                     \
     * tile's lanes idle: the next narrower kernel (bit-identical, see top) */                   \
    if (uk.vector_bytes == 64 && t->n * (int64_t)sizeof(T) <= 64) uk = tp_uk_narrower();       \
    /* and a C at most one 16-byte pair wide (a conv's 8 channels) takes the                   \
     * baseline tile, whose width it fills: no edge copies on every tile */                    \
    if (uk.vector_bytes > 16 && t->n * (int64_t)sizeof(T) <= 32)                                 \
      uk = (tp_uk_choice){tp_default_ukernel_f32_baseline, tp_default_ukernel_f64_baseline, 16};  \
    tp_gemm_job_##sfx job = {t, uk.sfx, 2 * uk.vector_bytes / (int)sizeof(T), 1, 0};             \
    int64_t row_panels = (t->m + TP_MR - 1) / TP_MR;                                             \
    int64_t col_panels = (t->n + job.nr - 1) / job.nr;                                           \
    int threads = tp_backend_threads();                                                          \
    /* Work below ~1 MFLOP is not worth a thread start. */                                       \
    double flops = 2.0 * (double)t->m * (double)t->n * (double)t->k;                             \
    if (flops < 1e6) threads = 1;                                                                \
    /* Split rows unless there are too few row panels to go round. */                           \
    job.split_rows = row_panels >= 2 * threads || row_panels >= col_panels;                      \
    int64_t panels = job.split_rows ? row_panels : col_panels;                                   \
    if (threads == 1)                                                                            \
      tp_gemm_chunk_##sfx(&job, 0, panels);                                                      \
    else                                                                                         \
      tp_backend_parallel_for(panels, 1, tp_gemm_chunk_##sfx, &job);                             \
    if (atomic_load(&job.failed))                                                                \
      return tp_fail(TOPOS_ERR_OUT_OF_MEMORY,                                                    \
                     "default gemm " #sfx ": no memory for the packing buffers");               \
    return TOPOS_OK;                                                                             \
  }                                                                                              \
                                                                                                 \
  void tp_reference_gemm_##sfx(const topos_gemm_task *t) {                                       \
    const T *a = t->a, *b = t->b;                                                                \
    T *c = t->c;                                                                                 \
    for (int64_t i = 0; i < t->m; ++i) {                                                         \
      T *crow = c + i * t->c_row_stride;                                                         \
      const T *arow = a + i * t->a_row_stride;                                                   \
      for (int64_t j = 0; j < t->n; ++j) crow[j] = arow[0] * b[j * t->b_col_stride];             \
      for (int64_t p = 1; p < t->k; ++p) {                                                       \
        T aip = arow[p * t->a_col_stride];                                                       \
        const T *brow = b + p * t->b_row_stride;                                                 \
        for (int64_t j = 0; j < t->n; ++j) crow[j] += aip * brow[j * t->b_col_stride];           \
      }                                                                                          \
    }                                                                                            \
  }

TP_DEFAULT_GEMM(float, f32)
TP_DEFAULT_GEMM(double, f64)
