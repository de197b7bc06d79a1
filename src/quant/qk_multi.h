/* Several matrix-vector products as one dispatch (included by the ISA files
 * that offer tp_qk_fast_<isa>_multi). Each task keeps its own kernel context
 * (activations quantized for its type); the dispatch walks the tasks'
 * panels end to end, so the threads split their sum — short products (a
 * small model's k and v rows) no longer run on one thread each, and the
 * threads meet once. Each panel runs the same range function as the task
 * alone: the same bits. */
#ifndef TP_QUANT_QK_MULTI_H
#define TP_QUANT_QK_MULTI_H

#include "quant/qk_internal.h"
#include "quant/qk_shim.h"

typedef struct {
  int count;
  int64_t panel_rows; /* weight rows per panel of the kernels */
  const tp_qk_task *task[TP_QK_MULTI_MAX];
  tp_qk_range_fn fn[TP_QK_MULTI_MAX];
  void *ctx[TP_QK_MULTI_MAX];
  int64_t start[TP_QK_MULTI_MAX + 1]; /* task i's panels: [start[i], start[i + 1]) */
} qk_multi;

static void qk_multi_range(void *vctx, int64_t p0, int64_t p1) {
  const qk_multi *mu = vctx;
  for (int i = 0; i < mu->count && p0 < p1; ++i) {
    const int64_t lo = p0 > mu->start[i] ? p0 : mu->start[i], hi = p1 < mu->start[i + 1] ? p1 : mu->start[i + 1];
    if (lo >= hi) continue;
    /* a range that finishes a task fetches the next task's first two panels
     * first: the kernels fetch ahead within a task only, and the next
     * weights lie elsewhere in the file */
    if (hi == mu->start[i + 1] && i + 1 < mu->count) {
      const tp_qk_task *next = mu->task[i + 1];
      const int64_t rows = next->n < 2 * mu->panel_rows ? next->n : 2 * mu->panel_rows;
      qk_prefetch_slice((const uint8_t *)next->w, 0, rows * (int64_t)next->row_bytes);
    }
    mu->fn[i](mu->ctx[i], lo - mu->start[i], hi - mu->start[i]);
  }
}

/* Adds task t (begun: its range function and context) to the dispatch. */
static void qk_multi_add(qk_multi *mu, const tp_qk_task *t, tp_qk_range_fn fn, void *ctx) {
  mu->task[mu->count] = t;
  mu->fn[mu->count] = fn;
  mu->ctx[mu->count] = ctx;
  mu->start[mu->count + 1] = mu->start[mu->count] + (t->n + mu->panel_rows - 1) / mu->panel_rows;
  ++mu->count;
}

/* Runs the added tasks (all of one m and k) on the first task's threads. */
static void qk_multi_run(qk_multi *mu) {
  const tp_qk_task *t = mu->task[0];
  tp_qk_parallel_for(t->threads, mu->start[mu->count],
                     1 + ((int64_t)1 << 16) / (mu->panel_rows * t->k * t->m), qk_multi_range, mu);
}

#endif
