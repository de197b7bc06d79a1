#!/usr/bin/env python3
"""Random-weight gemma4 GGUF files (f32, SmolLM2's vocabulary) for comparing topos's
perplexity with llama.cpp's (docs/LLM.md, "Gemma 4").

usage: random_gemma4_gguf.py OUT VARIANT
  base:   6 blocks, sliding-window pattern [T,F,T,F,T,F]; SWA blocks 4 heads of 64 with
          2 KV heads, full blocks 4 heads of 128 with 1 KV head (head_count_kv an array);
          per-layer embeddings of 32; the last 2 blocks share the KV of blocks 2 (SWA) and
          3 (full) and have no attn_k / attn_v / attn_k_norm; proportional rope on the
          full blocks (rope_freqs.weight); layer_output_scale per block; soft cap 30
  kv-eq:  base (the same weights), but block 3 (full, not shared; its cache is read by
          block 5) has no attn_v: V = K before k-norm ("use_alternative_attention")
  no-ple: no per-layer embeddings (embedding_length_per_layer_input 0), no shared
          blocks, pattern [T,T,F,T,T,F]
  wide:   base with feed_forward_length an array, the 2 shared blocks twice as wide
          (use_double_wide_mlp)
  moe:    no-ple's blocks, each a mixture (the 26B-A4B's form): its dense feed-forward
          beside 8 GELU experts of 128 (2 used), gate and up in one ffn_gate_up_exps,
          the router's scale, each expert's output scale, the three norms of their own
  moe-split: moe with ffn_gate_exps and ffn_up_exps apart
The vocabulary (and tokenizer) stays SmolLM2's gpt2 one: the tokenizer is not under test.
Norm weights are stored as used (Gemma 4's converter adds no 1); q/k norms are kept
near 0.6 so that the attention, whose scale is 1, is not one-hot.
Needs gguf-py (scripts/setup-gguf-py.sh) and SmolLM2's file (scripts/setup-smollm2.sh)."""
import sys
import numpy as np
from gguf import GGUFWriter
from smollm2_vocab import copy_vocab
out, variant = sys.argv[1], sys.argv[2]
if variant not in ('base', 'kv-eq', 'no-ple', 'wide', 'moe', 'moe-split'):
    sys.exit('variant: base, kv-eq, no-ple, wide, moe or moe-split')
arch = 'gemma4'
moe = variant.startswith('moe')
ple = variant != 'no-ple' and not moe
E, EU, FE = 8, 2, 128
w = GGUFWriter(out, arch)
dim, H, ff = 256, 4, 512
HD_SWA, HD_FULL = 64, 128
KVH_SWA, KVH_FULL = 2, 1
PL = 32 if ple else 0
SHARED = 2 if ple else 0
swa = [True, False, True, False, True, False] if ple else [True, True, False, True, True, False]
L = len(swa)
first_shared = L - SHARED
if SHARED:
    # llama.cpp: block il >= first_shared reads block first_shared - 2 (SWA) or - 1 (full)
    assert swa[first_shared - 2] and not swa[first_shared - 1]
no_v = {3} if variant == 'kv-eq' else set()
ffs = [ff if i < first_shared else 2 * ff for i in range(L)] if variant == 'wide' else [ff] * L
kvh = [KVH_SWA if s else KVH_FULL for s in swa]
w.add_context_length(2048); w.add_embedding_length(dim); w.add_block_count(L)
if variant == 'wide':
    w.add_feed_forward_length(ffs)
else:
    w.add_feed_forward_length(ff)
w.add_head_count(H); w.add_head_count_kv(kvh)
w.add_key_length(HD_FULL); w.add_value_length(HD_FULL)
w.add_key_length_swa(HD_SWA); w.add_value_length_swa(HD_SWA)
w.add_rope_dimension_count(HD_FULL); w.add_rope_dimension_count_swa(HD_SWA)
w.add_rope_freq_base(1000000.0); w.add_rope_freq_base_swa(10000.0)
w.add_layer_norm_rms_eps(1e-6)
w.add_final_logit_softcapping(30.0)
w.add_sliding_window(32)
w.add_sliding_window_pattern(swa)
w.add_shared_kv_layers(SHARED)
w.add_embedding_length_per_layer_input(PL)
if moe:
    w.add_expert_count(E); w.add_expert_used_count(EU); w.add_expert_feed_forward_length(FE)
