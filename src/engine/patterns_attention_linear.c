/* The attention pattern's second form (matched in patterns_attention.c): the
 * llama graph over a 16-bit KV cache records each kv head's attention with
 * qlinear products,
 *   s = add(qlinear(q, k), mask)       q [m, d], k [keys, d] (rows: keys)
 *   o = qlinear(exp(log_softmax(s)), v)             v [dv, keys] (rows: dims)
 * with or without a cached segment (concatenated scores, o = (p_c . v_c) +
 * (p_n . v_n)), keys and values of the cache f16 or bf16, the chunk's f32.
 *
 * One step per head over blocks of query rows, no [m, S + T] buffers. Every
 * product is the qlinear op's own (topos_qmatmul on the block's rows, path
 * REFERENCE under Exact, AUTO under Fast: the products are row independent
 * on both paths, so a block gives the rows' bits of the whole; a lone block,
 * as in decoding, spreads its products over the threads),
 * the masked sum s + m, the concatenation's + 0, the softmax row of the
 * posture, o_c + o_n in that order: under Exact the composed bits. Under
 * Fast the scores of keys no row of the block sees are not computed (their
 * probabilities are +0 and still enter the value products, whose rows are
 * the cache's as they lie). Weights and activations a product reads must be
 * packed rows: the views are made dense once per step, as qlinear does per
 * call. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/numerics.h"
#include "base/threads.h"
#include "engine/attention_internal.h"
#include "engine/softmax_rows.h"
#include "topos/qmatmul.h"

typedef struct al_job {
  const float *q; /* [m, d] */
  const void *k[2], *v[2]; /* [0] the chunk's, [1] the cached segment's; packed rows */
  topos_dtype kt[2], vt[2];
  at_view mask[2];
  int cached, exact;
  int64_t m, d, dv, S, T, block_rows, blocks;
  float *out;
  atomic_int status;
} al_job;

/* s[r, 0..n) (row stride ld) = q[i0 + r] . k[0..n) + mask (+ 0 when
 * concatenated); tmp: rows x n floats */
static topos_status al_scores(const al_job *j, int part, int64_t i0, int64_t rows, int64_t n,
                              float *s, int64_t ld, float *tmp) {
  const topos_qmatmul_path path = j->exact ? TOPOS_QMATMUL_REFERENCE : TOPOS_QMATMUL_AUTO;
  TP_TRY(topos_qmatmul(j->q + i0 * j->d, rows, j->d, j->k[part], j->kt[part], n, NULL, tmp, path));
  const at_view *m = &j->mask[part];
  for (int64_t r = 0; r < rows; ++r) {
    const float *mr = m->base + (i0 + r) * m->s1, *tr = tmp + r * n;
    float *sr = s + r * ld;
    if (j->cached)
      for (int64_t c = 0; c < n; ++c) sr[c] = (tr[c] + mr[c * m->s2]) + 0.0f;
    else
      for (int64_t c = 0; c < n; ++c) sr[c] = tr[c] + mr[c * m->s2];
  }
  return TOPOS_OK;
}

/* o[r, :] = p[r, 0..n) . v rows (each n long); tmp: rows x n floats */
static topos_status al_values(const al_job *j, int part, int64_t rows, int64_t n, const float *p,
                              int64_t ld, float *o, float *tmp) {
  const topos_qmatmul_path path = j->exact ? TOPOS_QMATMUL_REFERENCE : TOPOS_QMATMUL_AUTO;
  for (int64_t r = 0; r < rows; ++r) memcpy(tmp + r * n, p + r * ld, (size_t)n * sizeof *tmp);
  return topos_qmatmul(tmp, rows, n, j->v[part], j->vt[part], j->dv, NULL, o, path);
}

