/* Internal: the llama model's weights and the recorded graph of one chunk. */
#ifndef TP_MODELS_LLAMA_INTERNAL_H
#define TP_MODELS_LLAMA_INTERNAL_H

#include "topos/llama.h"

#define TP_LLAMA_MAX_KV_HEADS 256

/* What each architecture changes in the llama graph, as llama.cpp's graph
 * for the same files does. NEOX: the converter keeps Hugging Face's q and
 * k order, so the rotation pairs (x[i], x[i + d/2]). */
enum {
  TP_ARCH_NEOX = 1 << 0,
  TP_ARCH_BIASES = 1 << 1,     /* optional q, k, v, output and feed-forward biases */
  TP_ARCH_QKV_BIAS = 1 << 2,   /* q, k, v biases required (qwen2) */
  TP_ARCH_FUSED = 1 << 3,      /* attn_qkv and gate|up in ffn_up (phi3) */
  TP_ARCH_QK_NORM = 1 << 4,    /* attn_q_norm, attn_k_norm */
  TP_ARCH_GEMMA = 1 << 5,      /* embeddings times sqrt(dim), GELU gate */
  TP_ARCH_POST_NORMS = 1 << 6, /* post_attention_norm, post_ffw_norm */
  TP_ARCH_SOFTCAP = 1 << 7,    /* attention and final logits soft-capped (defaults 50, 30) */
  TP_ARCH_GRANITE = 1 << 8,    /* embedding, residual, attention and logit scales from the file */
  TP_ARCH_NOPE4 = 1 << 9,      /* every fourth layer unrotated (smollm3) */
  TP_ARCH_QK_NORM_ROW = 1 << 10, /* q and k norms over the whole row, not per head (olmo2) */
  TP_ARCH_NO_PRE_NORMS = 1 << 11, /* no attn_norm / ffn_norm: the branches read the residual (olmo2) */
  TP_ARCH_TEMPERATURE = 1 << 12,  /* attention.temperature_scale: q times a factor growing with the position */
  TP_ARCH_NOPE_FULL = 1 << 13,    /* where the file has a window, the full layers do not rotate (exaone4) */
  TP_ARCH_FINAL_SOFTCAP = 1 << 14, /* final_logit_softcapping where the file states it (gemma3) */
  TP_ARCH_MOE = 1 << 15,          /* a mixture of experts: expert_count required */
  TP_ARCH_MOE_OK = 1 << 16,       /* experts where expert_count says (llama: Mixtral) */
  TP_ARCH_MOE_NORM = 1 << 17,     /* the chosen experts' weights renormalised */
  TP_ARCH_MOE_FF_KEY = 1 << 18,   /* expert_feed_forward_length (absent: ff / experts used) */
  TP_ARCH_SHARED_GATE = 1 << 19,  /* a shared expert behind a sigmoid gate (qwen2moe) */
  TP_ARCH_LAYER_NORM = 1 << 20,   /* LayerNorm with biases for the block and output norms */
  TP_ARCH_FFN_PLAIN = 1 << 21,    /* ffn_up, GELU, ffn_down: no gate */
  TP_ARCH_PARALLEL = 1 << 22,     /* no ffn_norm: attention and feed-forward read one norm (phi2) */
  TP_ARCH_MOE_LAYERS = 1 << 23,   /* leading_dense_block_count, interleave_moe_layer_step (ernie4_5-moe) */
  TP_ARCH_OAI = 1 << 24,          /* gpt-oss: attention sinks, post_attention_norm as the feed-forward's
                                   * norm, the experts' biases, router and activation (experts_oai) */
  TP_ARCH_POSITIONS = 1 << 25,    /* learned absolute positions (position_embd.weight), no rotation (gpt2) */
  TP_ARCH_PARALLEL_KEY = 1 << 26, /* use_parallel_residual: x + attn(norm1 x) + ffn(norm2 x) (gptneox) */
  TP_ARCH_NORM_2 = 1 << 27,       /* attn_norm_2 where the file has it: the attention's own norm (falcon) */
  TP_ARCH_COHERE = 1 << 28,       /* LayerNorm without biases, logits times logit_scale (command-r) */
  TP_ARCH_FFN_POST_NAME = 1 << 29, /* the feed-forward's norm is named post_attention_norm (gpt-oss, seed_oss) */
  TP_ARCH_MLA = 1 << 30,          /* multi-head latent attention, expert_shared_count, expert_weights_norm and
                                   * the gating function from the file (deepseek2) */
};

