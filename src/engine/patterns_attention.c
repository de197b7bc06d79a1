/* Pattern "attention": masked softmax attention over f32 keys and values, as
 * the llama graph records it (models/llama_graph.c, f32 cache), in one step.
 *
 * Without a cache segment (a prompt's first chunk):
 *   o = matmul(exp(log_softmax(add(matmul(q, kn), mn))), vn)
 * with one (cached keys, then the chunk's own):
 *   s = add(pad(add(matmul(q, kc), mc)), pad(add(matmul(q, kn), mn)))   (concat)
 *   p = exp(log_softmax(s))
 *   o = add(matmul(narrow(p, 0, S), vc), matmul(narrow(p, S, T), vn))
 * q [B, m, d], kc [B, d, S], kn [B, d, T], masks [B, m, S|T], vc [B, S, dv],
 * vn [B, T, dv], all rank 3, last axis the softmax's. Either form may
 * soft-cap each product before its mask (gemma2: mul(tanh(mul(s, a)), c)),
 * computed in the step with each operation's rounding (at_softcap_rows).
 *
 * Composed, the scores, their masked sum, the concatenation and the
 * probabilities are four [B, m, S + T] buffers and as many passes; fused, a
 * task takes one batch and a block of query rows (at_block_rows), holds its
 * scores and probabilities in a scratch row buffer of S + T lanes, and
 * writes its rows of o.
 *
 * Exact: the composed bits. Every product is the f32 gemm of the element
 * chain (under Exact its rungs give the reference's bits for every block
 * shape: each element seeded with its first product, k ascending), the
 * masked sum is s + m, the concatenation adds +0 (as the concat pattern),
 * the softmax row is the reference's (tp_softmax_row_exact), and
 * o = (p_c vc) + (p_n vn) in that order.
 *
 * Fast: the products without packing (attention_gemm_template.h: keys and
 * value rows read in place, a block's small products never pay a pack; the
 * chain's Fast gemm where the CPU lacks AVX2 or the value rows are not
 * adjacent), the Fast softmax row, and the keys a block's rows cannot see
 * skipped: a key whose mask is -inf
 * for every row of the block, past the last one any row sees (in the cached
 * segment and in the chunk separately), has score -inf and probability +0,
 * so it is neither multiplied nor summed (a causal chunk's future, a cache
 * span's unwritten slots). That changes no value but through a NaN or an
 * infinity in those keys or values, or the sign of a zero sum, which Fast
 * does not promise to keep; a block any of whose rows sees no key at all is
 * computed whole. Rows are blocks fixed by position, so the bits never depend
 * on the thread count. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/numerics.h"
#include "base/temp.h"
#include "base/threads.h"
#include "base/vexp.h"
#include "engine/attention_gemm.h"
#include "engine/attention_internal.h"
#include "engine/pattern.h"
#include "engine/softmax_rows.h"
#include "topos/backend.h"

/* The two recorded forms: the f32 cache's batched matmuls over [B, m, d]
 * (rank 3), and the 16-bit cache's per-kv-head qlinear products over [m, d]
 * with keys [keys, d] and values [dv, keys] as weight rows (rank 2,
 * patterns_attention_linear.c runs it). The softmax axis is the last. */
typedef struct at_form {
  topos_op product;
  int rank;
} at_form;

static const at_form at_batched = {TOPOS_OP_MATMUL, 3}, at_linear = {TOPOS_OP_QLINEAR, 2};

/* an f32 op node of the form's rank and kind `op` */
static const tp_node *at_op(const at_form *fm, const tp_graph *g, uint32_t i, topos_op op) {
  const tp_node *n = tp_pattern_op(g, i, op);
  return n && n->desc->dtype == TOPOS_F32 && n->desc->rank == fm->rank ? n : NULL;
}

static bool at_same_shape(const at_form *fm, const tp_graph *g, uint32_t a, const tp_node *b) {
  const tp_node *n = &g->nodes[a];
  return n->desc->dtype == TOPOS_F32 && n->desc->rank == fm->rank &&
         memcmp(n->desc->shape, b->desc->shape, (size_t)fm->rank * sizeof(int64_t)) == 0;
}

