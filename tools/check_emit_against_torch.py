#!/usr/bin/env python3
"""End-to-end check of `stc emit` against PyTorch: the C simulation of the emitted HLS project must
reproduce the torch module's output.

  /usr/bin/python3 tools/check_emit_against_torch.py [--stc PATH] [--keep DIR] [CASE ...]

For each module of tools/export_onnx_models.py (Mlp, Gpt2Block, LlamaBlock, plus variants with other
dimensions), with fixed seeds: random weights (norm weights and biases perturbed away from 1 and 0),
exported to ONNX exactly as export_onnx_models.py does; a random input x written to inputs.bin (the
graph inputs in order, raw little-endian f32; a case may add inputs after x: `mask`, an int64 or bool
padding mask or lengths, or a cache's `past_k` and `past_v`, exported with torch.onnx.export directly);
`stc emit MODEL.onnx -o DIR --inputs inputs.bin --bind SYM=N` for each symbolic dimension, then
`make -C DIR csim`; DIR/data/outputs.bin is compared
with torch's y = module(x). PASS when |out - y| <= 1e-3 + 1e-3 |y| everywhere. Each line also gives the
csim's own difference from data/expected.bin (stc's f32 interpreter) to tell importer/interpreter
semantics (outputs == expected != torch) from a csim failure (outputs != expected).
Requires the system python (torch, onnx) and g++; exits 0 only if every model passes.
"""
import argparse
import math
import contextlib
import importlib.util
import io
import os
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ATOL = RTOL = 1e-3
REFUSED = ["--expect-refusal"]  # a case's flags: stc emit must refuse the model (exit 1, unsupported nodes listed)
SYMBOLIC = ["--symbolic"]  # a case's flags: `stc compile` with the dynamic axes free, then `stc emit NETWORK --bind`


def load_exporter():
    path = os.path.join(ROOT, "tools", "export_onnx_models.py")
    spec = importlib.util.spec_from_file_location("export_onnx_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class ReluMlp(torch.nn.Module):
    """A classifier-style MLP: Linear, ReLU, Linear, Sigmoid (ops the blocks above do not use)."""

    def __init__(self, d=40, f=72):
        super().__init__()
        self.up = torch.nn.Linear(d, f)
        self.down = torch.nn.Linear(f, d)

    def forward(self, x):
        return torch.sigmoid(self.down(torch.relu(self.up(x))))


def past_kv(heads, hd, past):
    """The inputs after x of CachedAttention: a cache of `past` positions."""
    return lambda b, s: {"past_k": torch.randn(b, heads, past, hd), "past_v": torch.randn(b, heads, past, hd)}


class MqaRepeatInterleave(torch.nn.Module):
    """Gemma's reference attention (google/gemma_pytorch) with one KV head: q, k and v split from one
    projection, k and v copied to the query heads by torch.repeat_interleave(dim=2) over [b, s, kv, hd],
    scores soft-capped (divide, tanh, multiply), a causal mask of -2.38e38 added, softmax in float. With a
    dynamic sequence torch 1.13 writes the repeat as a Loop whose ONNX result is [b, s, hd, heads] where torch
    meant [b, s, heads, hd], so that the ONNX model's product does not meet: stc imports it at torch's."""

    def __init__(self, d=64, heads=4, hd=32, cap=30.0):
        super().__init__()
        self.heads, self.hd, self.cap = heads, hd, cap
        self.qkv = torch.nn.Linear(d, (heads + 2) * hd, bias=False)
        self.o = torch.nn.Linear(heads * hd, d, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).split([self.heads * self.hd, self.hd, self.hd], dim=-1)
        q = q.view(b, -1, self.heads, self.hd)
        k = torch.repeat_interleave(k.view(b, -1, 1, self.hd), self.heads, dim=2)
        v = torch.repeat_interleave(v.view(b, -1, 1, self.hd), self.heads, dim=2)
        q, k, v = q.transpose(1, 2) * self.hd ** -0.5, k.transpose(1, 2), v.transpose(1, 2)
        scores = torch.tanh(torch.matmul(q, k.transpose(2, 3)) / self.cap) * self.cap
        scores = scores + torch.full((1, 1, s, s), -2.3819763e38).triu(1)
        p = torch.nn.functional.softmax(scores.float(), dim=-1).type_as(q)
        return self.o(torch.matmul(p, v).transpose(1, 2).contiguous().view(b, s, -1))


class FullRotaryAsPartial(torch.nn.Module):
    """A rotary over the whole head written as a partial one (Qwen-1, GPT-NeoX at rotary_pct 1.0):
    x[..., :rot] turned, x[..., rot:] empty, concatenated back."""

    def __init__(self, d=32):
        super().__init__()
        self.proj = torch.nn.Linear(d, d)
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        angles = torch.outer(torch.arange(8).float(), inv)
        self.register_buffer("cos", torch.cat((angles, angles), -1).cos())
        self.register_buffer("sin", torch.cat((angles, angles), -1).sin())

    def forward(self, x):
        h = self.proj(x)
        rot = h.shape[-1]
        h_rot, h_pass = h[..., :rot], h[..., rot:]
        half = rot // 2
        turned = torch.cat((-h_rot[..., half:], h_rot[..., :half]), -1)
        return torch.cat((h_rot * self.cos + turned * self.sin, h_pass), -1)


class SharedRmsStatistics(torch.nn.Module):
    """A branch scaled by the RMS of another tensor, with (shared) a norm whose mean of squares is used
    again: neither is an rmsnorm of what it scales."""

    def __init__(self, d=32, shared=True):
        super().__init__()
        self.proj = torch.nn.Linear(d, d)
        self.weight = torch.nn.Parameter(1 + 0.3 * torch.randn(d))
        self.shared = shared

    def forward(self, x):
        v = x.pow(2).mean(-1, keepdim=True)
        scaled = self.weight * (self.proj(x) * torch.rsqrt(v + 1e-6))
        return scaled + self.weight * (x * torch.rsqrt(v + 1e-6)) + v if self.shared else scaled


class SliceAssignedMask(torch.nn.Module):
    """Causal attention over a mask written by in-place slice assignment, as reference code builds it:
    BLOOM's _make_causal_mask (a bool table, `mask[:, past:] = ids[:, None] < ids[None, :]`) or, with
    llama=True, Hugging Face Llama 4.40's _update_causal_mask (a triu of the dtype's minimum, its first
    columns refilled where a padding mask of the last `padded` tokens says); with nonzero=True, -inf put
    at the coordinates triu(1).nonzero() lists. All export ScatterND of constants."""

    def __init__(self, d=32, heads=2, llama=False, padded=2, nonzero=False):
        super().__init__()
        self.heads, self.llama, self.padded, self.nonzero = heads, llama, padded, nonzero
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)

    def mask(self, b, s, dtype):
        if self.nonzero:  # index_put_ at the coordinates nonzero() lists (NonZero, then ScatterND)
            at = torch.ones(s, s).triu(1).nonzero()
            mask = torch.zeros(s, s, dtype=dtype)
            mask.index_put_((at[:, 0], at[:, 1]), torch.tensor(float("-inf")))
            return mask
        if not self.llama:
            mask = torch.empty((s, s), dtype=torch.bool)
            ids = torch.arange(s)
            mask[:, 0:] = ids[:, None] < ids[None, :]
            return torch.zeros((s, s), dtype=dtype).masked_fill(mask, torch.finfo(dtype).min)
        low = torch.finfo(dtype).min
        causal = torch.triu(torch.full((s, s), fill_value=low, dtype=dtype), diagonal=1)
        causal = causal[None, None, :, :].expand(b, 1, -1, -1).clone()
        attention_mask = torch.ones(b, s)
        attention_mask[:, s - self.padded:] = 0
        padding = causal[..., :s].eq(0.0) * attention_mask[:, None, None, :].eq(0.0)
        causal[..., :s] = causal[..., :s].masked_fill(padding, low)
        return causal

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, hd).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / hd**0.5 + self.mask(b, s, x.dtype)
        y = torch.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, s, d))


class MetaKvCache(torch.nn.Module):
    """Meta llama's attention with its KV cache written in place and read back (start_pos tokens already
    cached, here zeros): self.cache_k[:b, start:start + s] = xk; keys = self.cache_k[:b, :start + s],
    and the causal mask widened over the cached columns. Exports ScatterND of a stream."""

    def __init__(self, d=32, heads=2, start=0, max_batch=2, max_seq=16):
        super().__init__()
        self.heads, self.start = heads, start
        self.wq = torch.nn.Linear(d, d, bias=False)
        self.wk = torch.nn.Linear(d, d, bias=False)
        self.wv = torch.nn.Linear(d, d, bias=False)
        self.wo = torch.nn.Linear(d, d, bias=False)
        self.register_buffer("cache_k", torch.zeros(max_batch, max_seq, heads, d // heads))
        self.register_buffer("cache_v", torch.zeros(max_batch, max_seq, heads, d // heads))

    def forward(self, x):
        b, s, d = x.shape
        hd, p = d // self.heads, self.start
        xq, xk, xv = (w(x).view(b, s, self.heads, hd) for w in (self.wq, self.wk, self.wv))
        self.cache_k[:b, p:p + s] = xk
        self.cache_v[:b, p:p + s] = xv
        keys, values = self.cache_k[:b, :p + s], self.cache_v[:b, :p + s]
        q, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        mask = torch.cat([torch.zeros((s, p)), mask], dim=1)  # (torch.hstack, which ONNX export lacks)
        scores = q @ keys.transpose(2, 3) / hd**0.5 + mask
        y = torch.softmax(scores, dim=-1) @ values
        return self.wo(y.transpose(1, 2).reshape(b, s, d))


class RowsMaskedWhole(torch.nn.Module):
    """Attention whose mask leaves some query rows no key (torch then weighs their keys evenly):
    kind "left_pad": causal and the first `pad` tokens padded, masked_fill(~keep, -1e4) (the padded rows
    masked whole); "pooled_keys": queries against keys pooled 2:1, bottom-right causal with the dtype's
    minimum added (rows before the first key masked whole); "eye": torch.eye masks each row's own key
    but row 0's, then causal; "pad_then_fill": Hugging Face's extended padding mask ((1 - m) * min) added,
    then masked_fill(triu(1), min) (the padded rows' kept keys hold min too: every key ties);
    "pad_then_where": the same with -1e4 and torch.where(tril, scores, -1e4); "pad_fill_then_fill": the
    padded keys filled with min, then the causal fill of min; "pad_added_viewed": the padding mask added
    to [b, h, s, s], viewed as [b * h, s, s] (OPT, BART), then the causal fill of min."""

    def __init__(self, d=48, heads=3, kind="left_pad", pad=2):
        super().__init__()
        self.heads, self.kind, self.pad = heads, kind, pad
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)

    def split(self, t):
        b, s, d = t.shape
        return t.view(b, s, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        if self.kind == "pooled_keys":
            k, v = k[:, ::2], v[:, ::2]
        q, k, v = self.split(q), self.split(k), self.split(v)
        scores = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
        R, K = scores.shape[-2], scores.shape[-1]
        if self.kind == "left_pad":
            attention_mask = torch.ones(b, s, dtype=torch.bool)
            attention_mask[:, :self.pad] = False
            keep = torch.tril(torch.ones(s, s, dtype=torch.bool))[None, None] & attention_mask[:, None, None, :]
            scores = scores.masked_fill(~keep, -1e4)
        elif self.kind in ("pad_then_fill", "pad_then_where"):
            low = torch.finfo(x.dtype).min if self.kind == "pad_then_fill" else -1e4
            attention_mask = torch.ones(b, s)
            attention_mask[:, :self.pad] = 0
            scores = scores + (1.0 - attention_mask[:, None, None, :]) * low
            if self.kind == "pad_then_fill":
                scores = scores.masked_fill(torch.triu(torch.ones(s, s, dtype=torch.bool), 1), low)
            else:
                scores = torch.where(torch.tril(torch.ones(s, s, dtype=torch.bool)), scores, torch.tensor(low))
        elif self.kind in ("pad_fill_then_fill", "pad_added_viewed"):
            low = torch.finfo(x.dtype).min
            padded = torch.zeros(s, dtype=torch.bool)
            padded[:self.pad] = True
            causal = torch.triu(torch.ones(s, s, dtype=torch.bool), 1)
            if self.kind == "pad_fill_then_fill":
                scores = scores.masked_fill(padded, low).masked_fill(causal, low)
            else:
                scores = (scores + padded.float() * low).view(b * self.heads, s, K).masked_fill(causal, low)
                y = torch.softmax(scores, dim=-1).view(b, self.heads, s, K) @ v
                return self.out(y.transpose(1, 2).reshape(b, s, d))
        elif self.kind == "pooled_keys":
            scores = scores + torch.full((R, K), torch.finfo(x.dtype).min).triu(1 + K - R)
        else:
            eye = torch.eye(s, dtype=torch.bool)
            eye[0, 0] = False
            scores = scores.masked_fill(eye, float("-inf"))
            scores = scores.masked_fill(torch.triu(torch.ones(s, s, dtype=torch.bool), 1), float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, s, d))


class PaddingThenCausalInf(torch.nn.Module):
    """Left padding filled with a moderate value (-1e4, or float16's minimum), then the causal mask of -inf
    (masked_fill, torch.where, or an added triu of -inf). A padded query row i (i < pad) has its keys
    0 .. i all at the fill: torch weighs them evenly, where the scores plus the fill would weigh as the
    scores do."""

    def __init__(self, d=48, heads=3, pad=3, fill=-1e4, causal="fill"):
        super().__init__()
        self.heads, self.pad, self.fill, self.causal = heads, pad, fill, causal
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = (t.view(b, s, self.heads, hd).transpose(1, 2) for t in self.qkv(x).split(d, dim=-1))
        scores = q @ k.transpose(-1, -2) / hd ** 0.5
        attention_mask = torch.ones(b, s)
        attention_mask[:, :self.pad] = 0
        scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, self.fill)
        future = torch.triu(torch.ones(s, s, dtype=torch.bool), 1)
        if self.causal == "fill":
            scores = scores.masked_fill(future, float("-inf"))
        elif self.causal == "where":
            scores = torch.where(~future, scores, torch.tensor(float("-inf")))
        else:
            scores = scores + torch.zeros(s, s).masked_fill(future, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, s, d))


class CausalInfThenPaddingMin(torch.nn.Module):
    """nanoGPT's causal masked_fill(-inf) (or torch.where(tril, s, -inf)), then Hugging Face's padding mask of
    the dtype's minimum, added ((1 - m) * min) or filled (masked_fill(padded, min)). A padded query row keeps
    its future keys at -inf (weight 0) and its padded past keys at min, weighed evenly; lse writes the softmax
    as exp(s - logsumexp(s))."""

    def __init__(self, d=48, heads=3, pad=3, causal="fill", padding="add", lse=False):
        super().__init__()
        self.heads, self.pad, self.causal, self.padding, self.lse = heads, pad, causal, padding, lse
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        low = torch.finfo(x.dtype).min
        q, k, v = (t.view(b, s, self.heads, hd).transpose(1, 2) for t in self.qkv(x).split(d, dim=-1))
        scores = q @ k.transpose(-1, -2) / hd ** 0.5
        keep = torch.tril(torch.ones(s, s, dtype=torch.bool))
        if self.causal == "fill":
            scores = scores.masked_fill(~keep, float("-inf"))
        else:
            scores = torch.where(keep, scores, torch.tensor(float("-inf")))
        attention_mask = torch.ones(b, s)
        attention_mask[:, :self.pad] = 0
        if self.padding == "add":
            scores = scores + (1.0 - attention_mask[:, None, None, :]) * low
        else:
            scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, low)
        if self.lse:
            p = torch.exp(scores - torch.logsumexp(scores, dim=-1, keepdim=True))
        else:
            p = torch.softmax(scores, dim=-1)
        y = p @ v
        return self.out(y.transpose(1, 2).reshape(b, s, d))