/* tp_llama_archs' flags for general.architecture `arch` (0 where unknown) */
unsigned tp_llama_arch_flags(const char *arch);
/* 1 where the architecture's attn_q_norm / attn_k_norm may be absent (glm4moe) */
int tp_llama_arch_qk_norm_optional(const char *arch);
/* 1 where ffn_up holds the gate's rows then the up rows, and attn_qkv may be
 * fused or not (glm4; phi3's TP_ARCH_FUSED fuses both always) */
int tp_llama_arch_gate_up_fused(const char *arch);
/* 1 where the LayerNorms' biases may be absent (mpt) */
int tp_llama_arch_norm_bias_optional(const char *arch);
/* the feed-forward's norm's name in a block ("ffn_norm.weight" but for dbrx) */
const char *tp_llama_arch_ffn_norm_name(const char *arch);
/* no token_embd.weight: output.weight embeds the tokens too (codeshell) */
int tp_llama_arch_embd_from_output(const char *arch);

struct topos_llama;
typedef struct tp_llama_layer tp_llama_layer;
/* An unsigned key (at most 2^31; absent: fallback, or refused where required) */
topos_status tp_llama_u64(topos_gguf *g, const char *key, int required, int64_t fallback, int64_t *out);
/* The same for a count that may be 0 */
topos_status tp_llama_count(topos_gguf *g, const char *key, int required, int64_t fallback, int64_t *out);
/* attention.head_count_kv's per-block zeros into *blocks (calloc'd, n_layers)
 * and *count; sets config.n_kv_heads (llama_config.c) */
topos_status tp_llama_kv_zero_blocks(struct topos_llama *m, const char *why, uint8_t **blocks, int64_t *count);
/* *w (a vector of rows x cols) reshaped in place to [rows, cols] (llama.c) */
topos_status tp_llama_as_matrix(topos_tensor **w, int64_t rows, int64_t cols);
/* A weight of GGUF extents {ne0, ne1} (ne1 0: a vector, made f32) mapped from
 * the file (llama.c); tp_llama_weight3: {ne0, ne1, ne2} (ne2 0: a matrix) */
topos_status tp_llama_weight3(struct topos_llama *m, const char *name, int64_t ne0, int64_t ne1, int64_t ne2,
                              int optional, topos_tensor **out);
topos_status tp_llama_weight(struct topos_llama *m, const char *name, int64_t ne0, int64_t ne1, int optional,
                             topos_tensor **out);
/* A key of one value for every block or an array of one per block
 * (another length refused): its index and entry (llama_config.c) */
topos_status tp_llama_block_key(const struct topos_llama *m, const char *key, const char *why, int64_t *index,
                                topos_gguf_kv *kv);
/* A depthwise convolution's {taps, width} weight as f32 [taps, width] (llama.c) */
topos_status tp_llama_conv_taps(struct topos_llama *m, const char *name, int64_t taps, int64_t width,
                                topos_tensor **out);
/* Mamba blocks (llama_ssm.c): the ssm.* keys of Mamba-1 (version 1) or
 * Mamba-2 (2) mixers and which blocks they are: head_count_kv's zeros
 * (TP_SSM_HYBRID: granitehybrid, nemotron_h, jamba), every block beside its
 * attention (TP_SSM_PARALLEL: falcon-h1) or every block alone, no attention
 * anywhere (TP_SSM_ONLY: mamba, mamba2); block l's tensors */
enum { TP_SSM_HYBRID, TP_SSM_PARALLEL, TP_SSM_ONLY };
/* the width a mixer's convolution runs over: Mamba-2's x, B and C; Mamba-1's x */
static inline int64_t tp_llama_ssm_conv_width(const topos_llama_config *c) {
  return c->ssm_dt_rank ? c->ssm_inner : c->ssm_inner + 2 * c->ssm_groups * c->ssm_state;
}
topos_status tp_llama_ssm_config(struct topos_llama *m, int version, int form);
/* nemotron_h: feed_forward_length and head_count_kv per block make each
 * block a Mamba-2 mixer (both 0), attention (kv heads) or a feed-forward
 * (a width): m->ssm_blocks, m->ffn_blocks, config.ff (llama_ssm.c) */
