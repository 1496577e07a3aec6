#!/usr/bin/env python3
"""Writes the small ONNX test models of models/onnx/ with torch.onnx.export (Debian's python3-torch and
python3-onnx; run with the system python: /usr/bin/python3 tools/export_onnx_models.py).

  mlp.onnx           Linear, GELU (erf), Linear over `seq` rows (a symbolic dimension), opset 13
  gpt2_block.onnx    a GPT-2 block as Hugging Face writes it: LayerNorm, one c_attn projection split into
                     q, k, v, causal attention, GELU (tanh), residuals; opset 14
  llama_block.onnx   a Llama block: RMSNorm, rotary embeddings (rotate_half), grouped-query attention,
                     SiLU-gated MLP; opset 17
  causal_attention.onnx, causal_attention_seq.onnx
                     nanoGPT's causal self-attention: q, k, v views from x.size(), masked_fill of a tril
                     buffer sliced to the sequence (== 0, -inf); the second with a symbolic `seq`, opset 14
  causal_tril_seq.onnx
                     the mask built in forward, torch.tril(torch.ones(T, T, dtype=bool)), masked_fill(~mask),
                     symbolic `seq`, opset 17
  gqa_attention.onnx, gqa_attention_seq.onnx
                     Hugging Face's Llama attention: repeat_kv (expand + reshape of the KV heads), an additive
                     triu(-inf) mask, reshape(bsz, q_len, -1); static and symbolic `seq`, opset 17
  gqa_interleave.onnx
                     the same with k.repeat_interleave(rep, dim=1), opset 17
  gqa_bidirectional.onnx, gqa_bidirectional_seq.onnx
                     the same with repeat_kv and no mask (a bidirectional encoder's GQA); static and
                     symbolic `seq`, opset 17
  pointwise.onnx     Erf, Sigmoid, Pow, Sqrt, Reciprocal (rsqrt), Abs, Max, Min outside any pattern, opset 13
  select_mlp.onnx    selects and bounds on data: torch.where over comparisons (>, <, >=), a leaky ReLU
                     written as a where, clamp and hardtanh (Clip), an einsum projection; opset 17
  einsum_attention.onnx, einsum_attention_seq.onnx
                     attention written with einsum (q.k over permuted heads, p.v), qkv.chunk(3) (a ceil
                     division of the width), learned positions (arange + an embedding), a bool triu mask
                     built in forward filled with finfo.min; static and symbolic `seq`, opset 17
  sliding_window_attention.onnx
                     Mistral's sliding-window mask as Hugging Face built it (arange, a comparison, a bool tril,
                     masked_fill of finfo.min in place), added before the softmax; opset 17
  threshold_selects.onnx
                     torch.where whose branch not taken is inf (softplus's threshold written out), and a
                     where of a -inf constant; opset 17
  pads_and_reductions.onnx
                     RWKV's token shift (ZeroPad2d of the sequence, one row in and one out), F.pad of the
                     width by 0.5 sliced back, torch.flip of a constant, a mean and an amax over two axes; opset 17
  rank_broadcast_matmuls.onnx
                     matmuls whose batch dims broadcast by rank alone ([1, g, s/g, d] @ [g, d, d] and back); opset 17
  logsumexp_pools.onnx
                     torch.logsumexp over the sequence (values past exp's f32 range) and the features, and an
                     L1 norm (x.norm(p=1)); opset 17
  rounding_ops.onnx  fake quantisation as quantisation-aware training writes it (torch.round(h / s).clamp(..) * s),
                     floor and ceil of data, torch.sign, torch.remainder (x - floor(x / y) * y) and torch.fmod
                     (Mod, fmod=1); opset 17
  axis_softmaxes.onnx
                     log_softmax and softmax over the sequence (dim=1, dim=-2) instead of the features; opset 17
  jax_einsums.onnx   attention as JAX ports write it: einsums by per-head weights [heads, d, head_dim] to heads
                     and back (two summed indices), and scores by a vector ("bsd,d->bs"); opset 17
  norm_weight_shapes.onnx
                     norms whose weights are [1, 1, d], [1, d] and (Cohere's per-head LayerNorm of q)
                     [heads, head_dim]; opset 17
  tiled_mlp.onnx     x.repeat (Tile), an expanded parameter, softplus and log; opset 17
  rope_in_forward.onnx, rope_in_forward_seq.onnx
                     rotary embedding whose table forward computes (outer, cat, cos, sin of constants);
                     static and symbolic `seq`, opset 17

  rotary_cache.onnx, rotary_cache_seq.onnx
                     Hugging Face 4.31's rotary embedding: cached cos and sin sliced to the sequence,
                     squeezed (an If on the squeezed dim with a symbolic `seq`) and taken at arange(seq)
                     position ids; static and symbolic `seq`, opset 17

  qwen2_block.onnx, qwen2_block_seq.onnx
                     Qwen2 as Hugging Face writes it: biased q/k/v, RMSNorm in float32 with rsqrt, the rotary
                     table computed in forward from position_ids (inv_freq @ positions, cos, sin) with Qwen2's
                     base (rope_theta) of 1e6, repeat_kv,
                     a finfo.min triu mask added, softmax in float32; static and symbolic `seq`, opset 17
  gemma_block.onnx   Gemma: (1 + w) RMSNorm, multi-query attention with head_dim * heads != hidden, the
                     query scaled first, scores soft-capped (tanh(x / cap) * cap), masked_fill of a bool triu,
                     a gelu(tanh)-gated MLP; opset 17
  phi_block.onnx     Phi-2: one LayerNorm feeding attention and MLP in parallel, partial rotary (a slice of
                     the head dims rotated, the rest passed, cat), gelu_new written out; opset 17
  gptj_block.onnx, gptj_block_seq.onnx
                     GPT-J's interleaved rotary (x[..., ::2], x[..., 1::2], stack, flatten), torch.where of a
                     bool tril buffer with finfo.min before the division by sqrt(head_dim); static and
                     symbolic `seq`, opset 17
  falcon_block.onnx  Falcon: one fused query_key_value for multi-query attention viewed as heads + 2, k and v
                     taken with a list index (Gather) and expanded, parallel MLP; opset 17
  alibi_attention.onnx
                     BLOOM-style ALiBi: a per-head bias of the key distance added to the scores, then
                     masked_fill of a bool triu with -inf; opset 17

  neox_block.onnx    GPT-NeoX: the fused qkv viewed (batch, seq, heads, 3 * head_dim) and sliced, partial
                     rotary (a quarter of the head dims), torch.where of a bool tril buffer; opset 17
  torch_mha.onnx     torch.nn.MultiheadAttention (batch_first) with a bool triu attn_mask; opset 17
  torch_encoder_layer.onnx
                     torch.nn.TransformerEncoderLayer (norm_first, ReLU) with
                     generate_square_subsequent_mask as src_mask; opset 17
  masked_fills.onnx  a padding mask of -inf over whole tiles of keys, and masked_fill of 0 over a bool triu
                     (a select), each before a softmax; 32 rows, opset 17
  padding_mask_attention.onnx
                     BERT's self-attention with Hugging Face's extended padding mask: (1 - attention_mask) *
                     finfo.min added to every query's scores (not causal), the last 3 of 8 keys padded; opset 17
  input_views.onnx   the input viewed as heads, its halves swapped (slices and a cat) and its first head
                     expanded: views of an input read in orders of their own; opset 17
  mqa_broadcast.onnx, gqa_broadcast.onnx
                     multi-query attention written with matmul's broadcasting: one key and value head
                     [b, 1, s, d] against every query head, or grouped as [b, kv, rep, s, d] against
                     [b, kv, 1, s, d]; a causal masked_fill of a tril; opset 17
  more_activations.onnx
                     ELU, SELU, CELU, a learned per-channel PReLU, sign and log_softmax; opset 17
  repeat_interleave_kv_seq.onnx
                     mistral-src's repeat_kv (repeat_interleave along dim 2 of [b, s, kv, hd]) with a symbolic
                     `seq`: torch writes a Loop over SplitToSequence, which stc imports as an unsqueeze,
                     expand and reshape once the axis is fixed; opset 17
  repeat_interleave_table.onnx
                     a rotary table computed in forward as Cohere computes it (repeat_interleave of
                     outer(arange(s), inv_freq)): a Loop over constants, torch not knowing arange(s)'s length;
                     opset 17
  repeat_interleave_heads_seq.onnx
                     OpenELM's keys.repeat_interleave(groups, dim=1) over [b, kv, s, hd] with a symbolic
                     `seq`: torch's Loop reshapes each slice with a 0 that keeps the repeat count where it
                     meant the sequence, so the model's product of q and k does not meet; opset 17
  repeat_interleave_rows.onnx
                     a table from arange(s) repeated along its first axis: torch's Loop reshapes each slice
                     [1, 2, d] with [-1, 0], a 0 keeping the 2 where torch meant d, and the sum over the
                     table's rows reads that shape (stc imports what ONNX defines, with a note); opset 17
  topk_beside_view_seq.onnx
                     a view over a symbolic `seq` beside TopK, which stc refuses by name; opset 17
  cached_attention_past.onnx
                     a decode step over a cache given as inputs (x, past_k, past_v), the new keys and values
                     appended by torch.cat along a symbolic `past`, which the graph takes only fixed; opset 14
  cached_attention_all_seq.onnx
                     the same with the batch and the new tokens dynamic too, whose shape arithmetic the import
                     needs fixed; opset 14
  tiny_llama_seq.onnx
                     a whole two-layer Llama (x plus the embeddings of token ids, one rotary table and causal
                     mask computed in forward for both layers, torch.repeat_interleave of the rotated keys, a
                     head tied to the embedding) over a symbolic `seq`: torch 1.13 reshapes the keys' slices
                     with 0s that keep the expanded sizes (stc imports torch's shape, with a note); opset 17
  sliding_window_seq.onnx
                     Mistral's sliding-window mask at a window of 16 over a symbolic `seq`: causal at every
                     length up to 16, so kept unfixed it would look causal at two short lengths (stc refuses
                     to keep it symbolic: the window is a constant of the mask's own); opset 17
  recent_keys_seq.onnx
                     attention over the last 16 keys, the edge computed from the length (arange(n) < n - 16):
                     no key masked at 16 rows or fewer (stc refuses to keep `seq` symbolic); opset 17
  chunked_attention_seq.onnx, squeeze_all_seq.onnx, window_of_width_seq.onnx
                     what two lengths cannot tell apart, each refused symbolic by stc: attention in blocks of
                     16 ((n + 15) // 16 blocks, a reshape's target), squeeze() of every axis of length 1 (the
                     sequence's at 1 row), a causal window as wide as the model (i - j >= x.size(-1)); opset 17
  disentangled_gather.onnx
                     DeBERTa-v2's content-to-position term: log-bucketed relative positions (sign, log, ceil
                     of constants), torch.gather of the scores against relative embeddings per query row at
                     constant indices; opset 17
  stream_rotary.onnx rotary angles computed from data as Hugging Face 4.38+ computes them from position_ids
                     given as an input (inv_freq @ positions, cat((freqs, freqs)), cos and sin of a stream),
                     the positions a projection of x; opset 17
  t5_decoder_attention.onnx, t5_encoder_attention.onnx
                     T5's attention: a relative-position bias (buckets computed with log, min and where, a
                     learned [buckets, heads] table), causal (masked_fill after the bias, scores.float()
                     before the softmax) or bidirectional; opset 17
  nanogpt_sdpa.onnx, nanogpt_sdpa_seq.onnx
                     nanoGPT's block on its flash path, F.scaled_dot_product_attention(is_causal=True), as
                     torch 2 exports it (opset 14's symbolic, reproduced by a Function for torch 1.13: the
                     scale from the shape of q, its square root on q and k, a causal mask of Trilu and Where
                     over Expand of the shapes); fixed and symbolic `seq`, opset 14

The files are committed, so the tests run without torch; so are the NAME.io.bin files (torch's input and
output) of the blocks written with reference implementations' idioms.
"""
import math
import os
import sys
import warnings

