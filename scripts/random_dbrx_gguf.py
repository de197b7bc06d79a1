#!/usr/bin/env python3
"""A random-weight dbrx GGUF file (f32, SmolLM2's vocabulary) for comparing topos's perplexity
with llama.cpp's (docs/LLM.md, "DBRX, CodeShell and Mellum 2"; "Snowflake Arctic"; "Phi-3.5-MoE").

usage: random_dbrx_gguf.py OUT [codeshell | arctic | phimoe]
  dbrx: 4 blocks of dim 256, 4 heads over 2 kv heads, q, k, v in one attn_qkv clamped at 0.3,
  LayerNorms without biases, every block 8 experts of 128 (2 used, softmax, renormalised), the
  feed-forward's norm named attn_output_norm.
  codeshell: 4 blocks of dim 256, 4 heads over 2 kv heads, LayerNorms and every product with
  biases, a GELU feed-forward of 512 without a gate, and no token_embd (output.weight embeds).
  arctic: 4 blocks of dim 256, 4 heads over 2 kv heads, RMS norms, a dense SwiGLU feed-forward 256
  wide beside 8 experts of 128 (2 used, softmax, renormalised) reading the block's input through
  ffn_norm_exps.
  phimoe: 4 blocks of dim 256, 4 heads over 2 kv heads, RMS norms with biases, biases on q, k, v,
  the attention's output and the head, 8 experts of 128 (2 used, softmax, renormalised), LongRoPE
  tables (the short one in force below 4096 tokens).
Needs gguf-py (scripts/setup-gguf-py.sh) and SmolLM2's file (scripts/setup-smollm2.sh)."""
import sys
import numpy as np
from gguf import GGUFWriter
from smollm2_vocab import copy_vocab
out = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else 'dbrx'
codeshell, arctic, phimoe = mode == 'codeshell', mode == 'arctic', mode == 'phimoe'
rms = arctic or phimoe
w = GGUFWriter(out, mode)
dim, H, KVH, L, E, EU, FE, ff = 256, 4, 2, 4, 8, 2, 128, 512
hd = dim // H
w.add_context_length(2048); w.add_embedding_length(dim); w.add_block_count(L)
w.add_feed_forward_length(ff if codeshell else FE); w.add_head_count(H); w.add_head_count_kv(KVH)
w.add_rope_freq_base(10000.0); w.add_rope_dimension_count(hd)
if rms:
    w.add_layer_norm_rms_eps(1e-5)
else:
    w.add_layer_norm_eps(1e-5)
if not codeshell:
    if mode == 'dbrx':
        w.add_clamp_kqv(0.3)
    w.add_expert_count(E); w.add_expert_used_count(EU)
V = copy_vocab(w)
rng = np.random.default_rng(11)
def r(*shape, s=0.08): return (rng.standard_normal(shape) * s).astype(np.float32)
def norm(n, c=1.0): return (c + r(n, s=0.1)).astype(np.float32)
def bias(n): return r(n, s=0.02)
if not codeshell:
    w.add_tensor('token_embd.weight', r(V, dim, s=0.1))
w.add_tensor('output_norm.weight', norm(dim))
if codeshell or phimoe:
    w.add_tensor('output_norm.bias', bias(dim))
w.add_tensor('output.weight', r(V, dim, s=0.1))
if phimoe:
    w.add_tensor('output.bias', bias(V))
    w.add_tensor('rope_factors_long.weight', (1.0 + rng.random(hd // 2) * 3).astype(np.float32))
    w.add_tensor('rope_factors_short.weight', (1.0 + rng.random(hd // 2)).astype(np.float32))
qkv = dim + 2 * KVH * hd
for i in range(L):
    p = f'blk.{i}.'
    w.add_tensor(p + 'attn_norm.weight', norm(dim))
    if rms:
        w.add_tensor(p + 'attn_q.weight', r(dim, dim)); w.add_tensor(p + 'attn_k.weight', r(KVH * hd, dim))
        w.add_tensor(p + 'attn_v.weight', r(KVH * hd, dim))
    else:
        w.add_tensor(p + 'attn_qkv.weight', r(qkv, dim))
    if phimoe:
        w.add_tensor(p + 'attn_norm.bias', bias(dim)); w.add_tensor(p + 'attn_q.bias', bias(dim))
        w.add_tensor(p + 'attn_k.bias', bias(KVH * hd)); w.add_tensor(p + 'attn_v.bias', bias(KVH * hd))
        w.add_tensor(p + 'attn_output.bias', bias(dim))
        w.add_tensor(p + 'ffn_norm.weight', norm(dim)); w.add_tensor(p + 'ffn_norm.bias', bias(dim))
    w.add_tensor(p + 'attn_output.weight', r(dim, dim, s=0.06))
    if codeshell:
        w.add_tensor(p + 'attn_norm.bias', bias(dim)); w.add_tensor(p + 'attn_qkv.bias', bias(qkv))
        w.add_tensor(p + 'attn_output.bias', bias(dim))
        w.add_tensor(p + 'ffn_norm.weight', norm(dim)); w.add_tensor(p + 'ffn_norm.bias', bias(dim))
        w.add_tensor(p + 'ffn_up.weight', r(ff, dim)); w.add_tensor(p + 'ffn_up.bias', bias(ff))
        w.add_tensor(p + 'ffn_down.weight', r(dim, ff, s=0.06)); w.add_tensor(p + 'ffn_down.bias', bias(dim))
    else:
        if arctic:
            w.add_tensor(p + 'ffn_norm.weight', norm(dim)); w.add_tensor(p + 'ffn_norm_exps.weight', norm(dim))
            w.add_tensor(p + 'ffn_gate.weight', r(dim, dim)); w.add_tensor(p + 'ffn_up.weight', r(dim, dim))
            w.add_tensor(p + 'ffn_down.weight', r(dim, dim, s=0.06))
        elif not phimoe:
            w.add_tensor(p + 'attn_output_norm.weight', norm(dim))
        w.add_tensor(p + 'ffn_gate_inp.weight', r(E, dim, s=0.3))
        w.add_tensor(p + 'ffn_gate_exps.weight', r(E, FE, dim)); w.add_tensor(p + 'ffn_up_exps.weight', r(E, FE, dim))
        w.add_tensor(p + 'ffn_down_exps.weight', r(E, dim, FE, s=0.06))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print('wrote', out, V)