topos_status tp_llama_nemotron_h_blocks(struct topos_llama *m);
/* block l's recurrent mixer tensors, of whichever kind the config says
 * (Mamba-1, Mamba-2, gated DeltaNet, Kimi Delta Attention) */
topos_status tp_llama_layer_mamba2(struct topos_llama *m, int64_t l, tp_llama_layer *L);
/* Gated-DeltaNet blocks (llama_ssm.c): the ssm.* keys (config.ssm_delta;
 * tiled: value head h reads key head h % groups) and which blocks they are
 * (attention.recurrent_layers, else all but every full_attention_interval-th) */
topos_status tp_llama_delta_config(struct topos_llama *m, int tiled);
/* Kimi Delta Attention blocks (llama_ssm.c): head_count_kv's zeros, ssm.conv_kernel, kda.head_dim */
topos_status tp_llama_kda_config(struct topos_llama *m);
/* A tensor whose extents, 1s left out, are {ne0, ne1}'s (ne1 0: {ne0}), as
 * f32 [ne0 * ne1] (the converters write some small tensors with extents of
 * 1 around theirs: Kimi's {taps, 1, width, 1} convolutions, {1, heads, 1, 1} A) */
topos_status tp_llama_weight_squeezed(struct topos_llama *m, const char *name, int64_t ne0, int64_t ne1,
                                      topos_tensor **out);

/* Gemma 4 (llama_gemma4.c): feed_forward_length, head_count and
 * head_count_kv as numbers or per-block lists (m->ff_list, m->heads_list,
 * m->kv_heads_list: Gemma 4, Gemma 3n, OpenELM); the windowed
 * heads' widths, the shared blocks and the per-layer embeddings' width
 * (after the window's keys); block l's shared-cache source (L->windowed
 * set); its per-layer embedding products and output scale; the model's
 * per-layer embedding tables */
topos_status tp_llama_block_lists(struct topos_llama *m);
topos_status tp_llama_gemma4_config(struct topos_llama *m);
void tp_llama_gemma4_shape(const struct topos_llama *m, int64_t l, tp_llama_layer *L);
topos_status tp_llama_layer_gemma4(struct topos_llama *m, int64_t l, tp_llama_layer *L);
topos_status tp_llama_gemma4_weights(struct topos_llama *m);
/* 1 where block l is windowed in a file whose windowed blocks repeat with a
 * period (no list): l % period < period - 1, every block for period 0 or 1 */
static inline int tp_llama_period_windowed(int64_t period, int64_t l) {
  return period <= 1 || l % period < period - 1;
}
/* Gemma 3n (llama_gemma3n.c): its keys (after the window's: swa_period, the
 * windowed blocks' period where the file lists none), which reuse Gemma 4's
 * shared blocks and per-layer embeddings; block l's AltUp and Laurel
 * tensors and sparsity; the streams' projections */
topos_status tp_llama_gemma3n_config(struct topos_llama *m, int64_t swa_period);
topos_status tp_llama_layer_gemma3n(struct topos_llama *m, int64_t l, tp_llama_layer *L);
topos_status tp_llama_gemma3n_weights(struct topos_llama *m);
/* Gemma 4's and Gemma 3n's shared blocks and per-layer embedding width
 * (attention.shared_kv_layers, embedding_length_per_layer_input; absent the
 * fallbacks), checked against the windowed blocks m->swa_layers */
topos_status tp_llama_gemma_shared(struct topos_llama *m, int64_t shared_fallback, int64_t ple_fallback);

/* "ARCH.suffix" into buf: an architecture's hyper-parameter key */
const char *tp_llama_key(char *buf, size_t cap, const char *arch, const char *suffix);
#define TP_K(suffix) tp_llama_key(kb, sizeof kb, c->arch, suffix)

