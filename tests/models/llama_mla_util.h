/* deepseek2 test files and their plain forward (included by llama_util.h,
 * which declares lt_mla and the writers it calls before this):
 * the latent-attention keys and tensors the converter writes, and the
 * attention written out in its decompressed form — each head's keys and
 * values rebuilt from the latent through attn_k_b / attn_v_b, as DeepSeek-V2
 * defines it — where the graph runs the absorbed form (q through attn_k_b,
 * the cache holding the latent): the two agree only if both are right. */
#ifndef TESTS_MODELS_LLAMA_MLA_UTIL_H
#define TESTS_MODELS_LLAMA_MLA_UTIL_H

topos_status lt_write_mla_keys(topos_gguf_writer *w, const lt_spec *s);

/* layer l's attention tensors (GGUF extents) */
topos_status lt_write_mla(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                          topos_rng *rng);

/* One layer's latent attention, dequantized, and its decompressed caches. */
typedef struct lt_mla_w {
  float *q, *q_a, *q_a_norm, *kv_a, *kv_a_norm, *k_b, *v_b; /* q_a, q_a_norm NULL without q_lora_rank */
  float *kc, *vc; /* per position: each head's key [H, N + P] and value [H, V] */
} lt_mla_w;

int lt_mla_load(topos_gguf *g, const lt_spec *s, int64_t l, int64_t positions, lt_mla_w *m);

static inline void lt_mla_free(lt_mla_w *m) {
  free(m->q), free(m->q_a), free(m->q_a_norm), free(m->kv_a), free(m->kv_a_norm), free(m->k_b), free(m->v_b);
  free(m->kc), free(m->vc);
}

/* v[0..P) rotated in adjacent pairs for position p; with YaRN (the
 * spec's rope_scale as its factor) DeepSeek's: the angles ramped between
 * the original and the interpolated ones, cos and sin unscaled where the
 * file has yarn_log_multiplier. */
void lt_mla_rope(const lt_spec *s, float *v, int64_t p);

/* out[D] = the attention of position p (keys and values of positions
 * 0..p-1 already in m's caches) from its normed input h. */
int lt_mla_attention(const lt_spec *s, lt_mla_w *m, const float *wo, int64_t p, const float *h,
                     float *out);

#endif
