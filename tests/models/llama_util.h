/* Tiny random-weight llama GGUF files written by our writer (in memory), and
 * a plain f32 forward over the dequantized weights, written separately from
 * the graph (llama2.c style), for the llama tests. */
#ifndef TESTS_MODELS_LLAMA_UTIL_H
#define TESTS_MODELS_LLAMA_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "topos.h"

/* Roles whose type can be chosen: 0 embd, 1 q, 2 k, 3 v, 4 o, 5 gate, 6 up,
 * 7 down, 8 output. */
enum { LT_EMBD, LT_Q, LT_K, LT_V, LT_O, LT_GATE, LT_UP, LT_DOWN, LT_OUT, LT_ROLES };

typedef struct lt_spec {
  int64_t dim, layers, heads, kv_heads, ff, vocab, ctx;
  topos_dtype types[LT_ROLES];
  int tied;                /* no output.weight */
  int no_embd;             /* no token_embd.weight (codeshell: output.weight embeds) */
  uint64_t seed;
  const char *arch;        /* general.architecture */
  const char *skip_tensor; /* leave this tensor out */
  const char *bad_tensor;  /* write this one with ne0 + 32 */
  int no_scores;           /* vocabulary without tokenizer.ggml.scores */
  int64_t heads_key;       /* if > 0, llama.attention.head_count written as this */
  int up_first;            /* ffn_up.weight written before ffn_gate.weight */
  int attn_sorted;         /* attention weights in name order, k, output, q, v (SmolLM2's file) */
  int64_t blocks_key;      /* if > 0, llama.block_count written as this (tensors for layers) */
  int64_t head_dim;        /* if > 0, attention.key_length / value_length (else dim / heads) */
  float rope_base;         /* rope.freq_base (0: 10000) */
  float rope_scale;        /* if > 0, rope.scaling.type "linear" with this factor */
  const char *rope_type;   /* if set, rope.scaling.type written as this (rope_scale's factor) */
  int rope_freqs;          /* rope_freqs.weight with Llama 3.1's smooth factors */
  int longrope;            /* rope_factors_long / _short.weight (lt_longrope_factor) */
  int64_t rope_orig_ctx;   /* if > 0, rope.scaling.original_context_length */
  int64_t swa;             /* phi3: attention.sliding_window (0 written as 0; -1: no key) */
  float rope_attn_factor;  /* if not 0, rope.scaling.attn_factor */
  const char *extra_tensor; /* an f32 vector of dim with this name */
  int biases;              /* 1: attn_q/k/v.bias (qwen2 needs them), 2: and attn_output.bias,
                            * 3: and ffn_gate/up/down.bias */
  int64_t swa_pattern;     /* gemma2 / gemma3: if > 0, attention.sliding_window_pattern */
  float rope_base_swa;     /* if > 0, rope.freq_base_swa */
  float attn_softcap, final_softcap; /* if > 0, attn_ / final_logit_softcapping (gemma2 absent: 50, 30) */
  int64_t rope_dim;        /* if > 0, rope.dimension_count (partial rotary), else the head width */
  /* granite: if > 0, residual_scale, embedding_scale, attention.scale, logit_scale
   * (logit_scale absent: not written, the file refused) */
  float residual_scale, embedding_scale, attention_scale, logit_scale;
  int nope_all;            /* granite: rope.scaling.finetuned false (no layer rotates) */
  float attn_temp_scale;   /* mistral3: if > 0, attention.temperature_scale */
  float clamp_kqv;         /* olmo: if > 0, attention.clamp_kqv (q, k, v clamped to +-it) */
  float yarn_beta_fast, yarn_beta_slow, yarn_log_mul; /* if > 0, rope.scaling.yarn_* (else 32, 1, 0) */
  const char *swa_list;    /* if set, attention.sliding_window_pattern as an array: layer l is
                            * windowed where swa_list[l % length] is 'L' (EXAONE 4's "LLLG") */
  /* a mixture of experts (llama_experts_util.h): expert_count, expert_used_count; if > 0,
   * expert_feed_forward_length, expert_shared_feed_forward_length, expert_weights_scale */
  int64_t experts, experts_used, ff_exp, ff_shexp;
  float experts_scale;
  int fused_qkv;           /* q, k, v rows in one attn_qkv.weight (and attn_qkv.bias) */
  int64_t dense_lead, moe_step; /* ernie4_5-moe: if > 0, leading_dense_block_count, interleave_moe_layer_step */
  int probs_bias;          /* the mixtures' blocks have exp_probs_b.bias */
  int plain_rms;           /* the plain forward takes RMSNorm where the file has LayerNorm
                            * (a lt_check_variant `without`) */
  const char *plain_without; /* the plain forward leaves this feature out (gpt-oss: "sinks",
                              * "expert biases", "clamp"; gpt2: "positions"; a lt_check_variant
                              * `without`) */
  int par_res;             /* gptneox: use_parallel_residual */
  int attn_norm_2;         /* falcon: attn_norm_2 (Falcon-40B: the attention's own norm) */
  /* deepseek2 (llama_mla_util.h): kv_lora_rank, q_lora_rank (0: attn_q), each head's unrotated
   * q / k width and value width; mla_legacy: no key_length_mla (files before attn_kv_b was split) */
  int64_t mla_kv_rank, mla_q_rank, mla_nope, mla_v;
  int mla_legacy;
  /* deepseek2, glm4moe (lt_ds_moe; sigmoid_router and the groups: any mixture): */
  int64_t experts_shared;  /* expert_shared_count */
  int64_t nextn;           /* if > 0, nextn_predict_layers (the last blocks: not the trunk) */
  int weights_norm;        /* expert_weights_norm */
  int sigmoid_router;      /* expert_gating_func: 1 writes 2 (sigmoid), -1 writes 1 (softmax), 0 none
                            * (the architecture's default: deepseek2 softmax, glm4moe sigmoid) */
  int64_t expert_groups, expert_groups_used; /* if > 0, expert_group_count, expert_group_used_count */
  int glm_qk_norm;         /* glm4moe: attn_q_norm / attn_k_norm (GLM-4.5's; Air has none) */
  int32_t rope_sections[4]; /* if any is set, rope.dimension_sections (GLM-4.5V's M-RoPE) */
  float rope_alpha;        /* hunyuan: if > 0, rope.scaling.alpha */
  int64_t expert_count_only; /* if > 0 (and no experts), expert_count alone (hunyuan's dense files' 1) */
  int qk_norm_heads;       /* command-r, stablelm: attn_q_norm / attn_k_norm with a weight per head
                            * ([hd, heads]), LayerNorm (Command R+, StableLM 2 12B) */
  int no_ffn_norm;         /* stablelm: no ffn_norm, the feed-forward reads the attention's norm
                            * (StableLM 2 12B) */
  const char *conv_blocks; /* lfm2: block l is a short convolution where conv_blocks[l % length] is 'C'
                            * (llama_lfm2_util.h); granitehybrid: a Mamba-2 mixer where it is 'M'
                            * (llama_ssm_util.h) */
  int mpt_form;            /* mpt: 0 ALiBi of 8 (attention.max_alibi_bias); 'p' learned positions
                            * (position_embd.weight) instead; 'n' neither (no key, no table) */
  int mpt_qk_norm;         /* mpt: attn_q_norm / attn_k_norm LayerNorms over whole rows, with biases */
  int ssm_rms;             /* mamba: ssm.dt_b_c_rms true (Falcon-Mamba: dt, B, C RMS-normed) */
  int64_t moe_latent;      /* nemotron_h_moe: if > 0, moe_latent_size (the routed experts this wide,
                            * through ffn_latent_down and ffn_latent_up) */
  int delta_array;         /* qwen3next / qwen35: attention.recurrent_layers, not full_attention_interval */
  int delta_legacy;        /* qwen3next: the mixers' q, k, v and z rows in one ssm_in (older files) */
} lt_spec;

