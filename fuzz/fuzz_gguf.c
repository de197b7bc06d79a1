/* libFuzzer target for the GGUF reader: open_memory over arbitrary bytes; for
 * inputs that open, walk every key through every getter, every array
 * element, every tensor (info, bytes, a topos tensor over the mapping and a
 * few of its bytes), then re-serialize the whole file with the writer and
 * require the result to open again (a valid file must round-trip); then the
 * llama model over it (metadata, every weight's shape, joined weights).
 *
 * Seeds (fuzz/corpus/fuzz_gguf/, .bin because *.gguf is git-ignored): files
 * from our writer: metadata.bin (every value type), tensors.bin (f32/f16/q8_0,
 * alignment 8), kquant.bin (q4_K + iq2_xxs) and tiny-llama.bin from
 * `topos gguf make-test-llama OUT --dim 8 --heads 2 --kv-heads 1 --ff 8
 * --vocab 6 --layers 1 --ctx 16`; tiny-phi3.bin is that file as a phi3 one
 * (q|k|v and gate|up fused, a sliding window of 8, YaRN keys), rewritten
 * with gguf-py; tiny-gemma3.bin that file as a gemma3 one (q and k norms,
 * post-norms, a window of 4 on a pattern of 2, a second rope base, final
 * soft-capping); tiny-olmo2.bin as an olmo2 one (no pre-norms, whole-row q
 * and k norms, a window of 4 on a pattern of 2); tiny-qwen2moe.bin as a
 * qwen2moe one (3 experts of 8, 2 per token, a shared expert and its gate,
 * q, k, v biases); tiny-phi2.bin as a phi2 one (LayerNorm biases, q, k, v in
 * one attn_qkv with its bias, no gate, no ffn_norm, a head bias);
 * tiny-gpt-oss.bin a gpt-oss file of dim 32 made with gguf-py (3 MXFP4
 * experts of 32, 2 per token, the router's and experts' biases, attention
 * sinks, q, k, v, output biases, a window of 4, YaRN keys); tiny-gpt2.bin a
 * gpt2 file of dim 8 (learned positions, fused q, k, v, biases);
 * tiny-deepseek2.bin a deepseek2 file of dim 32 made with gguf-py (latent
 * attention through the q_a / q_b pair, f16 attn_k_b, a dense first block,
 * 3 experts of 16, 2 per token, a sigmoid router with exp_probs_b, a shared
 * expert, DeepSeek's YaRN keys); tiny-glm4moe.bin a glm4moe file of dim 32
 * made with gguf-py (q, k, v biases and norms, half-rotated heads, M-RoPE
 * sections, a dense first block, 4 experts in 2 groups of which 1 is used,
 * a shared expert, a nextn block); tiny-llama4.bin a llama4 file of dim 32
 * made with gguf-py (chunks of 8, rope_freqs, mixtures of 3 experts on every
 * second block with a shared expert); tiny-bailingmoe2.bin the glm4moe seed
 * as a bailingmoe2 file (q, k, v in one f16 attn_qkv, a sigmoid router,
 * shared experts of expert_shared_feed_forward_length); four files of dim 32
 * made with gguf-py and a 40-token vocabulary: tiny-glm4.bin (q, k, v in
 * one attn_qkv with its bias, gate | up in ffn_up, post-norms, M-RoPE
 * sections, a nextn block), tiny-olmo.bin (LayerNorms without weights,
 * clamp_kqv), tiny-nemotron.bin (LayerNorms with biases, ReLU squared up
 * and down with biases, half-rotated heads), tiny-qwen.bin (Qwen 1: attn_qkv
 * with its bias, feed_forward_length twice the width); tiny-bloom.bin and
 * tiny-mpt.bin (ALiBi: the embedding's LayerNorm and biases; LayerNorms
 * without biases, max_alibi_bias, clamp_kqv); tiny-chatglm.bin the glm4
 * seed as a chatglm file (no post-norms, no nextn block, no sections);
 * tiny-stablelm12b.bin a stablelm file of dim 16 (per-head q and k
 * LayerNorms, no ffn_norm); tiny-lfm2.bin an lfm2 file of dim 16 (a
 * short-convolution block of 3 taps, then an attention one: head_count_kv
 * [0, 1], the final norm token_embd_norm); tiny-granitehybrid.bin a
 * granitehybrid file of dim 16 (a Mamba-2 block of 4 heads in 2 groups, 4
 * state entries, 4 taps, then an attention one: head_count_kv [0, 1]);
 * tiny-qwen3next.bin and tiny-qwen35.bin files of dim 16 made with gguf-py
 * (a gated-DeltaNet block of 1 key and 2 value heads of 4, then an attention
 * block whose q rows carry their gate: qwen3next's older ssm_in and ssm_ba,
 * full_attention_interval, 3 experts and a gated shared expert; qwen35's
 * attn_qkv, attn_gate, ssm_beta and ssm_alpha, recurrent_layers, M-RoPE
 * sections); tiny-kimi-linear.bin (a Kimi Delta Attention block of 2 heads
 * of 4: q, k, v with {4, 1, 8, 1} convolutions, the f and g pairs, a {1, 2,
 * 1, 1} A; then unrotated latent attention with 3 experts, exp_probs_b and
 * a shared expert); tiny-gemma4.bin a gemma4 file of dim 16 (windowed
 * blocks of 2 kv heads of 4 and full ones of 1 of 8, head_count_kv and
 * feed_forward_length per block, the last 2 blocks reading the first two's
 * caches, a block without attn_v, per-layer embeddings of 4, output scales,
 * rope_freqs, and a mixture of 3 experts with ffn_gate_up_exps and its
 * scales beside the dense feed-forward); tiny-gemma3n.bin a gemma3n file of
 * dim 16 (3 AltUp streams, the second active, Laurel of rank 2, sparse
 * gates in the first two blocks at multipliers 1.64 and 0.5, the last 2
 * blocks shared, per-layer embeddings of 4, feed_forward_length per block);
 * tiny-openelm.bin an openelm file of 3 blocks of 2, 4 and 6 heads over 1,
 * 2 and 2 kv heads, feed-forwards of 16, 24 and 32 (lists per block). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topos.h"

static volatile unsigned fz_sink;

static void fz_walk_kv(const topos_gguf *g) {
  for (int64_t i = 0; i < topos_gguf_kv_count(g); ++i) {
    topos_gguf_kv kv;
    if (topos_gguf_kv_at(g, i, &kv) != TOPOS_OK) __builtin_trap();
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
    float f;
    double d;
    int b;
    const char *s;
    size_t len;
    fz_sink += topos_gguf_get_u32(g, kv.key, &u32) + topos_gguf_get_i32(g, kv.key, &i32) +
               topos_gguf_get_u64(g, kv.key, &u64) + topos_gguf_get_i64(g, kv.key, &i64) +
               topos_gguf_get_f32(g, kv.key, &f) + topos_gguf_get_f64(g, kv.key, &d) +
               topos_gguf_get_bool(g, kv.key, &b);
    if (topos_gguf_get_string(g, kv.key, &s, &len) == TOPOS_OK && len) fz_sink += (unsigned char)s[len - 1];
    const void *raw;
    size_t n;
    if (topos_gguf_value_bytes(g, i, &raw, &n) == TOPOS_OK && n) fz_sink += ((const uint8_t *)raw)[n - 1];
    topos_gguf_array a;
    if (topos_gguf_array_at(g, i, &a) != TOPOS_OK) continue;
    uint64_t limit = a.count < 4096 ? a.count : 4096;
    for (uint64_t e = 0; e < limit; ++e) {
      if (topos_gguf_array_string(g, i, e, &s, &len) == TOPOS_OK) {
        if (len) fz_sink += (unsigned char)s[0] + (unsigned char)s[len - 1];
      } else {
        fz_sink += topos_gguf_array_int(g, i, e, &i64) + topos_gguf_array_uint(g, i, e, &u64) +
                   topos_gguf_array_float(g, i, e, &d);
      }
    }
    if (a.count && topos_gguf_array_int(g, i, a.count - 1, &i64) == TOPOS_OK) fz_sink += (unsigned)i64;
  }
}

static void fz_walk_tensors(topos_gguf *g) {
  for (int64_t i = 0; i < topos_gguf_tensor_count(g); ++i) {
    topos_gguf_tensor_info info;
    const void *data;
    size_t bytes;
    if (topos_gguf_tensor_at(g, i, &info) != TOPOS_OK) __builtin_trap();
    if (topos_gguf_tensor_bytes(g, i, &data, &bytes) != TOPOS_OK) __builtin_trap();
    if (bytes != info.bytes) __builtin_trap();
    const uint8_t *p = data;
    fz_sink += p[0] + p[bytes - 1] + p[bytes / 2];
    int64_t found;
    if (topos_gguf_find_tensor(g, info.name, &found) != TOPOS_OK || found != i) __builtin_trap();
    topos_tensor *t;
    if (topos_gguf_tensor_by_index(g, i, &t) == TOPOS_OK) {
      const uint8_t *tp = topos_tensor_data(t);
      if (tp != p) __builtin_trap(); /* zero copies */
      fz_sink += tp[0] + (unsigned)topos_tensor_volume(t);
      topos_tensor_release(t);
    }
  }
}

