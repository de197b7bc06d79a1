#!/usr/bin/env python3
"""Random-weight gemma3n GGUF files (f32, SmolLM2's vocabulary) for comparing topos's
perplexity with llama.cpp's (the Gemma 3n E2B / E4B text model's form).

usage: random_gemma3n_gguf.py OUT VARIANT
  base:     22 blocks of 256 (4 heads of 64, 2 KV heads), feed-forward 512; 4 AltUp
            streams (the first active), Laurel rank 64, per-layer inputs of 256; the first
            10 blocks' gates sparsified at 1.6448533535003662 std; sliding window 32 with
            the pattern an explicit list, full blocks 4, 9, 14, 19 and 21, the others
            windowed; the last 2 blocks share the KV of blocks 18 (windowed) and 19 (full)
            (and carry attn_k / attn_v / attn_k_norm, which llama.cpp requires and never
            reads); output tied to token_embd
  ff-list:  base with feed_forward_length an array (of 512s, as the real files write it:
            llama.cpp's gemma3n reads every block at the first block's width)
  defaults: base's weights, but without the keys whose absence means llama.cpp's fixed
            values (altup.active_idx, altup.num_inputs, embedding_length_per_layer_input,
            attention.shared_kv_layers, activation_sparsity_scale, rope.freq_base_swa,
            final_logit_softcapping)
All three hold the same weights: each program must give the same numbers for the three.
llama.cpp 0.3.36 reads none of the AltUp / Laurel / per-layer / sparsity keys: it fixes 4
streams, active index 0, rank 64, per-layer width 256, sparsity on the first 10 blocks,
KV of the first 20 blocks (so 22 blocks with 2 shared), soft cap 30. This file matches
all of them, so both programs run the same model.
Norm weights are stored as used (Gemma 3n's converter adds no 1); q/k norms are kept
near 0.6 so that the attention, whose scale is 1, is not one-hot; the AltUp coefficients
are N(0, 0.1) so the streams stay finite over 22 blocks, the router N(0, 4) so that its
tanh over norm(x) / 256 is not ~0 (otherwise the coefficients would barely count).
The vocabulary (and tokenizer) stays SmolLM2's gpt2 one: the tokenizer is not under test.
Needs gguf-py (scripts/setup-gguf-py.sh) and SmolLM2's file (scripts/setup-smollm2.sh)."""
import sys
import numpy as np
from gguf import GGUFWriter
from smollm2_vocab import copy_vocab
out, variant = sys.argv[1], sys.argv[2]
if variant not in ('base', 'ff-list', 'defaults'):
    sys.exit('variant: base, ff-list or defaults')
arch = 'gemma3n'
w = GGUFWriter(out, arch)
dim, H, KVH, HD = 256, 4, 2, 64
L, SHARED = 22, 2
N_ALTUP, ACT, RANK, PL = 4, 0, 64, 256
SPARSE, STD_MUL = 10, 1.6448533535003662
full = {4, 9, 14, 19, 21}
swa = [i not in full for i in range(L)]
first_shared = L - SHARED
# llama.cpp: block il >= 20 reads block 18 (windowed) or 19 (full)
assert first_shared == 20 and swa[first_shared - 2] and not swa[first_shared - 1]
ffs = [512] * L
keys = variant != 'defaults'
w.add_context_length(2048); w.add_embedding_length(dim); w.add_block_count(L)
if variant == 'ff-list':
    w.add_feed_forward_length(ffs)
else:
    w.add_feed_forward_length(ffs[0])
w.add_head_count(H); w.add_head_count_kv(KVH)
w.add_key_length(HD); w.add_value_length(HD)
w.add_rope_freq_base(1000000.0)
w.add_layer_norm_rms_eps(1e-6)
w.add_sliding_window(32)
w.add_sliding_window_pattern(swa)
if keys:
    w.add_rope_freq_base_swa(10000.0)
    w.add_final_logit_softcapping(30.0)
    w.add_altup_active_idx(ACT)
    w.add_altup_num_inputs(N_ALTUP)
    w.add_embedding_length_per_layer_input(PL)
    w.add_shared_kv_layers(SHARED)
    w.add_activation_sparsity_scale([STD_MUL] * SPARSE + [float('-inf')] * (L - SPARSE))
V = copy_vocab(w)
rng = np.random.default_rng(3)
def r(*shape, s=0.08): return (rng.standard_normal(shape, dtype=np.float32) * np.float32(s)).astype(np.float32)
def norm(n, c=1.0): return (c + r(n, s=0.1)).astype(np.float32)
w.add_tensor('token_embd.weight', r(V, dim, s=0.1))
w.add_tensor('output_norm.weight', norm(dim))
# numpy shapes are GGUF's ne reversed: altup_proj {dim, dim, 3}
w.add_tensor('altup_proj.weight', r(N_ALTUP - 1, dim, dim, s=0.08))
w.add_tensor('altup_unembd_proj.weight', r(N_ALTUP - 1, dim, dim, s=0.08))
w.add_tensor('per_layer_token_embd.weight', r(V, PL * L, s=0.1))
w.add_tensor('per_layer_model_proj.weight', r(PL * L, dim, s=0.08))
w.add_tensor('per_layer_proj_norm.weight', norm(PL))
for i in range(L):
    p = f'blk.{i}.'
    F = ffs[i]
    w.add_tensor(p + 'attn_norm.weight', norm(dim))
    w.add_tensor(p + 'attn_q.weight', r(H * HD, dim, s=0.08))
    w.add_tensor(p + 'attn_k.weight', r(KVH * HD, dim, s=0.08))
    w.add_tensor(p + 'attn_v.weight', r(KVH * HD, dim, s=0.08))
    w.add_tensor(p + 'attn_output.weight', r(dim, H * HD, s=0.06))
    w.add_tensor(p + 'attn_q_norm.weight', norm(HD, 0.6))
    w.add_tensor(p + 'attn_k_norm.weight', norm(HD, 0.6))
    w.add_tensor(p + 'post_attention_norm.weight', norm(dim))
    w.add_tensor(p + 'ffn_norm.weight', norm(dim))
    w.add_tensor(p + 'ffn_gate.weight', r(F, dim, s=0.08))
    w.add_tensor(p + 'ffn_up.weight', r(F, dim, s=0.08))
    w.add_tensor(p + 'ffn_down.weight', r(dim, F, s=0.06))
    w.add_tensor(p + 'post_ffw_norm.weight', norm(dim))
    w.add_tensor(p + 'inp_gate.weight', r(PL, dim, s=0.1))
    w.add_tensor(p + 'proj.weight', r(dim, PL, s=0.1))
    w.add_tensor(p + 'post_norm.weight', norm(dim))
    w.add_tensor(p + 'altup_correct_coef.weight', r(N_ALTUP, N_ALTUP, s=0.1))
    w.add_tensor(p + 'altup_correct_scale.weight', norm(dim))
    w.add_tensor(p + 'altup_predict_coef.weight', r(N_ALTUP * N_ALTUP, N_ALTUP, s=0.1))
    w.add_tensor(p + 'altup_router.weight', r(N_ALTUP, dim, s=4.0))
    w.add_tensor(p + 'altup_router_norm.weight', norm(dim))
    w.add_tensor(p + 'laurel_l.weight', r(RANK, dim, s=0.08))
    w.add_tensor(p + 'laurel_r.weight', r(dim, RANK, s=0.08))
    w.add_tensor(p + 'laurel_post_norm.weight', norm(dim))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print('wrote', out, variant, V)