import onnx
import torch
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "onnx")


class Mlp(nn.Module):
    def __init__(self, d=32, f=64):
        super().__init__()
        self.up = nn.Linear(d, f)
        self.down = nn.Linear(f, d)

    def forward(self, x):
        return self.down(nn.functional.gelu(self.up(x)))


class Gpt2Block(nn.Module):
    def __init__(self, d=64, heads=4, seq=8):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def split_heads(self, t):
        b, s, _ = t.shape
        return t.view(b, s, self.heads, self.dh).permute(0, 2, 1, 3)

    def forward(self, x):
        b, s, d = x.shape
        h = self.ln_1(x)
        q, k, v = self.c_attn(h).split(d, dim=2)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh)
        mask = self.bias[:, :, :s, :s]
        w = torch.where(mask.bool(), w, torch.tensor(-1e4))
        w = nn.functional.softmax(w, dim=-1)
        a = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(b, s, d)
        x = x + self.c_proj(a)
        h = self.ln_2(x)
        m = self.mlp_proj(nn.functional.gelu(self.c_fc(h), approximate="tanh"))
        return x + m


class RmsNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        v = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(v + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d=64, heads=4, kv_heads=2, ffn=128, seq=8):
        super().__init__()
        self.heads, self.kv, self.dh = heads, kv_heads, d // heads
        self.input_layernorm = RmsNorm(d)
        self.q_proj = nn.Linear(d, heads * self.dh, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.o_proj = nn.Linear(heads * self.dh, d, bias=False)
        self.post_attention_layernorm = RmsNorm(d)
        self.gate_proj = nn.Linear(d, ffn, bias=False)
        self.up_proj = nn.Linear(d, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.dh, 2).float() / self.dh))
        t = torch.arange(seq).float()
        freqs = torch.outer(t, inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), -1e4), diagonal=1))

    def forward(self, x):
        b, s, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, s, self.heads, self.dh).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.kv, self.dh).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.kv, self.dh).transpose(1, 2)
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        rep = self.heads // self.kv
        k = k[:, :, None, :, :].expand(b, self.kv, rep, s, self.dh).reshape(b, self.heads, s, self.dh)
        v = v[:, :, None, :, :].expand(b, self.kv, rep, s, self.dh).reshape(b, self.heads, s, self.dh)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.dh) + self.mask
        w = nn.functional.softmax(w, dim=-1)
        a = torch.matmul(w, v).transpose(1, 2).reshape(b, s, self.heads * self.dh)
        x = x + self.o_proj(a)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention, as written there (mask="buffer") or with the mask built in forward (mask="tril")."""

    def __init__(self, d=64, heads=4, max_seq=16, mask="buffer"):
        super().__init__()
        self.heads, self.mask = heads, mask
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.register_buffer("bias", torch.tril(torch.ones(max_seq, max_seq)).view(1, 1, max_seq, max_seq))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if self.mask == "buffer":
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        else:
            keep = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            att = att.masked_fill(~keep, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


def repeat_kv(h, n_rep):
    """Hugging Face's repeat_kv: (batch, kv_heads, seq, head_dim) -> (batch, kv_heads * n_rep, seq, head_dim)."""
    b, kv_heads, slen, head_dim = h.shape
    if n_rep == 1:
        return h
    h = h[:, :, None, :, :].expand(b, kv_heads, n_rep, slen, head_dim)
    return h.reshape(b, kv_heads * n_rep, slen, head_dim)


class GqaAttention(nn.Module):
    """Hugging Face's Llama attention without rope: repeat_kv (or repeat_interleave), an additive causal mask
    (or none: bidirectional)."""

    def __init__(self, d=64, heads=4, kv_heads=2, interleave=False, causal=True):
        super().__init__()
        self.heads, self.kv, self.dh, self.interleave, self.causal = heads, kv_heads, d // heads, interleave, causal
        self.q_proj = nn.Linear(d, heads * self.dh, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.o_proj = nn.Linear(heads * self.dh, d, bias=False)

    def forward(self, x):
        bsz, q_len, _ = x.size()
        q = self.q_proj(x).view(bsz, q_len, self.heads, self.dh).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.kv, self.dh).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.kv, self.dh).transpose(1, 2)
        rep = self.heads // self.kv
        if self.interleave:
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        else:
            k, v = repeat_kv(k, rep), repeat_kv(v, rep)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.dh)
        if self.causal:
            w = w + torch.full((q_len, q_len), float("-inf")).triu(1)
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(o)


class Pointwise(nn.Module):
    """Elementwise functions written out, none of them part of a recognised pattern."""

    def __init__(self, d=32):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        h = self.lin(x)
        return (torch.erf(h) + torch.sigmoid(h) * x + h.pow(2) + torch.sqrt(torch.abs(h) + 1) +
                torch.rsqrt(h * h + 1) - torch.maximum(h, x) + torch.minimum(h, -x))


class SelectMlp(nn.Module):
    """Selects and bounds on data, as model code writes them beside the usual activations."""

    def __init__(self, d=32, f=64):
        super().__init__()
        self.up = nn.Linear(d, f)
        self.w = nn.Parameter(0.2 * torch.randn(f, d))

    def forward(self, x):
        h = self.up(x)
        h = torch.where(h > 0, h, 0.01 * h)  # a leaky ReLU written as a select
        g = torch.where(h < -0.05, torch.zeros_like(h), torch.clamp(h, min=-1.0, max=1.0))
        y = torch.einsum("bf,fd->bd", g, self.w)
        return y + torch.where(x >= 0.2, 1.0, -1.0) * nn.functional.hardtanh(y)


