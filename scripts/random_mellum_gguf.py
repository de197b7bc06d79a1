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
from gguf import GGUFWriter
from smollm2_vocab import copy_vocab
from random_weights import Draws, llama_keys, head_and_table, attention, experts
out = sys.argv[1]
full = len(sys.argv) > 2 and sys.argv[2] == 'full'
w = GGUFWriter(out, 'mellum')
dim, H, KVH, L, E, EU, FE = 256, 4, 2, 4, 8, 2, 128
llama_keys(w, dim, H, KVH, L, 512)
w.add_expert_count(E); w.add_expert_used_count(EU); w.add_expert_feed_forward_length(FE)
w.add_rope_scaling_type(__import__('gguf').RopeScalingType.LINEAR); w.add_rope_scaling_factor(2.0)
if not full:
    w.add_sliding_window(32); w.add_sliding_window_pattern([True, True, True, False])
    w.add_key_value('mellum.rope.freq_base_swa', 500.0, __import__('gguf').GGUFValueType.FLOAT32)
V = copy_vocab(w)
d = Draws(13)
head_and_table(w, d, V, dim)
for i in range(L):
    p = f'blk.{i}.'
    attention(w, d, p, dim, H, KVH, qk_norm=True)
    w.add_tensor(p + 'ffn_norm.weight', d.norm(dim))
    experts(w, d, p, dim, E, FE)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print('wrote', out, V)