class DataMasks(torch.nn.Module):
    """Masks of data combined with constant ones by &, | and ^ (ONNX And, Or and Xor of streams): keys whose
    embedding sums above a threshold, key 0 always, under the causal mask; a bias of 1 where two tests of
    the data disagree."""

    def __init__(self, d=48, heads=3):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = (t.view(b, s, self.heads, hd).transpose(1, 2) for t in self.qkv(x).split(d, dim=-1))
        scores = q @ k.transpose(-1, -2) / hd ** 0.5
        first = torch.zeros(s, dtype=torch.bool)
        first[0] = True
        keys = (x.sum(-1) > -2.0) | first
        keep = torch.tril(torch.ones(s, s, dtype=torch.bool)) & keys[:, None, None, :]
        odd = (x.mean(-1) > 0) ^ (x[..., 0] > 0)
        scores = scores.masked_fill(~keep, float("-inf")) + odd[:, None, None, :].float()
        y = torch.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, s, d))


class NanToNumRows(torch.nn.Module):
    """A causal mask of -inf and left padding: the padded query rows keep no key, their softmax is NaN in
    torch, and torch.nan_to_num (IsNaN and IsInf of a stream) zeroes them."""

    def __init__(self, d=48, heads=3, pad=2):
        super().__init__()
        self.heads, self.pad = heads, pad
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = (t.view(b, s, self.heads, hd).transpose(1, 2) for t in self.qkv(x).split(d, dim=-1))
        valid = torch.ones(s, dtype=torch.bool)
        valid[:self.pad] = False
        keep = torch.tril(torch.ones(s, s, dtype=torch.bool)) & valid
        w = (q @ k.transpose(-1, -2) / hd ** 0.5).masked_fill(~keep, float("-inf"))
        p = torch.nan_to_num(torch.softmax(w, dim=-1), nan=0.0)
        return self.out((p @ v).transpose(1, 2).reshape(b, s, d))


class TriangularScores(torch.nn.Module):
    """Causal linear attention (RetNet, GLA and linear-transformer reference code): the scores' lower
    triangle kept by torch.tril, times a decay, and a strictly upper one by triu(1) subtracted (ONNX Trilu of
    a stream), no softmax."""

    def __init__(self, d=48, heads=3):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = (t.view(b, s, self.heads, hd).transpose(1, 2) for t in self.qkv(x).split(d, dim=-1))
        scores = q @ k.transpose(-1, -2) / hd
        decay = 0.9 ** (torch.arange(s)[:, None] - torch.arange(s)[None, :]).abs().float()
        w = scores.tril() * decay - 0.1 * torch.triu(scores, diagonal=1)
        return self.out((w @ v).transpose(1, 2).reshape(b, s, d))


class RopeCacheGather(torch.nn.Module):
    """ChatGLM's rope cache [max, rot / 2, 2] (cos and sin stacked), kept as a buffer or built in forward,
    taken at position ids repeated per batch (Tile and Gather of constants)."""

    def __init__(self, d=32, max_seq=16, buffer=False):
        super().__init__()
        self.lin = torch.nn.Linear(d, d)
        inv = 1.0 / (10000 ** (torch.arange(0, d // 2, 2).float() / (d // 2)))
        self.register_buffer("inv_freq", inv)
        self.max_seq, self.buffer = max_seq, buffer
        ang = torch.outer(torch.arange(max_seq).float(), inv)
        self.register_buffer("cache", torch.stack([ang.cos(), ang.sin()], -1))

    def forward(self, x):
        b, s, d = x.shape
        if self.buffer:
            cache = self.cache
        else:
            ang = torch.outer(torch.arange(self.max_seq, dtype=torch.float), self.inv_freq)
            cache = torch.stack([torch.cos(ang), torch.sin(ang)], dim=-1)
        position_ids = torch.arange(s, dtype=torch.long).unsqueeze(0).repeat(b, 1)
        c = cache[position_ids]
        return self.lin(x) * c.reshape(b, s, -1).repeat(1, 1, 2)


class BatchlessRightMatmul(torch.nn.Module):
    """Queries at batch 2 times a per-head table [h, hd, n] with no batch axis (or [1, h, hd, n]): MatMul
    batch dims that broadcast a constant (Transformer-XL's relative keys, per-head projections)."""

    def __init__(self, d=32, heads=4, n=8, unsqueeze=False):
        super().__init__()
        self.h, self.hd, self.unsqueeze = heads, d // heads, unsqueeze
        self.q = torch.nn.Linear(d, d)
        self.r = torch.nn.Parameter(torch.randn(heads, d // heads, n))
        self.o = torch.nn.Linear(heads * n, d)

    def forward(self, x):
        b, s, d = x.shape
        q = self.q(x).view(b, s, self.h, self.hd).transpose(1, 2)
        r = self.r.unsqueeze(0) if self.unsqueeze else self.r
        return self.o((q @ r).transpose(1, 2).reshape(b, s, -1))


class EllipsisEinsumAttention(torch.nn.Module):
    """Attention written as lucidrains-style code writes it: einsum("... i d, ... j d -> ... i j") for the
    scores and einsum("... i j, ... j d -> ... i d") for the mix (an Einsum with an ellipsis)."""

    def __init__(self, d=48, heads=3):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = (t.view(b, s, self.heads, hd).transpose(1, 2) for t in self.qkv(x).split(d, dim=-1))
        sim = torch.einsum("... i d, ... j d -> ... i j", q, k) * hd ** -0.5
        attn = sim.softmax(dim=-1)
        y = torch.einsum("... i j, ... j d -> ... i d", attn, v)
        return self.out(y.transpose(1, 2).reshape(b, s, d))


class RunningMeans(torch.nn.Module):
    """Running sums of a stream (torch.cumsum along the last dim, ONNX CumSum): the running mean of the
    features, then a projection; and the running count of positive features, as Hugging Face counts
    positions from a mask (attention_mask.cumsum(-1) - 1)."""

    def __init__(self, d=40):
        super().__init__()
        self.proj = torch.nn.Linear(d, d)

    def forward(self, x):
        counts = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)
        mean = torch.cumsum(x, dim=-1) / counts
        positions = (x > 0).to(x.dtype).cumsum(-1) - 1
        return self.proj(mean) + positions


class SequenceRunningMeans(torch.nn.Module):
    """A running mean over the sequence, h.cumsum(1) / positions (a causal mean-pool, as token mixers and
    linear-attention baselines write it), and a running sum over the sequence of the rectified input
    (cumsum(-2)), added to the features."""

    def __init__(self, d=40):
        super().__init__()
        self.proj = torch.nn.Linear(d, d)
        self.out = torch.nn.Linear(d, d)

    def forward(self, x):
        h = self.proj(x)
        mean = h.cumsum(1) / torch.arange(1, h.shape[1] + 1, dtype=h.dtype)[None, :, None]
        return self.out(h + mean) + torch.relu(x).cumsum(-2) * 0.1


class TruncatedFeatures(torch.nn.Module):
    """Features truncated to a grid by a cast to int64 and back (fake quantisation as older code writes it,
    (x * 16).long().float() / 16), and a mask cast to int32 and back, then a projection."""

    def __init__(self, d=40):
        super().__init__()
        self.proj = torch.nn.Linear(d, d)

    def forward(self, x):
        grid = (x * 16).long().float() / 16
        mask = (x > 0.25).int().float()
        return self.proj(grid) * (1 + mask)


class FlippedFeatures(torch.nn.Module):
    """torch.flip of a stream's features (ONNX Slice with step -1 along the last axis), mixed with the
    features as they are."""

    def __init__(self, d=40):
        super().__init__()
        self.proj = torch.nn.Linear(d, d)
        self.back = torch.nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x) + self.back(torch.flip(torch.relu(x), [-1]))


class LastTokenHead(torch.nn.Module):
    """The next token's logits as a model's head writes them: the final norm, then the LM head of the last
    position alone (`h[:, -1, :]`, an ONNX Gather at -1 along the sequence)."""

    def __init__(self, d=48, vocab=80):
        super().__init__()
        self.proj = torch.nn.Linear(d, d)
        self.norm = torch.nn.LayerNorm(d)
        self.lm_head = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, x):
        return self.lm_head(self.norm(torch.relu(self.proj(x)))[:, -1, :])


class PaddedAttention(torch.nn.Module):
    """Causal self-attention under a padding mask given as a second model input, `mask`, as Hugging Face
    passes it: `extended` an int64 attention_mask, (1 - mask.to(dtype)) * finfo.min added; `where` a bool
    mask, torch.where(mask & tril, scores, finfo.min); `lengths` int64 lengths per batch row,
    masked_fill(~(arange(s) < lengths & tril), -inf)."""

    def __init__(self, d=48, heads=3, kind="extended"):
        super().__init__()
        self.heads, self.kind = heads, kind
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)

    def forward(self, x, mask):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = (t.view(b, s, self.heads, hd).transpose(1, 2) for t in self.qkv(x).split(d, dim=-1))
        scores = q @ k.transpose(-1, -2) / hd ** 0.5
        tril = torch.tril(torch.ones(s, s, dtype=torch.bool))
        low = torch.finfo(scores.dtype).min
        if self.kind == "extended":
            scores = scores + (1.0 - mask[:, None, None, :].to(scores.dtype)) * low
            scores = scores.masked_fill(~tril, low)
        elif self.kind == "where":
            scores = torch.where(mask[:, None, None, :] & tril, scores, torch.tensor(low))
        else:
            keep = (torch.arange(s)[None, :] < mask[:, None])[:, None, None, :] & tril
            scores = scores.masked_fill(~keep, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, s, d))


class HfGpt2Conv1D(torch.nn.Module):
    """GPT-2 as Hugging Face's modeling_gpt2 writes it: Conv1D as addmm over the rows viewed flat, c_attn
    split three ways, torch.where(bias[..., :k], w, finfo.min) over a registered bool tril, the scores
    divided by a torch.full scalar, and gelu_new with torch.pow."""

    def __init__(self, d=64, heads=4, seq=8):
        super().__init__()
        self.heads, self.d = heads, d
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        for name, shape in (("c_attn", (d, 3 * d)), ("c_proj", (d, d)), ("c_fc", (d, 4 * d)), ("c_fc_proj", (4 * d, d))):
            setattr(self, name + "_w", torch.nn.Parameter(0.1 * torch.randn(*shape)))
            setattr(self, name + "_b", torch.nn.Parameter(0.1 * torch.randn(shape[1])))
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq, dtype=torch.bool)).view(1, 1, seq, seq))

    @staticmethod
    def conv1d(x, w, b):
        return torch.addmm(b, x.view(-1, x.size(-1)), w).view(x.size()[:-1] + (w.size(-1),))

    def forward(self, x):
        heads = lambda t: t.view(t.size()[:-1] + (self.heads, self.d // self.heads)).permute(0, 2, 1, 3)
        q, k, v = self.conv1d(self.ln_1(x), self.c_attn_w, self.c_attn_b).split(self.d, dim=2)
        q, k, v = heads(q), heads(k), heads(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], v.size(-1) ** 0.5, dtype=q.dtype)
        ql, kl = q.size(-2), k.size(-2)
        w = torch.where(self.bias[:, :, kl - ql:kl, :kl], w, torch.full([], torch.finfo(w.dtype).min))
        o = torch.matmul(torch.softmax(w, dim=-1), v).permute(0, 2, 1, 3).contiguous()
        x = x + self.conv1d(o.view(o.size()[:-2] + (self.d,)), self.c_proj_w, self.c_proj_b)
        h = self.conv1d(self.ln_2(x), self.c_fc_w, self.c_fc_b)
        h = 0.5 * h * (1.0 + torch.tanh((2.0 / torch.pi) ** 0.5 * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + self.conv1d(h, self.c_fc_proj_w, self.c_fc_proj_b)


class BmmCausalQuickGelu(torch.nn.Module):
    """Attention over heads folded into the batch ([b * h, s, d] and torch.bmm), q scaled before the
    product, a triu(full(-inf), 1) mask added, then a LayerNorm without affine (below opset 17: its
    statistics and a Div, no scale) and CLIP's quick_gelu, x * sigmoid(1.702 x)."""

    def __init__(self, d=48, heads=3):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.fc2 = torch.nn.Linear(d, 2 * d), torch.nn.Linear(2 * d, d)
        self.norm = torch.nn.LayerNorm(d, elementwise_affine=False)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        fold = lambda t: t.reshape(b, s, self.heads, hd).transpose(1, 2).reshape(b * self.heads, s, hd)
        q, k, v = (fold(t) for t in self.qkv(x).chunk(3, dim=-1))
        scores = torch.bmm(q * hd ** -0.5, k.transpose(1, 2)) + torch.triu(torch.full((s, s), float("-inf")), 1)
        o = torch.bmm(torch.softmax(scores, dim=-1), v).reshape(b, self.heads, s, hd).transpose(1, 2)
        x = x + self.out(o.reshape(b, s, d))
        h = self.fc(self.norm(x))
        return x + self.fc2(h * torch.sigmoid(1.702 * h))


class MistralExpandedKv(torch.nn.Module):
    """Grouped-query attention with the KV heads expanded on a new dim (k[:, :, None].expand(..).reshape),
    a causal mask from arange(s)[:, None] >= arange(s)[None, :] applied as masked_fill(~causal, -inf), the
    softmax in float32, RMSNorm in float32 and F.silu(gate) * up."""

    def __init__(self, d=64, heads=4, kv_heads=2, ffn=96):
        super().__init__()
        self.heads, self.kv, self.hd = heads, kv_heads, d // heads
        self.q = torch.nn.Linear(d, d, bias=False)
        self.k = torch.nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v = torch.nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.gate, self.up = torch.nn.Linear(d, ffn, bias=False), torch.nn.Linear(d, ffn, bias=False)
        self.down = torch.nn.Linear(ffn, d, bias=False)
        self.n1 = torch.nn.Parameter(1 + 0.2 * torch.randn(d))
        self.n2 = torch.nn.Parameter(1 + 0.2 * torch.randn(d))

    @staticmethod
    def rms(x, w):
        x32 = x.float()
        return w * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)).type_as(x)

    def forward(self, x):
        b, s, d = x.shape
        a = self.rms(x, self.n1)
        q = self.q(a).view(b, s, self.heads, self.hd).transpose(1, 2)
        rep = self.heads // self.kv
        expand = lambda t: t.view(b, s, self.kv, self.hd).transpose(1, 2)[:, :, None].expand(
            b, self.kv, rep, s, self.hd).reshape(b, self.heads, s, self.hd)
        k, v = expand(self.k(a)), expand(self.v(a))
        pos = torch.arange(s)
        scores = (q @ k.transpose(2, 3)) / self.hd ** 0.5
        scores = scores.masked_fill(~(pos[:, None] >= pos[None, :]), float("-inf"))
        p = torch.softmax(scores.float(), dim=-1).type_as(q)
        x = x + self.o((p @ v).transpose(1, 2).reshape(b, s, d))
        h = self.rms(x, self.n2)
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


class Phi3Block(torch.nn.Module):
    """Phi-3's block: a fused qkv_proj sliced by position into q, k and v (grouped-query), rotate_half
    rotary, repeat_interleave of the KV heads, a triu(full(-inf), 1) mask added, RMSNorm written with x * x
    and a division by its square root, and a fused gate_up projection chunked in two."""

    def __init__(self, d=64, heads=4, kv_heads=2, ffn=96, seq=8):
        super().__init__()
        self.heads, self.kv, self.hd = heads, kv_heads, d // heads
        self.qkv = torch.nn.Linear(d, (heads + 2 * kv_heads) * self.hd, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.gate_up = torch.nn.Linear(d, 2 * ffn, bias=False)
        self.down = torch.nn.Linear(ffn, d, bias=False)
        self.w1 = torch.nn.Parameter(1 + 0.2 * torch.randn(d))
        self.w2 = torch.nn.Parameter(1 + 0.2 * torch.randn(d))
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        angles = torch.outer(torch.arange(seq).float(), inv)
        self.register_buffer("cos", torch.cat((angles, angles), -1).cos())
        self.register_buffer("sin", torch.cat((angles, angles), -1).sin())

    @staticmethod
    def rms(x, w):
        return w * (x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + 1e-5))

    def rotate(self, t):
        half = t.shape[-1] // 2
        return t * self.cos + torch.cat((-t[..., half:], t[..., :half]), -1) * self.sin

    def forward(self, x):
        b, s, d = x.shape
        qkv = self.qkv(self.rms(x, self.w1))
        qp, kvp = self.heads * self.hd, self.kv * self.hd
        q = qkv[..., :qp].view(b, s, self.heads, self.hd).transpose(1, 2)
        k = qkv[..., qp:qp + kvp].view(b, s, self.kv, self.hd).transpose(1, 2)
        v = qkv[..., qp + kvp:].view(b, s, self.kv, self.hd).transpose(1, 2)
        q, k = self.rotate(q), self.rotate(k)
        rep = self.heads // self.kv
        k, v = torch.repeat_interleave(k, rep, dim=1), torch.repeat_interleave(v, rep, dim=1)
        scores = torch.matmul(q, k.transpose(2, 3)) / self.hd ** 0.5 + torch.full((s, s), float("-inf")).triu(1)
        o = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, d)
        x = x + self.o(o)
        gate, up = self.gate_up(self.rms(x, self.w2)).chunk(2, dim=-1)
        return x + self.down(torch.nn.functional.silu(gate) * up)


