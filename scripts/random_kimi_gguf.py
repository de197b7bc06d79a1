#!/usr/bin/env python3
"""A random-weight kimi-linear GGUF file (f32, SmolLM2's vocabulary) for comparing
topos's perplexity with llama.cpp's (docs/LLM.md, "Kimi Linear").

usage: random_kimi_gguf.py OUT [qlora]
  qlora: the attention's q through attn_q_a / attn_q_b (llama.cpp 0.3.36 does not load these)
Needs gguf-py (scripts/setup-gguf-py.sh) and SmolLM2's file (scripts/setup-smollm2.sh)."""
import sys
import numpy as np
from gguf import GGUFWriter
from smollm2_vocab import copy_vocab
out = sys.argv[1]
arch = 'kimi-linear'
qlora = 'qlora' in sys.argv[2:]
w = GGUFWriter(out, arch)
dim, H, ff = 256, 4, 512
hd, K = 32, 4
D = H * hd
KVR, ROPE, NOPE, VD, QR = 64, 16, 32, 32, 96
E, EU, FE = 8, 2, 64
kv = [0, 0, 1, 0, 0, 1]
L = len(kv)
w.add_context_length(2048); w.add_embedding_length(dim); w.add_block_count(L)
w.add_feed_forward_length(ff); w.add_head_count(H)
w.add_array(f'{arch}.attention.head_count_kv', kv)
w.add_layer_norm_rms_eps(1e-5); w.add_rope_freq_base(10000.0)
w.add_uint32(f'{arch}.attention.key_length', KVR + ROPE); w.add_uint32(f'{arch}.attention.value_length', KVR)
w.add_uint32(f'{arch}.attention.key_length_mla', NOPE + ROPE); w.add_uint32(f'{arch}.attention.value_length_mla', VD)
w.add_uint32(f'{arch}.attention.kv_lora_rank', KVR)
if qlora: w.add_uint32(f'{arch}.attention.q_lora_rank', QR)
w.add_uint32(f'{arch}.rope.dimension_count', ROPE)
w.add_uint32(f'{arch}.ssm.conv_kernel', K); w.add_uint32(f'{arch}.kda.head_dim', hd)
w.add_uint32(f'{arch}.expert_count', E); w.add_uint32(f'{arch}.expert_used_count', EU)
w.add_uint32(f'{arch}.expert_feed_forward_length', FE); w.add_uint32(f'{arch}.expert_shared_count', 1)
w.add_uint32(f'{arch}.leading_dense_block_count', 1); w.add_float32(f'{arch}.expert_weights_scale', 2.5)
w.add_uint32(f'{arch}.expert_gating_func', 2)
V = copy_vocab(w)
rng = np.random.default_rng(13)
def r(*shape, s=0.08): return (rng.standard_normal(shape) * s).astype(np.float32)
w.add_tensor('token_embd.weight', r(V, dim, s=0.5))
w.add_tensor('output_norm.weight', 1 + r(dim, s=0.1))
w.add_tensor('output.weight', r(V, dim))
for i in range(L):
    p = f'blk.{i}.'
    w.add_tensor(p + 'attn_norm.weight', 1 + r(dim, s=0.1))
    if kv[i] == 0:
        for n in ('q', 'k', 'v'):
            w.add_tensor(p + f'attn_{n}.weight', r(D, dim, s=0.15))
            w.add_tensor(p + f'ssm_conv1d_{n}.weight', r(1, D, 1, K, s=0.5))
        w.add_tensor(p + 'ssm_f_a.weight', r(hd, dim, s=0.15)); w.add_tensor(p + 'ssm_f_b.weight', r(D, hd, s=0.3))
        w.add_tensor(p + 'ssm_g_a.weight', r(hd, dim, s=0.15)); w.add_tensor(p + 'ssm_g_b.weight', r(D, hd, s=0.3))
        w.add_tensor(p + 'ssm_beta.weight', r(H, dim, s=0.15))
        w.add_tensor(p + 'ssm_a', -np.exp(r(1, 1, H, 1, s=0.5)).astype(np.float32))
        w.add_tensor(p + 'ssm_dt.bias', r(D, s=0.5))
        w.add_tensor(p + 'ssm_norm.weight', 1 + r(hd, s=0.1))
        w.add_tensor(p + 'attn_output.weight', r(dim, D, s=0.1))
    else:
        if qlora:
            w.add_tensor(p + 'attn_q_a.weight', r(QR, dim, s=0.15))
            w.add_tensor(p + 'attn_q_a_norm.weight', 1 + r(QR, s=0.1))
            w.add_tensor(p + 'attn_q_b.weight', r(H * (NOPE + ROPE), QR, s=0.15))
        else:
            w.add_tensor(p + 'attn_q.weight', r(H * (NOPE + ROPE), dim, s=0.15))
        w.add_tensor(p + 'attn_kv_a_mqa.weight', r(KVR + ROPE, dim, s=0.15))
        w.add_tensor(p + 'attn_kv_a_norm.weight', 1 + r(KVR, s=0.1))
        w.add_tensor(p + 'attn_k_b.weight', r(H, KVR, NOPE, s=0.15))
        w.add_tensor(p + 'attn_v_b.weight', r(H, VD, KVR, s=0.15))
        w.add_tensor(p + 'attn_output.weight', r(dim, H * VD, s=0.1))
    w.add_tensor(p + 'ffn_norm.weight', 1 + r(dim, s=0.1))
    if i == 0:
        w.add_tensor(p + 'ffn_gate.weight', r(ff, dim)); w.add_tensor(p + 'ffn_up.weight', r(ff, dim))
        w.add_tensor(p + 'ffn_down.weight', r(dim, ff))
    else:
        w.add_tensor(p + 'ffn_gate_inp.weight', r(E, dim, s=0.3))
        w.add_tensor(p + 'exp_probs_b.bias', r(E, s=0.1))
        w.add_tensor(p + 'ffn_gate_exps.weight', r(E, FE, dim)); w.add_tensor(p + 'ffn_up_exps.weight', r(E, FE, dim))
        w.add_tensor(p + 'ffn_down_exps.weight', r(E, dim, FE))
        w.add_tensor(p + 'ffn_gate_shexp.weight', r(FE, dim)); w.add_tensor(p + 'ffn_up_shexp.weight', r(FE, dim))
        w.add_tensor(p + 'ffn_down_shexp.weight', r(dim, FE))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print('wrote', out, V)
