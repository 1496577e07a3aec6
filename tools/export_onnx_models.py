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
  tiled_mlp.onnx     x.repeat (Tile), an expanded parameter, softplus and log; opset 17
  rope_in_forward.onnx, rope_in_forward_seq.onnx
                     rotary embedding whose table forward computes (outer, cat, cos, sin of constants);
                     static and symbolic `seq`, opset 17

The files are committed, so the tests run without torch; so are the NAME.io.bin files (torch's input and
output) of the blocks written with reference implementations' idioms.
"""
import math
import os
import sys

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
    """Hugging Face's Llama attention without rope: repeat_kv (or repeat_interleave), an additive causal mask."""

    def __init__(self, d=64, heads=4, kv_heads=2, interleave=False):
        super().__init__()
        self.heads, self.kv, self.dh, self.interleave = heads, kv_heads, d // heads, interleave
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


def export(model, example, name, opset, dynamic=None, io=False):
    """Writes NAME; with io, also NAME.io.bin: the example input, then torch's output, raw little-endian f32,
    which the tests compare stc's interpreter with."""
    torch.manual_seed(0)
    model.eval()
    path = os.path.join(OUT, name)
    torch.onnx.export(model, example, path, opset_version=opset, input_names=["x"], output_names=["y"],
                      dynamic_axes=dynamic, do_constant_folding=True)
    print("wrote", os.path.relpath(path), os.path.getsize(path), "bytes")
    if io:
        with torch.no_grad():
            y = model(example)
        with open(path + ".io.bin", "wb") as f:
            f.write(example.numpy().astype("<f4").tobytes() + y.numpy().astype("<f4").tobytes())


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
    return 0


if __name__ == "__main__":
    sys.exit(main())
