/* topos — models tier: llama-family language models from GGUF files, run
 * through topos's own graph and plans on the quantized products.
 *
 * Model. topos_llama_open() reads general.architecture ("llama", or
 * "qwen2": the same graph with q, k, v biases and rotated half-dimension
 * pairs) and its ARCH.* hyper-parameters, then checks that every tensor
 * the graph needs is present with the shape the metadata implies. Weights are
 * zero-copy views of the mapped file in their stored types (F32, F16, BF16,
 * Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K) and feed the `qlinear` op
 * directly. output.weight is optional (absent: the head is tied to
 * token_embd.weight). A file holding a tensor the graph would not read
 * (feed-forward biases, experts, ...) is refused rather than run
 * without it. A refused file gets a status and a message naming the key or
 * tensor and the values involved.
 *
 * Graph (one network per chunk length T, recorded by the context):
 *   x = embedding rows of the tokens (dequantized by the context: the graph
 *       has no dtype conversion and the table is usually block-quantized)
 *   per block: h = rmsnorm(x) * attn_norm; q, k, v = qlinear(h, Wq|Wk|Wv)
 *       (phi3: row ranges of one attn_qkv weight) (+ bq, bk, bv where the
 *       file has them: qwen2 always);
 *       rope on q and k (adjacent pairs (x[2i], x[2i+1]); qwen2's and phi3's
 *       pairs (x[i], x[i + rot_dim/2])), rotated by
 *       pos * scale * base^(-2i/rot_dim) / factor[i], the "NORM" rope of
 *       llama files: scale 1 / rope.scaling.factor for linear scaling,
 *       factor[i] from rope_freqs.weight where the file has it (Llama 3.1+),
 *       or LongRoPE's long or short table, else 1; YaRN: that angle and the
 *       one at scale 1 blended by a ramp over i; cos and sin times
 *       rope_mscale);
 *       grouped-query attention over [cache | chunk] keys with a causal mask
 *       (phi3: cached keys behind the sliding window masked too),
 *       softmax = exp(log_softmax); x += qlinear(attn, Wo) (+ bo where given);
 *       h = rmsnorm(x) * ffn_norm; x += qlinear(silu(qlinear(h, Wg) + bg) *
 *       (qlinear(h, Wu) + bu), Wd) + bd (the feed-forward biases where
 *       given; phi3: Wg, Wu row ranges of one ffn_up weight)
 *   logits = qlinear(rmsnorm(x) * output_norm, Wout)
 * The chunk's new keys and values are roots of the plan; the context copies
 * them into its preallocated cache at their positions after each run.
 *
 * Exactness. Under TOPOS_NUMERICS_EXACT with an f32 cache, evaluating tokens
 * one at a time gives the same bits as one evaluation of the whole sequence,
 * at every thread count: every product row is independent of the other rows
 * (qlinear's reference path), the softmax walks the keys in position order
 * (masked keys add exact zeros) and the value sum of the cache segment plus
 * the single new key is the reference matmul's ascending f32 sum.
 *
 * Threads: topos_threads() (topos_set_threads). A model is immutable and may
 * be shared; a context is used by one thread at a time. */
#ifndef TOPOS_LLAMA_H
#define TOPOS_LLAMA_H