/* a product operand: f32 for the batched form; for qlinear's weights any
 * float type (the 16-bit cache) */
static bool at_operand(const at_form *fm, const tp_graph *g, uint32_t i, bool weight) {
  const tp_node *n = &g->nodes[i];
  if (n->desc->rank != fm->rank) return false;
  if (n->desc->dtype == TOPOS_F32) return true;
  return weight && fm->product == TOPOS_OP_QLINEAR &&
         (n->desc->dtype == TOPOS_F16 || n->desc->dtype == TOPOS_BF16);
}

/* node i: a broadcast of one f32 value to like's shape */
static bool at_scalar(const at_form *fm, const tp_graph *g, uint32_t i, const tp_node *like) {
  return tp_pattern_filled(g, i) && at_same_shape(fm, g, i, like);
}

/* add(product(q, k), mask) at node i, mask shaped as the product, or with
 * the product soft-capped first, mul(tanh(mul(product, a)), c) (a, c
 * broadcast scalars: llama_graph.c's tp_softcap); appends the members (2,
 * or 5 capped) to members[*n] and fills q, k, mask and, capped, cap[0..2)
 * with a and c (*capped 1) */
static bool at_scores(const at_form *fm, const tp_graph *g, uint32_t i, uint32_t *members, uint32_t *n,
                      uint32_t *q, uint32_t *k, uint32_t *mask, uint32_t cap[2], int *capped) {
  const tp_node *add = at_op(fm, g, i, TOPOS_OP_ADD);
  if (!add) return false;
  uint32_t prod = add->operands[0];
  *capped = 0;
  const tp_node *outer = at_op(fm, g, prod, TOPOS_OP_MUL);
  if (outer) { /* mul(tanh(mul(product, a)), c) */
    const tp_node *th = at_op(fm, g, outer->operands[0], TOPOS_OP_TANH);
    const tp_node *inner = th ? at_op(fm, g, th->operands[0], TOPOS_OP_MUL) : NULL;
    if (!inner || !at_scalar(fm, g, inner->operands[1], outer) || !at_scalar(fm, g, outer->operands[1], outer) ||
        !at_same_shape(fm, g, outer->operands[0], outer) || !at_same_shape(fm, g, th->operands[0], outer))
      return false;
    members[(*n)++] = th->operands[0];    /* mul(product, a) */
    members[(*n)++] = outer->operands[0]; /* tanh */
    members[(*n)++] = prod;               /* mul(., c) */
    cap[0] = inner->operands[1];
    cap[1] = outer->operands[1];
    *capped = 1;
    prod = inner->operands[0];
  }
  const tp_node *mm = at_op(fm, g, prod, fm->product);
  if (!mm || !at_same_shape(fm, g, add->operands[1], mm) || (*capped && !at_same_shape(fm, g, add->operands[0], mm)))
    return false;
  if (!at_operand(fm, g, mm->operands[0], false) || !at_operand(fm, g, mm->operands[1], true)) return false;
  members[(*n)++] = prod;
  members[(*n)++] = i;
  *q = mm->operands[0];
  *k = mm->operands[1];
  *mask = add->operands[1];
  return true;
}

topos_status at_softcap_rows(const at_cap *cap, float *p, int64_t ld, int64_t rows, int64_t n, int exact) {
  if (!cap->on || n <= 0) return TOPOS_OK;
  const topos_element *f32 = topos_element_of(TOPOS_F32);
  for (int64_t r = 0; r < rows; ++r) {
    float *x = p + r * ld;
    for (int64_t c = 0; c < n; ++c) x[c] = TP_FIRST_NAN(x[c], cap->a, *);
    if (exact || !tp_vtanh_f32(x, x, n)) TP_TRY(topos_element_map(f32, TOPOS_MAP_TANH, x, x, n));
    for (int64_t c = 0; c < n; ++c) x[c] = TP_FIRST_NAN(x[c], cap->c, *);
  }
  return TOPOS_OK;
}