typedef struct tp_llama_layer {
  topos_tensor *attn_norm, *ffn_norm;        /* f32 [dim] */
  topos_tensor *ffn_norm_exps;               /* f32 [dim]: the mixture's own norm (arctic), or NULL */
  topos_tensor *attn_norm_b, *ffn_norm_b;    /* LayerNorm biases, f32 [dim], or NULL */
  topos_tensor *attn_norm_2, *attn_norm_2_b; /* Falcon-40B: the attention's own LayerNorm, or NULL */
  topos_tensor *q_norm, *k_norm;             /* f32 [head_dim] ([heads, head_dim]: qk_norm 3) or NULL */
  topos_tensor *q_norm_b, *k_norm_b;         /* whole-row LayerNorms' biases (mpt), or NULL */
  topos_tensor *post_attn_norm, *post_ffn_norm; /* f32 [dim] or NULL (config.post_norms) */
  int windowed;                              /* the sliding window applies to this layer */
  int nope;                                  /* q and k are not rotated (smollm3, some granite files) */
  topos_tensor *wq, *wk, *wv, *wo;           /* [out, in] in the file's types */
  topos_tensor *w_gate, *w_up, *w_down;     /* dense feed-forward, or a mixture's shared expert */
  topos_tensor *gate_inp;                    /* the router [n_experts, dim], or NULL (dense) */
  topos_tensor *gate_exps, *up_exps, *down_exps; /* [n_experts, ff_expert, dim], [.., dim, ff_expert] */
  topos_tensor *gate_inp_shexp;              /* f32 [1, dim]: qwen2moe's shared-expert gate */
  topos_tensor *latent_down, *latent_up;     /* [moe_latent, dim], [dim, moe_latent] (config.moe_latent), or NULL */
  topos_tensor *exp_probs_b;                 /* f32 [n_experts]: added to the probabilities to choose
                                              * the experts, not to weigh them (exp_probs_b.bias), or NULL */
  topos_tensor *gate_inp_b;                  /* f32 [n_experts]: the router's bias (experts_oai), or NULL */
  topos_tensor *gate_exps_b, *up_exps_b, *down_exps_b; /* f32 [n_experts, ff_expert] / [n_experts, dim]:
                                              * each expert's biases (experts_oai), or NULL */
  topos_tensor *attn_sinks;                  /* f32 [n_heads] (config.attn_sinks), or NULL */
  /* latent attention (config.mla_kv_rank): q from wq, or wq_a, q_a_norm, then
   * wq (attn_q_b); the latent and the shared rotated key from wkv_a
   * [kv_rank + rope_dim, dim]; per head k_b [heads, kv_rank, nope] (q's
   * unrotated part into the latent's space) and v_b [heads, v_dim, kv_rank] */
  topos_tensor *wq_a, *q_a_norm, *wkv_a, *kv_a_norm, *wk_b, *wv_b;
  topos_tensor *bq, *bk, *bv, *bo;           /* f32 biases or NULL (qwen2: q, k, v always) */
  topos_tensor *b_gate, *b_up, *b_down;      /* f32 feed-forward biases or NULL */
  /* Weights the file lays out back to back in one type, joined into one
   * product for decoding (one dispatch instead of two or three; each output
   * row is computed as alone, so no bit changes): q, k (and v) rows in that
   * order (attn_in_parts 2 or 3; NULL, 0: none), gate and up rows (up first
   * when the file has it first). Views of the mapping, no copies. */
  topos_tensor *w_attn_in, *w_ffn_in;
  int attn_in_parts, ffn_up_first;
  /* LFM2's short convolution in place of attention (config.conv_len): taps
   * f32 [conv_len, dim] (tap j's weight per channel: the file's
   * shortconv.conv transposed, owned), conv_in [3 dim, dim] (b, c, x rows),
   * conv_out [dim, dim]; NULL for attention blocks */
  topos_tensor *conv_taps, *conv_in, *conv_out;
  /* A Mamba-2 block (config.ssm_conv): ssm_in [2 inner + 2 groups state +
   * heads, dim] (z, xBC, dt rows), ssm_taps f32 [ssm_conv, xBC width] (the
   * file's ssm_conv1d transposed, owned), f32 ssm_conv_b [xBC width] (or
   * NULL), ssm_dt_b, ssm_a, ssm_d [heads], ssm_norm [inner], ssm_out [dim,
   * inner]; NULL for other blocks */
  topos_tensor *ssm_in, *ssm_taps, *ssm_conv_b, *ssm_dt_b, *ssm_a, *ssm_d, *ssm_norm, *ssm_out;
  /* Mamba-1 (config.ssm_dt_rank): ssm_in [2 inner, dim] (x, z rows), ssm_x
   * [rank + 2 state, inner], ssm_dt [inner, rank], f32 ssm_a [inner,
   * state]; the RMS norms' weights of dt, B, C where the file has them */
  topos_tensor *ssm_x, *ssm_dt, *ssm_dt_norm, *ssm_b_norm, *ssm_c_norm;
  /* A gated-DeltaNet block (config.ssm_delta): ssm_in [2 keys + values,
   * dim] (attn_qkv: q, k, v rows; ssm_z NULL: qwen3next's older ssm_in,
   * each key head's q, k, values and z rows together), ssm_z [values, dim]
   * (attn_gate), ssm_beta [heads, dim] and ssm_alpha [heads, dim] (ssm_alpha
   * NULL: ssm_beta is qwen3next's ssm_ba, each key head's betas then
   * alphas), ssm_taps, ssm_dt_b, ssm_a [heads], ssm_norm [head width],
   * ssm_out [dim, values] */
  topos_tensor *ssm_z, *ssm_beta, *ssm_alpha;
  /* Kimi Delta Attention (config.ssm_kda): q in ssm_in, k and v [H hd, dim],
   * the decays' low-rank pair ssm_f_a [hd, dim], ssm_f_b [H hd, hd], the
   * output gate's ssm_g_a, ssm_g_b (the same shapes), ssm_taps the three
   * convolutions side by side [taps, 3 H hd], ssm_beta [H, dim], ssm_dt_b
   * [H hd], ssm_a [H], ssm_norm [hd], ssm_out (attn_output) [dim, H hd] */
  topos_tensor *ssm_k, *ssm_v, *ssm_f_a, *ssm_f_b, *ssm_g_a, *ssm_g_b;
  int ffn_only; /* nemotron_h: the block is x + ffn(norm(x)), no token mixer */
  /* the block's attention: heads, kv heads, head width, rotated dimensions
   * (the config's, or Gemma 4's per block), the feed-forward's width */
  int64_t heads, kv_heads, hd, rd, ff;
  /* Gemma 4: kv_shared, the block computes no keys or values and attends
   * to block kv_src's (its cache and its chunk's); wv NULL (not shared): the
   * values are the keys' product; out_scaled, the block's output times
   * out_scale; ple_gate [ple_dim, dim], ple_proj [dim, ple_dim], ple_norm
   * [dim]: the per-layer embedding's products and norm, or NULL */
  int kv_shared, out_scaled;
  int64_t kv_src;
  float out_scale;
  topos_tensor *ple_gate, *ple_proj, *ple_norm;
  /* Gemma 4's mixtures: gate_inp_s f32 [dim] (the router's input scale),
   * down_exps_s f32 [n_experts, 1] (each expert's output scale) or NULL,
   * gate_up_exps [n_experts, 2 ff_expert, dim] (gate rows, then up rows;
   * gate_exps and up_exps NULL) or NULL; the dense branch's post-norm
   * post_ffn_norm_1, the experts' pre_ffn_norm_2 and post_ffn_norm_2 */
  topos_tensor *gate_inp_s, *down_exps_s, *gate_up_exps, *post_ffn_norm_1, *pre_ffn_norm_2, *post_ffn_norm_2;
  float xielu[4]; /* the feed-forward's xIELU parameters (config.ffn_xielu) */
  /* Gemma 3n (config.altup_streams N): the router [N, dim] and its norm
   * [dim], the prediction's coefficients [N*N, N] and the correction's [N,
   * N], the corrected active stream's scale [dim]; Laurel's products [rank,
   * dim], [dim, rank] and norm [dim]; gate_sparse: the feed-forward's gate
   * keeps only what exceeds its mean by sparsity_mul standard deviations */
  topos_tensor *altup_router, *altup_router_norm, *altup_predict, *altup_correct, *altup_correct_scale;
  topos_tensor *laurel_l, *laurel_r, *laurel_norm;
  int gate_sparse;
  float sparsity_mul;
} tp_llama_layer;