#include "engine.h"
#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct topos_llama_config {
  const char *arch;      /* general.architecture: "llama", "qwen2", "qwen3", "phi3", "gemma",
                          * "gemma2", "gemma3", "granite", "smollm3", "olmo2", "mistral3",
                          * "exaone4", "exaone", "seed_oss", "ernie4_5", or a mixture of
                          * experts: "qwen2moe", "qwen3moe", "olmoe", "granitemoe",
                          * "ernie4_5-moe", "gpt-oss" (and "llama" files with experts: Mixtral);
                          * LayerNorm files: "starcoder2", "stablelm", "phi2", "gpt2",
                          * "starcoder", "gptneox", "falcon", "command-r", "cohere2"; latent
                          * attention: "deepseek2"; "glm4moe" (GLM-4.5 / 4.6 / 4.7); "llama4"
                          * (Llama 4 Scout / Maverick); "minimax-m2", "dots1", "bailingmoe2",
                          * "hunyuan-dense", "hunyuan-moe"; LFM2's short convolutions
                          * and attention: "lfm2", "lfm2moe" */
  int rope_neox;         /* 1: pairs (x[i], x[i + rot_dim/2]) rotate (all but llama), else adjacent ones */
  int64_t n_swa;         /* attention.sliding_window: a query at p sees keys from p - n_swa + 1
                          * in the windowed layers (phi3: all; gemma2: even ones; gemma3: five
                          * of six); 0 none */
  int64_t n_swa_layers;  /* how many layers the window applies to */
  int swa_chunked;       /* 1: the windowed layers attend within chunks of n_swa instead (Llama 4's
                          * chunked attention): a query at p sees keys from floor(p / n_swa) n_swa */
  float rope_base_swa;   /* the windowed layers' rope base, their positions unscaled (gemma3:
                          * rope.freq_base_swa, absent 10000; olmo2: absent the base); 0: as
                          * every other layer */
  float rope_mscale_swa; /* their cos and sin multiplier (gemma3: attn_factor; olmo2: 1) */
  int qk_norm;           /* 1: q and k RMS-normalised per head before the rotation
                          * (attn_q_norm / attn_k_norm: qwen3, gemma3); 2: over the whole q
                          * and k rows (olmo2); 3: per head with a weight per head, by the
                          * block norms' kind, where the file has them (Command R+ and
                          * StableLM 2 12B: LayerNorm) */
  int qk_norm_after_rope; /* 1: those norms follow the rotation instead (hunyuan) */
  int pre_norms;         /* 1: each branch reads its input through attn_norm / ffn_norm; 0 (olmo2):
                          * the residual itself */
  int post_norms;        /* 1: the attention and feed-forward outputs RMS-normalised before
                          * their residuals (post_attention_norm / post_ffw_norm: gemma2, gemma3) */
  int ffn_gelu;          /* 1: GELU (tanh form) of the gate times up (gemma), else SiLU */
  int layer_norm;        /* 1: LayerNorm (attention.layer_norm_epsilon in rms_eps) instead of
                          * RMSNorm for the block and output norms (starcoder2, stablelm, phi2,
                          * gpt2, starcoder, gptneox, falcon, command-r) */
  int norm_bias;         /* 1: those LayerNorms have biases (all but command-r's) */
  int ffn_plain;         /* 1: no gate: down(GELU(up h + b)) + b (starcoder2, phi2) */
  int ffn_relu2;         /* 1: that activation is ReLU squared instead of GELU (arcee, nemotron) */
  int ffn_xielu;         /* 1: that activation is xIELU with each block's parameters (apertus) */
  int norm_weightless;   /* 1: the LayerNorms have no weights or biases (OLMo 1) */
  float alibi_max_bias;  /* > 0: ALiBi, head h's scores plus slope_h * (key position - query position),
                          * slopes from this maximum bias as ggml's (bloom: 8); no rotation */
  int embd_norm;         /* 1: the embedding rows pass a LayerNorm first (token_embd_norm: bloom) */
  float clamp_kqv;       /* > 0: q, k and v clamped to [-clamp_kqv, clamp_kqv] after their products
                          * and biases (attention.clamp_kqv: OLMo 1.7) */
  int parallel_residual; /* 1: the attention and the feed-forward read the block's input and both
                          * add to the residual at once, x + (attn + ffn): through the one norm
                          * (phi2, Falcon-7B), or each through its own (gptneox's
                          * use_parallel_residual; Falcon-40B's attn_norm_2 for the attention) */
  int learned_positions; /* 1: row p of position_embd.weight is added to the embedding at position
                          * p and no layer rotates q and k (gpt2); the context is at most
                          * n_ctx_train tokens */
  float embd_scale;      /* embedding rows are multiplied by this: sqrt(dim) for gemma, granite's
                          * embedding_scale, else 1 */
  float attn_scale;      /* q is multiplied by this before the scores: 1 / sqrt(head_dim)
                          * (gemma 27B files: 1 / sqrt(dim / heads), as llama.cpp; granite:
                          * attention.scale) */
  float attn_softcap;    /* scores s become c tanh(s / c) (gemma2's attn_logit_softcapping); 0 none */
  float final_softcap;   /* logits likewise (final_logit_softcapping); 0 none */
  float residual_scale;  /* each block's attention and feed-forward outputs are multiplied by
                          * this before their residuals (granite's residual_scale); 1 none */
  float logit_scale;     /* logits are multiplied by 1 / this (granite's logit_scale; command-r's
                          * logit_scale is the reciprocal); 1 none */
  float attn_temp_scale; /* mistral3's attention.temperature_scale: q at position p times
                          * 1 + this ln(floor((p + attn_temp_offset) / attn_temp_floor) + 1);
                          * 0 none (Llama 4: 0.1, on its unrotated layers only) */
  int64_t attn_temp_floor; /* mistral3: rope_ctx_orig; Llama 4: 8192 */
  int attn_temp_offset;  /* mistral3: 0; Llama 4: 1 */
  int attn_temp_nope_only; /* 1: only the layers that do not rotate q and k (Llama 4) */
  int qk_l2_norm;        /* 1: the rotated layers' q and k RMS-normalised per head, without
                          * weights, after the rotation (Llama 4 Scout's L2 norm) */
  int experts_relu;      /* the experts' activation is relu(gate) * up, not SiLU's (smallthinker) */
  int router_input;      /* the router reads the block's input, not the feed-forward's norm of it
                          * after attention (smallthinker) */
  int experts_residual;  /* the mixture (router and experts) reads ffn_norm_exps of the block's input,
                          * beside a dense feed-forward dim wide of the usual norm (arctic) */
  int experts_llama4;    /* Llama 4's experts: the router's logits rank the experts, the chosen
                          * one's sigmoid scales its input (not its output) */
  int64_t n_nope_layers; /* layers whose q and k are not rotated (smollm3: every fourth;
                          * granite files with rope.scaling.finetuned false: all; exaone4 with
                          * a window: the full ones) */
  int64_t n_vocab;       /* rows of token_embd.weight */
  int64_t n_ctx_train;   /* llama.context_length */
  int64_t dim;           /* llama.embedding_length */
  int64_t n_layers;      /* llama.block_count */
  int64_t ff;            /* llama.feed_forward_length (mixtures: the experts', or 0) */
  /* Mixtures of experts: each token's feed-forward is the weighted sum of
   * the n_experts_used experts its router (ffn_gate_inp, softmax) ranks
   * highest, plus a shared expert where the file has one. */
  int64_t n_experts;      /* expert_count; 0: a dense model */
  int64_t n_experts_used; /* expert_used_count */
  int64_t ff_expert;      /* an expert's width (expert_feed_forward_length, else ff) */
  int64_t ff_shared;      /* the shared expert's width (expert_shared_feed_forward_length), 0 none */
  int64_t moe_latent;     /* moe_latent_size: the routed experts work in a latent this wide, entered
                           * through ffn_latent_down and left through ffn_latent_up (the router and
                           * the shared expert read the full row; Nemotron 3 Super); 0 none */
  int experts_norm;       /* 1: the chosen experts' weights divided by their sum (qwen3moe,
                           * granitemoe, Mixtral), else the softmax's own (qwen2moe, olmoe) */
  float experts_scale;    /* the weights times expert_weights_scale; 1 none */
  int shared_gate;        /* 1: the shared expert's output times sigmoid(h . ffn_gate_inp_shexp)
                           * (qwen2moe) */
  int64_t n_dense_lead;   /* leading_dense_block_count: the first blocks keep a dense feed-forward */
  int64_t moe_step;       /* interleave_moe_layer_step: past those, block l is a mixture where
                           * (l + 1) % moe_step == 0 (absent: 1, every block) */
  int experts_oai;        /* gpt-oss's experts: the router's logits (plus its bias) rank the
                           * experts and a softmax over the chosen ones weighs them; each expert
                           * has gate, up and down biases, and its activation is
                           * min(g, 7) sigmoid(1.702 min(g, 7)) (clamp(u, -7, 7) + 1) */
  int attn_sinks;         /* 1: each head's softmax has one more logit, attn_sinks[head], that
                           * takes a share of the probability but adds no value (gpt-oss) */
  int experts_sigmoid;    /* 1: the router's probabilities are sigmoids of its logits, not a
                           * softmax (expert_gating_func 2: DeepSeek-V3, GLM-4.5, GLM-4.7-Flash) */
  int64_t expert_groups;  /* expert_group_count: DeepSeek-V3's group-limited routing ranks each
                           * of these groups of n_experts / expert_groups by the sum of its two
                           * best scores and chooses experts only from the expert_groups_used
                           * best groups; 0 or 1: no groups */
  int64_t expert_groups_used; /* expert_group_used_count */
  /* DeepSeek-V2's multi-head latent attention (deepseek2): each token's keys
   * and values are one latent row of mla_kv_rank (attn_kv_a_mqa, RMS-normed)
   * plus rope_dim rotated dimensions shared by every head; the heads read the
   * latent through their own attn_k_b / attn_v_b. The cache holds the latent
   * (n_kv_heads 1, head_dim mla_kv_rank + rope_dim), as llama.cpp's MLA path. */
  int64_t mla_kv_rank;    /* attention.kv_lora_rank; 0: not a latent-attention model */
  int64_t mla_q_rank;     /* attention.q_lora_rank: q through attn_q_a, a norm and attn_q_b; 0: attn_q */
  int64_t mla_nope;       /* each head's unrotated q / k width (attention.key_length_mla - rope_dim) */
  int64_t mla_v_dim;      /* each head's value width (attention.value_length_mla) */
  int64_t n_nextn_layers; /* nextn_predict_layers: multi-token-prediction blocks after the n_layers
                           * of the trunk (GLM-4.5, GLM-4.7-Flash), mapped but read by no graph */
  /* LFM2's short convolutions (lfm2, lfm2moe): the blocks whose
   * attention.head_count_kv entry is 0 mix tokens by a causal depthwise
   * convolution instead of attention: b, c, x = thirds of
   * qlinear(h, shortconv.in_proj); y[t] = sum_j w[j] * (b x)[t - conv_len + 1 + j]
   * per channel (shortconv.conv; earlier positions' (b x) rows kept by the
   * context, zeros before the first); out = qlinear(c * y, shortconv.out_proj). */
  int64_t conv_len;      /* shortconv.l_cache: the convolution's taps; 0 none */
  int64_t n_conv_layers; /* blocks that are short convolutions */
  /* Mamba-2 blocks (granitehybrid: the blocks whose attention.head_count_kv
   * entry is 0): z, xBC, dt = parts of qlinear(h, ssm_in); xBC through a
   * causal depthwise convolution of ssm_conv taps (ssm_conv1d, plus its bias
   * where the file has one) and SiLU, split into x [ssm_heads, head width],
   * B and C [ssm_groups, ssm_state]; dt = softplus(dt + ssm_dt.bias); the
   * selective scan (ops.h: ssm_scan) with decays exp(dt ssm_a) and inputs x
   * dt; y + x ssm_d, times SiLU(z), RMS-normed per group (ssm_norm), through
   * ssm_out. The context keeps each block's last ssm_conv - 1 xBC rows and
   * its [ssm_state, ssm_heads, head width] state, zeros before position 0. */
  int64_t ssm_conv;      /* ssm.conv_kernel; 0: no Mamba blocks */
  int64_t ssm_inner;     /* ssm.inner_size: the scan's channels, ssm_heads x head width */
  int64_t ssm_state;     /* ssm.state_size: state entries per channel */
  int64_t ssm_heads;     /* ssm.time_step_rank: heads, each with one time step and decay */
  int64_t ssm_groups;    /* ssm.group_count: groups of heads sharing B and C */
  int64_t n_ssm_layers;  /* blocks that are Mamba-2 mixers (or Mamba-1: ssm_dt_rank) */
  /* Mamba-1 mixers (mamba: Mamba, Falcon-Mamba): x, z = halves of qlinear(h,
   * ssm_in); x through the causal convolution (ssm_conv taps, bias) and
   * SiLU; dt, B, C = parts of qlinear(x, ssm_x) (RMS-normed where
   * ssm_dt_b_c_rms, or by the file's ssm_dt_norm / ssm_b_norm / ssm_c_norm);
   * dt = softplus(qlinear(dt, ssm_dt) + bias); the scan with every channel
   * its own head (ssm_heads = ssm_inner, one group) and a decay per state
   * entry, exp(dt A[channel, n]); y + x D, times SiLU(z), through ssm_out. */
  int64_t ssm_dt_rank;   /* Mamba-1: ssm.time_step_rank, dt's low rank; 0: Mamba-2 mixers */
  int ssm_dt_b_c_rms;    /* Mamba-1: ssm.dt_b_c_rms, dt, B and C RMS-normed without weights */
  /* Gated-DeltaNet mixers (qwen3next, qwen35, qwen35moe: the blocks that
   * are not every full_attention_interval-th, or attention.recurrent_layers'):
   * q, k, v = parts of qlinear(h, attn_qkv) (ssm_groups key heads of
   * ssm_state, ssm_heads value heads of ssm_state: ssm_inner = ssm_heads x
   * ssm_state), z = qlinear(h, attn_gate); q, k, v through the causal
   * convolution (ssm_conv taps) and SiLU; q and k L2-normed per head, q
   * times 1 / sqrt(ssm_state); beta = sigmoid(h . ssm_beta), decay =
   * exp(softplus(h . ssm_alpha + ssm_dt.bias) ssm_a) per value head; the
   * delta rule (ops.h: delta_scan); each head's output RMS-normed (ssm_norm)
   * times SiLU(z), through ssm_out. The context keeps the convolution's last
   * rows and the [ssm_state, ssm_heads, ssm_state] state. */
  int ssm_delta;         /* 1: the ssm_* blocks are gated-DeltaNet mixers */
  int ssm_delta_tiled;   /* value head h reads key head h % ssm_groups (qwen35), else
                          * h / (ssm_heads / ssm_groups) (qwen3next) */
  /* Kimi Delta Attention (kimi-linear: the blocks whose head_count_kv
   * entry is 0): q, k, v = qlinear(h, attn_q / attn_k / attn_v), each
   * through its causal convolution (ssm_conv1d_q / _k / _v) and SiLU; q and
   * k L2-normed per head, q times 1 / sqrt(ssm_state); the decay of each key
   * entry exp(ssm_a softplus(qlinear(qlinear(h, ssm_f_a), ssm_f_b) +
   * ssm_dt.bias)); beta = sigmoid(h . ssm_beta); the delta rule with a decay
   * per key entry; each head's output RMS-normed (ssm_norm) times
   * sigmoid(qlinear(qlinear(h, ssm_g_a), ssm_g_b)), through attn_output.
   * ssm_heads = ssm_groups = head_count, ssm_state = kda.head_dim. */
  int ssm_kda;
  int attn_gate;         /* attn_q holds each head's q then as many gate rows: the heads' outputs
                          * times sigmoid(gate) before attn_output (qwen3next, qwen35) */
  int64_t n_ffn_layers;  /* blocks that are a feed-forward alone, x + ffn(norm(x)) (nemotron_h: its
                          * Mamba-2 and attention blocks have no feed-forward) */
  int64_t n_heads;       /* llama.attention.head_count */
  int64_t n_kv_heads;    /* llama.attention.head_count_kv (absent: n_heads; LFM2: the attention
                          * blocks' entry of the per-block array) */
  int64_t head_dim;      /* llama.attention.key_length (absent: dim / n_heads) */
  int64_t rope_dim;      /* llama.rope.dimension_count (absent: head_dim) */
  float rope_base;       /* llama.rope.freq_base (absent: 10000) */
  float rope_freq_scale; /* positions are multiplied by this: 1 / llama.rope.scaling.factor
                          * (linear scaling), 1 without */
  int rope_freqs;        /* 1 when the file has rope_freqs.weight: pair i's frequency is
                          * divided by its factor (Llama 3.1 and later) */
  int rope_longrope;     /* 1: rope_factors_long / _short.weight (LongRoPE: Phi-3.5, 128k Phi-3):
                          * a context of more than rope_ctx_orig tokens divides by the long
                          * table, a shorter one by the short table */
  int64_t rope_ctx_orig; /* rope.scaling.original_context_length (absent: n_ctx_train) */
  float rope_ext_factor; /* YaRN (rope.scaling.type "yarn"): 1, else 0 */
  float rope_yarn_low;   /* YaRN's ramp: pairs up to this index keep the original angle, */
  float rope_yarn_high;  /* pairs from this one take the interpolated one, linear between */
  float rope_mscale;     /* cos and sin are multiplied by this: rope.scaling.attn_factor (absent:
                          * 1), for YaRN times (1 + 0.1 ln factor) */
  float rms_eps;         /* llama.attention.layer_norm_rms_epsilon (layer_norm: layer_norm_epsilon) */
  int tied_output;       /* 1 when the file has no output.weight */
  uint64_t weight_bytes; /* bytes of every weight the graph reads per token */
  /* Gemma 4: attention shapes per block and blocks without caches of their own.
   * The windowed blocks' heads are head_dim_swa wide (attention.key_length_swa;
   * other files: head_dim) with rope_dim_swa of them rotated; head_count_kv may
   * be an array (n_kv_heads is then its largest entry); the last
   * n_kv_shared_layers blocks compute no keys or values but attend to those of
   * the last earlier block of their kind (attention.shared_kv_layers). */
  int64_t head_dim_swa, rope_dim_swa, n_kv_shared_layers;
  int v_norm;            /* 1: values RMS-normalised per head without a weight (Gemma 4) */
  /* Gemma 4's per-layer embeddings (embedding_length_per_layer_input; 0 none):
   * each block adds proj(GELU(inp_gate x) * e_l) after its feed-forward, e_l
   * the token's row of per_layer_token_embd mixed with a projection of its
   * embedding */
  int64_t ple_dim;
  /* Gemma 4's mixtures (26B-A4B): where a block has ffn_gate_inp, its dense
   * feed-forward and its experts (GELU of the gate times up; each expert's
   * output times ffn_down_exps.scale) each read and write through norms of
   * their own, the router reading the block's residual RMS-normed, times
   * 1 / sqrt(dim) and ffn_gate_inp.scale */
  int experts_gelu;
  /* Gemma 3n's alternating updates (altup.num_inputs; 0 none): the residual
   * is altup_streams streams of dim per token; each block runs on a
   * prediction of stream altup_active mixed from all of them and corrects
   * every stream by its output (per-layer embeddings then go to the streams
   * past the first); each block's Laurel branch, a product of rank
   * laurel_rank beside the attention; the first blocks' feed-forward gates
   * sparsified (activation_sparsity_scale) */
  int64_t altup_streams, altup_active, laurel_rank;
} topos_llama_config;