/* narrow(p, last axis, start, length) */
static bool at_narrow(const at_form *fm, const tp_graph *g, uint32_t i, uint32_t p, int64_t start,
                      int64_t length) {
  const tp_node *n = at_op(fm, g, i, TOPOS_OP_NARROW);
  return n && n->operands[0] == p && n->attrs->axis == fm->rank - 1 && n->attrs->start == start &&
         n->attrs->length == length;
}

/* pad(x, last axis, start, extent) */
static bool at_pad(const at_form *fm, const tp_graph *g, uint32_t i, int64_t start, int64_t extent,
                   uint32_t *x) {
  const tp_node *n = at_op(fm, g, i, TOPOS_OP_PAD);
  if (!n || n->attrs->axis != fm->rank - 1 || n->attrs->start != start || n->attrs->length != extent)
    return false;
  *x = n->operands[0];
  return true;
}

static bool at_match_form(const at_form *fm, const tp_graph *g, uint32_t root, tp_fusion *f) {
  const int last = fm->rank - 1;
  uint32_t members[24], n = 0, in[11];
  int capped_n = 0, capped_c = 0;
  uint32_t p = 0;
  int64_t S = 0;
  int cached = 0;
  const tp_node *top = at_op(fm, g, root, TOPOS_OP_ADD);
  if (top) { /* add(product(narrow(p), vc), product(narrow(p), vn)) */
    const tp_node *a = at_op(fm, g, top->operands[0], fm->product);
    const tp_node *b = at_op(fm, g, top->operands[1], fm->product);
    if (!a || !b) return false;
    const tp_node *na = at_op(fm, g, a->operands[0], TOPOS_OP_NARROW);
    if (!na) return false;
    p = na->operands[0];
    S = na->attrs->length;
    const int64_t W = g->nodes[p].desc->shape[last];
    if (!at_narrow(fm, g, a->operands[0], p, 0, S) || !at_narrow(fm, g, b->operands[0], p, S, W - S))
      return false;
    members[n++] = a->operands[0];
    members[n++] = b->operands[0];
    members[n++] = top->operands[0];
    members[n++] = top->operands[1];
    in[AT_VC] = a->operands[1];
    in[AT_VN] = b->operands[1];
    cached = 1;
  } else {
    const tp_node *mm = at_op(fm, g, root, fm->product);
    if (!mm) return false;
    p = mm->operands[0];
    in[AT_VN] = mm->operands[1];
  }
  members[n++] = root;
  const tp_node *e = at_op(fm, g, p, TOPOS_OP_EXP);
  if (!e) return false;
  const tp_node *ls = at_op(fm, g, e->operands[0], TOPOS_OP_LOG_SOFTMAX);
  if (!ls || ls->attrs->axis != last) return false;
  members[n++] = p;
  members[n++] = e->operands[0];
  uint32_t s = ls->operands[0];
  const int64_t W = g->nodes[s].desc->shape[last];
  if (cached) {
    const tp_node *cat = at_op(fm, g, s, TOPOS_OP_ADD);
    if (!cat) return false;
    uint32_t xc, xn;
    if (!at_pad(fm, g, cat->operands[0], 0, W, &xc) || !at_pad(fm, g, cat->operands[1], S, W, &xn) ||
        g->nodes[xc].desc->shape[last] != S || g->nodes[xn].desc->shape[last] != W - S)
      return false;
    members[n++] = s;
    members[n++] = cat->operands[0];
    members[n++] = cat->operands[1];
    uint32_t qc;
    if (!at_scores(fm, g, xc, members, &n, &qc, &in[AT_KC], &in[AT_MC], &in[9], &capped_c)) return false;
    if (!at_scores(fm, g, xn, members, &n, &in[AT_Q], &in[AT_KN], &in[AT_MN], &in[7], &capped_n) ||
        qc != in[AT_Q] || capped_c != capped_n)
      return false;
  } else {
    if (!at_scores(fm, g, s, members, &n, &in[AT_Q], &in[AT_KN], &in[AT_MN], &in[4], &capped_n)) return false;
  }
  /* shapes, batched: q [B, m, d], k [B, d, keys], v [B, keys, dv], out [B, m, dv];
   * linear: q [m, d], k [keys, d], v [dv, keys], out [m, dv] */
  const int64_t *qs = g->nodes[in[AT_Q]].desc->shape, *os = g->nodes[root].desc->shape;
  const int nparts = cached ? 2 : 1;
  for (int c = 0; c < nparts; ++c) {
    const tp_node *k = &g->nodes[in[c ? AT_KC : AT_KN]], *v = &g->nodes[in[c ? AT_VC : AT_VN]];
    if (!at_operand(fm, g, in[c ? AT_VC : AT_VN], true)) return false;
    if (fm->rank == 3 &&
        (k->desc->shape[0] != qs[0] || k->desc->shape[1] != qs[2] || v->desc->shape[0] != qs[0] ||
         v->desc->shape[1] != k->desc->shape[2] || v->desc->shape[2] != os[2]))
      return false;
    if (fm->rank == 2 && (k->desc->shape[1] != qs[1] || v->desc->shape[1] != k->desc->shape[0] ||
                          v->desc->shape[0] != os[1]))
      return false;
  }
  if (fm->rank == 3 && (os[0] != qs[0] || os[1] != qs[1])) return false;
  if (fm->rank == 2 && os[0] != qs[0]) return false;
  if (!tp_fusion_take_members(f, members, n, root)) return false;
  f->n_inputs = cached ? (capped_n ? 11 : 7) : (capped_n ? 6 : 4);
  memcpy(f->inputs, in, f->n_inputs * sizeof *in);
  return true;
}