static topos_status al_block(const al_job *j, int64_t i0, int64_t i1, float *buf) {
  const int64_t rows = i1 - i0, S = j->cached ? j->S : 0, T = j->T, W = S + T, ld = W, dv = j->dv;
  float *s = buf, *p = s + rows * ld, *tmp = p + rows * ld, *o_n = tmp + rows * ld;
  int64_t nc = S, nn = T;
  if (!j->exact) { /* scores of keys no row of the block sees: not computed */
    nn = at_live_keys(&j->mask[0], 0, i0, i1, T);
    nc = j->cached ? at_live_keys(&j->mask[1], 0, i0, i1, S) : 0;
    if (nn == 0 || (j->cached && nc == 0)) nc = S, nn = T;
  }
  if (j->cached) {
    TP_TRY(al_scores(j, 1, i0, rows, nc, s, ld, tmp));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = nc; c < S; ++c) s[r * ld + c] = -INFINITY;
  }
  TP_TRY(al_scores(j, 0, i0, rows, nn, s + S, ld, tmp));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = S + nn; c < W; ++c) s[r * ld + c] = -INFINITY;
  for (int64_t r = 0; r < rows; ++r) {
    if (j->exact)
      tp_softmax_row_exact(s + r * ld, p + r * ld, W);
    else
      TP_TRY(tp_softmax_row_fast(s + r * ld, p + r * ld, W));
  }
  float *o = j->out + i0 * dv;
  if (!j->cached) return al_values(j, 0, rows, T, p, ld, o, tmp);
  TP_TRY(al_values(j, 1, rows, S, p, ld, o, tmp));
  TP_TRY(al_values(j, 0, rows, T, p + S, ld, o_n, tmp));
  for (int64_t e = 0; e < rows * dv; ++e) o[e] = o[e] + o_n[e];
  return TOPOS_OK;
}

static void al_range(void *ctx, int64_t begin, int64_t end) {
  al_job *j = ctx;
  int saved = tp_numerics_enter(j->exact); /* workers do not inherit the posture */
  const size_t br = (size_t)j->block_rows, ld = (size_t)((j->cached ? j->S : 0) + j->T);
  float *buf = malloc((3 * br * ld + br * (size_t)j->dv) * sizeof *buf);
  if (!buf) atomic_store(&j->status, (int)TOPOS_ERR_OUT_OF_MEMORY);
  for (int64_t t = begin; buf && t < end; ++t) {
    const int64_t i0 = t * j->block_rows, i1 = i0 + j->block_rows < j->m ? i0 + j->block_rows : j->m;
    topos_status s = al_block(j, i0, i1, buf);
    if (s != TOPOS_OK) {
      atomic_store(&j->status, (int)s);
      break;
    }
  }
  free(buf);
  tp_numerics_leave(saved);
}

topos_status tp_attention_linear_run(const tp_fusion *f, topos_tensor *const *inputs, topos_tensor *dst) {
  al_job j;
  memset(&j, 0, sizeof j);
  j.cached = f->n_inputs == 7;
  j.exact = tp_numerics_exact();
  /* packed rows for every product operand (views made dense, as qlinear does) */
  enum { AL_DENSE = 5 };
  topos_tensor *dense[AL_DENSE] = {NULL, NULL, NULL, NULL, NULL};
  const int which[AL_DENSE] = {AT_Q, AT_KN, AT_VN, AT_KC, AT_VC};
  topos_status st = TOPOS_OK;
  for (int i = 0; i < AL_DENSE && st == TOPOS_OK; ++i)
    if (which[i] < (int)f->n_inputs) st = topos_tensor_contiguous(inputs[which[i]], 0, &dense[i]);
  if (st == TOPOS_OK) {
    j.q = topos_tensor_data(dense[0]);
    j.k[0] = topos_tensor_data(dense[1]);
    j.kt[0] = topos_tensor_dtype(dense[1]);
    j.v[0] = topos_tensor_data(dense[2]);
    j.vt[0] = topos_tensor_dtype(dense[2]);
    j.mask[0] = at_view_of(inputs[AT_MN]);
    if (j.cached) {
      j.k[1] = topos_tensor_data(dense[3]);
      j.kt[1] = topos_tensor_dtype(dense[3]);
      j.v[1] = topos_tensor_data(dense[4]);
      j.vt[1] = topos_tensor_dtype(dense[4]);
      j.mask[1] = at_view_of(inputs[AT_MC]);
    }
    const int64_t *qs = topos_tensor_shape(inputs[AT_Q]);
    j.m = qs[0];
    j.d = qs[1];
    j.dv = topos_tensor_shape(dst)[1];
    j.T = topos_tensor_shape(inputs[AT_KN])[0];
    j.S = j.cached ? topos_tensor_shape(inputs[AT_KC])[0] : 0;
    j.block_rows = at_block_rows(j.S + j.T);
    j.blocks = (j.m + j.block_rows - 1) / j.block_rows;
    j.out = topos_tensor_data_mut(dst);
    atomic_init(&j.status, TOPOS_OK);
    tp_parallel_for(j.blocks, 1, al_range, &j);
    st = (topos_status)atomic_load(&j.status);
    if (st != TOPOS_OK)
      st = tp_fail(st, "attention (16-bit cache): a block of %lld query rows over %lld keys failed",
                   (long long)j.block_rows, (long long)(j.S + j.T));
  }
  for (int i = 0; i < AL_DENSE; ++i) topos_tensor_release(dense[i]);
  return st;
}
