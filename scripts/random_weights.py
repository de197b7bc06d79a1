"""What the random-weight GGUF writers share (random_mellum_gguf.py, random_exaone_moe_gguf.py,
random_deepseek_gguf.py): seeded f32 draws, the llama-style keys, an attention block and a
mixture's tensors, written in one fixed order so that a seed gives the same file."""
import numpy as np


class Draws:
    """Seeded N(0, s) tensors: weights, norm weights about c, small biases."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def r(self, *shape, s=0.08):
        return (self.rng.standard_normal(shape) * s).astype(np.float32)

    def norm(self, n, c=1.0):
        return (c + self.r(n, s=0.1)).astype(np.float32)


def llama_keys(w, dim, heads, kv_heads, blocks, ff, eps=1e-6):
    """Context 2048, the shapes, rope base 10000 over whole heads, RMS eps."""
    w.add_context_length(2048); w.add_embedding_length(dim); w.add_block_count(blocks)
    w.add_feed_forward_length(ff); w.add_head_count(heads); w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(10000.0); w.add_layer_norm_rms_eps(eps); w.add_rope_dimension_count(dim // heads)


def head_and_table(w, d, vocab, dim):
    """token_embd, output_norm and output."""
    w.add_tensor('token_embd.weight', d.r(vocab, dim, s=0.1))
    w.add_tensor('output_norm.weight', d.norm(dim))
    w.add_tensor('output.weight', d.r(vocab, dim, s=0.1))


def attention(w, d, p, dim, heads, kv_heads, qk_norm=False):
    """Block p's attn_norm, q, k, v, output (and per-head q / k norms)."""
    hd = dim // heads
    w.add_tensor(p + 'attn_norm.weight', d.norm(dim))
    w.add_tensor(p + 'attn_q.weight', d.r(dim, dim)); w.add_tensor(p + 'attn_k.weight', d.r(kv_heads * hd, dim))
    w.add_tensor(p + 'attn_v.weight', d.r(kv_heads * hd, dim)); w.add_tensor(p + 'attn_output.weight', d.r(dim, dim, s=0.06))
    if qk_norm:
        w.add_tensor(p + 'attn_q_norm.weight', d.norm(hd)); w.add_tensor(p + 'attn_k_norm.weight', d.norm(hd))


def dense(w, d, p, dim, ff, suffix=''):
    """A SwiGLU feed-forward ff wide (suffix '_shexp': a mixture's shared experts)."""
    w.add_tensor(p + f'ffn_gate{suffix}.weight', d.r(ff, dim)); w.add_tensor(p + f'ffn_up{suffix}.weight', d.r(ff, dim))
    w.add_tensor(p + f'ffn_down{suffix}.weight', d.r(dim, ff, s=0.06))


def experts(w, d, p, dim, n, width, probs_bias=False):
    """A router over n experts (and exp_probs_b), the experts' gate, up and down, width wide."""
    w.add_tensor(p + 'ffn_gate_inp.weight', d.r(n, dim, s=0.3))
    if probs_bias:
        w.add_tensor(p + 'exp_probs_b.bias', d.r(n, s=0.5))
    w.add_tensor(p + 'ffn_gate_exps.weight', d.r(n, width, dim)); w.add_tensor(p + 'ffn_up_exps.weight', d.r(n, width, dim))
    w.add_tensor(p + 'ffn_down_exps.weight', d.r(n, dim, width, s=0.06))