/* Copies every key and tensor into a writer; the output must open. */
static void fz_roundtrip(const topos_gguf *g) {
  topos_gguf_writer *w;
  if (topos_gguf_writer_create(&w) != TOPOS_OK) return;
  topos_status st = TOPOS_OK;
  for (int64_t i = 0; i < topos_gguf_kv_count(g) && st == TOPOS_OK; ++i)
    st = topos_gguf_writer_copy_kv(w, g, i);
  for (int64_t i = 0; i < topos_gguf_tensor_count(g) && st == TOPOS_OK; ++i) {
    topos_gguf_tensor_info info;
    const void *data;
    size_t bytes;
    st = topos_gguf_tensor_at(g, i, &info);
    if (st == TOPOS_OK) st = topos_gguf_tensor_bytes(g, i, &data, &bytes);
    if (st == TOPOS_OK)
      st = topos_gguf_writer_add_tensor_raw(w, info.name, info.ggml_type, info.n_dims, info.ne,
                                            data, bytes);
  }
  void *out = NULL;
  size_t size = 0;
  if (st == TOPOS_OK) st = topos_gguf_writer_write_memory(w, &out, &size);
  topos_gguf_writer_destroy(w);
  if (st == TOPOS_ERR_OUT_OF_MEMORY) return;
  if (st != TOPOS_OK) __builtin_trap(); /* a file we accepted must be writable */
  topos_gguf *again;
  if (topos_gguf_open_memory(out, size, &again) != TOPOS_OK) __builtin_trap();
  if (topos_gguf_kv_count(again) != topos_gguf_kv_count(g) ||
      topos_gguf_tensor_count(again) != topos_gguf_tensor_count(g))
    __builtin_trap();
  topos_gguf_close(again);
  free(out);
}