struct topos_llama {
  topos_gguf *gguf;
  int owns_gguf;
  topos_llama_config config;
  topos_tensor *token_embd;  /* [vocab, dim], any type */
  topos_tensor *output_norm; /* f32 [dim] */
  topos_tensor *output;      /* [vocab, dim]; token_embd when tied */
  topos_tensor *output_norm_b, *output_b; /* f32 LayerNorm bias [dim], head bias [vocab] (phi2), or NULL */
  topos_tensor *embd_norm, *embd_norm_b;  /* f32 [dim]: the embedding's LayerNorm (bloom), or NULL */
  topos_tensor *rope_factors; /* f32 [rope_dim / 2] (rope_freqs.weight) or NULL */
  topos_tensor *pos_embd;     /* [n_ctx_train, dim], any type (config.learned_positions), or NULL */
  topos_tensor *rope_long, *rope_short; /* LongRoPE's f32 [rope_dim / 2] tables, or NULL */
  uint8_t *rope_still; /* [rope_dim / 2]: 1 where M-RoPE's sections give a text token position 0
                        * (the pair keeps its angle 0), or NULL */
  tp_llama_layer *layers;
  uint8_t *used;              /* while loading: 1 per file tensor the graph reads */
  uint8_t *swa_layers;        /* while loading: the windowed layers where the file lists them
                               * (attention.sliding_window_pattern as an array), else NULL */
  uint8_t *conv_blocks;       /* while loading: 1 per short-convolution block (LFM2), else NULL */
  uint8_t *ssm_blocks;        /* while loading: 1 per Mamba-2 block, else NULL */
  uint8_t *ffn_blocks;        /* while loading: 1 per feed-forward-only block (nemotron_h), else NULL */
  int one_branch;             /* while loading: each block is one residual branch, a mixer or a
                               * feed-forward (nemotron_h) */
  int ssm_parallel;           /* while loading: every block's Mamba-2 mixer beside its attention (falcon-h1) */
  int moe_where_present;      /* while loading: a block is a mixture where the file has its ffn_gate_inp (jamba) */
  float *xielu;               /* while loading: [n_layers][4], each block's xIELU parameters (config.ffn_xielu;
                               * kept in the layers), else NULL */
  uint8_t *nope_blocks;       /* while loading: 1 per block that does not rotate (smallthinker), else NULL */
  int64_t *kv_heads_list;     /* while loading: attention.head_count_kv per block where the file lists
                               * nonzero counts (Gemma 4), else NULL */
  int64_t *ff_list;           /* while loading: feed_forward_length per block where the file lists it, else NULL */
  int64_t *heads_list;        /* while loading: attention.head_count per block where the file lists it
                               * (OpenELM), else NULL; config.n_heads is then the largest */
  /* Gemma 4's per-layer embeddings (config.ple_dim): ple_embd [vocab, n_layers
   * ple_dim] read one row per token, ple_model_proj [n_layers ple_dim, dim],
   * ple_proj_norm f32 [ple_dim] */
  topos_tensor *ple_embd, *ple_model_proj, *ple_proj_norm;
  /* Gemma 3n: the streams' projections from and back to the embedding,
   * [N - 1, dim, dim] each (config.altup_streams N), or NULL */
  topos_tensor *altup_proj, *altup_unembd;
  float *sparsity; /* while loading: Gemma 3n's activation_sparsity_scale per block (-inf none), else NULL */
};