#include "llama_archs.h"

static inline int64_t lt_head_dim(const lt_spec *s) { return s->head_dim > 0 ? s->head_dim : s->dim / s->heads; }
static inline int64_t lt_rope_dim(const lt_spec *s) { return s->rope_dim > 0 ? s->rope_dim : lt_head_dim(s); }

/* Llama 3.1's rope factors (its converter's formula, factor 8, low / high
 * frequency factors 1 / 4, original context ctx0) for pair i of d / 2. */
static inline float lt_rope_factor(int64_t i, int64_t d, double base, double ctx0) {
  const double pi = 3.14159265358979323846, wavelen = 2.0 * pi / pow(base, -2.0 * (double)i / (double)d);
  const double low = ctx0 / 1.0, high = ctx0 / 4.0;
  if (wavelen < high) return 1.0f;
  if (wavelen > low) return 8.0f;
  const double smooth = (ctx0 / wavelen - 1.0) / (4.0 - 1.0);
  return (float)(1.0 / ((1.0 - smooth) / 8.0 + smooth));
}

/* LongRoPE's tables as the tests write them: pair i's divisor, long (for
 * contexts past rope.scaling.original_context_length) or short. */
static inline float lt_longrope_factor(int64_t i, int is_long) {
  return is_long ? 1.0f + 0.75f * (float)i : 1.0f + 0.0625f * (float)i;
}