class EinsumAttention(nn.Module):
    """Causal attention written with einsum, chunk, learned positions and a bool mask built in forward."""

    def __init__(self, d=64, heads=4, max_pos=32):
        super().__init__()
        self.heads = heads
        self.wpe = nn.Embedding(max_pos, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        x = x + self.wpe(torch.arange(0, T, dtype=torch.long))
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        hs = C // self.heads
        q, k, v = (t.view(B, T, self.heads, hs) for t in (q, k, v))
        att = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(hs)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        att = att.masked_fill(mask, torch.finfo(att.dtype).min).softmax(dim=-1)
        y = torch.einsum("bhqk,bkhd->bqhd", att, v)
        return self.proj(y.reshape(B, T, C))


class SlidingWindowAttention(nn.Module):
    """Mistral's attention mask as Hugging Face built it: finfo.min above the diagonal (arange and a
    comparison), and again for keys more than `window` positions back (a bool tril), masked_fill in place."""

    def __init__(self, d=64, heads=4, window=3):
        super().__init__()
        self.heads, self.window = heads, window
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in self.qkv(x).split(C, dim=-1))
        mask = torch.full((T, T), torch.finfo(x.dtype).min)
        cond = torch.arange(T)
        mask.masked_fill_(cond < (cond + 1).view(T, 1), 0)
        mask.masked_fill_(torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-self.window), torch.finfo(x.dtype).min)
        att = nn.functional.softmax(q @ k.transpose(-2, -1) / math.sqrt(C // self.heads) + mask, dim=-1)
        return self.o((att @ v).transpose(1, 2).reshape(B, T, C))


class RecentKeys(nn.Module):
    """Attention over the last `window` keys alone, the edge computed from the length (arange(n) < n - window,
    an additive -1e9): at 16 and below no key is masked."""

    def __init__(self, d=64, window=16):
        super().__init__()
        self.window = window
        self.q = nn.Linear(d, d); self.k = nn.Linear(d, d); self.v = nn.Linear(d, d)

    def forward(self, x):
        n = x.shape[1]
        old = (torch.arange(n) < n - self.window).float() * -1e9
        scores = self.q(x) @ self.k(x).transpose(-1, -2) / 8.0 + old
        return scores.softmax(-1) @ self.v(x)


class ChunkedAttention(nn.Module):
    """Attention within blocks of 16 positions, the block count a ceil-division of the length ((n + 15) // 16
    blocks, as a reshape's target): one block at 16 rows or fewer."""

    def __init__(self, d=64):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d); self.o = nn.Linear(d, d)

    def forward(self, x):
        b, n, c = x.shape
        blocks = (n + 15) // 16
        q, k, v = [t.reshape(b, blocks, -1, c) for t in self.qkv(x).split(c, 2)]
        att = (q @ k.transpose(-1, -2) / math.sqrt(c)).softmax(-1)
        return self.o((att @ v).reshape(b, n, c))


class SqueezeAll(nn.Module):
    """squeeze() of every axis of length 1, the sequence's too where it is 1, then a softmax over the rows."""

    def __init__(self, d=64):
        super().__init__()
        self.l = nn.Linear(d, d)

    def forward(self, x):
        return self.l(x).squeeze().softmax(0)


class WindowOfWidth(nn.Module):
    """A causal mask with a window as wide as the model (i - j >= C, C = x.size(-1)): causal up to C rows."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d); self.o = nn.Linear(d, d)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = [t.view(b, n, self.heads, c // self.heads).transpose(1, 2) for t in self.qkv(x).split(c, 2)]
        scores = q @ k.transpose(-1, -2) / math.sqrt(c // self.heads)
        i = torch.arange(n)
        scores = scores.masked_fill((i[None, :] > i[:, None]) | (i[:, None] - i[None, :] >= c), float("-inf"))
        return self.o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, c))


class TiledMlp(nn.Module):
    """x.repeat (Tile), a parameter expanded to the rows, softplus and log outside any pattern."""

    def __init__(self, d=32):
        super().__init__()
        self.wide = nn.Linear(2 * d, d)
        self.gain = nn.Parameter(torch.randn(1, d))

    def forward(self, x):
        h = self.wide(x.repeat(1, 2)) + self.gain.expand(x.shape[0], -1) * x
        return nn.functional.softplus(h) + torch.log(1 + h * h)


class RopeInForward(nn.Module):
    """Hugging Face's rotary embedding with its table computed in forward: outer(arange(T), inv_freq) (an
    Einsum of constants), cat, cos and sin, then rotate_half."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads, self.hs = heads, d // heads
        self.q = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, self.hs, 2).float() / self.hs)), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        freqs = torch.outer(torch.arange(T, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        q = self.q(x).view(B, T, self.heads, self.hs).transpose(1, 2)
        x1, x2 = q[..., : self.hs // 2], q[..., self.hs // 2:]
        q = q * cos + torch.cat((-x2, x1), dim=-1) * sin
        return self.o(q.transpose(1, 2).reshape(B, T, C))


class RotaryCache(nn.Module):
    """Hugging Face 4.31's rotary embedding: cos and sin cached as [1, 1, max, dim] buffers, sliced to the
    sequence, squeezed (cos.squeeze(1).squeeze(0): with a dynamic axis torch exports an If asking whether
    the dim is 1) and taken at position_ids = arange(seq)."""

    def __init__(self, d=64, heads=4, max_pos=32):
        super().__init__()
        self.heads, self.hs = heads, d // heads
        self.q = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.hs, 2).float() / self.hs))
        freqs = torch.outer(torch.arange(max_pos, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos()[None, None], persistent=False)
        self.register_buffer("sin_cached", emb.sin()[None, None], persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        cos = self.cos_cached[:, :, :T, ...].squeeze(1).squeeze(0)
        sin = self.sin_cached[:, :, :T, ...].squeeze(1).squeeze(0)
        position_ids = torch.arange(T).unsqueeze(0)
        cos, sin = cos[position_ids].unsqueeze(1), sin[position_ids].unsqueeze(1)
        q = self.q(x).view(B, T, self.heads, self.hs).transpose(1, 2)
        x1, x2 = q[..., : self.hs // 2], q[..., self.hs // 2:]
        q = q * cos + torch.cat((-x2, x1), dim=-1) * sin
        return self.o(q.transpose(1, 2).reshape(B, T, C))


class Qwen2RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__(); self.weight = nn.Parameter(torch.randn(d) * 0.1 + 1); self.variance_epsilon = eps
    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)

class Rotary(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim); sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)

class Qwen2Block(nn.Module):
    """Qwen2 as HF writes it: q/k/v with bias, rope from position_ids built in forward, repeat_kv, causal mask
    built in forward with torch.full(min).triu(1), softmax in float32, SiLU-gated MLP."""
    def __init__(self, d=64, heads=4, kv=2, ffn=96):
        super().__init__()
        self.heads, self.kv, self.hd = heads, kv, d // heads
        self.input_layernorm = Qwen2RMSNorm(d); self.post_attention_layernorm = Qwen2RMSNorm(d)
        self.q_proj = nn.Linear(d, heads * self.hd, bias=True)
        self.k_proj = nn.Linear(d, kv * self.hd, bias=True)
        self.v_proj = nn.Linear(d, kv * self.hd, bias=True)
        self.o_proj = nn.Linear(heads * self.hd, d, bias=False)
        self.gate_proj = nn.Linear(d, ffn, bias=False); self.up_proj = nn.Linear(d, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, d, bias=False)
        self.rotary = Rotary(self.hd, base=1000000.0)  # Qwen2's rope_theta
    def forward(self, x):
        bsz, q_len, _ = x.size()
        position_ids = torch.arange(q_len, device=x.device).unsqueeze(0)
        residual = x
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(bsz, q_len, -1, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(bsz, q_len, -1, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(bsz, q_len, -1, self.hd).transpose(1, 2)
        cos, sin = self.rotary(v, position_ids)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k = repeat_kv(k, self.heads // self.kv); v = repeat_kv(v, self.heads // self.kv)
        attn = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        mask = torch.full((q_len, q_len), torch.finfo(x.dtype).min, device=x.device).triu(1)
        attn = attn + mask[None, None, :, :]
        attn = nn.functional.softmax(attn, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(attn, v).transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        x = residual + self.o_proj(o)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))

class GemmaRMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__(); self.eps = eps; self.weight = nn.Parameter(torch.randn(d) * 0.1)
    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)

class GemmaBlock(nn.Module):
    """Gemma: (1 + w) RMSNorm, head_dim independent of hidden (heads * head_dim != d), multi-query (1 kv head),
    gelu(tanh) gated MLP, scores soft-capped (Gemma 2: tanh(x / cap) * cap), query scaled before the matmul."""
    def __init__(self, d=64, heads=4, kv=1, hd=32, ffn=128, cap=50.0):
        super().__init__()
        self.heads, self.kv, self.hd, self.cap = heads, kv, hd, cap
        self.input_layernorm = GemmaRMSNorm(d); self.post_attention_layernorm = GemmaRMSNorm(d)
        self.q_proj = nn.Linear(d, heads * hd, bias=False); self.k_proj = nn.Linear(d, kv * hd, bias=False)
        self.v_proj = nn.Linear(d, kv * hd, bias=False); self.o_proj = nn.Linear(heads * hd, d, bias=False)
        self.gate_proj = nn.Linear(d, ffn, bias=False); self.up_proj = nn.Linear(d, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, d, bias=False)
        self.rotary = Rotary(hd)
    def forward(self, x):
        bsz, q_len, _ = x.shape
        position_ids = torch.arange(q_len).unsqueeze(0)
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(bsz, q_len, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(bsz, q_len, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(bsz, q_len, self.kv, self.hd).transpose(1, 2)
        cos, sin = self.rotary(v, position_ids)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k = repeat_kv(k, self.heads // self.kv); v = repeat_kv(v, self.heads // self.kv)
        q = q * self.hd ** -0.5
        attn = torch.matmul(q, k.transpose(2, 3))
        attn = torch.tanh(attn / self.cap) * self.cap
        causal = torch.triu(torch.ones(q_len, q_len, dtype=torch.bool), diagonal=1)
        attn = attn.masked_fill(causal, float("-inf"))
        attn = nn.functional.softmax(attn, dim=-1)
        o = torch.matmul(attn, v).transpose(1, 2).reshape(bsz, q_len, -1)
        x = x + self.o_proj(o)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(nn.functional.gelu(self.gate_proj(h), approximate="tanh") * self.up_proj(h))

class PhiBlock(nn.Module):
    """Phi-2: one LayerNorm, attention and MLP in parallel, partial rotary (first half of the head dims) with
    rotate_half, biased projections, gelu_new written out (0.5 x (1 + tanh(...)))."""
    def __init__(self, d=64, heads=4, rot=8, ffn=128, seq=8):
        super().__init__()
        self.heads, self.hd, self.rot = heads, d // heads, rot
        self.ln = nn.LayerNorm(d)
        self.q_proj = nn.Linear(d, d); self.k_proj = nn.Linear(d, d); self.v_proj = nn.Linear(d, d)
        self.dense = nn.Linear(d, d); self.fc1 = nn.Linear(d, ffn); self.fc2 = nn.Linear(ffn, d)
        inv = 1.0 / (10000 ** (torch.arange(0, rot, 2).float() / rot))
        t = torch.arange(seq).float()
        emb = torch.cat((torch.outer(t, inv),) * 2, dim=-1)
        self.register_buffer("cos_cached", emb.cos()); self.register_buffer("sin_cached", emb.sin())
    def forward(self, x):
        b, s, d = x.shape
        h = self.ln(x)
        q = self.q_proj(h).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.heads, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.heads, self.hd).transpose(1, 2)
        cos, sin = self.cos_cached[:s], self.sin_cached[:s]
        q_rot, q_pass = q[..., : self.rot], q[..., self.rot :]
        k_rot, k_pass = k[..., : self.rot], k[..., self.rot :]
        q_rot = q_rot * cos + rotate_half(q_rot) * sin
        k_rot = k_rot * cos + rotate_half(k_rot) * sin
        q = torch.cat((q_rot, q_pass), dim=-1); k = torch.cat((k_rot, k_pass), dim=-1)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        mask = torch.full((s, s), float("-inf")).triu(1)
        w = torch.softmax(w + mask, dim=-1)
        a = torch.matmul(w, v).transpose(1, 2).reshape(b, s, d)
        f = self.fc1(h)
        f = 0.5 * f * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (f + 0.044715 * torch.pow(f, 3.0))))
        return x + self.dense(a) + self.fc2(f)

class GptjBlock(nn.Module):
    """GPT-J's interleaved rotary: x[..., ::2] and x[..., 1::2] rotated, stacked and flattened back."""
    def __init__(self, d=64, heads=4, seq=8):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.ln = nn.LayerNorm(d)
        self.q_proj = nn.Linear(d, d, bias=False); self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False); self.out_proj = nn.Linear(d, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        sinusoid = torch.einsum("i,j->ij", torch.arange(seq).float(), inv)
        self.register_buffer("sin", torch.repeat_interleave(torch.sin(sinusoid), 2, dim=1))
        self.register_buffer("cos", torch.repeat_interleave(torch.cos(sinusoid), 2, dim=1))
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq, dtype=torch.bool)).view(1, 1, seq, seq))
    @staticmethod
    def rotate_every_two(x):
        x1 = x[:, :, :, ::2]
        x2 = x[:, :, :, 1::2]
        x = torch.stack((-x2, x1), dim=-1)
        return x.flatten(-2)
    def forward(self, x):
        b, s, d = x.shape
        h = self.ln(x)
        q = self.q_proj(h).view(b, s, self.heads, self.hd).permute(0, 2, 1, 3)
        k = self.k_proj(h).view(b, s, self.heads, self.hd).permute(0, 2, 1, 3)
        v = self.v_proj(h).view(b, s, self.heads, self.hd).permute(0, 2, 1, 3)
        q = q * self.cos[:s] + self.rotate_every_two(q) * self.sin[:s]
        k = k * self.cos[:s] + self.rotate_every_two(k) * self.sin[:s]
        w = torch.matmul(q, k.transpose(-1, -2))
        w = torch.where(self.bias[:, :, :s, :s], w, torch.tensor(torch.finfo(w.dtype).min))
        w = w / math.sqrt(self.hd)
        w = nn.functional.softmax(w, dim=-1)
        a = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(b, s, d)
        return x + self.out_proj(a)