typedef struct topos_llama topos_llama;

/* Opens and validates a model file. *out is owned by the caller
 * (topos_llama_free). The model keeps the mapping alive. */
TOPOS_API topos_status topos_llama_open(const char *path, topos_llama **out);
/* Same over an open reader (the model takes its own reference on the
 * mapping; the reader must outlive the model only for topos_llama_gguf). */
TOPOS_API topos_status topos_llama_from_gguf(topos_gguf *gguf, topos_llama **out);
TOPOS_API void topos_llama_free(topos_llama *model); /* NULL is fine */
TOPOS_API const topos_llama_config *topos_llama_config_of(const topos_llama *model);
/* The reader the model was opened with (owned by the model when it came
 * from topos_llama_open; for the tokenizer). */
TOPOS_API topos_gguf *topos_llama_gguf(const topos_llama *model);

typedef struct topos_llama_context_options {
  int64_t n_ctx;           /* cache capacity in tokens; 0: min(n_ctx_train, 2048) */
  topos_dtype kv_dtype;    /* TOPOS_F32, TOPOS_F16 or TOPOS_BF16 (16-bit: half the memory;
                            * keys and values are rounded when cached, so decoding no
                            * longer equals the full-context bits) */
  topos_numerics numerics; /* posture of every plan the context compiles */
  int64_t n_batch;         /* longest chunk one plan runs (bounds activation memory);
                            * 0: whole evals. A prompt split in chunks of more than one
                            * token is not bitwise the one-chunk forward (the value sums
                            * of cache and chunk are added, not one ascending sum) */
} topos_llama_context_options;