V = copy_vocab(w)
rng = np.random.default_rng(4)
def r(*shape, s=0.08): return (rng.standard_normal(shape) * s).astype(np.float32)
def norm(n, c=1.0): return (c + r(n, s=0.1)).astype(np.float32)
w.add_tensor('token_embd.weight', r(V, dim, s=0.1))
w.add_tensor('output_norm.weight', norm(dim))
w.add_tensor('rope_freqs.weight', np.array([1.0] * 16 + [1e30] * (HD_FULL // 2 - 16), dtype=np.float32))
if ple:
    w.add_tensor('per_layer_token_embd.weight', r(V, PL * L, s=0.1))
    w.add_tensor('per_layer_model_proj.weight', r(PL * L, dim, s=0.08))
    w.add_tensor('per_layer_proj_norm.weight', norm(PL))
for i in range(L):
    p = f'blk.{i}.'
    hd = HD_SWA if swa[i] else HD_FULL
    has_kv = i < first_shared
    w.add_tensor(p + 'attn_norm.weight', norm(dim))
    w.add_tensor(p + 'attn_q.weight', r(H * hd, dim, s=0.08))
    if has_kv:
        w.add_tensor(p + 'attn_k.weight', r(kvh[i] * hd, dim, s=0.08))
        wv = r(kvh[i] * hd, dim, s=0.08)  # drawn either way: kv-eq keeps base's other weights
        if i not in no_v:
            w.add_tensor(p + 'attn_v.weight', wv)
    w.add_tensor(p + 'attn_output.weight', r(dim, H * hd, s=0.06))
    w.add_tensor(p + 'attn_q_norm.weight', norm(hd, 0.6))
    if has_kv:
        w.add_tensor(p + 'attn_k_norm.weight', norm(hd, 0.6))
    w.add_tensor(p + 'post_attention_norm.weight', norm(dim))
    w.add_tensor(p + 'ffn_norm.weight', norm(dim))
    w.add_tensor(p + 'ffn_gate.weight', r(ffs[i], dim, s=0.08))
    w.add_tensor(p + 'ffn_up.weight', r(ffs[i], dim, s=0.08))
    w.add_tensor(p + 'ffn_down.weight', r(dim, ffs[i], s=0.06))
    w.add_tensor(p + 'post_ffw_norm.weight', norm(dim))
    if moe:
        w.add_tensor(p + 'ffn_gate_inp.weight', r(E, dim, s=0.3))
        w.add_tensor(p + 'ffn_gate_inp.scale', norm(dim))
        w.add_tensor(p + 'pre_ffw_norm_2.weight', norm(dim))
        w.add_tensor(p + 'post_ffw_norm_1.weight', norm(dim))
        w.add_tensor(p + 'post_ffw_norm_2.weight', norm(dim))
        gate, up = r(E, FE, dim, s=0.08), r(E, FE, dim, s=0.08)
        if variant == 'moe':
            w.add_tensor(p + 'ffn_gate_up_exps.weight', np.concatenate([gate, up], axis=1))
        else:
            w.add_tensor(p + 'ffn_gate_exps.weight', gate)
            w.add_tensor(p + 'ffn_up_exps.weight', up)
        w.add_tensor(p + 'ffn_down_exps.weight', r(E, dim, FE, s=0.06))
        w.add_tensor(p + 'ffn_down_exps.scale', norm(E))
    if ple:
        w.add_tensor(p + 'inp_gate.weight', r(PL, dim, s=0.1))
        w.add_tensor(p + 'proj.weight', r(dim, PL, s=0.1))
        w.add_tensor(p + 'post_norm.weight', norm(dim))
    w.add_tensor(p + 'layer_output_scale.weight', rng.uniform(0.5, 1.5, 1).astype(np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print('wrote', out, variant, V)
