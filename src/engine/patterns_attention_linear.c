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
 * probabilities are +0 and still enter the value products), and with 16 query
 * rows or more the keys and values are converted once to f32 (keys
 * transposed) for the products without packing of the batched form
 * (attention_gemm_template.h); decoding's few rows keep qlinear's kernels.
 * The queries are made packed rows once per step; keys and values are read
 * in place through their row stride (topos_qmatmul_rows) where their rows
 * are runs of adjacent elements — the cache's value rows, a narrow of each
 * head's [dv, n_ctx] rows, are — and made dense otherwise. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/numerics.h"
#include "base/temp.h"
#include "base/threads.h"
#include "engine/attention_gemm.h"
#include "engine/attention_internal.h"
#include "engine/softmax_rows.h"
#include "topos/qmatmul.h"
#include "topos/quant.h"

typedef struct al_job {
  const float *q; /* [m, d] */
  const void *k[2], *v[2]; /* [0] the chunk's, [1] the cached segment's */
  size_t kr[2], vr[2];      /* their rows' strides in bytes */
  topos_dtype kt[2], vt[2];
  at_view mask[2];
  at_cap cap[2];
  int cached, exact;
  int64_t m, d, dv, S, T, block_rows, blocks;
  /* Fast with enough query rows: the keys as f32 [d][keys rounded to 16] and
   * the values as f32 [keys][dv], converted once per step, for the products
   * without packing (attention_gemm_template.h) */
  tp_attn_gemm_fn gemm;
  float *keys_t[2], *values[2];
  int64_t keys16[2];
  float *out;
  atomic_int status;
} al_job;

/* The Fast route's operands of part `part` (keys rows [keys, d], value rows
 * [dv, keys], any float type) as f32 [d][keys16] (zero past keys) and
 * [keys][dv]. Both are transposes; they go 8 rows at a time through a small
 * widened block (row: 8 x AL_SEG floats), so each store is a run of 8
 * adjacent floats where one element at a time strode a whole row apart (the
 * conversion was 17 % of a 16-bit cache's 64-token chunk after 1024 tokens,
 * SmolLM2, one thread). Widening is exact: the same values either way. */
enum { AL_SEG = 256 };

static topos_status al_convert(al_job *j, int part, int64_t keys, float *row) {
  const int64_t k16 = j->keys16[part], d = j->d, dv = j->dv;
  const size_t kb = j->kr[part], vb = j->vr[part];
  const uint8_t *k = j->k[part], *v = j->v[part];
  size_t ves = 0;
  TP_TRY(topos_dtype_bytes(j->vt[part], 1, &ves));
  float *kt = j->keys_t[part], *vr = j->values[part];
  for (int64_t c0 = 0; c0 < keys; c0 += 8) {
    const int64_t nc = keys - c0 < 8 ? keys - c0 : 8;
    for (int64_t i = 0; i < nc; ++i) TP_TRY(topos_dequantize_row(j->kt[part], k + (size_t)(c0 + i) * kb, row + i * d, d));
    for (int64_t dd = 0; dd < d; ++dd)
      for (int64_t i = 0; i < nc; ++i) kt[dd * k16 + c0 + i] = row[i * d + dd];
  }
  for (int64_t dd = 0; dd < d; ++dd)
    for (int64_t c = keys; c < k16; ++c) kt[dd * k16 + c] = 0.0f;
  for (int64_t e0 = 0; e0 < dv; e0 += 8) {
    const int64_t ne = dv - e0 < 8 ? dv - e0 : 8;
    for (int64_t s0 = 0; s0 < keys; s0 += AL_SEG) {
      const int64_t ns = keys - s0 < AL_SEG ? keys - s0 : AL_SEG;
      for (int64_t i = 0; i < ne; ++i)
        TP_TRY(topos_dequantize_row(j->vt[part], v + (size_t)(e0 + i) * vb + (size_t)s0 * ves, row + i * AL_SEG, ns));
      for (int64_t c = 0; c < ns; ++c)
        for (int64_t i = 0; i < ne; ++i) vr[(s0 + c) * dv + e0 + i] = row[i * AL_SEG + c];
    }
  }
  return TOPOS_OK;
}

/* s[r, 0..n) (row stride ld) = q[i0 + r] . k[0..n) + mask (+ 0 when
 * concatenated); tmp: rows x n floats */