static bool at_match(const tp_graph *g, const uint8_t *evaluated, uint32_t root, tp_fusion *f) {
  (void)evaluated;
  return at_match_form(&at_batched, g, root, f) || at_match_form(&at_linear, g, root, f);
}

typedef struct at_job {
  at_view q, k[2], m[2], v[2]; /* [0]: the chunk's keys, [1]: the cached segment */
  at_cap cap[2];
  int cached, exact;
  tp_attn_gemm_fn fast; /* Fast: the products without packing, where the CPU has them */
  int64_t B, rows, d, dv, S, T, block_rows, blocks;
  /* Fast, a mask shared by all batch entries (stride 0): each row block's
   * live keys [block][part] + 1, found by the first task that needs them
   * instead of once per entry (0: not yet; tasks racing store the same
   * value); or NULL */
  atomic_llong *live;
  float *out;
  atomic_int status;
} at_job;

/* A range's copies of one batch entry's keys, per part, where the Fast
 * products cannot read them in place (the chunk's are strided in the graph;
 * a cached segment may end short of 16 columns): zero-padded to a multiple
 * of 16 columns, made at the entry's first block and read by the rest (a
 * range's tasks run entry by entry). */
typedef struct at_keys {
  float *buf[2];
  int64_t b[2], ld[2];
} at_keys;

/* s[r, 0..n) = q[b, i0 + r, :] . k[b, :, 0..n) + mask (+ 0 when concatenated),
 * row stride ld. The Fast products write up to n rounded to 16 columns (the
 * row stride leaves room; the caller overwrites them with -inf), reading
 * the keys in place when they are adjacent and that many exist, else from
 * the range's zero-padded copy of the entry's keys (at_keys). */
static topos_status at_scores_block(const at_job *j, int part, int64_t b, int64_t i0, int64_t rows,
                                    int64_t n, float *s, int64_t ld, at_keys *copy) {
  const at_view *q = &j->q, *k = &j->k[part], *m = &j->m[part];
  const float *qb = q->base + b * q->s0 + i0 * q->s1, *kb = k->base + b * k->s0;
  if (j->fast) {
    const int64_t n16 = (n + 15) / 16 * 16;
    int64_t ldk = k->s1;
    if (k->s2 != 1 || n16 > k->n2) {
      /* all of the entry's keys, once: later blocks see as many or more */
      const int64_t all = k->n2, all16 = (all + 15) / 16 * 16;
      if (copy->b[part] != b) {
        for (int64_t dd = 0; dd < j->d; ++dd)
          for (int64_t c = 0; c < all16; ++c)
            copy->buf[part][dd * all16 + c] = c < all ? kb[dd * k->s1 + c * k->s2] : 0.0f;
        copy->b[part] = b, copy->ld[part] = all16;
      }
      kb = copy->buf[part];
      ldk = copy->ld[part];
    }
    j->fast(rows, n16, j->d, qb, q->s1, q->s2, kb, ldk, s, ld);
  } else {
    topos_gemm_task t = {rows, n, j->d, qb, q->s1, q->s2, kb, k->s1, k->s2, s, ld};
    TP_TRY(topos_element_gemm(topos_element_of(TOPOS_F32), &t));
  }
  TP_TRY(at_softcap_rows(&j->cap[part], s, ld, rows, n, j->exact));
  at_add_mask(m, b, i0, rows, n, s, ld, s, ld, j->cached);
  return TOPOS_OK;
}