/* The llama model over the file: refused with a message, or a model whose
 * weights (joined ones too) lie inside the mapping. */
static void fz_llama(topos_gguf *g) {
  topos_llama *m = NULL;
  if (topos_llama_from_gguf(g, &m) != TOPOS_OK) {
    if (topos_last_error()[0] == '\0') __builtin_trap();
    return;
  }
  const topos_llama_config *c = topos_llama_config_of(m);
  if (c->n_layers < 1 || c->dim < 1 || c->n_heads < 1 || c->n_kv_heads < 1) __builtin_trap();
  if (c->n_conv_layers < 0 || c->n_conv_layers > c->n_layers || (c->n_conv_layers && c->conv_len < 2)) __builtin_trap();
  if (c->n_ssm_layers < 0 || c->n_ffn_layers < 0 || c->n_conv_layers + c->n_ssm_layers + c->n_ffn_layers > c->n_layers)
    __builtin_trap();
  if (c->ssm_dt_rank && (c->ssm_heads != c->ssm_inner || c->ssm_groups != 1)) __builtin_trap(); /* Mamba-1 */
  if (c->n_ssm_layers && (c->ssm_conv < 2 || c->ssm_heads < 1 || c->ssm_groups < 1 || c->ssm_state < 1 ||
                          c->ssm_inner % c->ssm_heads || c->ssm_heads % c->ssm_groups))
    __builtin_trap();
  /* gated DeltaNet: value heads as wide as the key heads; gated q rows only beside those mixers */
  if (c->ssm_delta && c->n_ssm_layers && c->ssm_inner != c->ssm_heads * c->ssm_state) __builtin_trap();
  if (c->attn_gate && !c->ssm_delta) __builtin_trap();
  if (c->ssm_kda && (c->ssm_heads != c->n_heads || c->ssm_groups != c->ssm_heads)) __builtin_trap();
  /* Gemma 4: the windowed heads' widths hold their rotation; shared blocks leave two with caches of their own */
  if (c->rope_dim_swa > c->head_dim_swa || c->rope_dim_swa % 2 || c->head_dim_swa < 1) __builtin_trap();
  if (c->n_kv_shared_layers < 0 || (c->n_kv_shared_layers && c->n_kv_shared_layers > c->n_layers - 2)) __builtin_trap();
  if (c->ple_dim < 0 || c->n_heads % c->n_kv_heads) __builtin_trap();
  /* Gemma 3n: at least two streams, the active one among them, a Laurel rank within the width */
  if (c->altup_streams && (c->altup_streams < 2 || c->altup_active < 0 || c->altup_active >= c->altup_streams ||
                           c->laurel_rank < 1 || c->laurel_rank > c->dim))
    __builtin_trap();
  topos_llama_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  topos_gguf *g;
  if (topos_gguf_open_memory(data, size, &g) != TOPOS_OK) {
    if (topos_last_error()[0] == '\0') __builtin_trap(); /* failures carry a message */
    return 0;
  }
  fz_walk_kv(g);
  fz_walk_tensors(g);
  fz_roundtrip(g);
  fz_llama(g);
  topos_gguf_close(g);
  return 0;
}
