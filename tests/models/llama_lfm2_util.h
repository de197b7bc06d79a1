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
topos_status lt_write_lfm2_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s);

/* block l's convolution: taps (GGUF extents {taps, dim}, f32, entries of
 * 0.5 so the earlier positions weigh), in_proj {dim, 3 dim} in k's type
 * (the default spec's Q8_0: b * x squares its error), out_proj {dim, dim}
 * in the output projection's */
topos_status lt_write_shortconv(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                                topos_rng *rng);

/* A convolution block's weights, dequantized, and the b * x row of every
 * position so far (rows [N, dim]). */
typedef struct lt_conv {
  float *taps, *in, *out, *rows;
} lt_conv;

int lt_conv_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t N, lt_conv *c);

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
void lt_conv_apply(lt_conv *c, int64_t D, int64_t p, int history, const float *h, float *bcx,
                   float *out);

#endif
