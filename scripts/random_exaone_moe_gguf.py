#!/usr/bin/env python3
"""A random-weight exaone-moe (K-EXAONE) GGUF file (f32, SmolLM2's vocabulary) for comparing
topos's perplexity with llama.cpp's (docs/LLM.md, "K-EXAONE").

usage: random_exaone_moe_gguf.py OUT [softmax]
  4 blocks of dim 256, 4 heads over 2 kv heads with q and k norms, a window of 32 on blocks 0-2 (the
  pattern's default: 3 of 4), block 3 full and unrotated; block 0 dense (feed-forward 512), the
  others 8 experts of 128 (2 used, a sigmoid router ranking with exp_probs_b, renormalised, times
  2.5) beside 2 shared experts as one feed-forward of 192. softmax: expert_gating_func 1, no
  exp_probs_b.
Needs gguf-py (scripts/setup-gguf-py.sh) and SmolLM2's file (scripts/setup-smollm2.sh)."""
import sys
import numpy as np
import gguf
from gguf import GGUFWriter
from smollm2_vocab import copy_vocab
out = sys.argv[1]
softmax = len(sys.argv) > 2 and sys.argv[2] == 'softmax'
w = GGUFWriter(out, 'exaone-moe')
dim, H, KVH, L, E, EU, FE, SHFF, ff = 256, 4, 2, 4, 8, 2, 128, 192, 512
hd = dim // H
w.add_context_length(2048); w.add_embedding_length(dim); w.add_block_count(L)
w.add_feed_forward_length(ff); w.add_head_count(H); w.add_head_count_kv(KVH)
w.add_rope_freq_base(10000.0); w.add_layer_norm_rms_eps(1e-6); w.add_rope_dimension_count(hd)
w.add_sliding_window(32)
w.add_expert_count(E); w.add_expert_used_count(EU); w.add_expert_feed_forward_length(FE)
w.add_expert_shared_count(2); w.add_expert_shared_feed_forward_length(SHFF)
w.add_expert_weights_scale(2.5); w.add_expert_weights_norm(True); w.add_leading_dense_block_count(1)
w.add_expert_gating_func(gguf.ExpertGatingFuncType.SOFTMAX if softmax else gguf.ExpertGatingFuncType.SIGMOID)
V = copy_vocab(w)
rng = np.random.default_rng(17)
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
    if i == 0:
        w.add_tensor(p + 'ffn_gate.weight', r(ff, dim)); w.add_tensor(p + 'ffn_up.weight', r(ff, dim))
        w.add_tensor(p + 'ffn_down.weight', r(dim, ff, s=0.06))
        continue
    w.add_tensor(p + 'ffn_gate_inp.weight', r(E, dim, s=0.3))
    if not softmax:
        w.add_tensor(p + 'exp_probs_b.bias', r(E, s=0.5))
    w.add_tensor(p + 'ffn_gate_exps.weight', r(E, FE, dim)); w.add_tensor(p + 'ffn_up_exps.weight', r(E, FE, dim))
    w.add_tensor(p + 'ffn_down_exps.weight', r(E, dim, FE, s=0.06))
    w.add_tensor(p + 'ffn_gate_shexp.weight', r(SHFF, dim)); w.add_tensor(p + 'ffn_up_shexp.weight', r(SHFF, dim))
    w.add_tensor(p + 'ffn_down_shexp.weight', r(dim, SHFF, s=0.06))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print('wrote', out, V)
