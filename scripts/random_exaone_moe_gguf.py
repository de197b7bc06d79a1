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
import gguf
from gguf import GGUFWriter
from smollm2_vocab import copy_vocab
from random_weights import Draws, llama_keys, head_and_table, attention, dense, experts
out = sys.argv[1]
softmax = len(sys.argv) > 2 and sys.argv[2] == 'softmax'
w = GGUFWriter(out, 'exaone-moe')
dim, H, KVH, L, E, EU, FE, SHFF, ff = 256, 4, 2, 4, 8, 2, 128, 192, 512
llama_keys(w, dim, H, KVH, L, ff)
w.add_sliding_window(32)
w.add_expert_count(E); w.add_expert_used_count(EU); w.add_expert_feed_forward_length(FE)
w.add_expert_shared_count(2); w.add_expert_shared_feed_forward_length(SHFF)
w.add_expert_weights_scale(2.5); w.add_expert_weights_norm(True); w.add_leading_dense_block_count(1)
w.add_expert_gating_func(gguf.ExpertGatingFuncType.SOFTMAX if softmax else gguf.ExpertGatingFuncType.SIGMOID)
V = copy_vocab(w)
d = Draws(17)
head_and_table(w, d, V, dim)
for i in range(L):
    p = f'blk.{i}.'
    attention(w, d, p, dim, H, KVH, qk_norm=True)
    w.add_tensor(p + 'ffn_norm.weight', d.norm(dim))
    if i == 0:
        dense(w, d, p, dim, ff)
        continue
    experts(w, d, p, dim, E, FE, probs_bias=not softmax)
    dense(w, d, p, dim, SHFF, '_shexp')
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print('wrote', out, V)