/* One recorded chunk graph of T tokens over a cache of capacity C. Inputs:
 *   x0 f32 [T, dim]            embeddings of the chunk's tokens (times embd_scale)
 *   cos, sin f32 [T, hd/2, 1]  rope tables at the chunk's positions
 *   cos_w, sin_w               the windowed layers' tables where they have their own
 *                              base (rope_base_swa), else absent
 *   mask_c f32 [S] (row_mask: [G*T, S])  0 where row (g, t) may see cache slot j < S, else -inf
 *   mask_n f32 [G*T, T]        causal mask inside the chunk
 *   temp f32 [T]               q's per-position factor (attn_temp_scale), else absent
 *   mask_cw, mask_nw           the windowed layers' masks where the model mixes windowed
 *                              and full layers and the window cuts into the chunk
 *                              (window_masks; row_mask then shapes mask_cw), else the
 *                              layers share mask_c and mask_n (phi3: all windowed)
 *   k_cache[l] f32 [KVH, hd, C], v_cache[l] f32 [KVH, C, hd] (attention blocks)
 *   conv_state[l] f32 [conv_len - 1, dim]  a short-convolution block's (b x)
 *                              rows of the positions before the chunk (LFM2);
 *                              a Mamba-2 block's xBC rows, [ssm_conv - 1, xBC width]
 *   ssm_state[l] f32 [ssm_state, ssm_heads, head width]  a Mamba-2 block's scan state
 * Root: logits [T or 1, vocab] (none for TP_LOGITS_NONE: a prompt chunk
 * before the last needs no head). Sinks (topos_plan_forward_sink, index k:
 * sinks[k], of layer sink_at[k] % L, kind sink_at[k] / L: 0 k_new, 1 v_new,
 * 2 conv_next, 3 ssm_next): k_new[l] f32 [T, KVH, hd] (after rope), v_new[l]
 * f32 [T, KVH, hd]; conv_next[l], the convolution rows of the chunk's last
 * positions (the next chunk's conv_state); ssm_next[l], the scan's state after
 * the chunk (the next chunk's ssm_state). */
