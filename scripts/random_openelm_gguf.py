#!/usr/bin/env python3
"""A random-weight openelm GGUF file (f32, SmolLM2's vocabulary) for comparing topos's
perplexity with llama.cpp's (docs/LLM.md, "OpenELM").

usage: random_openelm_gguf.py OUT
  6 blocks of heads [4, 4, 6, 6, 8, 8] of 64 with kv heads [1, 2, 2, 3, 2, 4] (query groups
  4, 2, 3, 2, 4, 2: none the model's 8 / 4) and feed-forwards [512, 512, 640, 640, 768, 768]
  (head_count, head_count_kv and feed_forward_length as arrays); attn_qkv per block; per-head
  q and k norms; a head tied to the embedding.
Needs gguf-py (scripts/setup-gguf-py.sh) and SmolLM2's file (scripts/setup-smollm2.sh)."""
import sys
import numpy as np
from gguf import GGUFWriter
from smollm2_vocab import copy_vocab
out = sys.argv[1]
w = GGUFWriter(out, 'openelm')
dim, hd = 256, 64
qh = [4, 4, 6, 6, 8, 8]
kvh = [1, 2, 2, 3, 2, 4]
ffs = [512, 512, 640, 640, 768, 768]
L = len(qh)
w.add_context_length(2048); w.add_embedding_length(dim); w.add_block_count(L)
w.add_feed_forward_length(ffs); w.add_head_count(qh); w.add_head_count_kv(kvh)
w.add_rope_freq_base(10000.0); w.add_layer_norm_rms_eps(1e-6)
w.add_rope_dimension_count(hd); w.add_key_length(hd); w.add_value_length(hd)
V = copy_vocab(w)
rng = np.random.default_rng(6)
def r(*shape, s=0.08): return (rng.standard_normal(shape) * s).astype(np.float32)
def norm(n, c=1.0): return (c + r(n, s=0.1)).astype(np.float32)
w.add_tensor('token_embd.weight', r(V, dim, s=0.1))
w.add_tensor('output_norm.weight', norm(dim))
for i in range(L):
    p = f'blk.{i}.'
    w.add_tensor(p + 'attn_norm.weight', norm(dim))
    w.add_tensor(p + 'attn_qkv.weight', r((qh[i] + 2 * kvh[i]) * hd, dim))
    w.add_tensor(p + 'attn_q_norm.weight', norm(hd, 1.5))
    w.add_tensor(p + 'attn_k_norm.weight', norm(hd, 1.5))
    w.add_tensor(p + 'attn_output.weight', r(dim, qh[i] * hd, s=0.06))
    w.add_tensor(p + 'ffn_norm.weight', norm(dim))
    w.add_tensor(p + 'ffn_gate.weight', r(ffs[i], dim))
    w.add_tensor(p + 'ffn_up.weight', r(ffs[i], dim))
    w.add_tensor(p + 'ffn_down.weight', r(dim, ffs[i], s=0.06))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print('wrote', out, V)
