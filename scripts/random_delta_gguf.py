#!/usr/bin/env python3
"""Random-weight qwen3next / qwen35 / qwen35moe GGUF files (f32, SmolLM2's vocabulary)
for comparing topos's perplexity with llama.cpp's (docs/LLM.md, "Gated DeltaNet").

usage: random_delta_gguf.py OUT ARCH [legacy] [array]
  legacy: qwen3next's older ssm_in (q, k, v, z of each key head together)
  array:  attention.recurrent_layers instead of full_attention_interval
Needs gguf-py (scripts/setup-gguf-py.sh) and SmolLM2's file (scripts/setup-smollm2.sh)."""
import sys
import numpy as np
from gguf import GGUFWriter
from smollm2_vocab import copy_vocab
out, arch = sys.argv[1], sys.argv[2]
opts = sys.argv[3:]
legacy = 'legacy' in opts
moe = arch in ('qwen3next', 'qwen35moe')
tiled = arch != 'qwen3next'
w = GGUFWriter(out, arch)
dim, H, KVH, hd, ff, rope_dim = 256, 4, 2, 64, 512, 32
K, G, HV, N = 4, 2, 4, 32
KD, VD = G * N, HV * N
RF = HV // G
L = 6
interval = 3
w.add_context_length(2048); w.add_embedding_length(dim); w.add_block_count(L)
w.add_feed_forward_length(ff); w.add_head_count(H); w.add_head_count_kv(KVH)
w.add_uint32(f'{arch}.attention.key_length', hd); w.add_uint32(f'{arch}.attention.value_length', hd)
w.add_uint32(f'{arch}.rope.dimension_count', rope_dim)
w.add_layer_norm_rms_eps(1e-6); w.add_rope_freq_base(10000000.0)
w.add_uint32(f'{arch}.ssm.conv_kernel', K); w.add_uint32(f'{arch}.ssm.inner_size', VD)
w.add_uint32(f'{arch}.ssm.state_size', N); w.add_uint32(f'{arch}.ssm.time_step_rank', HV)
w.add_uint32(f'{arch}.ssm.group_count', G)
recr = [(i + 1) % interval != 0 for i in range(L)]
if 'array' in opts:
    recr = [True, False, True, True, False, True]
    w.add_array(f'{arch}.attention.recurrent_layers', recr)
else:
    w.add_uint32(f'{arch}.full_attention_interval', interval)
if tiled:
    w.add_array(f'{arch}.rope.dimension_sections', [6, 5, 5, 0])
E, EU, FE, FS = 8, 2, 128, 192
if moe:
    w.add_uint32(f'{arch}.expert_count', E); w.add_uint32(f'{arch}.expert_used_count', EU)
    w.add_uint32(f'{arch}.expert_feed_forward_length', FE)
    w.add_uint32(f'{arch}.expert_shared_feed_forward_length', FS)
V = copy_vocab(w)
rng = np.random.default_rng(11)
def r(*shape, s=0.08): return (rng.standard_normal(shape) * s).astype(np.float32)
w.add_tensor('token_embd.weight', r(V, dim, s=0.5))
w.add_tensor('output_norm.weight', 1 + r(dim, s=0.1))
w.add_tensor('output.weight', r(V, dim))
for i in range(L):
    p = f'blk.{i}.'
    w.add_tensor(p + 'attn_norm.weight', 1 + r(dim, s=0.1))
    w.add_tensor(p + 'post_attention_norm.weight', 1 + r(dim, s=0.1))
    if recr[i]:
        if legacy:
            w.add_tensor(p + 'ssm_in.weight', r(2 * KD + 2 * VD, dim, s=0.15))
        else:
            w.add_tensor(p + 'attn_qkv.weight', r(2 * KD + VD, dim, s=0.15))
            w.add_tensor(p + 'attn_gate.weight', r(VD, dim, s=0.15))
        w.add_tensor(p + 'ssm_conv1d.weight', r(2 * KD + VD, K, s=0.5))
        w.add_tensor(p + 'ssm_dt.bias', r(HV, s=0.5))
        w.add_tensor(p + 'ssm_a', -np.exp(r(HV, s=0.5)).astype(np.float32))
        if tiled:
            w.add_tensor(p + 'ssm_beta.weight', r(HV, dim, s=0.15))
            w.add_tensor(p + 'ssm_alpha.weight', r(HV, dim, s=0.15))
        else:
            w.add_tensor(p + 'ssm_ba.weight', r(2 * HV, dim, s=0.15))
        w.add_tensor(p + 'ssm_norm.weight', 1 + r(N, s=0.1))
        w.add_tensor(p + 'ssm_out.weight', r(dim, VD, s=0.1))
    else:
        w.add_tensor(p + 'attn_q.weight', r(2 * H * hd, dim, s=0.15))
        w.add_tensor(p + 'attn_k.weight', r(KVH * hd, dim, s=0.15))
        w.add_tensor(p + 'attn_v.weight', r(KVH * hd, dim, s=0.15))
        w.add_tensor(p + 'attn_output.weight', r(dim, H * hd))
        w.add_tensor(p + 'attn_q_norm.weight', 1 + r(hd, s=0.1))
        w.add_tensor(p + 'attn_k_norm.weight', 1 + r(hd, s=0.1))
    if moe:
        w.add_tensor(p + 'ffn_gate_inp.weight', r(E, dim, s=0.3))
        w.add_tensor(p + 'ffn_gate_exps.weight', r(E, FE, dim))
        w.add_tensor(p + 'ffn_up_exps.weight', r(E, FE, dim))
        w.add_tensor(p + 'ffn_down_exps.weight', r(E, dim, FE))
        w.add_tensor(p + 'ffn_gate_inp_shexp.weight', r(dim, s=0.3))
        w.add_tensor(p + 'ffn_gate_shexp.weight', r(FS, dim))
        w.add_tensor(p + 'ffn_up_shexp.weight', r(FS, dim))
        w.add_tensor(p + 'ffn_down_shexp.weight', r(dim, FS))
    else:
        w.add_tensor(p + 'ffn_gate.weight', r(ff, dim))
        w.add_tensor(p + 'ffn_up.weight', r(ff, dim))
        w.add_tensor(p + 'ffn_down.weight', r(dim, ff))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print('wrote', out, V)