class FalconBlock(nn.Module):
    """Falcon-7B: fused query_key_value for multi-query (heads + 2 slices of head_dim), parallel attention
    and MLP off one LayerNorm, GELU, k expanded to every head."""
    def __init__(self, d=64, heads=4, seq=8):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.ln = nn.LayerNorm(d)
        self.query_key_value = nn.Linear(d, d + 2 * self.hd, bias=False)
        self.dense = nn.Linear(d, d, bias=False)
        self.up = nn.Linear(d, 4 * d, bias=False); self.down = nn.Linear(4 * d, d, bias=False)
    def forward(self, x):
        b, s, d = x.shape
        h = self.ln(x)
        fused = self.query_key_value(h).view(b, s, self.heads + 2, self.hd)
        q = fused[..., :-2, :].transpose(1, 2)
        k = fused[..., [-2], :].transpose(1, 2)
        v = fused[..., [-1], :].transpose(1, 2)
        k = k.expand(-1, self.heads, -1, -1); v = v.expand(-1, self.heads, -1, -1)
        w = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        mask = torch.ones(s, s, dtype=torch.bool).triu(1)
        w = w.masked_fill(mask, float("-1e9")).softmax(dim=-1)
        a = (w @ v).transpose(1, 2).reshape(b, s, d)
        return x + self.dense(a) + self.down(nn.functional.gelu(self.up(h)))

class AlibiBlock(nn.Module):
    """BLOOM/MPT-style ALiBi: a per-head linear bias of the key distance added to the scores, causal."""
    def __init__(self, d=64, heads=4, seq=8):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d); self.out = nn.Linear(d, d)
        slopes = torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])
        self.register_buffer("slopes", slopes)
    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, s, self.heads, self.hd).transpose(1, 2)
        k = k.view(b, s, self.heads, self.hd).transpose(1, 2)
        v = v.view(b, s, self.heads, self.hd).transpose(1, 2)
        pos = torch.arange(s)
        rel = (pos[None, :] - pos[:, None]).float()
        alibi = self.slopes[:, None, None] * rel[None, :, :]
        w = q @ k.transpose(-1, -2) * self.hd ** -0.5 + alibi[None]
        w = w.masked_fill(torch.triu(torch.ones(s, s, dtype=torch.bool), 1), float("-inf"))
        a = (w.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
        return x + self.out(a)


class TorchMha(nn.Module):
    """torch.nn.MultiheadAttention (batch_first) with a bool triu attn_mask."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.mha = nn.MultiheadAttention(d, heads, batch_first=True)
    def forward(self, x):
        s = x.shape[1]
        mask = torch.triu(torch.ones(s, s, dtype=torch.bool), 1)
        y, _ = self.mha(x, x, x, attn_mask=mask, need_weights=False)
        return y

class TorchEncoder(nn.Module):
    """torch.nn.TransformerEncoderLayer (norm_first) with generate_square_subsequent_mask."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d, heads, 128, dropout=0.0, batch_first=True, norm_first=True)
    def forward(self, x):
        s = x.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(s)
        return self.layer(x, src_mask=mask)

class NeoxBlock(nn.Module):
    """GPT-NeoX: fused qkv viewed (b, s, heads, 3 * hd) and sliced, partial rotary (rotary_pct 0.25)."""
    def __init__(self, d=64, heads=4, seq=8):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.rot = self.hd // 4
        self.ln = nn.LayerNorm(d); self.qkv = nn.Linear(d, 3 * d); self.dense = nn.Linear(d, d)
        inv = 1.0 / (10000 ** (torch.arange(0, self.rot, 2).float() / self.rot))
        emb = torch.cat((torch.outer(torch.arange(seq).float(), inv),) * 2, dim=-1)
        self.register_buffer("cos", emb.cos()[None, None]); self.register_buffer("sin", emb.sin()[None, None])
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq, dtype=torch.bool)).view(1, 1, seq, seq))
    def forward(self, x):
        b, s, d = x.shape
        qkv = self.qkv(self.ln(x)).view(b, s, self.heads, 3 * self.hd).permute(0, 2, 1, 3)
        q, k, v = qkv[..., : self.hd], qkv[..., self.hd : 2 * self.hd], qkv[..., 2 * self.hd :]
        qr, qp = q[..., : self.rot], q[..., self.rot :]
        kr, kp = k[..., : self.rot], k[..., self.rot :]
        cos, sin = self.cos[:, :, :s], self.sin[:, :, :s]
        qr = qr * cos + rotate_half(qr) * sin
        kr = kr * cos + rotate_half(kr) * sin
        q = torch.cat((qr, qp), dim=-1); k = torch.cat((kr, kp), dim=-1)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        w = torch.where(self.bias[:, :, :s, :s], w, torch.finfo(w.dtype).min)
        a = torch.matmul(torch.softmax(w, dim=-1), v).permute(0, 2, 1, 3).reshape(b, s, d)
        return x + self.dense(a)


