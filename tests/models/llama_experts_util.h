/* Mixture-of-experts test files and their plain forward (included by
 * llama_util.h): the keys and per-layer tensors a qwen2moe / qwen3moe /
 * olmoe / granitemoe / Mixtral-style llama file has, and the feed-forward
 * written out — router softmax in double, the best experts by value then
 * index, their weights, each expert's SwiGLU, the shared expert. */
#ifndef TESTS_MODELS_LLAMA_EXPERTS_UTIL_H
#define TESTS_MODELS_LLAMA_EXPERTS_UTIL_H

/* an expert's width: the key where written, else qwen2moe / qwen3moe ff /
 * experts used, the others ff */
static inline int64_t lt_ff_expert(const lt_spec *s) {
  if (!lt_arch_is(s, "qwen2moe") && !lt_arch_is(s, "qwen3moe") && !lt_arch_is(s, "qwen3vlmoe") &&
      !lt_arch_is(s, "ernie4_5-moe") && !lt_oai(s) &&
      !lt_ds_moe(s) && !lt_llama4(s) && !lt_arch_is(s, "minimax-m2") && !lt_arch_is(s, "lfm2moe") &&
      !lt_arch_is(s, "smallthinker") && !lt_shared_gate(s) && !lt_arch_is(s, "mellum"))
    return s->ff;
  return s->ff_exp > 0 ? s->ff_exp : s->ff / s->experts_used;
}

/* the shared expert's width: the key, else qwen2moe's ff; deepseek2's / glm4moe's expert_shared_count
 * experts; exaone-moe's the key's (absent: an expert's) whatever the count; 0 none */
static inline int64_t lt_ff_shared(const lt_spec *s) {
  if (lt_arch_is(s, "exaone-moe")) return s->ff_shexp > 0 ? s->ff_shexp : lt_ff_expert(s);
  if (lt_ds_moe(s)) return s->experts_shared * (s->ff_shexp > 0 ? s->ff_shexp : lt_ff_expert(s));
  if (lt_llama4(s)) return lt_ff_expert(s); /* one shared expert as wide as the routed ones */
  if (s->ff_shexp > 0) return s->ff_shexp;
  return lt_shared_gate(s) || lt_hunyuan(s) ? s->ff : 0;
}

static inline int lt_experts_norm(const lt_spec *s) {
  return lt_arch_is(s, "qwen3moe") || lt_arch_is(s, "qwen3vlmoe") || lt_arch_is(s, "granitemoe") ||
         lt_arch_is(s, "granitehybrid") || lt_arch_is(s, "llama") ||
         lt_arch_is(s, "ernie4_5-moe") || (lt_ds_moe(s) && s->weights_norm) || lt_arch_is(s, "minimax-m2") ||
         lt_arch_is(s, "hunyuan-moe") || lt_arch_is(s, "lfm2moe") || lt_arch_is(s, "smallthinker") ||
         lt_arch_is(s, "qwen3next") || lt_arch_is(s, "qwen35moe") || lt_kimi(s) || lt_dbrx(s) || lt_arch_is(s, "mellum") ||
         lt_arctic(s) || lt_rms_bias(s);
}

/* A DeepSeek-V3-style mixture in f32 (glm4moe, dots1, bailingmoe2 tests):
 * 3 blocks, a dense first one, then 8 experts of 64, 2 per token, chosen
 * by a sigmoid router with exp_probs_b, renormalised and times 2.5, and one
 * shared expert */
lt_spec lt_v3_spec(const char *arch);

/* the router's probabilities are sigmoids: the key's 2, or glm4moe without it */
static inline int lt_sigmoid_router(const lt_spec *s) {
  return s->sigmoid_router > 0 || (s->sigmoid_router == 0 && (lt_arch_is(s, "glm4moe") || lt_arch_is(s, "lfm2moe") ||
                                                                lt_arch_is(s, "nemotron_h_moe")));
}

topos_status lt_write_ds_moe_keys(topos_gguf_writer *w, const lt_spec *s);

topos_status lt_write_expert_keys(topos_gguf_writer *w, const lt_spec *s);

/* an f32 or quantized tensor of ne {ne0, ne1, ne2}, entries lt_fill_unit's times scale */
topos_status lt_add3(topos_gguf_writer *w, lt_file *f, const lt_spec *s, const char *name,
                     topos_dtype type, int64_t ne0, int64_t ne1, int64_t ne2, double scale,
                     topos_rng *rng);

/* layer l's router, experts and shared expert (instead of ffn_gate / up / down) */
topos_status lt_write_experts(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                              topos_rng *rng);

/* One layer's mixture, dequantized (NULL pointers where the file has none). */
typedef struct lt_experts {
  float *router, *gate, *up, *down; /* [E, D], [E, F, D], [E, F, D], [E, D, F] */
  float *sgate, *sup, *sdown, *sgi; /* shared [S, D], [S, D], [D, S]; qwen2moe's gate [D] */
  float *bias;                      /* exp_probs_b [E]: moves the choice */
  float *rbias, *bgate, *bup, *bdown; /* gpt-oss: router [E], experts' [E, F], [E, F], [E, D] */
  float *ldown, *lup;                 /* moe_latent: [X, D], [D, X] */
  float *nexps;                       /* arctic: the mixture's own norm [D] */
} lt_experts;

int lt_experts_load(topos_gguf *g, const lt_spec *s, int64_t l, lt_experts *x);

static inline void lt_experts_free(lt_experts *x) {
  free(x->router), free(x->gate), free(x->up), free(x->down);
  free(x->sgate), free(x->sup), free(x->sdown), free(x->sgi), free(x->bias);
  free(x->rbias), free(x->bgate), free(x->bup), free(x->bdown), free(x->ldown), free(x->lup);
  free(x->nexps);
}

/* out[D] += gated feed-forward of h through [F, D] gate / up and [D, F] down,
 * times w: SiLU of the gate (SwiGLU), or with relu its ReLU; gate NULL: no
 * gate, ReLU squared of up (nemotron_h_moe) */
void lt_glu_add(const float *gate, const float *up, const float *down, const float *h, int64_t D,
                int64_t F, double w, int relu, float *out);

static inline void lt_swiglu_add(const float *gate, const float *up, const float *down, const float *h, int64_t D,
                                 int64_t F, double w, float *out) {
  lt_glu_add(gate, up, down, h, D, F, w, 0, out);
}

/* gpt-oss's expert: g = gate h + bg, u = up h + bu, g' = min(g, 7),
 * u' = clamp(u, -7, 7), out[D] += w (down (g' sigmoid(1.702 g') (u' + 1)) + bd) */
void lt_oai_expert_add(const lt_spec *s, const lt_experts *x, int64_t e, const float *h, int64_t D,
                       int64_t F, double w, float *out);

/* out[D] = the mixture's feed-forward of h */
/* A chosen expert's w * down(act(gate h) * up h) into out: SiLU, or ReLU for smallthinker's. */
static inline void lt_expert_add(const lt_spec *s, const float *gate, const float *up, const float *down, const float *h,
                                 int64_t D, int64_t F, double w, float *out) {
  lt_glu_add(gate, up, down, h, D, F, w, lt_arch_is(s, "smallthinker"), out);
}

/* The mixture's output for h (into out); the router reads rin (h, or
 * smallthinker's block input). */
void lt_experts_apply(const lt_spec *s, const lt_experts *x, const float *h, const float *rin,
                      float *out);

#endif
