#!/usr/bin/env python3
"""A random-weight deepseek (DeepSeek-MoE, V1) GGUF file (f32, SmolLM2's vocabulary) for
comparing topos's perplexity with llama.cpp's (docs/LLM.md, "DeepSeek-MoE").

usage: random_deepseek_gguf.py OUT [bailingmoe]
  4 blocks of dim 256, 4 heads; block 0 dense (feed-forward 512), the others 8 experts of 128
  (2 used, softmax, not renormalised, expert_weights_scale 1) beside 2 shared experts.
  bailingmoe: a Ling 1.0 file instead: every block a mixture, the weights renormalised
  (expert_weights_norm).
Needs gguf-py (scripts/setup-gguf-py.sh) and SmolLM2's file (scripts/setup-smollm2.sh)."""
import sys
import numpy as np
from gguf import GGUFWriter
from smollm2_vocab import copy_vocab
out = sys.argv[1]
ling = len(sys.argv) > 2 and sys.argv[2] == 'bailingmoe'
w = GGUFWriter(out, 'bailingmoe' if ling else 'deepseek')
dense = 0 if ling else 1
dim, H, KVH, ff, L, E, EU, FE, SH = 256, 4, 4, 512, 4, 8, 2, 128, 2
w.add_context_length(2048); w.add_embedding_length(dim); w.add_block_count(L)
w.add_feed_forward_length(ff); w.add_head_count(H); w.add_head_count_kv(KVH)
w.add_rope_freq_base(10000.0); w.add_layer_norm_rms_eps(1e-6); w.add_rope_dimension_count(dim // H)
w.add_leading_dense_block_count(dense); w.add_expert_feed_forward_length(FE); w.add_expert_weights_scale(1.0)
w.add_expert_count(E); w.add_expert_used_count(EU); w.add_expert_shared_count(SH)
if ling:
    w.add_expert_weights_norm(True)
V = copy_vocab(w)
rng = np.random.default_rng(7)
def r(*shape, s=0.08): return (rng.standard_normal(shape) * s).astype(np.float32)
def norm(n, c=1.0): return (c + r(n, s=0.1)).astype(np.float32)
w.add_tensor('token_embd.weight', r(V, dim, s=0.1))
w.add_tensor('output_norm.weight', norm(dim))
w.add_tensor('output.weight', r(V, dim, s=0.1))
for i in range(L):
    p = f'blk.{i}.'
    w.add_tensor(p + 'attn_norm.weight', norm(dim))
    w.add_tensor(p + 'attn_q.weight', r(dim, dim)); w.add_tensor(p + 'attn_k.weight', r(dim, dim))
    w.add_tensor(p + 'attn_v.weight', r(dim, dim)); w.add_tensor(p + 'attn_output.weight', r(dim, dim, s=0.06))
    w.add_tensor(p + 'ffn_norm.weight', norm(dim))
    if i < dense:
        w.add_tensor(p + 'ffn_gate.weight', r(ff, dim)); w.add_tensor(p + 'ffn_up.weight', r(ff, dim))
        w.add_tensor(p + 'ffn_down.weight', r(dim, ff, s=0.06))
    else:
        w.add_tensor(p + 'ffn_gate_inp.weight', r(E, dim, s=0.3))
        w.add_tensor(p + 'ffn_gate_exps.weight', r(E, FE, dim)); w.add_tensor(p + 'ffn_up_exps.weight', r(E, FE, dim))
        w.add_tensor(p + 'ffn_down_exps.weight', r(E, dim, FE, s=0.06))
        w.add_tensor(p + 'ffn_gate_shexp.weight', r(FE * SH, dim)); w.add_tensor(p + 'ffn_up_shexp.weight', r(FE * SH, dim))
        w.add_tensor(p + 'ffn_down_shexp.weight', r(dim, FE * SH, s=0.06))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print('wrote', out, V)