/* o[r, :] = p[r, 0..n) . v[b, 0..n, :] */
static topos_status at_values_block(const at_job *j, int part, int64_t b, int64_t rows, int64_t n,
                                    const float *p, int64_t ld, float *o) {
  const at_view *v = &j->v[part];
  if (j->fast && v->s2 == 1 && j->dv % 16 == 0) {
    j->fast(rows, j->dv, n, p, ld, 1, v->base + b * v->s0, v->s1, o, j->dv);
    return TOPOS_OK;
  }
  topos_gemm_task t = {rows, j->dv, n, p, ld, 1, v->base + b * v->s0, v->s1, v->s2, o, j->dv};
  return topos_element_gemm(topos_element_of(TOPOS_F32), &t);
}

/* the scratch of one task: scores and probabilities [block rows x ld], the
 * second value product [block rows x dv], copies of keys [d x T16], [d x S16] */
static int64_t at_row_stride(const at_job *j) { return (j->cached ? j->S : 0) + (j->T + 15) / 16 * 16; }

static topos_status at_block(const at_job *j, int64_t b, int64_t i0, int64_t i1, float *buf,
                             at_keys *copy) {
  const int64_t rows = i1 - i0, S = j->cached ? j->S : 0, T = j->T, dv = j->dv;
  const int64_t ld = at_row_stride(j);
  float *s = buf, *p = s + rows * ld, *o_n = p + rows * ld;
  int64_t nc = S, nn = T;
  if (!j->exact) { /* keys no row of the block sees (see the header) */
    atomic_llong *known = j->live ? j->live + 2 * (i0 / j->block_rows) : NULL;
    const int64_t seen = known ? (int64_t)atomic_load_explicit(&known[0], memory_order_acquire) : 0;
    if (seen > 0) { /* known[1] was stored before known[0] */
      nn = seen - 1;
      nc = (int64_t)atomic_load_explicit(&known[1], memory_order_relaxed) - 1;
    } else {
      nn = at_live_keys(&j->m[0], b, i0, i1, T);
      nc = j->cached ? at_live_keys(&j->m[1], b, i0, i1, S) : 0;
      if (known) {
        atomic_store_explicit(&known[1], nc + 1, memory_order_relaxed);
        atomic_store_explicit(&known[0], nn + 1, memory_order_release);
      }
    }
    if (nn == 0 || (j->cached && nc == 0)) nc = S, nn = T;
  }
  /* scores: [cached | chunk] lanes, the skipped ones -inf */
  if (j->cached) TP_TRY(at_scores_block(j, 1, b, i0, rows, nc, s, ld, copy));
  TP_TRY(at_scores_block(j, 0, b, i0, rows, nn, s + S, ld, copy));
  TP_TRY(at_probabilities(s, p, rows, ld, S, nc, T, nn, j->exact));
  float *o = j->out + (b * j->rows + i0) * dv;
  if (!j->cached) return at_values_block(j, 0, b, rows, nn, p, ld, o);
  TP_TRY(at_values_block(j, 1, b, rows, nc, p, ld, o));
  TP_TRY(at_values_block(j, 0, b, rows, nn, p + S, ld, o_n));
  for (int64_t e = 0; e < rows * dv; ++e) o[e] = o[e] + o_n[e];
  return TOPOS_OK;
}