/* Defaults: n_ctx 0, f32 cache, Fast, n_batch 128. */
TOPOS_API topos_llama_context_options topos_llama_context_options_default(void);

typedef struct topos_llama_context topos_llama_context;

/* Allocates the cache (2 x layers x capacity x kv_heads x head_dim
 * elements of kv_dtype, zeroed). *out is owned by the caller; the model must outlive it. */
TOPOS_API topos_status topos_llama_context_new(const topos_llama *model,
                                               const topos_llama_context_options *options,
                                               topos_llama_context **out);
TOPOS_API void topos_llama_context_free(topos_llama_context *ctx); /* NULL is fine */

/* Runs n tokens (in chunks of n_batch) at the next positions and appends their keys and values to
 * the cache. logits receives n_vocab floats for the last token, or, with
 * all_logits, n x n_vocab (row t = token t); may be NULL (then, as for the
 * chunks before the last when only the last row is asked, the plan has no
 * output head: a prompt costs its blocks alone). Plans are compiled
 * on first use per chunk shape (length, logits rows, cache span: a power of
 * two >= the position) and kept (least recently used evicted).
 * TOPOS_ERR_RANGE when the tokens do not fit the remaining capacity or an id
 * is outside the vocabulary. */
TOPOS_API topos_status topos_llama_eval(topos_llama_context *ctx, const int32_t *tokens,
                                        int64_t n, int all_logits, float *logits);
/* Tokens in the cache. */
TOPOS_API int64_t topos_llama_position(const topos_llama_context *ctx);
TOPOS_API int64_t topos_llama_capacity(const topos_llama_context *ctx);
/* Forgets the cache (position 0); compiled plans are kept. */
TOPOS_API void topos_llama_reset(topos_llama_context *ctx);
/* Bytes of the cache. */
TOPOS_API uint64_t topos_llama_cache_bytes(const topos_llama_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