class HandWrittenNorms(torch.nn.Module):
    """Layer norms written by hand: from x.mean() and x.var(unbiased=False) (two means of x, the square a
    Mul), and as (h - mu) * rsqrt(mean((h - mu) ** 2) + eps) with a scale and no bias; F.gelu with
    approximate='tanh' between."""

    def __init__(self, d=64):
        super().__init__()
        self.a, self.b = torch.nn.Linear(d, 2 * d), torch.nn.Linear(2 * d, d)
        self.g = torch.nn.Parameter(1 + 0.2 * torch.randn(d))
        self.shift = torch.nn.Parameter(0.1 * torch.randn(d))
        self.g2 = torch.nn.Parameter(1 + 0.2 * torch.randn(d))

    def forward(self, x):
        mu, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        h = self.b(torch.nn.functional.gelu(self.a((x - mu) / torch.sqrt(var + 1e-5) * self.g + self.shift),
                                            approximate="tanh"))
        mu2 = h.mean(-1, keepdim=True)
        return x + (h - mu2) * torch.rsqrt(((h - mu2) ** 2).mean(-1, keepdim=True) + 1e-5) * self.g2


class QkNormAttention(torch.nn.Module):
    """Qwen3's and OLMo-2's attention: an RMSNorm over head_dim on q and on k, each head viewed
    [b, s, heads, head_dim] before it is transposed, grouped-query with repeat_kv, and masked_fill of a
    float tril == 0 with -inf."""

    def __init__(self, m, d=64, heads=4, kv_heads=2):
        super().__init__()
        self.m, self.heads, self.kv, self.hd = m, heads, kv_heads, d // heads
        self.q = torch.nn.Linear(d, d, bias=False)
        self.k = torch.nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v = torch.nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.q_norm, self.k_norm = m.RmsNorm(self.hd), m.RmsNorm(self.hd)

    def forward(self, x):
        b, s, d = x.shape
        q = self.q_norm(self.q(x).view(b, s, self.heads, self.hd)).transpose(1, 2)
        k = self.k_norm(self.k(x).view(b, s, self.kv, self.hd)).transpose(1, 2)
        v = self.v(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        k, v = self.m.repeat_kv(k, self.heads // self.kv), self.m.repeat_kv(v, self.heads // self.kv)
        scores = (q @ k.transpose(-2, -1) * self.hd ** -0.5).masked_fill(torch.tril(torch.ones(s, s)) == 0, float("-inf"))
        return self.o((torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, s, d))


class NeoxBaddbmm(torch.nn.Module):
    """GPT-NeoX's _attn: q, k and v interleaved per head in the fused projection, the scores made by
    torch.baddbmm over [b * h, s, d] with alpha 1 / sqrt(d) on zeros (exported as a constant added), then
    torch.where over a registered bool tril with finfo.min."""

    def __init__(self, d=64, heads=4, seq=8):
        super().__init__()
        self.heads = heads
        self.qkv, self.dense = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq, dtype=torch.bool)).view(1, 1, seq, seq))

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        qkv = self.qkv(x).view(b, s, self.heads, 3 * hd).permute(0, 2, 1, 3)
        q, k, v = qkv[..., :hd], qkv[..., hd:2 * hd], qkv[..., 2 * hd:]
        scores = torch.baddbmm(torch.zeros(b * self.heads, s, s), q.reshape(b * self.heads, s, hd),
                               k.reshape(b * self.heads, s, hd).transpose(1, 2), beta=1.0, alpha=hd ** -0.5)
        scores = torch.where(self.bias[:, :, :s, :s], scores.view(b, self.heads, s, s),
                             torch.tensor(torch.finfo(scores.dtype).min))
        return self.dense(torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).reshape(b, s, d))