/* tasks [begin, end): task t is batch t / blocks, row block t % blocks */
static void at_range(void *ctx, int64_t begin, int64_t end) {
  at_job *j = ctx;
  int saved = tp_numerics_enter(j->exact); /* workers do not inherit the posture */
  const size_t br = (size_t)j->block_rows, ld = (size_t)at_row_stride(j);
  const size_t t16 = (size_t)(j->T + 15) / 16 * 16, s16 = (size_t)(j->S + 15) / 16 * 16;
  float *buf = tp_temp_alloc((2 * br * ld + br * (size_t)j->dv + (size_t)j->d * (t16 + s16)) * sizeof *buf);
  if (!buf) atomic_store(&j->status, (int)TOPOS_ERR_OUT_OF_MEMORY);
  at_keys copy = {{NULL, NULL}, {-1, -1}, {0, 0}};
  if (buf) copy.buf[0] = buf + 2 * br * ld + br * (size_t)j->dv, copy.buf[1] = copy.buf[0] + (size_t)j->d * t16;
  for (int64_t t = begin; buf && t < end; ++t) {
    const int64_t b = t / j->blocks, i0 = (t % j->blocks) * j->block_rows;
    const int64_t i1 = i0 + j->block_rows < j->rows ? i0 + j->block_rows : j->rows;
    topos_status s = at_block(j, b, i0, i1, buf, &copy);
    if (s != TOPOS_OK) {
      atomic_store(&j->status, (int)s);
      break;
    }
  }
  tp_temp_free(buf);
  tp_numerics_leave(saved);
}

static topos_status at_run(const tp_fusion *f, const tp_graph *g, topos_tensor *const *inputs,
                           topos_tensor *dst, topos_tensor **out) {
  if (g->nodes[f->root].desc->rank == 2) { /* the 16-bit cache's per-head form */
    TP_TRY(tp_attention_linear_run(f, inputs, dst));
    *out = topos_tensor_retain(dst);
    return TOPOS_OK;
  }
  at_job j;
  memset(&j, 0, sizeof j);
  j.cached = at_cached(f->n_inputs);
  j.exact = tp_numerics_exact();
  TP_TRY(at_caps_of(f->n_inputs, inputs, j.cap));
  if (!j.exact) j.fast = tp_attn_gemm_best();
  j.q = at_view_of(inputs[AT_Q]);
  j.k[0] = at_view_of(inputs[AT_KN]);
  j.m[0] = at_view_of(inputs[AT_MN]);
  j.v[0] = at_view_of(inputs[AT_VN]);
  if (j.cached) {
    j.k[1] = at_view_of(inputs[AT_KC]);
    j.m[1] = at_view_of(inputs[AT_MC]);
    j.v[1] = at_view_of(inputs[AT_VC]);
  }
  const int64_t *qs = topos_tensor_shape(inputs[AT_Q]);
  j.B = qs[0];
  j.rows = qs[1];
  j.d = qs[2];
  j.dv = topos_tensor_shape(dst)[2];
  j.T = j.k[0].n2;
  j.S = j.cached ? j.k[1].n2 : 0;
  j.block_rows = at_block_rows(j.S + j.T);
  j.blocks = (j.rows + j.block_rows - 1) / j.block_rows;
  j.out = topos_tensor_data_mut(dst);
  atomic_llong *live = NULL;
  if (!j.exact && j.m[0].s0 == 0 && (!j.cached || j.m[1].s0 == 0) && j.B > 1 &&
      (live = malloc((size_t)(2 * j.blocks) * sizeof *live)) != NULL) {
    for (int64_t e = 0; e < 2 * j.blocks; ++e) atomic_init(&live[e], 0);
    j.live = live;
  }
  atomic_init(&j.status, TOPOS_OK);
  tp_parallel_for(j.B * j.blocks, 1, at_range, &j);
  free(live);
  topos_status s = (topos_status)atomic_load(&j.status);
  if (s != TOPOS_OK)
    return tp_fail(s, "attention: a block of %lld query rows over %lld keys failed",
                   (long long)j.block_rows, (long long)(j.S + j.T));
  *out = topos_tensor_retain(dst);
  return TOPOS_OK;
}

const tp_pattern tp_pattern_attention = {"attention", at_match, at_run};