class T5Attention(nn.Module):
    """T5's relative position bias (bucketed with log, a learned [buckets, heads] table), no scaling, RMS norm."""
    def __init__(self, d=64, heads=4, buckets=32, max_distance=128, causal=True):
        super().__init__()
        self.heads, self.hd, self.buckets, self.max_distance, self.causal = heads, d // heads, buckets, max_distance, causal
        self.q = nn.Linear(d, d, bias=False); self.k = nn.Linear(d, d, bias=False); self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.relative_attention_bias = nn.Embedding(buckets, heads)
    def bucket(self, rel):
        ret = 0
        n = -rel
        if not self.causal:
            nb = self.buckets // 2
            ret = ret + (n < 0).to(torch.long) * nb
            n = torch.abs(n)
        else:
            nb = self.buckets
            n = torch.max(n, torch.zeros_like(n))
        max_exact = nb // 2
        is_small = n < max_exact
        val_if_large = max_exact + (torch.log(n.float() / max_exact) / math.log(self.max_distance / max_exact) * (nb - max_exact)).to(torch.long)
        val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, nb - 1))
        return ret + torch.where(is_small, n, val_if_large)
    def forward(self, x):
        b, s, d = x.shape
        q = self.q(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.k(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        v = self.v(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        ctx = torch.arange(s, dtype=torch.long)[:, None]
        mem = torch.arange(s, dtype=torch.long)[None, :]
        buckets = self.bucket(mem - ctx)
        bias = self.relative_attention_bias(buckets).permute(2, 0, 1).unsqueeze(0)
        scores = torch.matmul(q, k.transpose(3, 2)) + bias
        if self.causal:
            scores = scores.masked_fill(torch.triu(torch.ones(s, s, dtype=torch.bool), 1), float("-inf"))
        w = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        a = torch.matmul(w, v).transpose(1, 2).reshape(b, s, d)
        return self.o(a)


class MetaLlamaAttention(nn.Module):
    """Meta's llama reference, its rotary written without complex numbers: each head viewed as
    (head_dim / 2, 2) pairs, the pairs rotated, stacked and flattened; repeat_kv on (b, s, kv_heads, hd)
    before the transpose (x[:, :, :, None, :].expand.reshape); a triu mask of -inf concatenated after the
    zero columns of no cached keys; scores.float() through the softmax, then type_as."""

    def __init__(self, d=64, heads=4, kv_heads=2, seq=8):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv_heads, d // heads
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        freqs = 1.0 / (10000 ** (torch.arange(0, self.hd, 2)[: self.hd // 2].float() / self.hd))
        angles = torch.outer(torch.arange(seq).float(), freqs)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def rotary(self, t):  # [b, s, heads, hd]
        pairs = t.float().reshape(*t.shape[:-1], -1, 2)
        t0, t1 = pairs[..., 0], pairs[..., 1]
        c, s = self.cos[None, :, None, :], self.sin[None, :, None, :]
        return torch.stack([t0 * c - t1 * s, t0 * s + t1 * c], dim=-1).flatten(3).type_as(t)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.rotary(self.wq(x).view(b, s, self.h, self.hd))
        k = self.rotary(self.wk(x).view(b, s, self.kv, self.hd))
        v = self.wv(x).view(b, s, self.kv, self.hd)
        rep = self.h // self.kv
        k = k[:, :, :, None, :].expand(b, s, self.kv, rep, self.hd).reshape(b, s, self.h, self.hd)
        v = v[:, :, :, None, :].expand(b, s, self.kv, rep, self.hd).reshape(b, s, self.h, self.hd)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        mask = torch.cat([torch.zeros((s, 0)), mask], dim=1)  # torch.hstack, which torch 1.13 cannot export
        probs = torch.softmax((scores + mask).float(), dim=-1).type_as(q)
        return x + self.wo(torch.matmul(probs, v).transpose(1, 2).contiguous().view(b, s, -1))


class OptPositions(nn.Module):
    """OPT's learned positions: cumsum of an all-ones attention mask, less one, offset by 2, looked up."""

    def __init__(self, d=64, seq=8):
        super().__init__()
        self.positions = nn.Embedding(seq + 2, d)
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        mask = torch.ones(x.shape[0], x.shape[1], dtype=torch.long)
        positions = (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() - 1
        return self.fc(x + self.positions(positions + 2))


class NormVariants(nn.Module):
    """Norms as other code writes them: the Annotated Transformer's LayerNorm over an unbiased std, one over
    an unbiased var, and RMS norms as F.normalize and as x.norm scaled by sqrt(d)."""

    def __init__(self, d=64):
        super().__init__()
        self.a, self.b, self.g = nn.Parameter(torch.randn(d)), nn.Parameter(torch.randn(d)), nn.Parameter(torch.randn(d))
        self.d = d

    def forward(self, x):
        m = x.mean(-1, keepdim=True)
        h = self.a * (x - m) / (x.std(-1, keepdim=True) + 1e-6) + self.b
        h = h + (x - m) / torch.sqrt(x.var(-1, keepdim=True) + 1e-5)
        h = h + torch.nn.functional.normalize(x, dim=-1) * math.sqrt(self.d) * self.g
        return h + x / (x.norm(2, dim=-1, keepdim=True) * self.d ** -0.5 + 1e-8)


class MaskedFills(nn.Module):
    """Two masks before softmaxes that are not causal: keys past a prompt's length masked with -inf (a
    padding mask; over 32 keys, 16 to 31 are a whole tile of them), and masked_fill with 0 over a bool triu
    (which sets those scores to 0: no mask, a select)."""

    def __init__(self, d=64, heads=4, seq=32, length=12):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d, bias=False)
        pad = torch.zeros(seq, seq)
        pad[:, length:] = float("-inf")
        self.register_buffer("pad", pad)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in self.qkv(x).split(C, dim=-1))
        s = q @ k.transpose(-2, -1) / math.sqrt(C // self.heads)
        padded = nn.functional.softmax(s + self.pad[:T, :T], dim=-1)
        zeroed = nn.functional.softmax(s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), 0.0), dim=-1)
        return self.o(((padded + zeroed) @ v).transpose(1, 2).reshape(B, T, C))


class PaddingMaskAttention(nn.Module):
    """BERT's self-attention as Hugging Face writes it for a padded batch: the extended attention mask
    (1 - attention_mask)[:, None, None, :] * finfo.min added to the scores of every query, not causal. The
    projection's weights are scaled by `sharp`, so that each query weighs a few keys, as a trained model's
    do (at initialisation every softmax is nearly even, and scores flattened by the mask would pass)."""

    def __init__(self, d=64, heads=4, seq=8, pad=3, sharp=3.0):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        with torch.no_grad():
            self.qkv.weight.mul_(sharp)
        self.o = nn.Linear(d, d)
        attention_mask = torch.ones(1, seq)
        attention_mask[:, seq - pad:] = 0
        self.register_buffer("attention_mask", attention_mask)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in self.qkv(x).split(C, dim=-1))
        s = q @ k.transpose(-2, -1) / math.sqrt(C // self.heads)
        extended = (1.0 - self.attention_mask[:, None, None, :T]) * torch.finfo(x.dtype).min
        p = nn.functional.softmax(s + extended, dim=-1)
        return self.o((p @ v).transpose(1, 2).reshape(B, T, C))


class InputViews(nn.Module):
    """The input itself viewed as heads and read in orders of the view's own: its halves swapped
    (slices and a cat, as rotate_half does to q), and its first head expanded over the others."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        v = x.view(B, T, self.heads, C // self.heads)
        half = C // self.heads // 2
        swapped = torch.cat([v[..., half:], v[..., :half]], dim=-1)
        first = v[:, :, :1, :].expand(B, T, self.heads, C // self.heads)
        return self.lin((swapped + first).reshape(B, T, C))


class BroadcastHeads(nn.Module):
    """Multi-query attention written with matmul's broadcasting (PaLM, StarCoder): one key and value head
    [b, 1, s, d] against every query head, no expand; or grouped (kv_heads > 1) as [b, kv, rep, s, d]
    against [b, kv, 1, s, d]. A causal masked_fill of a tril before the softmax."""

    def __init__(self, d=64, heads=4, kv_heads=1):
        super().__init__()
        self.heads, self.kv, self.dh = heads, kv_heads, d // heads
        self.q = nn.Linear(d, d)
        self.kv_proj = nn.Linear(d, 2 * kv_heads * self.dh)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.heads, self.dh).transpose(1, 2)
        k, v = (t.view(B, T, self.kv, self.dh).transpose(1, 2) for t in self.kv_proj(x).split(self.kv * self.dh, dim=-1))
        if self.kv == 1:
            s = q @ k.transpose(-2, -1)
        else:
            q = q.view(B, self.kv, self.heads // self.kv, T, self.dh)
            k, v = k.unsqueeze(2), v.unsqueeze(2)
            s = torch.matmul(q, k.transpose(-2, -1))
        s = s / math.sqrt(self.dh)
        s = s.masked_fill(torch.tril(torch.ones(T, T, dtype=torch.bool)) == 0, float("-inf"))
        y = torch.softmax(s, dim=-1) @ v
        return self.o(y.reshape(B, self.heads, T, self.dh).transpose(1, 2).reshape(B, T, C))


class MoreActivations(nn.Module):
    """ELU, SELU, CELU, a learned per-channel PReLU, sign and log_softmax, each on a projection, summed."""

    def __init__(self, d=64):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.prelu = nn.PReLU(d)
        with torch.no_grad():
            self.prelu.weight.uniform_(0.05, 0.5)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        h = self.lin(x)
        f = nn.functional
        channels = self.prelu(h.transpose(1, 2)).transpose(1, 2)  # PReLU's channels are dim 1
        y = f.elu(h) + f.selu(h) + f.celu(h, alpha=0.5) + channels + torch.sign(h) * 0.25
        return self.out(y) + f.log_softmax(h, dim=-1)


class ThresholdSelects(nn.Module):
    """Selects whose branch not taken overflows: softplus with its threshold written out, as model code
    guards log1p(exp(h)) (exp is inf past 88), and a where against a -inf constant."""

    def __init__(self, d=64):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        h = self.lin(x) * 40
        soft = torch.where(h > 20, h, torch.log1p(torch.exp(h)))
        floor = torch.where(h < -30, torch.full_like(h, float("-inf")), h)
        return self.out(soft) + torch.exp(floor / 40)


class NormWeightShapes(nn.Module):
    """Norms whose weights are not [d]: an RMSNorm gain of shape [1, 1, d], a LayerNorm written out with
    weight and bias [1, d], and Cohere's per-head LayerNorm of q with a [heads, head_dim] weight, no bias."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.g = nn.Parameter(1 + 0.3 * torch.randn(1, 1, d))
        self.w = nn.Parameter(1 + 0.3 * torch.randn(1, d))
        self.b = nn.Parameter(0.1 * torch.randn(1, d))
        self.q_w = nn.Parameter(1 + 0.3 * torch.randn(heads, d // heads))
        self.q = nn.Linear(d, d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.g
        m = h.mean(-1, keepdim=True)
        h = (h - m) / torch.sqrt((h - m).pow(2).mean(-1, keepdim=True) + 1e-5) * self.w + self.b
        q = self.q(h).view(b, s, self.h, self.hd)
        mean = q.mean(-1, keepdim=True)
        var = (q - mean).pow(2).mean(-1, keepdim=True)
        q = self.q_w * ((q - mean) * torch.rsqrt(var + 1e-5))
        return self.out(q.reshape(b, s, d)) + h


class JaxEinsums(nn.Module):
    """Attention as JAX ports write it: per-head weights [heads, d, head_dim] projected with
    einsum("BTD,NDH->BTNH") and back with "BTNH,NHD->BTD" (two summed indices), a causal mask added, and
    a gate of scores by a vector ("bsd,d->bs")."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.hd = d // heads
        self.wq = nn.Parameter(torch.randn(heads, d, self.hd) / 8)
        self.wk = nn.Parameter(torch.randn(heads, d, self.hd) / 8)
        self.wv = nn.Parameter(torch.randn(heads, d, self.hd) / 8)
        self.wo = nn.Parameter(torch.randn(heads, self.hd, d) / 8)
        self.v = nn.Parameter(torch.randn(d) / 8)

    def forward(self, x):
        s = x.shape[1]
        q = torch.einsum("BTD,NDH->BTNH", x, self.wq)
        k = torch.einsum("BSD,NDH->BSNH", x, self.wk)
        v = torch.einsum("BSD,NDH->BSNH", x, self.wv)
        w = torch.einsum("BTNH,BSNH->BNTS", q, k) / math.sqrt(self.hd)
        p = (w + torch.full((s, s), float("-inf")).triu(1)).softmax(-1)
        o = torch.einsum("BTNH,NHD->BTD", torch.einsum("BNTS,BSNH->BTNH", p, v), self.wo)
        return o + x * torch.sigmoid(torch.einsum("bsd,d->bs", x, self.v))[..., None]


class PadsAndReductions(nn.Module):
    """RWKV's token shift (nn.ZeroPad2d((0, 0, 1, -1)): the sequence padded by one row before and cut by one
    after) mixed with the rows, F.pad of the width by a value and sliced back, torch.flip of a constant ramp,
    and reductions over several axes: a mean over each position's (heads, head_dim) and an amax over
    (positions, head_dim) per head."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.h = heads
        self.lin = nn.Linear(d, d)
        self.out = nn.Linear(d, d)
        self.mix = nn.Parameter(torch.rand(d))
        self.shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.register_buffer("ramp", torch.linspace(-1, 1, d) ** 3)

    def forward(self, x):
        b, s, d = x.shape
        h = self.lin(x)
        mixed = h * self.mix + self.shift(h) * (1 - self.mix)
        wide = nn.functional.pad(h, (2, 2), value=0.5)[..., 1:-3]
        q = h.view(b, s, self.h, d // self.h)
        m = q.mean(dim=(-2, -1), keepdim=True)
        peak = q.amax(dim=(1, 3), keepdim=True)
        g = (q - m) / (peak.abs() + 1)
        return self.out(mixed + wide + g.reshape(b, s, d)) + h * torch.flip(self.ramp, [0])


class RankBroadcastMatmuls(nn.Module):
    """Matmuls whose batch dims broadcast by rank alone, as per-expert or per-group weights are written:
    [1, g, s/g, d] @ [g, d, d] (a Soft-MoE's slots by their experts' weights) and [g, s/g, d] @ [1, g, d, d]."""

    def __init__(self, d=64, groups=2):
        super().__init__()
        self.g = groups
        self.w = nn.Parameter(torch.randn(groups, d, d) / 8)
        self.u = nn.Parameter(torch.randn(1, groups, d, d) / 8)

    def forward(self, x):
        b, s, d = x.shape
        slots = x.view(b, self.g, s // self.g, d) @ self.w
        back = torch.relu(slots).view(self.g, s // self.g, d) @ self.u
        return back.reshape(b, s, d) + x


class InOut(nn.Module):
    """A block between two linear layers of width d: `lin` in, `out` after (forward is the subclass's)."""

    def __init__(self, d=64):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.out = nn.Linear(d, d)


class LogSumExpPools(InOut):
    """torch.logsumexp over the sequence (a soft max-pool, of values up to a few hundred, where exp alone
    overflows f32) and over the features, and an L1 norm (x.norm(p=1, dim=-1)) scaling the rows."""

    def forward(self, x):
        h = self.lin(x)
        pooled = torch.logsumexp(h * 100, dim=1, keepdim=True) / 100
        feat = torch.logsumexp(h, dim=-1)
        l1 = h.norm(p=1, dim=-1, keepdim=True)
        return self.out(h / (l1 + 1) + pooled) + feat[..., None]


class MinPools(InOut):
    """Minima (ReduceMin): torch.amin over the sequence kept (a min-pool), x.min(dim=-1).values over the
    features, and amin over (heads, head_dim) at each position."""

    def __init__(self, d=64, heads=4):
        super().__init__(d)
        self.h = heads

    def forward(self, x):
        b, s, d = x.shape
        h = self.lin(x)
        pooled = h.amin(dim=1, keepdim=True)
        feat = h.min(dim=-1).values
        low = h.view(b, s, self.h, d // self.h).amin(dim=(-2, -1))
        return self.out(h + pooled) + feat[..., None] * low[..., None]


class HfGpt2Attention(nn.Module):
    """Hugging Face's GPT-2 (and GPT-Neo) attention as written there: heads split by
    `tensor.size()[:-1] + (heads, head_dim)`, the bool tril buffer sliced `bias[:, :, kl - ql : kl, :kl]` from
    the query's and key's lengths after the views, `torch.where(mask, w, finfo.min)`."""

    def __init__(self, d=64, heads=4, max_positions=24):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.register_buffer("bias", torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool))
                             .view(1, 1, max_positions, max_positions))
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def _split_heads(self, t):
        return t.view(t.size()[:-1] + (self.heads, self.hd)).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(self.heads * self.hd, dim=2)
        q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], v.size(-1) ** 0.5, dtype=q.dtype)
        ql, kl = q.size(-2), k.size(-2)
        causal = self.bias[:, :, kl - ql: kl, :kl]
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        a = torch.matmul(torch.softmax(w, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        return self.c_proj(a.view(a.size()[:-2] + (self.heads * self.hd,)))


class MptAttention(nn.Module):
    """MosaicML MPT's causal mask: `new_ones(s, s).tril()` negated and sliced `[-s_q:, -s_k:]` from the
    scores' own lengths, then masked_fill(finfo.min); q, k and v from one fused projection."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.Wqkv = nn.Linear(d, 3 * d)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.Wqkv(x).chunk(3, dim=2)
        q = q.view(b, s, self.heads, self.hd).transpose(1, 2)
        k = k.view(b, s, self.heads, self.hd).permute(0, 2, 3, 1)
        v = v.view(b, s, self.heads, self.hd).transpose(1, 2)
        w = q.matmul(k) * (1 / math.sqrt(self.hd))
        s_q, s_k = w.shape[-2:]
        mask = ~w.new_ones(s, s, dtype=torch.float16).tril().to(torch.bool)
        w = w.masked_fill(mask[-s_q:, -s_k:].view(1, 1, s_q, s_k), torch.finfo(q.dtype).min)
        a = torch.softmax(w, dim=-1).matmul(v).transpose(1, 2).reshape(b, s, d)
        return self.out_proj(a)


class BmmViewSoftmax(nn.Module):
    """GPT-NeoX's scores as torch.baddbmm writes them: q and k merged to (batch * heads, seq, head_dim), a
    3-D product viewed back as (batch, heads, seq, seq), the softmax straight after it."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.q, self.k, self.v, self.o = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = (lin(x).view(b, s, self.h, self.hd).permute(0, 2, 1, 3) for lin in (self.q, self.k, self.v))
        scores = torch.zeros(b * self.h, s, s, dtype=x.dtype)
        scores = torch.baddbmm(scores, q.reshape(b * self.h, s, self.hd),
                               k.reshape(b * self.h, s, self.hd).transpose(1, 2), beta=1.0, alpha=0.25)
        w = torch.softmax(scores.view(b, self.h, s, s), dim=-1)
        return self.o((w @ v).permute(0, 2, 1, 3).reshape(b, s, d))


class RoundingOps(InOut):
    """Functions of data that jump: fake quantisation as quantisation-aware training writes it (round half to
    even, clamped), floor and ceil, sign, and the two float remainders (torch.remainder, torch.fmod)."""

    def forward(self, x):
        h = self.lin(x)
        q = torch.round(h / 0.05).clamp(-128, 127) * 0.05
        f = torch.floor(h * 4) / 4 + torch.ceil(h * 2) / 8
        s = torch.sign(h) * h.abs().sqrt()
        r = torch.remainder(h, 0.75) + torch.fmod(h, 0.5)
        return self.out(q + f + s + r)


class AxisSoftmaxes(InOut):
    """log_softmax and softmax over the sequence instead of the features (a log-probability over positions,
    attention-pooling weights)."""

    def forward(self, x):
        h = self.lin(x)
        lp = torch.log_softmax(h, dim=1)
        w = torch.softmax(h * 0.5, dim=-2)
        return self.out(lp * 0.1 + w * x.shape[1])


class StreamRotary(nn.Module):
    """Rotary angles computed from data, as Hugging Face 4.38+ computes them from position_ids given as a
    model input (inv_freq @ positions, cat((freqs, freqs)), cos and sin of a stream): the positions here a
    projection of x, so that one input suffices; a causal attention over q and k turned by them."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.pos = nn.Linear(d, 1)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd)),
                             persistent=False)

    def forward(self, x):
        b, s, d = x.shape
        positions = self.pos(x).transpose(1, 2)  # [b, 1, s], as position_ids[:, None, :].float()
        freqs = (self.inv_freq[None, :, None].expand(b, -1, 1) @ positions).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)
        q, k, v = (p(x).view(b, s, self.heads, self.hd).transpose(1, 2) for p in (self.q, self.k, self.v))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        mask = torch.full((s, s), torch.finfo(x.dtype).min).triu(1)
        w = nn.functional.softmax(q @ k.transpose(2, 3) / math.sqrt(self.hd) + mask, dim=-1, dtype=torch.float32)
        return self.o((w @ v).transpose(1, 2).reshape(b, s, d))


class RepeatInterleaveKv(nn.Module):
    """mistral-src's repeat_kv, torch.repeat_interleave(k, repeats, dim=2) over [b, s, kv, hd]; with a
    dynamic sequence torch 1.13 exports it as a Loop over SplitToSequence (stc's import rewrites it as an
    unsqueeze, expand and reshape once the axis is fixed)."""

    def __init__(self, d=64, kv=2, rep=2):
        super().__init__()
        self.kv, self.rep = kv, rep
        self.wk = nn.Linear(d, d // rep, bias=False)

    def forward(self, x):
        b, s, d = x.shape
        k = self.wk(x).view(b, s, self.kv, d // (self.rep * self.kv))
        return torch.repeat_interleave(k, repeats=self.rep, dim=2).reshape(b, s, -1)


class RepeatInterleaveTable(nn.Module):
    """Cohere's rotary table as its Hugging Face code builds it in forward, repeat_interleave(outer(arange(s),
    inv_freq), 2, dim=-1): torch's tracer does not know arange(s)'s length and writes a Loop over
    SplitToSequence, of constants alone. (After that Loop torch 1.13 writes a stack or cat along dim=-1 along
    axis 1 instead, which Cohere's rotation of interleaved pairs does: the rotation here pairs the halves
    along dim 2.)"""

    def __init__(self, d=64):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d)))

    def forward(self, x):
        h = self.lin(x)
        freqs = torch.outer(torch.arange(x.shape[1]).float(), self.inv_freq)
        emb = torch.repeat_interleave(freqs, 2, dim=-1)
        half = h.shape[-1] // 2
        return h * emb.cos() + torch.cat((-h[..., half:], h[..., :half]), dim=2) * emb.sin()


class RepeatInterleaveHeads(nn.Module):
    """OpenELM's grouped keys, keys.repeat_interleave(groups, dim=1) over [b, kv, s, hd], the keys scaled by a
    buffer sliced to the sequence first (as a rotary cache is): with a symbolic sequence torch writes a Loop
    whose slices [b, 1, r, s, hd] are reshaped with [0, -1, 0, 0] (a 0 keeps r where torch meant s), so the
    ONNX model's q.k^T does not meet (torch's own result is right: stc imports it at torch's shape)."""

    def __init__(self, d=64, heads=4, kv=2, max_seq=32):
        super().__init__()
        self.heads, self.kv, self.hd = heads, kv, d // heads
        self.wk = nn.Linear(d, kv * self.hd, bias=False)
        self.register_buffer("scale", torch.randn(1, 1, max_seq, self.hd))

    def forward(self, x):
        b, s, d = x.shape
        q = x.view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.wk(x).view(b, s, self.kv, self.hd).transpose(1, 2) * self.scale[:, :, :s]
        k = k.repeat_interleave(self.heads // self.kv, dim=1)
        return (q @ k.transpose(2, 3)).sum(3)


class RepeatInterleaveRows(nn.Module):
    """A table from arange(s) repeated along its first axis, repeat_interleave(outer(arange(s), inv_freq), 2,
    dim=0): torch's Loop reshapes each slice [1, 2, d] with [-1, 0], a 0 keeping the 2 where torch meant d,
    so the ONNX model's table is [2 s d / 2, 2], and the sum over each of its first rows reads that shape."""

    def __init__(self, d=8):
        super().__init__()
        self.register_buffer("inv_freq", torch.rand(d) + 0.1)

    def forward(self, x):
        table = torch.repeat_interleave(torch.outer(torch.arange(x.shape[1]).float(), self.inv_freq), 2, dim=0)
        return x + table[: x.shape[1]].sum(1, keepdim=True)


class TopkBesideView(nn.Module):
    """A view over the sequence (shape arithmetic, which folds once a symbolic axis is fixed) beside a node
    stc refuses by name (TopK)."""

    def forward(self, x):
        b, s, d = x.shape
        return torch.topk(x.view(b, s, 4, d // 4), 2, dim=-1).values.reshape(b, s, -1)


class DisentangledGather(nn.Module):
    """DeBERTa-v2's content-to-position attention term as Hugging Face writes it: relative positions from
    arange, log buckets (make_log_bucket_position: sign, abs, log, ceil of constants), the query's scores
    against 2 * span relative position embeddings, torch.gather'ed per query row at clamp(bucket + span)
    (indices constant, expanded over batch and heads), added to the scores before the softmax."""

    def __init__(self, d=64, heads=4, span=4, buckets=8, max_position=16):
        super().__init__()
        self.heads, self.hd, self.span = heads, d // heads, span
        self.buckets, self.max_position = buckets, max_position
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.rel = nn.Parameter(torch.randn(2 * span, d) * 0.5)
        self.pos_k = nn.Linear(d, d)

    def bucket(self, relative_pos):
        sign = torch.sign(relative_pos)
        mid = self.buckets // 2
        abs_pos = torch.where((relative_pos < mid) & (relative_pos > -mid),
                              torch.tensor(mid - 1).type_as(relative_pos), torch.abs(relative_pos))
        log_pos = torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((self.max_position - 1) / mid)) *
                             (mid - 1)) + mid
        return torch.where(abs_pos <= mid, relative_pos.type_as(log_pos), log_pos * sign).long()

    def forward(self, x):
        b, s, d = x.shape
        heads = lambda t: t.view(b, -1, self.heads, self.hd).transpose(1, 2)
        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        pos = torch.arange(s)
        relative = self.bucket(pos[:, None] - pos[None, :])
        c2p_pos = torch.clamp(relative + self.span, 0, 2 * self.span - 1)
        pos_key = heads(self.pos_k(self.rel).unsqueeze(0).expand(b, -1, -1))
        c2p = torch.matmul(q, pos_key.transpose(-1, -2))
        c2p = torch.gather(c2p, dim=-1, index=c2p_pos.unsqueeze(0).unsqueeze(0).expand(b, self.heads, s, s))
        scores = (torch.matmul(q, k.transpose(-1, -2)) + c2p) / math.sqrt(2 * self.hd)
        w = nn.functional.softmax(scores, dim=-1)
        return self.o(torch.matmul(w, v).transpose(1, 2).reshape(b, s, d))


class CachedAttention(nn.Module):
    """A decode step as Hugging Face models take their cache: the new tokens' keys and values appended to the
    past ones given as inputs (torch.cat along the positions, a dynamic `past`), every head attending to all."""

    def __init__(self, d=48, heads=3):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x, past_k, past_v):
        b, t, d = x.shape
        q, k, v = (f(x).view(b, t, self.heads, self.hd).transpose(1, 2) for f in (self.q, self.k, self.v))
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.hd), dim=-1)
        return self.o((a @ v).transpose(1, 2).reshape(b, t, d))


class TinyLlama(nn.Module):
    """A whole Llama as small reference code writes it: x (positions, say) plus the embeddings of token
    ids, layers sharing one rotary table and one causal mask computed in forward, keys and values repeated
    by torch.repeat_interleave after the rotary (whose sizes torch 1.13's tracer loses, so each slice is
    reshaped with 0s), a final norm and a head tied to the embedding."""

    def __init__(self, d=32, heads=4, kv_heads=2, ffn=64, vocab=50, layers=2):
        super().__init__()
        self.heads, self.kv, self.dh = heads, kv_heads, d // heads
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            layer = nn.Module()
            layer.attn_norm, layer.mlp_norm = RmsNorm(d), RmsNorm(d)
            layer.q = nn.Linear(d, d, bias=False)
            layer.k = nn.Linear(d, kv_heads * self.dh, bias=False)
            layer.v = nn.Linear(d, kv_heads * self.dh, bias=False)
            layer.o = nn.Linear(d, d, bias=False)
            layer.gate, layer.up = nn.Linear(d, ffn, bias=False), nn.Linear(d, ffn, bias=False)
            layer.down = nn.Linear(ffn, d, bias=False)
            self.layers.append(layer)
        self.norm = RmsNorm(d)

    def forward(self, x, ids):
        b, s = ids.shape
        h = self.embed(ids) + x
        inv = 1.0 / 10000 ** (torch.arange(0, self.dh, 2).float() / self.dh)
        freqs = torch.outer(torch.arange(s).float(), inv)
        cos, sin = torch.cat([freqs, freqs], -1).cos(), torch.cat([freqs, freqs], -1).sin()
        mask = torch.full((s, s), float("-inf")).triu(1)
        rep = self.heads // self.kv
        for layer in self.layers:
            t = layer.attn_norm(h)
            q = layer.q(t).view(b, s, self.heads, self.dh).transpose(1, 2)
            k = layer.k(t).view(b, s, self.kv, self.dh).transpose(1, 2)
            v = layer.v(t).view(b, s, self.kv, self.dh).transpose(1, 2)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            k, v = torch.repeat_interleave(k, rep, dim=1), torch.repeat_interleave(v, rep, dim=1)
            w = (q @ k.transpose(-1, -2) / math.sqrt(self.dh) + mask).softmax(-1)
            h = h + layer.o((w @ v).transpose(1, 2).reshape(b, s, -1))
            t = layer.mlp_norm(h)
            h = h + layer.down(nn.functional.silu(layer.gate(t)) * layer.up(t))
        return self.norm(h) @ self.embed.weight.t()


# torch 2's exporter writes F.scaled_dot_product_attention (opset 14's symbolic, which torch 1.13 lacks) as
# below: the scale 1 / sqrt(Cast(Shape(q)[-1:])), q and k^T each multiplied by its square root, a causal
# mask of Where(Equal(Trilu(Expand(1, [L, S])), 0), -inf, 0) built from the shapes of q and k, a bool mask
# turned to 0 / -inf by Where, then Add, Softmax and MatMul. These Functions export that graph and compute
# the same in forward.
INT64_MAX = 9223372036854775807


def sdpa_graph(g, q, k, v, mask=None, causal=False, scale=None):
    with warnings.catch_warnings():  # torch 1.13 deprecates g.op on a Function's graph; torch 2 keeps it
        warnings.simplefilter("ignore", FutureWarning)
        return sdpa_ops(g, q, k, v, mask, causal, scale)


def sdpa_ops(g, q, k, v, mask, causal, scale):
    def const(values, dtype=torch.float):
        return g.op("Constant", value_t=torch.tensor(values, dtype=dtype))

    if scale is None:
        last = g.op("Slice", g.op("Shape", q), const([-1], torch.int64), const([INT64_MAX], torch.int64))
        scale = g.op("Div", const([1.0]), g.op("Sqrt", g.op("Cast", last, to_i=onnx.TensorProto.FLOAT)))
    else:
        scale = const(scale)
    if causal:
        second_last, last = const([-2], torch.int64), const([-1], torch.int64)
        size = g.op("Concat", g.op("Slice", g.op("Shape", q), second_last, last),
                    g.op("Slice", g.op("Shape", k), second_last, last), axis_i=0)
        ones = g.op("Trilu", g.op("Expand", const([1.0]), size), upper_i=0)
        mask = g.op("Where", g.op("Equal", ones, const([0.0])), const([-math.inf]), const([0.0]))
    elif mask is not None and mask.type().scalarType() == "Bool":
        mask = g.op("Where", mask, const([0.0]), const([-math.inf]))
    kt = g.op("Transpose", k, perm_i=[0, 1, 3, 2])
    root = g.op("Sqrt", scale)
    scores = g.op("MatMul", g.op("Mul", q, root), g.op("Mul", kt, root))
    if mask is not None:
        scores = g.op("Add", scores, mask)
    return g.op("MatMul", g.op("Softmax", scores, axis_i=-1), v)


def sdpa_values(q, k, v, mask=None, causal=False, scale=None):
    root = math.sqrt(1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    scores = (q * root) @ (k.transpose(-2, -1) * root)
    if causal:
        scores = scores.masked_fill(torch.ones(q.shape[-2], k.shape[-2]).tril() == 0, -math.inf)
    elif mask is not None:
        scores = scores + (torch.where(mask, 0.0, -math.inf) if mask.dtype == torch.bool else mask)
    return scores.softmax(-1) @ v


class SdpaCausal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v):
        return sdpa_values(q, k, v, causal=True)

    @staticmethod
    def symbolic(g, q, k, v):
        return sdpa_graph(g, q, k, v, causal=True)


class SdpaCausalScaled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v):
        return sdpa_values(q, k, v, causal=True, scale=0.125)

    @staticmethod
    def symbolic(g, q, k, v):
        return sdpa_graph(g, q, k, v, causal=True, scale=0.125)


class SdpaMasked(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, mask):
        return sdpa_values(q, k, v, mask)

    @staticmethod
    def symbolic(g, q, k, v, mask):
        return sdpa_graph(g, q, k, v, mask)


class NanoGptSdpa(nn.Module):
    """nanoGPT's block on its flash path: F.scaled_dot_product_attention(q, k, v, is_causal=True) as torch 2
    exports it (sdpa_graph), GELU (tanh) MLP."""

    def __init__(self, d=48, heads=4, attention=SdpaCausal):
        super().__init__()
        self.heads, self.attention = heads, attention
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.c_attn(self.ln_1(x)).split(c, dim=2))
        x = x + self.c_proj(self.attention.apply(q, k, v).transpose(1, 2).contiguous().view(b, t, c))
        return x + self.proj(torch.nn.functional.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


def export(model, example, name, opset, dynamic=None, io=False, names=("x",)):
    """Writes NAME; with io, also NAME.io.bin: the example input (or inputs, a tuple named by `names`, in
    order), then torch's output, raw little-endian f32, which the tests compare stc's interpreter with."""
    torch.manual_seed(0)
    model.eval()
    path = os.path.join(OUT, name)
    inputs = example if isinstance(example, tuple) else (example,)
    torch.onnx.export(model, inputs, path, opset_version=opset, input_names=list(names), output_names=["y"],
                      dynamic_axes=dynamic, do_constant_folding=True)
    print("wrote", os.path.relpath(path), os.path.getsize(path), "bytes")
    if io:
        with torch.no_grad():
            y = model(*inputs)
        with open(path + ".io.bin", "wb") as f:
            f.write(b"".join(t.numpy().astype("<f4").tobytes() for t in (*inputs, y)))


def main():
    torch.manual_seed(0)
    os.makedirs(OUT, exist_ok=True)
    export(Mlp(), torch.randn(4, 32), "mlp.onnx", 13, {"x": {0: "seq"}, "y": {0: "seq"}})
    export(Gpt2Block(), torch.randn(1, 8, 64), "gpt2_block.onnx", 14)
    export(LlamaBlock(), torch.randn(1, 8, 64), "llama_block.onnx", 17)
    seq = {"x": {1: "seq"}, "y": {1: "seq"}}
    export(CausalSelfAttention(), torch.randn(1, 8, 64), "causal_attention.onnx", 14, io=True)
    export(CausalSelfAttention(), torch.randn(1, 8, 64), "causal_attention_seq.onnx", 14, seq)
    export(CausalSelfAttention(mask="tril"), torch.randn(1, 8, 64), "causal_tril_seq.onnx", 17, seq)
    export(GqaAttention(), torch.randn(1, 8, 64), "gqa_attention.onnx", 17, io=True)
    export(GqaAttention(), torch.randn(1, 8, 64), "gqa_attention_seq.onnx", 17, seq)
    export(GqaAttention(interleave=True), torch.randn(1, 8, 64), "gqa_interleave.onnx", 17, io=True)
    export(Pointwise(), torch.randn(4, 32), "pointwise.onnx", 13, io=True)
    export(SelectMlp(), torch.randn(4, 32), "select_mlp.onnx", 17, io=True)
    export(EinsumAttention(), torch.randn(1, 8, 64), "einsum_attention.onnx", 17, io=True)
    export(EinsumAttention(), torch.randn(1, 8, 64), "einsum_attention_seq.onnx", 17, seq)
    export(SlidingWindowAttention(), torch.randn(1, 8, 64), "sliding_window_attention.onnx", 17, io=True)
    export(TiledMlp(), torch.randn(4, 32), "tiled_mlp.onnx", 17, io=True)
    export(RopeInForward(), torch.randn(1, 8, 64), "rope_in_forward.onnx", 17, io=True)
    export(RopeInForward(), torch.randn(1, 8, 64), "rope_in_forward_seq.onnx", 17, seq)
    export(RotaryCache(), torch.randn(1, 8, 64), "rotary_cache.onnx", 17, io=True)
    export(RotaryCache(), torch.randn(1, 8, 64), "rotary_cache_seq.onnx", 17, seq)
    export(RepeatInterleaveKv(), torch.randn(1, 8, 64), "repeat_interleave_kv_seq.onnx", 17, seq, io=True)
    for block, name in ((Qwen2Block, "qwen2_block"), (GemmaBlock, "gemma_block"), (PhiBlock, "phi_block"),
                        (GptjBlock, "gptj_block"), (FalconBlock, "falcon_block"), (AlibiBlock, "alibi_attention"),
                        (NeoxBlock, "neox_block"), (TorchMha, "torch_mha"), (TorchEncoder, "torch_encoder_layer"),
                        (T5Attention, "t5_decoder_attention"), (lambda: T5Attention(causal=False), "t5_encoder_attention"),
                        (MetaLlamaAttention, "meta_llama_attention"), (OptPositions, "opt_positions"),
                        (NormVariants, "norm_variants"), (MaskedFills, "masked_fills"),
                        (InputViews, "input_views"), (BroadcastHeads, "mqa_broadcast"),
                        (lambda: BroadcastHeads(heads=8, kv_heads=2), "gqa_broadcast"),
                        (MoreActivations, "more_activations"), (ThresholdSelects, "threshold_selects"),
                        (NormWeightShapes, "norm_weight_shapes"), (JaxEinsums, "jax_einsums"),
                        (PadsAndReductions, "pads_and_reductions"), (RankBroadcastMatmuls, "rank_broadcast_matmuls"),
                        (LogSumExpPools, "logsumexp_pools"), (RoundingOps, "rounding_ops"),
                        (AxisSoftmaxes, "axis_softmaxes"), (PaddingMaskAttention, "padding_mask_attention"),
                        (lambda: GqaAttention(causal=False), "gqa_bidirectional"),
                        (StreamRotary, "stream_rotary"), (DisentangledGather, "disentangled_gather")):
        x = torch.randn(1, 32 if name == "masked_fills" else 8, 64)
        torch.manual_seed(0)
        export(block(), x, name + ".onnx", 17, io=True)
        if name in ("qwen2_block", "gptj_block", "gqa_bidirectional"):
            torch.manual_seed(0)
            export(block(), x, name + "_seq.onnx", 17, seq)
    # (Last, so that the random numbers every export above draws stay the same.)
    torch.manual_seed(0)
    export(RepeatInterleaveTable(), torch.randn(1, 8, 64), "repeat_interleave_table.onnx", 17, io=True)
    export(TopkBesideView(), torch.randn(1, 8, 64), "topk_beside_view_seq.onnx", 17, seq)
    export(RepeatInterleaveHeads(), torch.randn(1, 8, 64), "repeat_interleave_heads_seq.onnx", 17,
           {"x": {1: "seq"}, "y": {2: "seq"}}, io=True)
    torch.manual_seed(0)
    export(RepeatInterleaveRows(), torch.randn(1, 8, 8), "repeat_interleave_rows.onnx", 17)
    torch.manual_seed(0)
    export(SlidingWindowAttention(window=16), torch.randn(1, 8, 64), "sliding_window_seq.onnx", 17, seq)
    export(RecentKeys(), torch.randn(1, 8, 64), "recent_keys_seq.onnx", 17, seq)
    export(ChunkedAttention(), torch.randn(1, 8, 64), "chunked_attention_seq.onnx", 17, seq)
    export(SqueezeAll(), torch.randn(1, 8, 64), "squeeze_all_seq.onnx", 17, {"x": {1: "seq"}, "y": {0: "seq"}})
    export(WindowOfWidth(), torch.randn(1, 8, 64), "window_of_width_seq.onnx", 17, seq)
    torch.manual_seed(0)
    export(MinPools(), torch.randn(1, 8, 64), "min_pools.onnx", 17, io=True)
    for block, name, opset in ((HfGpt2Attention, "hf_gpt2_attention", 14), (MptAttention, "mpt_attention", 17)):
        x = torch.randn(1, 8, 64)
        torch.manual_seed(0)
        export(block(), x, name + ".onnx", opset, io=True)
        torch.manual_seed(0)
        export(block(), x, name + "_seq.onnx", opset, seq)
    torch.manual_seed(0)
    export(BmmViewSoftmax(), torch.randn(1, 8, 64), "bmm_view_softmax_seq.onnx", 17, seq)
    torch.manual_seed(0)
    export(CachedAttention(), (torch.randn(1, 1, 48), torch.randn(1, 3, 7, 16), torch.randn(1, 3, 7, 16)),
           "cached_attention_past.onnx", 14, {"past_k": {2: "past"}, "past_v": {2: "past"}}, io=True,
           names=("x", "past_k", "past_v"))
    torch.manual_seed(0)
    export(CachedAttention(), (torch.randn(1, 1, 48), torch.randn(1, 3, 7, 16), torch.randn(1, 3, 7, 16)),
           "cached_attention_all_seq.onnx", 14,
           {"x": {0: "batch", 1: "new"}, "past_k": {0: "batch", 2: "past"}, "past_v": {0: "batch", 2: "past"},
            "y": {0: "batch", 1: "new"}}, names=("x", "past_k", "past_v"))
    torch.manual_seed(0)
    export(TinyLlama(), (torch.randn(1, 6, 32), torch.randint(0, 50, (1, 6))), "tiny_llama_seq.onnx", 17,
           {"x": {1: "seq"}, "ids": {1: "seq"}, "y": {1: "seq"}}, io=True, names=("x", "ids"))
    torch.manual_seed(0)
    export(NanoGptSdpa(), torch.randn(1, 8, 48), "nanogpt_sdpa.onnx", 14, io=True)
    torch.manual_seed(0)
    export(NanoGptSdpa(), torch.randn(1, 8, 48), "nanogpt_sdpa_seq.onnx", 14, seq)
    return 0


if __name__ == "__main__":
    sys.exit(main())