class BloomAlibi(torch.nn.Module):
    """Bloom: the ALiBi bias [b * h, 1, s] (slopes times positions) as the input of alibi.baddbmm(q, k^T,
    beta=1, alpha=1/sqrt(d)), the scores viewed as [b, h, s, s] and filled with finfo.min past each row,
    the softmax in float32 viewed back for torch.bmm."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv, self.dense = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.register_buffer("slopes", torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)]))

    def forward(self, x):
        b, s, d = x.shape
        h, hd = self.heads, d // self.heads
        f = self.qkv(x).view(b, s, h, 3, hd)
        q = f[..., 0, :].transpose(1, 2).reshape(b * h, s, hd)
        k = f[..., 1, :].permute(0, 2, 3, 1).reshape(b * h, hd, s)
        v = f[..., 2, :].transpose(1, 2).reshape(b * h, s, hd)
        alibi = (self.slopes[:, None] * torch.arange(s)[None, :].float()).reshape(h, 1, s).repeat(b, 1, 1)
        scores = alibi.baddbmm(batch1=q, batch2=k, beta=1.0, alpha=hd ** -0.5).view(b, h, s, s)
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), torch.finfo(scores.dtype).min)
        p = torch.softmax(scores, dim=-1, dtype=torch.float32).view(b * h, s, s)
        return self.dense(torch.bmm(p, v).view(b, h, s, hd).permute(0, 2, 1, 3).reshape(b, s, d))


class CohereBlock(torch.nn.Module):
    """Cohere (Command-R): one LayerNorm of a weight and no bias (F.layer_norm(x, shape, w, None)) feeding
    attention and a SwiGLU MLP in parallel, q and k normed per head without affine then scaled by a weight
    [heads, head_dim], a causal masked_fill of -inf, the input plus both."""

    def __init__(self, d=64, heads=4, ffn=128):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.ln_w = torch.nn.Parameter(1 + 0.3 * torch.randn(d))
        self.q_w = torch.nn.Parameter(1 + 0.3 * torch.randn(heads, self.hd))
        self.k_w = torch.nn.Parameter(1 + 0.3 * torch.randn(heads, self.hd))
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d, bias=False) for _ in range(4))
        self.gate, self.up = torch.nn.Linear(d, ffn, bias=False), torch.nn.Linear(d, ffn, bias=False)
        self.down = torch.nn.Linear(ffn, d, bias=False)

    def forward(self, x):
        b, s, d = x.shape
        h = torch.nn.functional.layer_norm(x, (d,), self.ln_w, None, 1e-5)
        q = torch.nn.functional.layer_norm(self.q(h).view(b, s, self.heads, self.hd), (self.hd,), None, None, 1e-5) * self.q_w
        k = torch.nn.functional.layer_norm(self.k(h).view(b, s, self.heads, self.hd), (self.hd,), None, None, 1e-5) * self.k_w
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = self.v(h).view(b, s, self.heads, self.hd).transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) / self.hd ** 0.5
        scores = scores.masked_fill(torch.triu(torch.ones(s, s, dtype=torch.bool), 1), float("-inf"))
        attn = self.o((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d))
        return x + attn + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


class TransfoXlLayer(torch.nn.Module):
    """Transformer-XL's RelPartialLearnableMultiHeadAttn without memory (mem_transformer.py), sequence
    first: AC = einsum("ibnd,jbnd->ijbn") with r_w_bias, BD = einsum("ibnd,jnd->ijbn") over the sinusoid
    positions' heads (two free indices of the left), _rel_shift (a zero column, a view, [1:], view_as),
    masked_fill of a bool triu with -inf, softmax over the keys (dim 1), einsum("ijbn,jbnd->ibnd"),
    post-LN, then the post-LN feed-forward."""

    def __init__(self, d=64, heads=4, inner=128, fill=-float("inf")):
        super().__init__()
        self.heads, self.hd, self.fill = heads, d // heads, fill
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.o, self.r = torch.nn.Linear(d, d, bias=False), torch.nn.Linear(d, d, bias=False)
        self.ln, self.ff_ln = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.r_w_bias = torch.nn.Parameter(0.3 * torch.randn(heads, self.hd))
        self.r_r_bias = torch.nn.Parameter(0.3 * torch.randn(heads, self.hd))
        self.register_buffer("inv_freq", 1 / (10000 ** (torch.arange(0.0, d, 2.0) / d)))
        self.ff1, self.ff2 = torch.nn.Linear(d, inner), torch.nn.Linear(inner, d)

    @staticmethod
    def rel_shift(x):
        zero_pad = torch.zeros((x.size(0), 1, *x.size()[2:]), dtype=x.dtype)
        padded = torch.cat([zero_pad, x], dim=1).view(x.size(1) + 1, x.size(0), *x.size()[2:])
        return padded[1:].view_as(x)

    def forward(self, w):
        s, b = w.size(0), w.size(1)
        pos = torch.ger(torch.arange(s - 1, -1, -1.0, dtype=w.dtype), self.inv_freq)
        r = torch.cat([pos.sin(), pos.cos()], dim=-1)[:, None, :]
        mask = torch.triu(w.new_ones(s, s), diagonal=1).bool()[:, :, None]
        q, k, v = (t.view(s, b, self.heads, self.hd) for t in torch.chunk(self.qkv(w), 3, dim=-1))
        rk = self.r(r).view(s, self.heads, self.hd)
        ac = torch.einsum("ibnd,jbnd->ijbn", (q + self.r_w_bias, k))
        bd = self.rel_shift(torch.einsum("ibnd,jnd->ijbn", (q + self.r_r_bias, rk)))
        score = ((ac + bd) * self.hd ** -0.5).masked_fill(mask[:, :, :, None], self.fill)
        vec = torch.einsum("ijbn,jbnd->ibnd", (torch.softmax(score, dim=1), v)).reshape(s, b, -1)
        out = self.ln(w + self.o(vec))
        return self.ff_ln(out + self.ff2(torch.relu(self.ff1(out))))


class XlnetRelAttn(torch.nn.Module):
    """XLNet's relative attention (attn_type "uni", no memory, the h stream): per-head weights [d, n, dh]
    by einsum("ibh,hnd->ibnd"), scores einsum("ibnd,jbnd->bnij"), rel_shift_bnij (a reshape swapping the
    last two dims, [:, :, 1:], a reshape, index_select of arange), the mask transposed by an Einsum of one
    operand, einsum("ijbn->bnij"), times -1e30, softmax(dim=3), the output by einsum("ibnd,hnd->ibh"),
    post-LN."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads, self.hd, self.d = heads, d // heads, d
        self.q, self.k, self.v, self.o, self.r = (torch.nn.Parameter(0.1 * torch.randn(d, heads, d // heads))
                                                  for _ in range(5))
        self.r_r_bias = torch.nn.Parameter(0.1 * torch.randn(heads, d // heads))
        self.r_w_bias = torch.nn.Parameter(0.1 * torch.randn(heads, d // heads))
        self.ln = torch.nn.LayerNorm(d, eps=1e-12)

    def forward(self, h):
        s, b = h.shape[0], h.shape[1]
        inv_freq = 1 / torch.pow(10000, torch.arange(0, self.d, 2.0) / self.d)
        pos = torch.einsum("i,d->id", torch.arange(s, -s, -1.0), inv_freq)
        r = torch.cat([torch.sin(pos), torch.cos(pos)], dim=-1)[:, None, :].expand(-1, b, -1)
        mask = torch.triu(torch.ones(s, s), diagonal=1)[:, :, None, None]
        mask = ((mask - torch.eye(s)[:, :, None, None]) > 0).to(mask)
        q, k, v = (torch.einsum("ibh,hnd->ibnd", h, w) for w in (self.q, self.k, self.v))
        kr = torch.einsum("ibh,hnd->ibnd", r, self.r)
        ac = torch.einsum("ibnd,jbnd->bnij", q + self.r_w_bias, k)
        bd = torch.einsum("ibnd,jbnd->bnij", q + self.r_r_bias, kr)
        n = bd.shape
        bd = bd.reshape(n[0], n[1], n[3], n[2])[:, :, 1:, :].reshape(n[0], n[1], n[2], n[3] - 1)
        bd = torch.index_select(bd, 3, torch.arange(s, dtype=torch.long))
        score = (ac + bd) * self.hd ** -0.5 - 1e30 * torch.einsum("ijbn->bnij", mask)
        vec = torch.einsum("bnij,jbnd->ibnd", torch.softmax(score, dim=3), v)
        return self.ln(torch.einsum("ibnd,hnd->ibh", vec, self.o) + h)


class TorchMultiheadAttention(torch.nn.Module):
    """torch.nn.MultiheadAttention as a model calls it (batch_first, need_weights=False): its packed in_proj
    (one Gemm, its output split three ways), heads folded into the batch for bmm, and a float mask of -inf
    above the diagonal (added to the scores) when causal."""

    def __init__(self, d=32, heads=4, causal=False):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.causal = causal

    def forward(self, x):
        s = x.shape[1]
        mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1) if self.causal else None
        return self.mha(x, x, x, attn_mask=mask, need_weights=False)[0]


class TorchEncoderLayer(torch.nn.Module):
    """torch.nn.TransformerEncoderLayer (batch_first; pre-norm or post-norm, ReLU or GELU), as torch builds
    it: MultiheadAttention, dropout 0, two Linears, two LayerNorms."""

    def __init__(self, d=32, heads=4, f=64, norm_first=True, activation="relu"):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=f, dropout=0.0, activation=activation,
                                                      batch_first=True, norm_first=norm_first)

    def forward(self, x):
        return self.layer(x)


class ChatGlm2Block(torch.nn.Module):
    """ChatGLM2 (modeling_chatglm.py), sequence first: a fused query_key_value split into heads and groups,
    the rope cache [s, rot / 2, 2] built in forward from arange(s), taken at position_ids, viewed with a -1
    (rope_cache.view(sq, -1, 1, n, 2)) and applied to the first half of each head as pairs (stack,
    flatten), multi-query groups by unsqueeze(-2).expand.view, torch.empty + baddbmm(beta=0), a bool
    ones tril_()'d in place and inverted, masked_fill(-inf), bmm, RMSNorm and SwiGLU by torch.chunk."""

    def __init__(self, m, d=64, heads=4, groups=2, ffn=96, coeff=2):
        super().__init__()
        self.np, self.hn, self.ng, self.d, self.coeff = heads, d // heads, groups, d, coeff
        self.qkv = torch.nn.Linear(d, (heads + 2 * groups) * self.hn)
        self.dense = torch.nn.Linear(d, d, bias=False)
        self.ln1, self.ln2 = m.RmsNorm(d, 1e-5), m.RmsNorm(d, 1e-5)
        self.h_to_4h, self.h4_to_h = torch.nn.Linear(d, 2 * ffn, bias=False), torch.nn.Linear(ffn, d, bias=False)

    @staticmethod
    def rope(x, cache):
        sq, np_ = x.size(0), x.size(2)
        rot = cache.shape[-2] * 2
        x, x_pass = x[..., :rot], x[..., rot:]
        xs = x.reshape(sq, -1, np_, rot // 2, 2)
        cache = cache[:sq].view(sq, -1, 1, xs.size(3), 2)
        out = torch.stack([xs[..., 0] * cache[..., 0] - xs[..., 1] * cache[..., 1],
                           xs[..., 1] * cache[..., 0] + xs[..., 0] * cache[..., 1]], -1)
        return torch.cat((out.flatten(3), x_pass), dim=-1)

    def forward(self, x):
        s, b = x.shape[0], x.shape[1]
        n = self.hn // 2
        theta = 1.0 / (10000 ** (torch.arange(0, n, 2, dtype=torch.float) / n))
        angles = torch.outer(torch.arange(s, dtype=torch.float), theta)
        cache = torch.stack([torch.cos(angles), torch.sin(angles)], dim=-1)
        cache = cache[torch.arange(s, dtype=torch.long).unsqueeze(0).repeat(b, 1)].transpose(0, 1).contiguous()
        q, k, v = self.qkv(self.ln1(x)).split([self.np * self.hn, self.ng * self.hn, self.ng * self.hn], dim=-1)
        q = self.rope(q.view(s, b, self.np, self.hn), cache)
        k = self.rope(k.view(s, b, self.ng, self.hn), cache)
        k, v = (t.unsqueeze(-2).expand(-1, -1, -1, self.np // self.ng, -1).contiguous().view(s, b, self.np, self.hn)
                for t in (k, v.view(s, b, self.ng, self.hn)))
        q, k, v = (t.view(s, b * self.np, -1).transpose(0, 1) for t in (q, k, v))
        scores = torch.baddbmm(torch.empty(b * self.np, s, s), q, k.transpose(1, 2), beta=0.0,
                               alpha=1.0 / (self.hn ** 0.5 * self.coeff)).view(b, self.np, s, s) * self.coeff
        mask = torch.ones(b, 1, s, s, dtype=torch.bool)
        mask.tril_()
        p = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1).view(b * self.np, s, s)
        ctx = torch.bmm(p, v).view(b, self.np, s, self.hn).permute(2, 0, 1, 3).reshape(s, b, self.d)
        h = x + self.dense(ctx)
        gate, up = torch.chunk(self.h_to_4h(self.ln2(h)), 2, dim=-1)
        return h + self.h4_to_h(torch.nn.functional.silu(gate) * up)


class SequenceFirstAttention(torch.nn.Module):
    """Megatron's and ChatGLM's layout: x [s, b, d], q, k and v viewed [s, b * h, d_h] and transposed to
    [b * h, s, d_h] for torch.bmm, a masked_fill of a bool triu with -10000, and the output back to
    [s, b, d]."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv, self.o = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)

    def forward(self, x):
        s, b, d = x.shape
        hd = d // self.heads
        q, k, v = (t.reshape(s, b * self.heads, hd).transpose(0, 1) for t in self.qkv(x).split(d, dim=-1))
        scores = (torch.bmm(q, k.transpose(1, 2)) / hd ** 0.5).masked_fill(
            torch.ones(s, s, dtype=torch.bool).triu(1), -10000.0)
        return self.o(torch.bmm(torch.softmax(scores, -1), v).transpose(0, 1).reshape(s, b, d))


class FalconMqa(torch.nn.Module):
    """Falcon-7B's multi-query attention: the fused query_key_value viewed [b, s, h + 2, d_h], q its heads
    [..., :-2, :], k and v taken by lists of one index ([..., [-2], :], [..., [-1], :]) and expanded over the
    heads, a masked_fill of a bool triu with finfo.min, and the MLP in parallel with the attention."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.query_key_value = torch.nn.Linear(d, (heads + 2) * self.hd, bias=False)
        self.dense = torch.nn.Linear(d, d, bias=False)
        self.ln = torch.nn.LayerNorm(d)
        self.up, self.down = torch.nn.Linear(d, 4 * d, bias=False), torch.nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        b, s, d = x.shape
        a = self.ln(x)
        fused = self.query_key_value(a).view(b, s, self.heads + 2, self.hd)
        q = fused[..., :-2, :].transpose(1, 2)
        k = fused[..., [-2], :].transpose(1, 2).expand(b, self.heads, s, self.hd)
        v = fused[..., [-1], :].transpose(1, 2).expand(b, self.heads, s, self.hd)
        scores = q @ k.transpose(-1, -2) / self.hd ** 0.5
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), torch.finfo(scores.dtype).min)
        o = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, s, d)
        return x + self.dense(o) + self.down(torch.nn.functional.gelu(self.up(a)))


class MptPermutedKeys(torch.nn.Module):
    """MPT's attention: k permuted straight to [b, h, d_h, s] (einops' 'b s (h d) -> b h d s'),
    q.matmul(k) * scale, a masked_fill of a viewed ~tril with -inf; then a GeGLU MLP and a squared ReLU."""

    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.Wqkv, self.out = torch.nn.Linear(d, 3 * d, bias=False), torch.nn.Linear(d, d, bias=False)
        self.gate_up, self.down = torch.nn.Linear(d, 4 * d, bias=False), torch.nn.Linear(2 * d, d, bias=False)
        self.r1, self.r2 = torch.nn.Linear(d, d), torch.nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = self.Wqkv(x).chunk(3, dim=2)
        q = q.view(b, s, self.heads, hd).permute(0, 2, 1, 3)
        k = k.view(b, s, self.heads, hd).permute(0, 2, 3, 1)
        v = v.view(b, s, self.heads, hd).permute(0, 2, 1, 3)
        w = (q.matmul(k) * (1 / hd ** 0.5)).masked_fill(~torch.tril(torch.ones(s, s, dtype=torch.bool)).view(1, 1, s, s),
                                                        float("-inf"))
        x = x + self.out(torch.softmax(w, dim=-1).matmul(v).permute(0, 2, 1, 3).reshape(b, s, d))
        gate, up = self.gate_up(x).chunk(2, -1)
        x = x + self.down(torch.nn.functional.gelu(gate) * up)
        return x + self.r2(torch.relu(self.r1(x)) ** 2)


class HfRotaryPositionIds(torch.nn.Module):
    """Hugging Face 4.40's Llama attention with position_ids a model input (as optimum exports it): the
    rotary's inv_freq @ position_ids, cat((freqs, freqs)), cos and sin of that stream; repeat_kv, a
    finfo.min triu mask, softmax in float32. The ids come left-padded (left_padded_positions)."""

    def __init__(self, m, d=64, heads=4, kv_heads=2):
        super().__init__()
        self.m, self.h, self.kv, self.hd = m, heads, kv_heads, d // heads
        self.q_proj = torch.nn.Linear(d, d, bias=False)
        self.k_proj = torch.nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = torch.nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = torch.nn.Linear(d, d, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        b, s, d = x.shape
        q = self.q_proj(x).view(b, s, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        inv_freq = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv_freq @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        q, k = self.m.apply_rotary_pos_emb(q, k, cos, sin)
        k, v = self.m.repeat_kv(k, self.h // self.kv), self.m.repeat_kv(v, self.h // self.kv)
        mask = torch.full((s, s), torch.finfo(x.dtype).min).triu(1)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd) + mask
        w = torch.nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.o_proj(torch.matmul(w, v).transpose(1, 2).reshape(b, s, d))


def left_padded_positions(pad):
    """Position ids as Hugging Face's generate makes them for left padding: row i's first pad * i tokens
    padded, attention_mask.cumsum(-1) - 1, and 1 at the padded positions."""
    def make(b, s):
        attention_mask = torch.ones(b, s, dtype=torch.long)
        for i in range(b):
            attention_mask[i, :pad * i] = 0
        position_ids = attention_mask.cumsum(-1) - 1
        return position_ids.masked_fill(attention_mask == 0, 1)
    return make


class GatheredColumns(torch.nn.Module):
    """torch.gather of a stream along its last axis at one constant permutation for every row (a product by
    one selection), then at indices that differ by row (a selection per row)."""

    def __init__(self, d=40, seq=8):
        super().__init__()
        self.lin = torch.nn.Linear(d, d)
        self.register_buffer("perm", torch.randperm(d, generator=torch.Generator().manual_seed(3)))
        self.register_buffer("per_row", torch.randint(0, d, (seq, d // 2), generator=torch.Generator().manual_seed(4)))

    def forward(self, x):
        h = self.lin(x)
        b, s, d = h.shape
        same = torch.gather(h, -1, self.perm.expand(b, s, d))
        rows = torch.gather(h, -1, self.per_row[:s].expand(b, s, d // 2))
        return same[..., : d // 2] * rows + same[..., d // 2:]


def padding(pad, dtype):
    """A [b, s] mask of 1s whose row i has its last pad * (i + 1) tokens 0, in `dtype`."""
    def make(b, s):
        m = torch.ones(b, s)
        for i in range(b):
            m[i, s - pad * (i + 1):] = 0
        return m.to(dtype)
    return make


class GptjGatheredRotary(torch.nn.Module):
    """GPT-J's attention as Hugging Face writes it now: the sin/cos table taken at position ids by
    torch.gather (ONNX GatherElements of constants), split, repeat_interleave'd, and applied to the rotary
    part of each head by rotate_every_two; torch.where of a bool buffer with finfo.min, then the division by
    sqrt(head_dim)."""

    def __init__(self, d=128, heads=4, rotary=16, max_pos=64):
        super().__init__()
        self.heads, self.hd, self.rotary = heads, d // heads, rotary
        self.q = torch.nn.Linear(d, d, bias=False)
        self.k = torch.nn.Linear(d, d, bias=False)
        self.v = torch.nn.Linear(d, d, bias=False)
        self.out = torch.nn.Linear(d, d, bias=False)
        self.register_buffer("bias", torch.tril(torch.ones(max_pos, max_pos, dtype=torch.bool))[None, None])
        inv_freq = 1.0 / (10000 ** (torch.arange(0, rotary, 2, dtype=torch.int64) / rotary))
        angles = torch.einsum("i , j -> i j", torch.arange(max_pos, dtype=torch.int64).float(), inv_freq).float()
        self.embed_positions = torch.cat((torch.sin(angles), torch.cos(angles)), dim=1)

    @staticmethod
    def rotate_every_two(x):
        return torch.stack((-x[:, :, :, 1::2], x[:, :, :, ::2]), dim=-1).flatten(-2)

    def forward(self, x):
        b, s, d = x.shape
        position_ids = torch.arange(0, s, dtype=torch.long).unsqueeze(0).repeat(b, 1)
        q = self.q(x).view(b, s, self.heads, self.hd)
        k = self.k(x).view(b, s, self.heads, self.hd)
        v = self.v(x).view(b, s, self.heads, self.hd).permute(0, 2, 1, 3)
        table = self.embed_positions.repeat(position_ids.shape[0], 1, 1)
        sincos = torch.gather(table, 1, position_ids.unsqueeze(-1).repeat(1, 1, table.shape[-1]))
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
        cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
        turned = [torch.cat([t[..., :self.rotary] * cos + self.rotate_every_two(t[..., :self.rotary]) * sin,
                             t[..., self.rotary:]], dim=-1).permute(0, 2, 1, 3) for t in (q, k)]
        w = turned[0] @ turned[1].transpose(-1, -2)
        w = torch.where(self.bias[:, :, :s, :s], w, torch.tensor(torch.finfo(w.dtype).min)) / self.hd ** 0.5
        y = torch.softmax(w, dim=-1) @ v
        return self.out(y.permute(0, 2, 1, 3).reshape(b, s, d))


class EdgePaddedFeatures(torch.nn.Module):
    """F.pad of a stream's features in replicate and reflect modes (ONNX Pad edge and reflect along the
    last axis), each followed by a projection back to the width."""

    def __init__(self, d=40):
        super().__init__()
        self.edge = torch.nn.Linear(d + 3, d)
        self.mirror = torch.nn.Linear(d + 5, d)

    def forward(self, x):
        h = torch.tanh(x)
        return self.edge(torch.nn.functional.pad(h, (2, 1), mode="replicate")) + \
            self.mirror(torch.nn.functional.pad(h, (1, 4), mode="reflect"))


class GqaIndexSelect(torch.nn.Module):
    """Grouped-query attention whose K and V heads are picked by index_select at arange(h) // rep (or,
    tiled, k[:, arange(h) % kv]): a Gather of heads at indices that are not one run."""

    def __init__(self, d=64, heads=4, kv=2, tiled=False):
        super().__init__()
        self.h, self.kv, self.hd, self.tiled = heads, kv, d // heads, tiled
        self.q_proj = torch.nn.Linear(d, d, bias=False)
        self.k_proj = torch.nn.Linear(d, kv * self.hd, bias=False)
        self.v_proj = torch.nn.Linear(d, kv * self.hd, bias=False)
        self.o_proj = torch.nn.Linear(d, d, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        if self.tiled:
            idx = torch.arange(self.h) % self.kv
            k, v = k[:, idx], v[:, idx]
        else:
            idx = torch.arange(self.h) // (self.h // self.kv)
            k, v = k.index_select(1, idx), v.index_select(1, idx)
        w = q @ k.transpose(-2, -1) / self.hd**0.5 + torch.full((s, s), float("-inf")).triu(1)
        o = torch.softmax(w, -1) @ v
        return self.o_proj(o.transpose(1, 2).reshape(b, s, -1))


class HfStaticCache(torch.nn.Module):
    """Hugging Face's StaticCache: K and V written into zero caches of max_len positions at cache_position
    (k_out.index_copy_(2, cache_position, k), or with assign=True k_out[:, :, cache_position] = k), and
    attention over every cached position, those past each row masked by the dtype's minimum. Exports
    ScatterElements (or ScatterND) of a stream."""

    def __init__(self, d=48, heads=3, max_len=12, assign=False):
        super().__init__()
        self.h, self.hd, self.max_len, self.assign = heads, d // heads, max_len, assign
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.o = torch.nn.Linear(d, d)
        self.register_buffer("k_cache", torch.zeros(1, heads, max_len, d // heads))
        self.register_buffer("v_cache", torch.zeros(1, heads, max_len, d // heads))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = (t.view(b, s, self.h, self.hd).transpose(1, 2) for t in self.qkv(x).split(d, -1))
        cache_position = torch.arange(s)
        k_out, v_out = self.k_cache.clone(), self.v_cache.clone()
        if self.assign:
            k_out[:, :, cache_position] = k
            v_out[:, :, cache_position] = v
        else:
            k_out.index_copy_(2, cache_position, k)
            v_out.index_copy_(2, cache_position, v)
        causal = torch.triu(torch.full((s, self.max_len), torch.finfo(x.dtype).min), diagonal=1)
        causal *= torch.arange(self.max_len) > cache_position.reshape(-1, 1)
        w = q @ k_out.transpose(-2, -1) / self.hd**0.5 + causal[None, None]
        return self.o((torch.softmax(w, -1) @ v_out).transpose(1, 2).reshape(b, s, d))


class HfClampedCausalMask(torch.nn.Module):
    """Hugging Face's attention before 4.31 (Llama; OPT with `view`): _make_causal_mask's triangle of 0 and
    finfo.min expanded per batch and added to the scores, then clamped by torch.max(w, finfo.min); OPT
    adds it to [b, h, s, s] and views the sum as [b * h, s, s] for the softmax. A causal softmax both."""

    def __init__(self, d=64, heads=4, view=False):
        super().__init__()
        self.h, self.hd, self.view = heads, d // heads, view
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d, bias=view) for _ in range(4))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = (p(x).view(b, s, self.h, self.hd).transpose(1, 2) for p in (self.q, self.k, self.v))
        mask = torch.full((s, s), torch.finfo(x.dtype).min)
        cond = torch.arange(mask.size(-1))
        mask.masked_fill_(cond < (cond + 1).view(mask.size(-1), 1), 0)
        mask = mask[None, None, :, :].expand(b, 1, s, s)
        if self.view:  # OPT: bmm over [b * h, s, hd], the mask added to a view as [b, h, s, s]
            q, k, v = (t.reshape(b * self.h, s, self.hd) for t in (q * self.hd ** -0.5, k, v))
            w = torch.bmm(q, k.transpose(1, 2)).view(b, self.h, s, s) + mask
            w = torch.max(w, torch.tensor(torch.finfo(w.dtype).min)).view(b * self.h, s, s)
            o = torch.bmm(torch.softmax(w, dim=-1), v).view(b, self.h, s, self.hd)
        else:
            w = torch.matmul(q, k.transpose(2, 3)) / (self.hd ** 0.5) + mask
            w = torch.max(w, torch.tensor(torch.finfo(w.dtype).min))
            w = torch.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
            o = torch.matmul(w, v)
        return x + self.o(o.transpose(1, 2).reshape(b, s, d))


class AdditiveMaskInput(torch.nn.Module):
    """Attention whose mask is a model input added to the scores ([b, 1, s, s] of any values)."""

    def __init__(self, d=48, heads=3):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.o = torch.nn.Linear(d, d)

    def forward(self, x, mask):
        b, s, c = x.size()
        q, k, v = (t.view(b, s, self.heads, c // self.heads).transpose(1, 2) for t in self.qkv(x).split(c, dim=2))
        w = q @ k.transpose(-2, -1) / math.sqrt(c // self.heads) + mask
        return self.o((torch.softmax(w, -1) @ v).transpose(1, 2).reshape(b, s, c))


class InternLm2Packed(torch.nn.Module):
    """InternLM2's packed wqkv: the projection viewed [b, s, kv, rep + 2, hd], q its first rep slots of each
    group, k and v its last two (slices and selects on a middle axis), rotary, repeat_kv, a bool tril mask."""

    def __init__(self, d=64, heads=4, kv=2):
        super().__init__()
        self.heads, self.kv, self.hd = heads, kv, d // heads
        self.wqkv = torch.nn.Linear(d, (heads + 2 * kv) * self.hd, bias=False)
        self.wo = torch.nn.Linear(d, d, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        rep = self.heads // self.kv
        qkv = self.wqkv(x).view(b, s, self.kv, rep + 2, self.hd)
        q = qkv[..., :rep, :].reshape(b, s, -1, self.hd).transpose(1, 2)
        k, v = qkv[..., -2, :].transpose(1, 2), qkv[..., -1, :].transpose(1, 2)
        inv = 1.0 / 10000 ** (torch.arange(0, self.hd, 2).float() / self.hd)
        f = torch.outer(torch.arange(s).float(), inv)
        cos, sin = torch.cat([f, f], -1).cos(), torch.cat([f, f], -1).sin()
        q = q * cos + torch.cat((-q[..., self.hd // 2:], q[..., :self.hd // 2]), -1) * sin
        k = k * cos + torch.cat((-k[..., self.hd // 2:], k[..., :self.hd // 2]), -1) * sin
        k = k[:, :, None].expand(b, self.kv, rep, s, self.hd).reshape(b, self.heads, s, self.hd)
        v = v[:, :, None].expand(b, self.kv, rep, s, self.hd).reshape(b, self.heads, s, self.hd)
        a = q @ k.transpose(2, 3) / math.sqrt(self.hd)
        a = a.masked_fill(~torch.tril(torch.ones(s, s, dtype=torch.bool)), float("-inf")).softmax(-1)
        return self.wo((a @ v).transpose(1, 2).reshape(b, s, -1))


class CosineAttentionSquaredRelu(torch.nn.Module):
    """Cosine attention (F.normalize of q and k, a learned scale per head) with a causal fill of -1e9, and
    Primer's squared-ReLU MLP (relu(x) ** 2)."""

    def __init__(self, d=48, heads=3, f=96):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.up, self.down = torch.nn.Linear(d, f), torch.nn.Linear(f, d)
        self.scale = torch.nn.Parameter(10 + torch.randn(heads, 1, 1))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = torch.nn.functional.normalize(q.view(b, s, self.heads, self.hd).transpose(1, 2), dim=-1)
        k = torch.nn.functional.normalize(k.view(b, s, self.heads, self.hd).transpose(1, 2), dim=-1)
        v = v.view(b, s, self.heads, self.hd).transpose(1, 2)
        a = (q @ k.transpose(-1, -2)) * self.scale
        a = a.masked_fill(torch.ones(s, s).tril() == 0, -1e9).softmax(-1)
        x = x + self.o((a @ v).transpose(1, 2).reshape(b, s, d))
        return x + self.down(torch.relu(self.up(x)) ** 2)


class CrossAttention(torch.nn.Module):
    """Whisper's decoder cross-attention: queries from x, keys and values from the encoder's output (an input
    of its own length), q and k each scaled by hd ** -0.25, keys permuted to [b, h, hd, m], softmax in float."""

    def __init__(self, d=48, heads=3):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q, self.k = torch.nn.Linear(d, d), torch.nn.Linear(d, d, bias=False)
        self.v, self.o = torch.nn.Linear(d, d), torch.nn.Linear(d, d)
        self.ln = torch.nn.LayerNorm(d)

    def forward(self, x, memory):
        b, s, _ = x.shape
        m = memory.shape[1]
        q = self.q(self.ln(x)).view(b, s, self.heads, self.hd).transpose(1, 2) * self.hd ** -0.25
        k = self.k(memory).view(b, m, self.heads, self.hd).permute(0, 2, 3, 1) * self.hd ** -0.25
        v = self.v(memory).view(b, m, self.heads, self.hd).transpose(1, 2)
        w = (q @ k).float().softmax(-1)
        return x + self.o((w @ v).permute(0, 2, 1, 3).flatten(start_dim=2))


class HfSdpaLlama(torch.nn.Module):
    """Hugging Face's LlamaSdpaAttention: rotary, repeat_kv by expand and reshape, SDPA given the mask (bool,
    or float of finfo.min) as an input."""

    def __init__(self, m, d=64, heads=4, kv=2):
        super().__init__()
        self.heads, self.kv, self.hd, self.sdpa = heads, kv, d // heads, m.SdpaMasked
        self.q, self.o = torch.nn.Linear(d, d, bias=False), torch.nn.Linear(d, d, bias=False)
        self.k = torch.nn.Linear(d, kv * self.hd, bias=False)
        self.v = torch.nn.Linear(d, kv * self.hd, bias=False)

    def forward(self, x, mask):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.k(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        v = self.v(x).view(b, s, self.kv, self.hd).transpose(1, 2)
        inv = 1.0 / 10000 ** (torch.arange(0, self.hd, 2).float() / self.hd)
        f = torch.outer(torch.arange(s).float(), inv)
        cos, sin = torch.cat([f, f], -1).cos(), torch.cat([f, f], -1).sin()
        q = q * cos + torch.cat((-q[..., self.hd // 2:], q[..., :self.hd // 2]), -1) * sin
        k = k * cos + torch.cat((-k[..., self.hd // 2:], k[..., :self.hd // 2]), -1) * sin
        rep = self.heads // self.kv
        k = k[:, :, None].expand(b, self.kv, rep, s, self.hd).reshape(b, self.heads, s, self.hd)
        v = v[:, :, None].expand(b, self.kv, rep, s, self.hd).reshape(b, self.heads, s, self.hd)
        return self.o(self.sdpa.apply(q, k, v, mask).transpose(1, 2).reshape(b, s, -1))


def causal_mask(dtype):
    """A [b, 1, s, s] causal mask input: bool (True where a key is kept) or float (finfo.min where not)."""
    def make(b, s):
        keep = torch.ones(s, s, dtype=torch.bool).tril()
        m = keep if dtype == torch.bool else torch.zeros(s, s).masked_fill(~keep, torch.finfo(torch.float32).min)
        return m[None, None].expand(b, 1, s, s).contiguous()
    return make


def t5_bucket(relative, bidirectional, buckets, max_distance):
    """T5's relative position bucket: exact below buckets / 2 (of each direction), then logarithmic."""
    out = 0
    if bidirectional:
        buckets //= 2
        out += (relative > 0).to(torch.long) * buckets
        relative = torch.abs(relative)
    else:
        relative = -torch.min(relative, torch.zeros_like(relative))
    exact = buckets // 2
    large = exact + (torch.log(relative.float() / exact) / math.log(max_distance / exact)
                     * (buckets - exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, buckets - 1))
    return out + torch.where(relative < exact, relative, large)


class T5Block(torch.nn.Module):
    """T5 (v1.1) self-attention: the relative position bias (buckets from arange, abs or min, log, a cast to
    long, where; an embedding of heads), no score scaling, T5's RMS norm with rsqrt, a gated-GELU MLP; the
    decoder's causal mask (1 - tril) * finfo.min added to the bias."""

    def __init__(self, d=48, heads=4, hd=12, f=96, causal=False, buckets=32, max_distance=128):
        super().__init__()
        self.heads, self.hd, self.causal = heads, hd, causal
        self.buckets, self.max_distance = buckets, max_distance
        self.q, self.k, self.v = (torch.nn.Linear(d, heads * hd, bias=False) for _ in range(3))
        self.o = torch.nn.Linear(heads * hd, d, bias=False)
        self.relative = torch.nn.Embedding(buckets, heads)
        self.ln1, self.ln2 = (torch.nn.Parameter(1 + 0.3 * torch.randn(d)) for _ in range(2))
        self.wi0, self.wi1 = torch.nn.Linear(d, f, bias=False), torch.nn.Linear(d, f, bias=False)
        self.wo = torch.nn.Linear(f, d, bias=False)

    @staticmethod
    def norm(x, w):
        return w * (x * torch.rsqrt(x.to(torch.float32).pow(2).mean(-1, keepdim=True) + 1e-6))

    def forward(self, x):
        b, n, _ = x.shape
        y = self.norm(x, self.ln1)
        q, k, v = (f(y).view(b, -1, self.heads, self.hd).transpose(1, 2) for f in (self.q, self.k, self.v))
        relative = torch.arange(n, dtype=torch.long)[None, :] - torch.arange(n, dtype=torch.long)[:, None]
        bias = self.relative(t5_bucket(relative, not self.causal, self.buckets, self.max_distance))
        bias = bias.permute([2, 0, 1]).unsqueeze(0)
        if self.causal:
            bias = bias + (1.0 - torch.tril(torch.ones(n, n))[None, None]) * torch.finfo(torch.float32).min
        w = torch.softmax((q @ k.transpose(3, 2) + bias).float(), dim=-1)
        x = x + self.o((w @ v).transpose(1, 2).contiguous().view(b, -1, self.heads * self.hd))
        y = self.norm(x, self.ln2)
        return x + self.wo(torch.nn.functional.gelu(self.wi0(y), approximate="tanh") * self.wi1(y))


class DeepSeekMla(torch.nn.Module):
    """DeepSeek-V2's multi-head latent attention over a prompt: low-rank q and kv with RMS norms between, q
    split into a part without position and a rotary one, one rotary key shared by every head, the parts
    written into new_empty tensors by slice assignment (or joined by torch.cat, the shared key expanded
    over the heads), the interleaved rotary permuted to halves, values of another head size."""

    def __init__(self, m, d=64, heads=4, q_rank=32, kv_rank=24, nope=16, rope=8, vd=12, joined=False):
        super().__init__()
        self.heads, self.nope, self.rope, self.vd, self.kv_rank, self.joined = heads, nope, rope, vd, kv_rank, joined
        self.qd = nope + rope
        self.q_a, self.q_norm = torch.nn.Linear(d, q_rank, bias=False), m.RmsNorm(q_rank)
        self.q_b = torch.nn.Linear(q_rank, heads * self.qd, bias=False)
        self.kv_a, self.kv_norm = torch.nn.Linear(d, kv_rank + rope, bias=False), m.RmsNorm(kv_rank)
        self.kv_b = torch.nn.Linear(kv_rank, heads * (nope + vd), bias=False)
        self.o = torch.nn.Linear(heads * vd, d, bias=False)

    def rotate(self, x, cos, sin):
        b, h, n, r = x.shape
        if not self.joined:
            x = x.view(b, h, n, r // 2, 2).transpose(4, 3).reshape(b, h, n, r)
        return x * cos + torch.cat((-x[..., r // 2:], x[..., :r // 2]), -1) * sin

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q_b(self.q_norm(self.q_a(x))).view(b, n, self.heads, self.qd).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.nope, self.rope], dim=-1)
        kv, k_pe = torch.split(self.kv_a(x), [self.kv_rank, self.rope], dim=-1)
        k_pe = k_pe.view(b, n, 1, self.rope).transpose(1, 2)
        kv = self.kv_b(self.kv_norm(kv)).view(b, n, self.heads, self.nope + self.vd).transpose(1, 2)
        k_nope, v = torch.split(kv, [self.nope, self.vd], dim=-1)
        inv = 1.0 / 10000 ** (torch.arange(0, self.rope, 2).float() / self.rope)
        f = torch.outer(torch.arange(n).float(), inv)
        cos, sin = torch.cat((f, f), -1).cos(), torch.cat((f, f), -1).sin()
        q_pe, k_pe = self.rotate(q_pe, cos, sin), self.rotate(k_pe, cos, sin)
        if self.joined:
            qs = torch.cat([q_nope, q_pe], -1)
            ks = torch.cat([k_nope, k_pe.expand(-1, self.heads, -1, -1)], -1)
        else:
            qs = k_pe.new_empty(b, self.heads, n, self.qd)
            qs[:, :, :, :self.nope] = q_nope
            qs[:, :, :, self.nope:] = q_pe
            ks = k_pe.new_empty(b, self.heads, n, self.qd)
            ks[:, :, :, :self.nope] = k_nope
            ks[:, :, :, self.nope:] = k_pe
        a = qs @ ks.transpose(2, 3) * self.qd ** -0.5
        a = torch.softmax(a + torch.full((n, n), -math.inf).triu(1), dim=-1, dtype=torch.float32)
        return self.o((a @ v).transpose(1, 2).reshape(b, n, self.heads * self.vd))


class BigCodeMqa(torch.nn.Module):
    """GPT-BigCode's (StarCoder's) multi-query block: c_attn split into q [b, s, h * hd] and one key and value
    of hd; q reshaped to [b, s * h, hd] and multiplied by k^T with baddbmm(beta=0) into torch.empty, viewed
    [b, s, h, s]; a bool tril buffer sliced to [1, s, 1, s] (heads in the middle) chooses by torch.where
    against finfo.min; softmax, then bmm with v over the [b, s * h, s] view."""

    def __init__(self, d=64, heads=4, positions=32):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.c_attn, self.c_proj = torch.nn.Linear(d, d + 2 * self.hd), torch.nn.Linear(d, d)
        self.fc, self.proj = torch.nn.Linear(d, 2 * d), torch.nn.Linear(2 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones((positions, positions), dtype=torch.bool)))

    def forward(self, x):
        b, s, d = x.shape
        q, kv = self.c_attn(self.ln_1(x)).split((d, 2 * self.hd), dim=2)
        k, v = kv.split((self.hd, self.hd), dim=-1)
        w = torch.empty((b, s * self.heads, s), dtype=x.dtype)
        w = torch.baddbmm(w, q.reshape(b, s * self.heads, self.hd), k.transpose(-1, -2), beta=0,
                          alpha=1 / math.sqrt(self.hd)).view(b, s, self.heads, s)
        w = torch.where(self.bias[None, 0:s, 0:s].unsqueeze(2), w, torch.full([], torch.finfo(x.dtype).min))
        y = torch.bmm(torch.softmax(w, dim=-1).view(b, s * self.heads, s), v).view(b, s, d)
        x = x + self.c_proj(y)
        return x + self.proj(torch.nn.functional.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


def token_ids(vocab):
    """The input `ids` of TinyLlama: token ids below `vocab`."""
    return lambda b, s: {"ids": torch.randint(0, vocab, (b, s))}


def cases(m):
    """(name, module factory, input shape, opset, dynamic axes, extra stc emit flags): the models of
    export_onnx_models.main(), then variants (the last with a head size of 8, below the default tile of 16)."""
    seq = {"x": {0: "seq"}, "y": {0: "seq"}}
    return [
        ("mlp", lambda: m.Mlp(), (4, 32), 13, seq, []),
        ("mlp_d48_f96_seq7", lambda: m.Mlp(48, 96), (7, 48), 13, seq, []),
        ("gpt2_block", lambda: m.Gpt2Block(), (1, 8, 64), 14, None, []),
        ("gpt2_block_d48_h3_s12", lambda: m.Gpt2Block(48, 3, 12), (1, 12, 48), 14, None, []),
        ("llama_block", lambda: m.LlamaBlock(), (1, 8, 64), 17, None, []),
        ("llama_block_d48_h3_kv1_s6", lambda: m.LlamaBlock(48, 3, 1, 96, 6), (1, 6, 48), 17, None, []),
        ("llama_block_d48_h6_kv2_s6", lambda: m.LlamaBlock(48, 6, 2, 96, 6), (1, 6, 48), 17, None, []),
        ("relu_sigmoid_mlp", lambda: ReluMlp(), (5, 40), 15, None, []),
        ("full_rotary_as_partial", lambda: FullRotaryAsPartial(), (1, 8, 32), 17, None, []),
        ("shared_rms_statistics", lambda: SharedRmsStatistics(), (1, 8, 32), 14, None, []),
        ("rms_of_another_tensor", lambda: SharedRmsStatistics(shared=False), (1, 8, 32), 17, None, []),
        ("bloom_slice_assigned_mask", lambda: SliceAssignedMask(), (1, 8, 32), 17, None, []),
        ("index_put_at_nonzero", lambda: SliceAssignedMask(nonzero=True), (1, 8, 32), 17, None, []),
        ("llama440_padded_mask_s12", lambda: SliceAssignedMask(48, 3, llama=True, padded=3), (1, 12, 48), 14, None, []),
        ("meta_kv_cache_write", lambda: MetaKvCache(), (1, 8, 32), 17, None, []),
        ("meta_kv_cache_write_start3_d48_h3", lambda: MetaKvCache(48, 3, start=3), (1, 6, 48), 17, None, []),
        ("left_pad_fill_neg1e4", lambda: RowsMaskedWhole(), (1, 8, 48), 17, None, []),
        ("left_pad_fill_neg1e4_d40_h5_s13_pad3", lambda: RowsMaskedWhole(40, 5, pad=3), (1, 13, 40), 17, None, []),
        ("pooled_keys_bottom_right", lambda: RowsMaskedWhole(kind="pooled_keys"), (1, 8, 48), 17, None, []),
        ("padding_added_then_causal_fill", lambda: RowsMaskedWhole(kind="pad_then_fill", pad=3), (1, 8, 48), 17, None, []),
        ("padding_added_then_causal_where_d64_h4_s12", lambda: RowsMaskedWhole(64, 4, kind="pad_then_where", pad=4), (1, 12, 64), 17, None, []),
        ("padding_filled_then_causal_fill", lambda: RowsMaskedWhole(kind="pad_fill_then_fill", pad=3), (1, 8, 48), 17, None, []),
        ("padding_added_viewed_then_causal_fill_d64_h4_s12", lambda: RowsMaskedWhole(64, 4, kind="pad_added_viewed", pad=4), (1, 12, 64), 17, None, []),
        ("padding_fill_then_causal_inf_fill_s10", lambda: PaddingThenCausalInf(), (1, 10, 48), 17, None, []),
        ("padding_fp16min_then_causal_inf_added_d40_h5", lambda: PaddingThenCausalInf(40, 5, 4, -65504.0, "add"), (1, 10, 40), 17, None, []),
        ("causal_inf_fill_then_padding_min_added", lambda: CausalInfThenPaddingMin(), (1, 8, 48), 17, None, []),
        ("causal_inf_where_then_padding_min_fill_lse_d64_h4_s12", lambda: CausalInfThenPaddingMin(64, 4, 4, "where", "fill", lse=True), (1, 12, 64), 17, None, []),
        ("data_masks", lambda: DataMasks(), (1, 8, 48), 17, None, []),
        ("data_masks_d64_h4_s12_b2", lambda: DataMasks(64, 4), (2, 12, 64), 17, None, []),
        ("nan_to_num_rows", lambda: NanToNumRows(), (1, 8, 48), 17, None, []),
        ("nan_to_num_rows_d64_h4_s12_pad5", lambda: NanToNumRows(64, 4, 5), (1, 12, 64), 17, None, []),
        ("triangular_scores", lambda: TriangularScores(), (1, 8, 48), 17, None, []),
        ("triangular_scores_d64_h4_s12_b2", lambda: TriangularScores(64, 4), (2, 12, 64), 17, None, []),
        ("rope_cache_gather", lambda: RopeCacheGather(), (1, 8, 32), 17, None, []),
        ("rope_cache_gather_buffer_d64_s12_b2", lambda: RopeCacheGather(64, 16, True), (2, 12, 64), 17, None, []),
        ("batchless_right_matmul_b2", lambda: BatchlessRightMatmul(), (2, 8, 32), 17, None, []),
        ("batchless_right_matmul_unsqueezed_b3_d48_h3_n6", lambda: BatchlessRightMatmul(48, 3, 6, True), (3, 10, 48), 17, None, []),
        ("running_means", lambda: RunningMeans(), (1, 8, 40), 17, None, []),
        ("running_means_d64_b2_op13", lambda: RunningMeans(64), (2, 5, 64), 13, None, []),
        ("sequence_running_means", lambda: SequenceRunningMeans(), (1, 8, 40), 17, None, []),
        ("sequence_running_means_d64_b2_seq_bound_op13", lambda: SequenceRunningMeans(64), (2, 5, 64), 13,
         {"x": {1: "seq"}, "y": {1: "seq"}}, []),
        ("truncated_features", lambda: TruncatedFeatures(), (1, 8, 40), 17, None, []),
        ("truncated_features_d64_b2_op13", lambda: TruncatedFeatures(64), (2, 5, 64), 13, None, []),
        ("flipped_features", lambda: FlippedFeatures(), (1, 8, 40), 17, None, []),
        ("flipped_features_d64_b2_op13", lambda: FlippedFeatures(64), (2, 5, 64), 13, None, []),
        ("gptj_gathered_rotary_s7", lambda: GptjGatheredRotary(), (1, 7, 128), 17, None, []),
        ("gptj_gathered_rotary_hd96_r32_b2_op15", lambda: GptjGatheredRotary(192, 2, 32), (2, 13, 192), 15, None, []),
        ("edge_padded_features", lambda: EdgePaddedFeatures(), (1, 8, 40), 17, None, []),
        ("edge_padded_features_d64_b2_op13", lambda: EdgePaddedFeatures(64), (2, 5, 64), 13, None, []),
        # the sequence a dynamic axis, bound by --bind alone (the check binds it): fixed at import
        ("last_token_head_seq_bound", lambda: LastTokenHead(), (1, 9, 48), 17, {"x": {1: "seq"}}, []),
        ("last_token_head_d64_b2_seq_bound_op14", lambda: LastTokenHead(64, 96), (2, 5, 64), 14, {"x": {1: "seq"}},
         []),
        # a second input, `mask` (the case's last field makes it from the batch and the sequence length)
        ("padded_int64_extended_mask", lambda: PaddedAttention(), (2, 13, 48), 17, None, [],
         padding(3, torch.int64)),
        ("padded_bool_where_mask_s7_op14", lambda: PaddedAttention(64, 4, "where"), (2, 7, 64), 14, None, [],
         padding(2, torch.bool)),
        ("padded_int64_lengths", lambda: PaddedAttention(48, 3, "lengths"), (2, 13, 48), 17, None, [],
         lambda b, s: torch.tensor([9, 13][:b], dtype=torch.int64)),
        ("hf_rotary_position_ids_b2", lambda: HfRotaryPositionIds(m), (2, 8, 64), 17, None, [],
         left_padded_positions(3)),
        ("hf_rotary_position_ids_d96_h6_kv3_s12_op14", lambda: HfRotaryPositionIds(m, 96, 6, 3), (1, 12, 96), 14,
         None, [], left_padded_positions(0)),
        ("gathered_columns_b2", lambda: GatheredColumns(), (2, 8, 40), 17, None, []),
        ("disentangled_gather", lambda: m.DisentangledGather(), (1, 8, 64), 17, None, []),
        ("disentangled_gather_d96_h6_span6_s12_b2_op14", lambda: m.DisentangledGather(96, 6, 6, 12, 32), (2, 12, 96),
         14, None, []),
        # torch's Loop over SplitToSequence for a repeat_interleave whose size its tracer does not know: of a
        # table computed in forward, and of keys over a symbolic sequence (bound below: fixed at import)
        ("repeat_interleave_table", lambda: m.RepeatInterleaveTable(), (1, 8, 64), 17, None, []),
        ("repeat_interleave_table_d96_s12_b2_op14", lambda: m.RepeatInterleaveTable(96), (2, 12, 96), 14, None, []),
        ("repeat_interleave_kv_seq_bound", lambda: m.RepeatInterleaveKv(), (1, 8, 64), 17,
         {"x": {1: "seq"}, "y": {1: "seq"}}, []),
        ("repeat_interleave_kv_d96_kv3_s12_b2_seq_bound_op14", lambda: m.RepeatInterleaveKv(96, 3, 2), (2, 12, 96),
         14, {"x": {1: "seq"}, "y": {1: "seq"}}, []),
        ("ellipsis_einsum_attention", lambda: EllipsisEinsumAttention(), (1, 8, 48), 17, None, []),
        ("ellipsis_einsum_attention_d64_h4_s12_b2", lambda: EllipsisEinsumAttention(64, 4), (2, 12, 64), 17, None, []),
        ("eye_and_causal_mask", lambda: RowsMaskedWhole(kind="eye"), (1, 8, 48), 17, None, []),
        ("gqa_index_select", lambda: GqaIndexSelect(), (1, 8, 64), 17, None, []),
        ("gqa_index_tiled_d96_h6_kv3_s12", lambda: GqaIndexSelect(96, 6, 3, tiled=True), (1, 12, 96), 17, None, []),
        ("hf_llama_clamped_causal_mask", lambda: HfClampedCausalMask(), (1, 8, 64), 17, None, []),
        ("hf_llama_clamped_causal_mask_d48_h3_b2_op13", lambda: HfClampedCausalMask(48, 3), (2, 10, 48), 13, None, []),
        ("opt_viewed_clamped_causal_mask", lambda: HfClampedCausalMask(view=True), (1, 8, 64), 17, None, []),
        ("opt_viewed_clamped_causal_mask_d48_h3_b2_op14", lambda: HfClampedCausalMask(48, 3, True), (2, 10, 48), 14,
         None, []),
        ("hf_static_cache_index_copy", lambda: HfStaticCache(), (1, 8, 48), 17, None, []),
        ("hf_static_cache_assign_d64_h4_max16", lambda: HfStaticCache(64, 4, 16, assign=True), (1, 8, 64), 17, None, []),
        ("pointwise", lambda: m.Pointwise(), (4, 32), 13, None, []),
        ("causal_attention", lambda: m.CausalSelfAttention(), (1, 8, 64), 14, None, []),
        # With a symbolic sequence, fixed at import (--set dim.seq=8): the shape arithmetic folds.
        ("causal_attention_seq", lambda: m.CausalSelfAttention(), (1, 8, 64), 14, {"x": {1: "seq"}, "y": {1: "seq"}}, ["--set", "dim.seq=8"]),
        ("causal_attention_seq_s12", lambda: m.CausalSelfAttention(), (1, 12, 64), 14, {"x": {1: "seq"}, "y": {1: "seq"}}, ["--set", "dim.seq=12"]),
        # The same with --bind alone (the symbolic dims bound below): stc fixes the axis at import.
        ("causal_attention_seq_bound", lambda: m.CausalSelfAttention(), (1, 8, 64), 14, {"x": {1: "seq"}, "y": {1: "seq"}}, []),
        ("causal_tril_seq", lambda: m.CausalSelfAttention(mask="tril"), (1, 8, 64), 17, {"x": {1: "seq"}, "y": {1: "seq"}}, ["--set", "dim.seq=8"]),
        ("gqa_attention", lambda: m.GqaAttention(), (1, 8, 64), 17, None, []),
        ("gqa_attention_seq", lambda: m.GqaAttention(), (1, 8, 64), 17, {"x": {1: "seq"}, "y": {1: "seq"}}, ["--set", "dim.seq=8"]),
        ("gqa_interleave", lambda: m.GqaAttention(interleave=True), (1, 8, 64), 17, None, []),
        ("gqa_bidirectional", lambda: m.GqaAttention(causal=False), (1, 8, 64), 17, None, []),
        ("gqa_attention_d96_h6_kv2_s24", lambda: m.GqaAttention(96, 6, 2), (1, 24, 96), 17, None, []),
        ("gqa_interleave_d64_h8_kv2_s16", lambda: m.GqaAttention(64, 8, 2, interleave=True), (1, 16, 64), 17, None, []),
        ("select_mlp", lambda: m.SelectMlp(), (4, 32), 17, None, []),
        ("einsum_attention", lambda: m.EinsumAttention(), (1, 8, 64), 17, None, []),
        ("sliding_window_attention", lambda: m.SlidingWindowAttention(), (1, 8, 64), 17, None, []),
        ("tiled_mlp", lambda: m.TiledMlp(), (4, 32), 17, None, []),
        ("rope_in_forward_seq", lambda: m.RopeInForward(), (1, 8, 64), 17, {"x": {1: "seq"}, "y": {1: "seq"}}, ["--set", "dim.seq=8"]),
        # Hugging Face 4.31's cached rotary table: an If on the squeezed dim, taken once the axis is fixed.
        ("rotary_cache_seq_s12", lambda: m.RotaryCache(), (1, 12, 64), 17, {"x": {1: "seq"}, "y": {1: "seq"}}, ["--set", "dim.seq=12"]),
        ("einsum_attention_seq_s12", lambda: m.EinsumAttention(), (1, 12, 64), 17, {"x": {1: "seq"}, "y": {1: "seq"}}, ["--set", "dim.seq=12"]),
        # Other families' blocks, and each at other sizes (head sizes of 8 and 16, one KV head, 12 rows).
        ("qwen2_block", lambda: m.Qwen2Block(), (1, 8, 64), 17, None, []),
        ("qwen2_block_d48_h6_kv2", lambda: m.Qwen2Block(48, 6, 2, 96), (1, 6, 48), 17, None, []),
        ("qwen2_block_seq_s12", lambda: m.Qwen2Block(), (1, 12, 64), 17, {"x": {1: "seq"}, "y": {1: "seq"}}, ["--set", "dim.seq=12"]),
        ("gemma_block", lambda: m.GemmaBlock(), (1, 8, 64), 17, None, []),
        ("gemma_block_d48_h3_hd16", lambda: m.GemmaBlock(48, 3, 1, 16, 96), (1, 6, 48), 17, None, []),
        ("phi_block", lambda: m.PhiBlock(), (1, 8, 64), 17, None, []),
        ("phi_block_d48_h3_rot4_s6", lambda: m.PhiBlock(48, 3, 4, 96, 6), (1, 6, 48), 17, None, []),
        ("gptj_block", lambda: m.GptjBlock(), (1, 8, 64), 17, None, []),
        ("gptj_block_seq_s12", lambda: m.GptjBlock(seq=16), (1, 12, 64), 17, {"x": {1: "seq"}, "y": {1: "seq"}}, ["--set", "dim.seq=12"]),
        ("falcon_block", lambda: m.FalconBlock(), (1, 8, 64), 17, None, []),
        ("falcon_block_d48_h3_s6", lambda: m.FalconBlock(48, 3, 6), (1, 6, 48), 17, None, []),
        ("alibi_attention", lambda: m.AlibiBlock(), (1, 8, 64), 17, None, []),
        ("neox_block", lambda: m.NeoxBlock(), (1, 8, 64), 17, None, []),
        ("torch_mha", lambda: m.TorchMha(), (1, 8, 64), 17, None, []),
        ("torch_encoder_layer", lambda: m.TorchEncoder(), (1, 8, 64), 17, None, []),
        ("torch_encoder_layer_d48_h3_s6", lambda: m.TorchEncoder(48, 3), (1, 6, 48), 17, None, []),
        ("t5_decoder_attention", lambda: m.T5Attention(), (1, 8, 64), 17, None, []),
        ("t5_encoder_attention_d48_h3_s12", lambda: m.T5Attention(48, 3, causal=False), (1, 12, 48), 17, None, []),
        ("meta_llama_attention", lambda: m.MetaLlamaAttention(), (1, 8, 64), 17, None, []),
        ("meta_llama_attention_d48_h6_kv3_s6", lambda: m.MetaLlamaAttention(48, 6, 3, 6), (1, 6, 48), 17, None, []),
        ("opt_positions", lambda: m.OptPositions(), (1, 8, 64), 17, None, []),
        ("norm_variants", lambda: m.NormVariants(), (1, 8, 64), 17, None, []),
        ("masked_fills", lambda: m.MaskedFills(), (1, 32, 64), 17, None, []),
        ("masked_fills_s24_len20", lambda: m.MaskedFills(seq=24, length=20), (1, 24, 64), 17, None, []),
        ("input_views", lambda: m.InputViews(), (1, 8, 64), 17, None, []),
        ("input_views_d96_h3", lambda: m.InputViews(96, 3), (1, 6, 96), 17, None, []),
        ("mqa_broadcast", lambda: m.BroadcastHeads(), (1, 8, 64), 17, None, []),
        ("mqa_broadcast_d96_h6_s12", lambda: m.BroadcastHeads(96, 6), (1, 12, 96), 17, None, []),
        ("gqa_broadcast", lambda: m.BroadcastHeads(heads=8, kv_heads=2), (1, 8, 64), 17, None, []),
        ("gqa_broadcast_d96_h6_kv3_s6", lambda: m.BroadcastHeads(96, 6, 3), (1, 6, 96), 17, None, []),
        ("more_activations", lambda: m.MoreActivations(), (1, 8, 64), 17, None, []),
        ("more_activations_d96_s12", lambda: m.MoreActivations(96), (1, 12, 96), 17, None, []),
        ("threshold_selects", lambda: m.ThresholdSelects(), (1, 8, 64), 17, None, []),
        ("norm_weight_shapes", lambda: m.NormWeightShapes(), (1, 8, 64), 17, None, []),
        ("jax_einsums", lambda: m.JaxEinsums(), (1, 8, 64), 17, None, []),
        ("pads_and_reductions", lambda: m.PadsAndReductions(), (1, 8, 64), 17, None, []),
        ("pads_and_reductions_d96_h3_s12", lambda: m.PadsAndReductions(96, 3), (1, 12, 96), 17, None, []),
        ("rank_broadcast_matmuls", lambda: m.RankBroadcastMatmuls(), (1, 8, 64), 17, None, []),
        ("rank_broadcast_matmuls_d96_g3_s12", lambda: m.RankBroadcastMatmuls(96, 3), (1, 12, 96), 17, None, []),
        ("logsumexp_pools", lambda: m.LogSumExpPools(), (1, 8, 64), 17, None, []),
        ("logsumexp_pools_d96_s12", lambda: m.LogSumExpPools(96), (1, 12, 96), 17, None, []),
        ("min_pools", lambda: m.MinPools(), (1, 8, 64), 17, None, []),
        ("min_pools_d96_h3_b2_s12_op13", lambda: m.MinPools(96, 3), (2, 12, 96), 13, None, []),
        ("rounding_ops", lambda: m.RoundingOps(), (1, 8, 64), 17, None, []),
        ("rounding_ops_d96_s12", lambda: m.RoundingOps(96), (1, 12, 96), 17, None, []),
        ("axis_softmaxes", lambda: m.AxisSoftmaxes(), (1, 8, 64), 17, None, []),
        ("axis_softmaxes_d96_s12", lambda: m.AxisSoftmaxes(96), (1, 12, 96), 17, None, []),
        ("padding_mask_attention", lambda: m.PaddingMaskAttention(), (1, 8, 64), 17, None, []),
        ("padding_mask_attention_d96_h6_s12_pad5", lambda: m.PaddingMaskAttention(96, 6, 12, 5), (1, 12, 96), 17, None, []),
        ("hf_gpt2_conv1d", lambda: HfGpt2Conv1D(), (1, 8, 64), 14, None, []),
        ("hf_gpt2_conv1d_d48_h3_op17", lambda: HfGpt2Conv1D(48, 3), (1, 8, 48), 17, None, []),
        ("bmm_causal_quick_gelu", lambda: BmmCausalQuickGelu(), (1, 8, 48), 15, None, []),
        ("bmm_causal_quick_gelu_d64_h4_s12_op14", lambda: BmmCausalQuickGelu(64, 4), (1, 12, 64), 14, None, []),
        ("mistral_expanded_kv", lambda: MistralExpandedKv(), (1, 8, 64), 17, None, []),
        ("mistral_expanded_kv_d48_h6_kv3_s6_op13", lambda: MistralExpandedKv(48, 6, 3, 64), (1, 6, 48), 13, None, []),
        ("phi3_block", lambda: Phi3Block(), (1, 8, 64), 17, None, []),
        ("phi3_block_d48_h6_kv2_op14", lambda: Phi3Block(48, 6, 2, 64), (1, 8, 48), 14, None, []),
        ("hand_written_norms", lambda: HandWrittenNorms(), (1, 8, 64), 17, None, []),
        ("hand_written_norms_d48_s6_op13", lambda: HandWrittenNorms(48), (1, 6, 48), 13, None, []),
        ("qk_norm_attention", lambda: QkNormAttention(m), (1, 8, 64), 17, None, []),
        ("qk_norm_attention_d96_h6_kv3_s6_op14", lambda: QkNormAttention(m, 96, 6, 3), (1, 6, 96), 14, None, []),
        ("neox_baddbmm", lambda: NeoxBaddbmm(), (1, 8, 64), 17, None, []),
        ("neox_baddbmm_d48_h3_s6_op14", lambda: NeoxBaddbmm(48, 3, 6), (1, 6, 48), 14, None, []),
        ("sequence_first_attention", lambda: SequenceFirstAttention(), (8, 1, 64), 17, None, []),
        ("sequence_first_attention_d48_h3_b2_op14", lambda: SequenceFirstAttention(48, 3), (6, 2, 48), 14, None, []),
        ("falcon_mqa", lambda: FalconMqa(), (1, 8, 64), 17, None, []),
        ("falcon_mqa_d48_h3_s6_op14", lambda: FalconMqa(48, 3), (1, 6, 48), 14, None, []),
        ("mpt_permuted_keys", lambda: MptPermutedKeys(), (1, 8, 64), 17, None, []),
        ("bloom_alibi", lambda: BloomAlibi(), (1, 8, 64), 17, None, []),
        ("bloom_alibi_d48_h3_b2_op14", lambda: BloomAlibi(48, 3), (2, 6, 48), 14, None, []),
        # torch 1.13 exports F.layer_norm without weight at opset 17 as a node ONNX's checker refuses
        ("cohere_block_op15", lambda: CohereBlock(), (1, 8, 64), 15, None, []),
        ("cohere_block_d48_h3_b2_op14", lambda: CohereBlock(48, 3, 96), (2, 6, 48), 14, None, []),
        ("transfo_xl_layer", lambda: TransfoXlLayer(), (8, 1, 64), 17, None, []),
        ("transfo_xl_layer_d48_h3_b2_op14", lambda: TransfoXlLayer(48, 3, 96, -1e30), (10, 2, 48), 14, None, []),
        ("xlnet_rel_attn", lambda: XlnetRelAttn(), (8, 1, 64), 17, None, []),
        ("xlnet_rel_attn_d48_h3_b2_op14", lambda: XlnetRelAttn(48, 3), (10, 2, 48), 14, None, []),
        # A dynamic sequence-first axis: arange(seq)'s folded bounds give the rope cache its length
        ("chatglm2_block_seq", lambda: ChatGlm2Block(m), (8, 1, 64), 17, {"x": {0: "seq"}, "y": {0: "seq"}}, []),
        ("chatglm2_block_seq_d48_h3_g1_b2_op14", lambda: ChatGlm2Block(m, 48, 3, 1, 64), (6, 2, 48), 14,
         {"x": {0: "seq"}, "y": {0: "seq"}}, ["--set", "dim.seq=6"]),
        # torch's own modules without a mask, with a float mask, post-norm (torch_mha, torch_encoder_layer: bool masks)
        ("torch_mha_unmasked_d32", lambda: TorchMultiheadAttention(), (1, 8, 32), 14, None, []),
        ("torch_mha_float_mask_d48_h3_b2_op17", lambda: TorchMultiheadAttention(48, 3, True), (2, 10, 48), 17, None, []),
        ("torch_encoder_layer_unmasked_d32", lambda: TorchEncoderLayer(), (1, 8, 32), 14, None, []),
        ("torch_encoder_layer_post_gelu_d48_h3_b2_op17",
         lambda: TorchEncoderLayer(48, 3, 96, norm_first=False, activation="gelu"), (2, 6, 48), 17, None, []),
        # Compiled with the dynamic axes left free (SYMBOLIC: `stc compile` first, no binding), the network's
        # symbols bound at `stc emit NETWORK --bind`: one network for every length
        ("gqa_bidirectional_symbolic_s5", lambda: m.GqaAttention(causal=False), (1, 5, 64), 17,
         {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        ("gqa_bidirectional_symbolic_d48_h6_kv2_s21_op14", lambda: m.GqaAttention(48, 6, 2, causal=False),
         (1, 21, 48), 14, {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        ("torch_encoder_layer_symbolic_b2_s7", lambda: TorchEncoderLayer(), (2, 7, 32), 14,
         {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}, SYMBOLIC),
        ("torch_encoder_layer_post_gelu_symbolic_d48_h3_s19_op17",
         lambda: TorchEncoderLayer(48, 3, 96, norm_first=False, activation="gelu"), (1, 19, 48), 17,
         {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        ("additive_mask_input_symbolic_s9", lambda: AdditiveMaskInput(), (1, 9, 48), 14,
         {"x": {1: "seq"}, "mask": {2: "seq", 3: "seq"}, "y": {1: "seq"}}, SYMBOLIC,
         lambda b, s: torch.randn(b, 1, s, s)),
        ("mlp_symbolic_seq13", lambda: m.Mlp(48, 96), (13, 48), 13, seq, SYMBOLIC),
        # causal masks of one form at every length: nanoGPT's buffer (16 positions) sliced, a tril of ones
        ("causal_attention_symbolic_s9", lambda: m.CausalSelfAttention(), (1, 9, 64), 14,
         {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        ("causal_attention_symbolic_b2_s16", lambda: m.CausalSelfAttention(), (2, 16, 64), 14,
         {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}, SYMBOLIC),
        ("causal_attention_symbolic_buffer8_b3_s5", lambda: m.CausalSelfAttention(max_seq=8), (3, 5, 64), 14,
         {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}, SYMBOLIC),
        ("causal_tril_symbolic_s23", lambda: m.CausalSelfAttention(max_seq=32, mask="tril"), (1, 23, 64), 17,
         {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        ("gqa_attention_symbolic_s6", lambda: m.GqaAttention(), (1, 6, 64), 17, {"x": {1: "seq"}, "y": {1: "seq"}},
         SYMBOLIC),
        ("gqa_attention_symbolic_d48_h6_kv2_s19_op14", lambda: m.GqaAttention(48, 6, 2), (1, 19, 48), 14,
         {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        # Hugging Face GPT-2's buffer sliced from the lengths after the views, MPT's tril negated and sliced
        # [-s:, -s:]; rotary tables from arange(seq) in forward, Qwen2's block
        ("hf_gpt2_attention_symbolic_s13", lambda: m.HfGpt2Attention(), (1, 13, 64), 14,
         {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        ("hf_gpt2_attention_symbolic_d48_h3_b2_s5_op17", lambda: m.HfGpt2Attention(48, 3, 20), (2, 5, 48), 17,
         {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}, SYMBOLIC),
        ("mpt_attention_symbolic_s10", lambda: m.MptAttention(), (1, 10, 64), 17,
         {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        ("rope_in_forward_symbolic_s9", lambda: m.RopeInForward(), (1, 9, 64), 17,
         {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        ("bmm_view_softmax_symbolic_s7", lambda: m.BmmViewSoftmax(), (1, 7, 64), 17,
         {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        ("qwen2_block_symbolic_s7", lambda: m.Qwen2Block(), (1, 7, 64), 17, {"x": {1: "seq"}, "y": {1: "seq"}},
         SYMBOLIC),
        ("qwen2_block_symbolic_d48_h6_kv2_b2_s6_op14", lambda: m.Qwen2Block(48, 6, 2, 64), (2, 6, 48), 14,
         {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}, SYMBOLIC),
        ("mqa_repeat_interleave_seq_s11", lambda: MqaRepeatInterleave(), (1, 11, 64), 14,
         {"x": {1: "seq"}, "y": {1: "seq"}}, []),
        ("mqa_repeat_interleave_d48_h3_hd16_b2_seq_s7_op17", lambda: MqaRepeatInterleave(48, 3, 16), (2, 7, 48), 17,
         {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}, []),
        ("repeat_interleave_heads_seq_s8", lambda: m.RepeatInterleaveHeads(), (1, 8, 64), 17,
         {"x": {1: "seq"}, "y": {2: "seq"}}, []),
        ("mqa_repeat_interleave_symbolic_s11", lambda: MqaRepeatInterleave(), (1, 11, 64), 14,
         {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        ("mqa_repeat_interleave_symbolic_d48_h3_hd16_s9_op17", lambda: MqaRepeatInterleave(48, 3, 16), (1, 9, 48),
         17, {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        # A cache given as inputs, the new token's keys and values appended by torch.cat along a dynamic
        # `past`: --bind fixes it at import, where the concat needs it (one design for that length)
        ("cached_attention_past7", lambda: m.CachedAttention(), (1, 1, 48), 14,
         {"past_k": {2: "past"}, "past_v": {2: "past"}}, [], past_kv(3, 16, 7)),
        ("cached_attention_d64_h4_b2_t3_past12_op17", lambda: m.CachedAttention(64, 4), (2, 3, 64), 17,
         {"x": {0: "batch", 1: "new"}, "past_k": {0: "batch", 2: "past"}, "past_v": {0: "batch", 2: "past"},
          "y": {0: "batch", 1: "new"}}, [], past_kv(4, 16, 12)),
        # A whole two-layer Llama from token ids, repeat_interleave after the rotary (torch 1.13 reshapes
        # its slices with 0s that keep expanded sizes: imported at torch's shape), fixed, dynamic, symbolic
        ("tiny_llama", lambda: m.TinyLlama(), (1, 6, 32), 17, None, [], token_ids(50)),
        ("tiny_llama_d48_h6_kv2_l3_seq_s7_op14", lambda: m.TinyLlama(48, 6, 2, 96, 40, 3), (2, 7, 48), 14,
         {"x": {1: "seq"}, "ids": {1: "seq"}, "y": {1: "seq"}}, [], token_ids(40)),
        ("tiny_llama_symbolic_s9", lambda: m.TinyLlama(), (1, 9, 32), 17,
         {"x": {1: "seq"}, "ids": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC, token_ids(50)),
        ("internlm2_packed", lambda: InternLm2Packed(), (1, 8, 64), 17, None, []),
        ("internlm2_packed_d96_h6_kv3_b2_seq_s7_op14", lambda: InternLm2Packed(96, 6, 3), (2, 7, 96), 14,
         {"x": {1: "seq"}, "y": {1: "seq"}}, []),
        ("cosine_attention_squared_relu", lambda: CosineAttentionSquaredRelu(), (1, 8, 48), 14, None, []),
        ("cross_attention_m10", lambda: CrossAttention(), (1, 6, 48), 17, None, [],
         lambda b, s: {"memory": torch.randn(b, 10, 48)}),
        # torch 2's export of F.scaled_dot_product_attention (sdpa_graph): is_causal over a fixed, a dynamic
        # and a symbolic seq, an explicit scale; Hugging Face's SDPA path with a bool and a float mask input
        ("nanogpt_sdpa", lambda: m.NanoGptSdpa(), (1, 8, 48), 14, None, []),
        ("nanogpt_sdpa_d64_b2_op17", lambda: m.NanoGptSdpa(64), (2, 6, 64), 17, None, []),
        ("nanogpt_sdpa_seq_s9", lambda: m.NanoGptSdpa(), (1, 9, 48), 14, {"x": {1: "seq"}, "y": {1: "seq"}}, []),
        ("nanogpt_sdpa_symbolic_s7_op17", lambda: m.NanoGptSdpa(), (1, 7, 48), 17,
         {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
        ("nanogpt_sdpa_scale", lambda: m.NanoGptSdpa(64, 4, m.SdpaCausalScaled), (1, 8, 64), 14, None, []),
        ("hf_sdpa_bool_mask", lambda: HfSdpaLlama(m), (1, 8, 64), 14, None, [], causal_mask(torch.bool)),
        ("hf_sdpa_float_mask_op17", lambda: HfSdpaLlama(m), (1, 8, 64), 17, None, [], causal_mask(torch.float)),
        ("hf_sdpa_bool_mask_seq_s7", lambda: HfSdpaLlama(m), (1, 7, 64), 14,
         {"x": {1: "seq"}, "mask": {2: "seq", 3: "seq"}, "y": {1: "seq"}}, [], causal_mask(torch.bool)),
        ("t5_encoder", lambda: T5Block(), (1, 10, 48), 14, None, []),
        ("t5_decoder_causal_op17", lambda: T5Block(causal=True), (1, 9, 48), 17, None, []),
        ("t5_encoder_b2_seq_s12", lambda: T5Block(), (2, 12, 48), 14, {"x": {1: "seq"}, "y": {1: "seq"}}, []),
        ("deepseek_mla", lambda: DeepSeekMla(m), (1, 8, 64), 14, None, []),
        ("deepseek_mla_seq_s7_op17", lambda: DeepSeekMla(m), (1, 7, 64), 17, {"x": {1: "seq"}, "y": {1: "seq"}}, []),
        ("deepseek_mla_joined", lambda: DeepSeekMla(m, joined=True), (1, 8, 64), 17, None, []),
        ("bigcode_mqa", lambda: BigCodeMqa(), (1, 8, 64), 14, None, []),
        ("bigcode_mqa_b2_seq_s7_op17", lambda: BigCodeMqa(), (2, 7, 64), 17, {"x": {1: "seq"}, "y": {1: "seq"}}, []),
        ("deepseek_mla_joined_symbolic_s9", lambda: DeepSeekMla(m, joined=True), (1, 9, 64), 14,
         {"x": {1: "seq"}, "y": {1: "seq"}}, SYMBOLIC),
    ]


def perturb_norms(model, m):
    with torch.no_grad():
        for sub in model.modules():
            if isinstance(sub, (torch.nn.LayerNorm, m.RmsNorm, m.Qwen2RMSNorm)) and sub.weight is not None:
                sub.weight.copy_(1 + 0.3 * torch.randn_like(sub.weight))
                if getattr(sub, "bias", None) is not None:
                    sub.bias.copy_(0.2 * torch.randn_like(sub.bias))


def check(m, stc, work, name, factory, shape, opset, dynamic, flags, second=None):
    """One case; `second`, when given, makes the model inputs after x from (batch, sequence length): a tensor,
    the input `mask`, or a dict of them by name, in order."""
    torch.manual_seed(1234)
    model = factory().eval()
    perturb_norms(model, m)
    x = torch.randn(*shape)
    extra = {} if second is None else second(x.shape[0], x.shape[1])
    if not isinstance(extra, dict):
        extra = {"mask": extra}
    args = (x, *extra.values())
    with torch.no_grad():
        y = model(*args).numpy().astype(np.float32)
    os.makedirs(work, exist_ok=True)
    m.OUT = work
    path = os.path.join(work, name + ".onnx")
    with contextlib.redirect_stdout(io.StringIO()):
        if second is None:
            m.export(model, x, name + ".onnx", opset, dynamic)  # the exporter's own call (it reseeds torch)
        else:
            torch.manual_seed(0)
            torch.onnx.export(model, args, path, opset_version=opset, input_names=["x", *extra],
                              output_names=["y"], dynamic_axes=dynamic, do_constant_folding=True)
    graph = onnx.load(path).graph
    inits = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in inits]
    names = ["x", *extra]
    assert [i.name for i in inputs] == names, f"unexpected graph inputs {[i.name for i in inputs]}"
    binds = []
    for i, value in zip(inputs, args):
        for d, n in zip(i.type.tensor_type.shape.dim, value.shape):
            if d.dim_param and f"{d.dim_param}={n}" not in binds:
                binds.append(f"{d.dim_param}={n}")
    bin_path = os.path.join(work, name + ".inputs.bin")  # every input as f32, in order
    np.concatenate([a.numpy().astype("<f4").reshape(-1) for a in args]).tofile(bin_path)
    proj = os.path.join(work, name)
    refusal = flags == REFUSED
    source = path
    if flags == SYMBOLIC:  # the network keeps every dynamic axis a symbol, bound where it is emitted
        source = os.path.join(work, name + ".net.yaml")
        r = subprocess.run([stc, "compile", path, "-o", source], capture_output=True, text=True)
        if r.returncode:
            return False, f"{name}: FAIL: stc compile exited {r.returncode}: {r.stderr.strip()[-300:]}"
        with open(source) as f:
            network = f.read()
        kept = {b.split("=")[0] for b in binds}
        if not all(re.search(r"\b" + re.escape(k) + r"\b", network) for k in kept):
            return False, f"{name}: FAIL: the network does not keep {sorted(kept)} symbolic"
        flags = []
    cmd = [stc, "emit", source, "-o", proj, "--inputs", bin_path, "--force", *([] if refusal else flags)]
    cmd += [a for b in binds for a in ("--bind", b)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if refusal:
        ok = r.returncode == 1 and "error: unsupported:" in r.stderr
        return ok, f"{name}: {'PASS' if ok else 'FAIL'}: refused as expected" if ok else \
            f"{name}: FAIL: expected a refusal listing unsupported nodes, got exit {r.returncode}"
    if r.returncode:
        return False, f"{name}: FAIL: stc emit exited {r.returncode}: {r.stderr.strip()[-300:]}"
    r = subprocess.run(["make", "-s", "-C", proj, "csim"], capture_output=True, text=True)
    csim = (r.stdout + r.stderr).strip().splitlines()
    csim = csim[-1] if csim else f"exit {r.returncode}"
    out_path = os.path.join(proj, "data", "outputs.bin")
    if not os.path.exists(out_path):
        return False, f"{name}: FAIL: no outputs.bin ({csim})"
    out = np.fromfile(out_path, dtype="<f4")
    exp = np.fromfile(os.path.join(proj, "data", "expected.bin"), dtype="<f4")
    if out.size != y.size:
        return False, f"{name}: FAIL: {out.size} outputs, torch has {y.size}"
    y = y.reshape(-1)
    err = np.abs(out.astype(np.float64) - y)
    rel = err / np.maximum(np.abs(y), 1e-6)
    ok = bool(np.all(err <= ATOL + RTOL * np.abs(y))) and r.returncode == 0
    interp = np.abs(exp.astype(np.float64) - y).max() if exp.size == y.size else float("nan")
    csim_vs_exp = np.abs(out.astype(np.float64) - exp).max() if exp.size == out.size else float("nan")
    return ok, (f"{name}: {'PASS' if ok else 'FAIL'}: {y.size} outputs, max abs err {err.max():.3g}, "
                f"max rel err {rel.max():.3g} (interpreter vs torch {interp:.3g}, csim vs interpreter "
                f"{csim_vs_exp:.3g}; make csim exit {r.returncode})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stc", default=os.path.join(ROOT, "build", "tools", "stc", "stc"))
    ap.add_argument("--keep", help="write the models and projects here (kept) instead of a temp dir")
    ap.add_argument("case", nargs="*", help="the cases to run by name (default: all)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)  # the GPT-2 mask's torch.tensor
    m = load_exporter()
    all_ok = True
    with tempfile.TemporaryDirectory(prefix="stc_vs_torch_") as tmp:
        work = os.path.abspath(args.keep or tmp)
        chosen = [c for c in cases(m) if not args.case or c[0] in args.case]
        unknown = set(args.case) - {c[0] for c in chosen}
        if unknown:
            print("unknown case(s):", ", ".join(sorted(unknown)), file=sys.stderr)
            return 1
        for case in chosen:
            ok, line = check(m, os.path.abspath(args.stc), work, *case)
            print(line, flush=True)
            all_ok &= ok
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