static topos_status al_scores(const al_job *j, int part, int64_t i0, int64_t rows, int64_t n,
                              float *s, int64_t ld, float *tmp) {
  const topos_qmatmul_path path = j->exact ? TOPOS_QMATMUL_REFERENCE : TOPOS_QMATMUL_AUTO;
  int64_t ldt = n;
  if (j->gemm) { /* Fast: up to n rounded to 16 columns of the converted keys */
    ldt = (n + 15) / 16 * 16;
    j->gemm(rows, ldt, j->d, j->q + i0 * j->d, j->d, 1, j->keys_t[part], j->keys16[part], tmp, ldt);
  } else {
    TP_TRY(topos_qmatmul_rows(j->q + i0 * j->d, rows, j->d, j->k[part], j->kr[part], j->kt[part], n, NULL, tmp,
                              path));
  }
  TP_TRY(at_softcap_rows(&j->cap[part], tmp, ldt, rows, n, j->exact));
  at_add_mask(&j->mask[part], 0, i0, rows, n, tmp, ldt, s, ld, j->cached);
  return TOPOS_OK;
}

/* o[r, :] = p[r, 0..n) . v rows (each n long); tmp: rows x n floats */
static topos_status al_values(const al_job *j, int part, int64_t rows, int64_t n, const float *p,
                              int64_t ld, float *o, float *tmp) {
  const topos_qmatmul_path path = j->exact ? TOPOS_QMATMUL_REFERENCE : TOPOS_QMATMUL_AUTO;
  if (j->gemm) {
    j->gemm(rows, j->dv, n, p, ld, 1, j->values[part], j->dv, o, j->dv);
    return TOPOS_OK;
  }
  for (int64_t r = 0; r < rows; ++r) memcpy(tmp + r * n, p + r * ld, (size_t)n * sizeof *tmp);
  return topos_qmatmul_rows(tmp, rows, n, j->v[part], j->vr[part], j->vt[part], j->dv, NULL, o, path);
}

static topos_status al_block(const al_job *j, int64_t i0, int64_t i1, float *buf) {
  const int64_t rows = i1 - i0, S = j->cached ? j->S : 0, T = j->T, ld = S + T, dv = j->dv;
  float *s = buf, *p = s + rows * ld, *tmp = p + rows * ld, *o_n = tmp + rows * (ld + 16);
  int64_t nc = S, nn = T;
  if (!j->exact) { /* scores of keys no row of the block sees: not computed */
    nn = at_live_keys(&j->mask[0], 0, i0, i1, T);
    nc = j->cached ? at_live_keys(&j->mask[1], 0, i0, i1, S) : 0;
    if (nn == 0 || (j->cached && nc == 0)) nc = S, nn = T;
  }
  if (j->cached) TP_TRY(al_scores(j, 1, i0, rows, nc, s, ld, tmp));
  TP_TRY(al_scores(j, 0, i0, rows, nn, s + S, ld, tmp));
  TP_TRY(at_probabilities(s, p, rows, ld, S, nc, T, nn, j->exact));
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
  float *buf = tp_temp_alloc((3 * br * ld + 16 * br + br * (size_t)j->dv) * sizeof *buf);
  if (!buf) atomic_store(&j->status, (int)TOPOS_ERR_OUT_OF_MEMORY);
  for (int64_t t = begin; buf && t < end; ++t) {
    const int64_t i0 = t * j->block_rows, i1 = i0 + j->block_rows < j->m ? i0 + j->block_rows : j->m;
    topos_status s = al_block(j, i0, i1, buf);
    if (s != TOPOS_OK) {
      atomic_store(&j->status, (int)s);
      break;
    }
  }
  tp_temp_free(buf);
  tp_numerics_leave(saved);
}

/* The Fast route's converted operands, in one allocation (*mem). */
static topos_status al_prepare(al_job *j, float **mem) {
  const int parts = j->cached ? 2 : 1;
  const int64_t keys[2] = {j->T, j->S};
  /* al_convert's widened block: 8 key rows of d, or 8 value rows' AL_SEG keys */
  const size_t row_len = 8 * (size_t)(j->d > AL_SEG ? j->d : AL_SEG);
  size_t total = row_len;
  for (int part = 0; part < parts; ++part) {
    j->keys16[part] = (keys[part] + 15) / 16 * 16;
    total += (size_t)(j->d * j->keys16[part] + keys[part] * j->dv);
  }
  /* the thread's temporaries, not the heap: 0.6 MB a step after 1024
   * tokens, which malloc maps and unmaps (page faults) at every step */
  float *m = tp_temp_alloc(total * sizeof *m);
  if (!m) return tp_fail(TOPOS_ERR_OUT_OF_MEMORY, "attention (16-bit cache): %zu floats of keys and values", total);
  *mem = m;
  float *row = m;
  m += row_len;
  for (int part = 0; part < parts; ++part) {
    j->keys_t[part] = m;
    m += j->d * j->keys16[part];
    j->values[part] = m;
    m += keys[part] * j->dv;
    TP_TRY(al_convert(j, part, keys[part], row));
  }
  return TOPOS_OK;
}

