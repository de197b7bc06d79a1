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
from gguf import GGUFWriter
from smollm2_vocab import copy_vocab
from random_weights import Draws, llama_keys, head_and_table, attention, experts
from random_weights import dense as dense_ffn
out = sys.argv[1]
ling = len(sys.argv) > 2 and sys.argv[2] == 'bailingmoe'
w = GGUFWriter(out, 'bailingmoe' if ling else 'deepseek')
dense = 0 if ling else 1
dim, H, KVH, ff, L, E, EU, FE, SH = 256, 4, 4, 512, 4, 8, 2, 128, 2
llama_keys(w, dim, H, KVH, L, ff)
w.add_leading_dense_block_count(dense); w.add_expert_feed_forward_length(FE); w.add_expert_weights_scale(1.0)
w.add_expert_count(E); w.add_expert_used_count(EU); w.add_expert_shared_count(SH)
if ling:
    w.add_expert_weights_norm(True)
V = copy_vocab(w)
d = Draws(7)
head_and_table(w, d, V, dim)
for i in range(L):
    p = f'blk.{i}.'
    attention(w, d, p, dim, H, KVH)
    w.add_tensor(p + 'ffn_norm.weight', d.norm(dim))
    if i < dense:
        dense_ffn(w, d, p, dim, ff)
    else:
        experts(w, d, p, dim, E, FE)
        dense_ffn(w, d, p, dim, FE * SH, '_shexp')
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print('wrote', out, V)