lt_spec lt_default_spec(void);

/* The default spec with every weight in f32 (logits within summation order
 * of the plain forward). */
static inline lt_spec lt_f32_spec(void) {
  lt_spec s = lt_default_spec();
  for (int i = 0; i < LT_ROLES; ++i) s.types[i] = TOPOS_F32;
  return s;
}

/* The default spec with the attention inputs' and gate / up types given. */
static inline lt_spec lt_spec_with_inputs(topos_dtype q, topos_dtype k, topos_dtype v, topos_dtype gate,
                                          topos_dtype up) {
  lt_spec s = lt_default_spec();
  s.types[LT_Q] = q, s.types[LT_K] = k, s.types[LT_V] = v;
  s.types[LT_GATE] = gate, s.types[LT_UP] = up;
  return s;
}

typedef struct lt_file {
  void *bytes;
  size_t size;
  void **keep;
  int n_keep;
} lt_file;

/* A buffer kept until lt_file_free: zeroed, or (lt_keep_raw) not, for
 * tensors written whole right away (valgrind counts every zeroed byte). */
void *lt_keep_bytes(lt_file *f, size_t bytes, int zeroed);

static inline void *lt_keep(lt_file *f, size_t bytes) { return lt_keep_bytes(f, bytes, 1); }
static inline void *lt_keep_raw(lt_file *f, size_t bytes) { return lt_keep_bytes(f, bytes, 0); }

static inline void lt_file_free(lt_file *f) {
  for (int i = 0; i < f->n_keep; ++i) free(f->keep[i]);
  free(f->keep);
  free(f->bytes);
  memset(f, 0, sizeof *f);
}

/* v[i] = offset + scale * u, u uniform of mean 0 and variance 1: the test
 * files' weights. Uniform, not normal (a normal draw's log, sqrt and cos
 * were a quarter of the model tests' time): the tests need spread, not a
 * shape. One draw of rng seeds a local splitmix64 whose every 64 bits give
 * two 32-bit uniforms (a library call per value was a fifth of a mixture
 * test's instructions under valgrind). */
void lt_fill_unit(topos_rng *rng, float *v, int64_t count, double scale, double offset);

/* v (ne0 x ne1 x ne2 values; ne2, ne1 0: fewer extents) quantized to type,
 * added to w as tensor `name` (the bytes kept in f) */
topos_status lt_add_quantized(topos_gguf_writer *w, lt_file *f, const char *name, topos_dtype type,
                              int64_t ne0, int64_t ne1, int64_t ne2, const float *v);

topos_status lt_add(topos_gguf_writer *w, lt_file *f, const lt_spec *s,
                    const char *name, topos_dtype type, int64_t ne0, int64_t ne1,
                    topos_rng *rng, int ones);

/* "ARCH.suffix" (llama.*, qwen2.*, phi3.*, gemma2.*, ...; another architecture's files are refused before their keys matter) */
static inline const char *lt_k(char *kb, const lt_spec *s, const char *suffix) {
  snprintf(kb, 96, "%s.%s", lt_own_keys(s) ? s->arch : "llama", suffix);
  return kb;
}

static inline int lt_moe(const lt_spec *s) { return s->experts > 0; }
/* block l of a mixture is one (ernie4_5-moe: past the dense leading blocks, every moe_step-th) */
static inline int lt_moe_layer(const lt_spec *s, int64_t l) {
  if (lt_one_branch(s)) return lt_moe(s) && lt_ffn_block(s, l); /* nemotron_h_moe: its feed-forward blocks */
  return lt_moe(s) && l >= s->dense_lead && (l + 1) % (s->moe_step > 0 ? s->moe_step : 1) == 0;
}
topos_status lt_write_expert_keys(topos_gguf_writer *w, const lt_spec *s);
/* latent attention (kimi-linear: its attention blocks) */
static inline int lt_mla(const lt_spec *s) { return lt_arch_is(s, "deepseek2") || lt_kimi(s); }
/* DeepSeek-style mixtures' keys (llama_experts_util.h) */
static inline int lt_ds_moe(const lt_spec *s) {
  return lt_mla(s) || lt_arch_is(s, "glm4moe") || lt_arch_is(s, "dots1") || lt_arch_is(s, "bailingmoe2") ||
         lt_arch_is(s, "nemotron_h_moe") || lt_arch_is(s, "deepseek") || lt_arch_is(s, "bailingmoe") ||
         lt_arch_is(s, "exaone-moe");
}
topos_status lt_write_ds_moe_keys(topos_gguf_writer *w, const lt_spec *s);
topos_status lt_write_mla_keys(topos_gguf_writer *w, const lt_spec *s);
topos_status lt_write_mla(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                                        topos_rng *rng);
topos_status lt_write_experts(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                                            topos_rng *rng);