/* A product's weight operand as rows read in place: a rank-2 view whose
 * elements are adjacent within a row (a narrow of the cache's rows, as the
 * value rows are) keeps its row stride (topos_qmatmul_rows); anything else
 * is made dense into *copy. */
static topos_status al_rows(topos_tensor *t, const void **data, size_t *stride, topos_tensor **copy) {
  const int64_t *st = topos_tensor_strides(t), *sh = topos_tensor_shape(t);
  size_t es = 0, row = 0;
  TP_TRY(topos_dtype_bytes(topos_tensor_dtype(t), 1, &es));
  TP_TRY(topos_dtype_bytes(topos_tensor_dtype(t), sh[1], &row));
  if (topos_tensor_rank(t) == 2 && (st[1] == 1 || sh[1] == 1) &&
      (sh[0] == 1 || (st[0] >= sh[1] && (uint64_t)st[0] <= SIZE_MAX / es))) {
    *data = topos_tensor_data(t);
    *stride = sh[0] == 1 ? row : (size_t)st[0] * es;
    return TOPOS_OK;
  }
  TP_TRY(topos_tensor_contiguous(t, 0, copy));
  *data = topos_tensor_data(*copy);
  *stride = row;
  return TOPOS_OK;
}

topos_status tp_attention_linear_run(const tp_fusion *f, topos_tensor *const *inputs, topos_tensor *dst) {
  al_job j;
  memset(&j, 0, sizeof j);
  j.cached = at_cached(f->n_inputs);
  j.exact = tp_numerics_exact();
  TP_TRY(at_caps_of(f->n_inputs, inputs, j.cap));
  /* the queries as packed rows; keys and values in place where their rows
   * allow (the cache's value rows are a narrow: no copy per step) */
  enum { AL_COPIES = 5 };
  topos_tensor *copies[AL_COPIES] = {NULL, NULL, NULL, NULL, NULL};
  topos_status st = topos_tensor_contiguous(inputs[AT_Q], 0, &copies[0]);
  float *conv = NULL;
  if (st == TOPOS_OK) st = al_rows(inputs[AT_KN], &j.k[0], &j.kr[0], &copies[1]);
  if (st == TOPOS_OK) st = al_rows(inputs[AT_VN], &j.v[0], &j.vr[0], &copies[2]);
  if (st == TOPOS_OK && j.cached) st = al_rows(inputs[AT_KC], &j.k[1], &j.kr[1], &copies[3]);
  if (st == TOPOS_OK && j.cached) st = al_rows(inputs[AT_VC], &j.v[1], &j.vr[1], &copies[4]);
  if (st == TOPOS_OK) {
    j.q = topos_tensor_data(copies[0]);
    j.kt[0] = topos_tensor_dtype(inputs[AT_KN]);
    j.vt[0] = topos_tensor_dtype(inputs[AT_VN]);
    j.mask[0] = at_view_of(inputs[AT_MN]);
    if (j.cached) {
      j.kt[1] = topos_tensor_dtype(inputs[AT_KC]);
      j.vt[1] = topos_tensor_dtype(inputs[AT_VC]);
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
    /* enough query rows that converting the keys and values once is
     * small against the products (decoding keeps the qlinear kernels) */
    if (!j.exact && j.m >= 16 && j.dv % 16 == 0) j.gemm = tp_attn_gemm_best();
    if (j.gemm) st = al_prepare(&j, &conv);
    atomic_init(&j.status, TOPOS_OK);
    if (st == TOPOS_OK) {
      tp_parallel_for(j.blocks, 1, al_range, &j);
      st = (topos_status)atomic_load(&j.status);
    }
    if (st != TOPOS_OK)
      st = tp_fail(st, "attention (16-bit cache): a block of %lld query rows over %lld keys failed",
                   (long long)j.block_rows, (long long)(j.S + j.T));
  }
  for (int i = 0; i < AL_COPIES; ++i) topos_tensor_release(copies[i]);
  tp_temp_free(conv);
  return st;
}