typedef enum tp_logits_rows { TP_LOGITS_LAST, TP_LOGITS_ALL, TP_LOGITS_NONE } tp_logits_rows;

typedef struct tp_llama_graph {
  int64_t T;
  tp_logits_rows logits_rows;
  int has_cache;
  int row_mask; /* the windowed cache mask [G*T, span], a row per query (the window cutting in), else [span] */
  int window_masks; /* the windowed layers have masks of their own (mask_cw, mask_nw) */
  int64_t span; /* cache slots attended: keys beyond them are all masked */
  topos_plan *plan;
  topos_sym x0, cos, sin, cos_w, sin_w, mask_c, mask_n, mask_cw, mask_nw, temp, logits;
  topos_sym ple_rows; /* Gemma 4: f32 [T, n_layers ple_dim], the per-layer embedding rows times sqrt(ple_dim) */
  topos_sym *k_cache, *v_cache, *k_new, *v_new; /* n_layers each; invalid for convolution blocks */
  topos_sym *conv_state, *conv_next;            /* n_layers each; invalid for attention blocks */
  topos_sym *ssm_state, *ssm_next;              /* n_layers each; valid for Mamba-2 blocks */
  topos_sym *sinks;                             /* n_sinks */
  int64_t *sink_at;
  size_t n_sinks;
} tp_llama_graph;

enum { TP_SINK_K, TP_SINK_V, TP_SINK_CONV, TP_SINK_SSM, TP_SINK_KINDS };

/* 1 where block L has attention, and so keys and values in the cache
 * (every attention block has an output product; the other mixers' own
 * products are conv_out and ssm_out) */
static inline int tp_llama_layer_attends(const tp_llama_layer *L) { return L->wo != NULL; }
/* 1 where block L keeps keys and values of its own in the cache (Gemma 4's
 * shared blocks read another's) */
static inline int tp_llama_layer_caches(const tp_llama_layer *L) { return L->wo != NULL && !L->kv_shared; }

/* Reads general.architecture and its keys into m->config (llama_config.c);
 * *swa_period (0: none) and *nope_all for the layer loop; may set
 * m->swa_layers. */
struct topos_llama;
topos_status tp_llama_config_read(struct topos_llama *m, int64_t *swa_period, int *nope_all);

/* kv_dtype f32: k_cache [KVH, hd, C], v_cache [KVH, C, hd] (matmul);
 * f16/bf16: k_cache [KVH, C, hd], v_cache [KVH, hd, C] (linear per kv head). */
/* has_cache 0: a chunk at position 0 attends to its own keys only (no cache
 * inputs, no mask_cache): the same bits, since cached keys would all be
 * masked and add exact zeros. row_mask: the windowed cache mask has a row
 * per query row (the window behind some rows' keys but not others');
 * window_masks: the windowed layers get masks of their own. */
topos_status tp_llama_graph_build(const topos_llama *m, int64_t T, int64_t C, int64_t span,
                                  tp_logits_rows logits_rows, int has_cache, int row_mask, int window_masks,
                                  topos_dtype kv_dtype,
                                  topos_numerics numerics,
                                  tp_llama_graph *out);
void tp_llama_graph_free(tp_llama_graph *g);

/* The context's key cache of layer l (f32: [KVH, hd, slots]; tests). */
topos_tensor *tp_llama_context_k_cache(const topos_llama_context *ctx, int64_t l);

#endif
