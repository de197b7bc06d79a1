/* LFM2 test files and their plain forward (included by llama_util.h): the
 * short-convolution blocks that stand between attention ones. A block
 * marked 'C' in lt_spec.conv_blocks has head_count_kv 0 in the per-block
 * array and shortconv.{conv, in_proj, out_proj} instead of attention; the
 * plain forward keeps every position's b * x row and sums the taps in
 * double. */
#ifndef TESTS_MODELS_LLAMA_LFM2_UTIL_H
#define TESTS_MODELS_LLAMA_LFM2_UTIL_H

#define LT_CONV_TAPS 3 /* shortconv.l_cache, as LFM2's files have it */

/* block l is a short convolution */
static inline int lt_conv_block(const lt_spec *s, int64_t l) {
  return s->conv_blocks && s->conv_blocks[l % (int64_t)strlen(s->conv_blocks)] == 'C';
}

/* shortconv.l_cache and head_count_kv as one entry per block (0: a convolution) */
static inline topos_status lt_write_lfm2_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s) {
  char kb[96];
  topos_status st = topos_gguf_writer_add_u32(w, lt_k(kb, s, "shortconv.l_cache"), LT_CONV_TAPS);
  uint32_t *kv = lt_keep(f, (size_t)s->layers * sizeof *kv);
  if (!kv) return TOPOS_ERR_OUT_OF_MEMORY;
  for (int64_t l = 0; l < s->layers; ++l) kv[l] = lt_conv_block(s, l) ? 0 : (uint32_t)s->kv_heads;
  if (st == TOPOS_OK)
    st = topos_gguf_writer_add_array(w, lt_k(kb, s, "attention.head_count_kv"), TOPOS_GGUF_U32, kv,
                                     (uint64_t)s->layers);
  return st;
}

/* block l's convolution: taps (GGUF extents {taps, dim}, f32, entries of
 * 0.5 so the earlier positions weigh), in_proj {dim, 3 dim} in k's type
 * (the default spec's Q8_0: b * x squares its error), out_proj {dim, dim}
 * in the output projection's */
static inline topos_status lt_write_shortconv(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                                              topos_rng *rng) {
  char n[64];
  topos_status st = TOPOS_OK;
  snprintf(n, sizeof n, "blk.%d.shortconv.conv.weight", (int)l);
  st = lt_add3(w, f, s, n, TOPOS_F32, LT_CONV_TAPS, s->dim, 0, 0.5, rng);
  snprintf(n, sizeof n, "blk.%d.shortconv.in_proj.weight", (int)l);
  if (st == TOPOS_OK) st = lt_add(w, f, s, n, s->types[LT_K], s->dim, 3 * s->dim, rng, 0);
  snprintf(n, sizeof n, "blk.%d.shortconv.out_proj.weight", (int)l);
  if (st == TOPOS_OK) st = lt_add(w, f, s, n, s->types[LT_O], s->dim, s->dim, rng, 0);
  return st;
}

/* A convolution block's weights, dequantized, and the b * x row of every
 * position so far (rows [N, dim]). */
typedef struct lt_conv {
  float *taps, *in, *out, *rows;
} lt_conv;

static inline int lt_conv_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_conv *c) {
  char n[64];
  snprintf(n, sizeof n, "blk.%d.shortconv.conv.weight", (int)l);
  c->taps = lt_deq(g, n);
  snprintf(n, sizeof n, "blk.%d.shortconv.in_proj.weight", (int)l);
  c->in = lt_deq(g, n);
  snprintf(n, sizeof n, "blk.%d.shortconv.out_proj.weight", (int)l);
  c->out = lt_deq(g, n);
  c->rows = calloc((size_t)(N * s->dim), sizeof *c->rows);
  return c->taps && c->in && c->out && c->rows;
}

static inline void lt_conv_free(lt_conv *c) {
  free(c->taps);
  free(c->in);
  free(c->out);
  free(c->rows);
}

/* out[D] = out_proj (c * y) at position p for the block's normed input h:
 * b, c, x the thirds of in_proj h, y[ch] = sum_j taps[ch][j] * (b x)[p - 2 + j][ch]
 * (zero before position 0; `history` 0: the current row's tap only, a
 * lt_check_variant `without`). bcx holds 3 D floats. */
static inline void lt_conv_apply(lt_conv *c, int64_t D, int64_t p, int history, const float *h, float *bcx,
                                 float *out) {
  lt_matvec(c->in, h, bcx, 3 * D, D);
  float *row = c->rows + p * D;
  for (int64_t ch = 0; ch < D; ++ch) row[ch] = bcx[ch] * bcx[2 * D + ch];
  for (int64_t ch = 0; ch < D; ++ch) {
    double y = 0;
    for (int64_t j = history ? 0 : LT_CONV_TAPS - 1; j < LT_CONV_TAPS; ++j) {
      const int64_t at = p - (LT_CONV_TAPS - 1) + j;
      if (at >= 0) y += (double)c->taps[ch * LT_CONV_TAPS + j] * c->rows[at * D + ch];
    }
    bcx[D + ch] *= (float)y; /* c * y, in place of c */
  }
  lt_matvec(c->out, bcx + D, out, D, D);
}

#endif
