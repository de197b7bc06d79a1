/* The bodies of llama_lfm2_util.h's longer helpers, compiled once for every test
 * that includes it. */
#include "models/llama_harness.h"

topos_status lt_write_lfm2_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s) {
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

topos_status lt_write_shortconv(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
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

int lt_conv_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_conv *c) {
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

void lt_conv_apply(lt_conv *c, int64_t D, int64_t p, int history, const float *h, float *bcx,
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
