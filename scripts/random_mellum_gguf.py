#!/usr/bin/env python3
"""A random-weight mellum (Mellum 2) GGUF file (f32, SmolLM2's vocabulary) for comparing topos's
perplexity with llama.cpp's (docs/LLM.md, "DBRX, CodeShell and Mellum 2").

usage: random_mellum_gguf.py OUT [full]
  4 blocks of dim 256, 4 heads over 2 kv heads with q and k norms, every block 8 experts of 128
  (2 used, softmax, renormalised); a window of 32 on blocks 0, 1 and 2 (the pattern's list), linear
  rope scaling 2 (the windowed blocks unscaled) and a rope.freq_base_swa of 500 that llama.cpp's
  graph does not read. full: no window key (every block full).
Needs gguf-py (scripts/setup-gguf-py.sh) and SmolLM2's file (scripts/setup-smollm2.sh)."""
import sys
import numpy as np
from gguf import GGUFWriter
from smollm2_vocab import copy_vocab
out = sys.argv[1]
full = len(sys.argv) > 2 and sys.argv[2] == 'full'
w = GGUFWriter(out, 'mellum')
dim, H, KVH, L, E, EU, FE = 256, 4, 2, 4, 8, 2, 128
hd = dim // H
w.add_context_length(2048); w.add_embedding_length(dim); w.add_block_count(L)
w.add_feed_forward_length(512); w.add_head_count(H); w.add_head_count_kv(KVH)
w.add_rope_freq_base(10000.0); w.add_layer_norm_rms_eps(1e-6); w.add_rope_dimension_count(hd)
w.add_expert_count(E); w.add_expert_used_count(EU); w.add_expert_feed_forward_length(FE)
w.add_rope_scaling_type(__import__('gguf').RopeScalingType.LINEAR); w.add_rope_scaling_factor(2.0)
if not full:
    w.add_sliding_window(32); w.add_sliding_window_pattern([True, True, True, False])
    w.add_key_value('mellum.rope.freq_base_swa', 500.0, __import__('gguf').GGUFValueType.FLOAT32)
V = copy_vocab(w)
rng = np.random.default_rng(13)
def r(*shape, s=0.08): return (rng.standard_normal(shape) * s).astype(np.float32)
def norm(n, c=1.0): return (c + r(n, s=0.1)).astype(np.float32)
w.add_tensor('token_embd.weight', r(V, dim, s=0.1))
w.add_tensor('output_norm.weight', norm(dim))
w.add_tensor('output.weight', r(V, dim, s=0.1))
for i in range(L):
    p = f'blk.{i}.'
    w.add_tensor(p + 'attn_norm.weight', norm(dim))
    w.add_tensor(p + 'attn_q.weight', r(dim, dim)); w.add_tensor(p + 'attn_k.weight', r(KVH * hd, dim))
    w.add_tensor(p + 'attn_v.weight', r(KVH * hd, dim)); w.add_tensor(p + 'attn_output.weight', r(dim, dim, s=0.06))
    w.add_tensor(p + 'attn_q_norm.weight', norm(hd)); w.add_tensor(p + 'attn_k_norm.weight', norm(hd))
    w.add_tensor(p + 'ffn_norm.weight', norm(dim))
    w.add_tensor(p + 'ffn_gate_inp.weight', r(E, dim, s=0.3))
    w.add_tensor(p + 'ffn_gate_exps.weight', r(E, FE, dim)); w.add_tensor(p + 'ffn_up_exps.weight', r(E, FE, dim))
    w.add_tensor(p + 'ffn_down_exps.weight', r(E, dim, FE, s=0.06))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print('wrote', out, V)