topos_status lt_write_lfm2_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s);
static inline int lt_conv_block(const lt_spec *s, int64_t l);
topos_status lt_write_shortconv(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                                              topos_rng *rng);

static inline void lt_xielu_raw(int64_t l, double p[4]);

topos_status lt_write_ssm_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s);
static inline int lt_ssm_block(const lt_spec *s, int64_t l);
topos_status lt_write_mamba2(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                                           topos_rng *rng);

topos_status lt_write_delta_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s);
topos_status lt_write_kda_keys(topos_gguf_writer *w, lt_file *f, const lt_spec *s);
topos_status lt_write_kda(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                                        topos_rng *rng);
topos_status lt_write_delta(topos_gguf_writer *w, lt_file *f, const lt_spec *s, int64_t l,
                                          topos_rng *rng);

topos_status lt_write(const lt_spec *s, lt_file *f);

/* ---- the plain forward: f32 weights (dequantized), every position */
float *lt_deq(topos_gguf *g, const char *name);

/* y[n] = W[n, k] x[k] in f64: four rows side by side, each row's even and
 * odd j as the two halves of a 2-double vector (SSE2 / NEON: half the
 * instructions of scalar sums, which valgrind counts), the halves added
 * at the end; odd k's last element after them. */
typedef double lt_d2 __attribute__((vector_size(16)));
typedef float lt_f2 __attribute__((vector_size(8)));

static inline lt_d2 lt_widen2(const float *p) {
  lt_f2 v;
  memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, lt_d2);
}

static inline float lt_row_total(lt_d2 s, const float *w, const float *x, int64_t k) {
  double t = s[0] + s[1];
  if (k % 2) t += (double)w[k - 1] * x[k - 1];
  return (float)t;
}

void lt_matvec(const float *W, const float *x, float *y, int64_t n, int64_t k);

static inline void lt_rmsnorm(float *o, const float *x, const float *w, int64_t n, float eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += (double)x[i] * x[i];
  float r = (float)(1.0 / sqrt(ss / (double)n + eps));
  for (int64_t i = 0; i < n; ++i) o[i] = w ? x[i] * r * w[i] : x[i] * r;
}

#include "llama_layernorm_util.h"
#include "llama_experts_util.h"

/* YaRN (rope.scaling.type "yarn"), as its paper and llama.cpp define it:
 * pair i of a head of d is "original" (position not scaled) while its
 * wavelength 2 pi base^(2i/d) fits the original context at least 32 times,
 * interpolated (position / factor) once it fits it at most once, a linear
 * ramp over i between (the ends floored and ceiled to whole pairs); cos and
 * sin scaled by attn_factor * (1 + 0.1 ln factor). */
static inline int lt_yarn(const lt_spec *s) { return s->rope_type && strcmp(s->rope_type, "yarn") == 0; }

double lt_yarn_pair(const lt_spec *s, int64_t i, double d, double base, double ctx0);

#include "llama_mla_util.h"
#include "llama_lfm2_util.h"
#include "llama_ssm_util.h"
#include "llama_delta_util.h"

/* The relative L2 distance of got from ref over n values; *ref2 (when not
 * NULL) gets ref's squared norm. */
double lt_rel_l2(const float *got, const float *ref, int64_t n, double *ref2);

/* logits [N, vocab] for tokens[0..N) at positions 0..N-1, in a context of
 * ctx_len tokens (LongRoPE picks its table by it). */
int lt_reference_forward(topos_gguf *g, const lt_spec *s, const int32_t *tokens,
                         int64_t N, int64_t ctx_len, float *logits);

#include "models/llama_real.h"

#endif
