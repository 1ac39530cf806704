#!/usr/bin/python3
"""Goldens for tests/test_attention.cpp: scaled_dot_product_attention and rope, computed in
numpy float64. Writes tests/data/attention.safetensors.

Inputs are rounded to bf16 precision (and tiny values flushed to 0) so that the same values
are exact in f16, bf16, f32 and f64: one golden serves every dtype. Several cases are views
of shared input pools (the test builds the same views), which keeps the file small.

Attention reference: softmax(q k^T * scale + mask) v per (batch, head); with causal, query i
sees keys j <= i + Tk - Tq (queries aligned to the end of the keys, as with a KV cache). A
row that sees no key is NaN.
"""
import os

import numpy as np

from golden_io import bf16_exact, write_safetensors

rng = np.random.default_rng(1234)


def randn(*shape):
    return bf16_exact(rng.standard_normal(shape))


def sdpa(q, k, v, mask=None, causal=False, scale=None, sinks=None):
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    B, H, Tq, D = q.shape
    Tk = k.shape[2]
    scale = 1.0 / np.sqrt(D) if scale is None else scale
    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    if mask is not None:
        s = s + np.broadcast_to(np.asarray(mask, dtype=np.float64), s.shape)
    if causal:
        i = np.arange(Tq)[:, None]
        j = np.arange(Tk)[None, :]
        s = np.where(j <= i + Tk - Tq, s, -np.inf)
    if sinks is not None:  # gpt-oss: a column of the head's sink logit, dropped after the softmax
        sink = np.broadcast_to(np.asarray(sinks, dtype=np.float64).reshape(1, H, 1, 1), (B, H, Tq, 1))
        s = np.concatenate([s, sink], axis=-1)
    with np.errstate(invalid="ignore"):
        m = s.max(axis=-1, keepdims=True)
        p = np.exp(s - m)  # rows with every key masked: -inf - -inf = NaN, as PyTorch
        p = p / p.sum(axis=-1, keepdims=True)
    if sinks is not None:
        p = p[..., :Tk]
    return np.einsum("bhij,bhjd->bhid", p, v)


def rope(x, cos, sin, interleaved):
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    half = x.shape[-1] // 2
    if interleaved:
        x0, x1 = x[..., 0::2], x[..., 1::2]
    else:
        x0, x1 = x[..., :half], x[..., half:]
    o0 = x0 * cos - x1 * sin
    o1 = x0 * sin + x1 * cos
    if interleaved:
        out[..., 0::2], out[..., 1::2] = o0, o1
    else:
        out[..., :half], out[..., half:] = o0, o1
    return out


T = {}

# Pool 1: one head, 300 positions, D = 64 (flash path for Tq >= 64, warp path below).
pq, pk, pv = randn(1, 1, 300, 64), randn(1, 1, 300, 64), randn(1, 1, 300, 64)
T["pool.q"], T["pool.k"], T["pool.v"] = pq, pk, pv
T["self300.causal"] = sdpa(pq, pk, pv, causal=True)

# Key-padding mask broadcast over rows: random values, keys 200.. masked out.
kmask = randn(1, 1, 1, 300)
kmask[..., 200:] = -np.inf
T["self300.kmask"] = kmask
T["self300.kmask.out"] = sdpa(pq, pk, pv, mask=kmask)
# Tq > Tk with causal: queries 0..29 see no key (NaN rows) in the tiled kernel.
T["q130k100.causal"] = sdpa(pq[:, :, :130], pk[:, :, :100], pv[:, :, :100], causal=True)
# KV-cache shapes: 5 new queries over 300 keys; 1 query over 1000 keys (key j = pool j % 300).
T["q5k300.causal"] = sdpa(pq[:, :, :5], pk, pv, causal=True)
idx = np.arange(1000) % 300
T["q1k1000.causal"] = sdpa(pq[:, :, :1], pk[:, :, idx], pv[:, :, idx], causal=True)
# A preallocated cache of 1000 positions of which the first 37 are valid (-inf beyond): the
# keys past 37 do not matter (the test fills them with anything finite).
cmask = np.zeros((1, 1, 1, 1000), np.float32)
cmask[..., 37:] = -np.inf
T["cache37.mask"] = cmask
T["cache37.out"] = sdpa(pq[:, :, :1], pk[:, :, :37], pv[:, :, :37])
# The same 37 keys seen by 64 queries (tiled kernel), mask broadcast over rows.
T["cache37.q64.out"] = sdpa(pq[:, :, :64], pk[:, :, :37], pv[:, :, :37])

# Tiled-kernel edges, built from pool 1 by the test with the same index_select views; the
# long outputs are stored for a sample of rows only (index "*.rows") to keep the file small.
# Tq = Tk = 1000, causal (keys / queries j = pool j % 300): 16 query tiles, diagonal tiles.
lq, lk, lv = pq[:, :, idx], pk[:, :, idx], pv[:, :, idx]
long_rows = np.array([0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 300, 511, 512, 513, 700, 935, 936, 959, 960, 961,
                      990, 997, 998, 999])
T["long1000.rows"] = long_rows.astype(np.float32)
T["long1000.causal"] = sdpa(lq, lk, lv, causal=True)[:, :, long_rows]
# 64 and 65 queries at the end of a longer key sequence (KV-cache alignment, key tails).
T["q64k1000.causal"] = sdpa(pq[:, :, :64], lk, lv, causal=True)
T["q65k300.causal"] = sdpa(pq[:, :, :65], pk, pv, causal=True)
# Head dim 128 over batch 3 x heads 5 (15 (batch, head) pairs), Tq = 130 over Tk = 200,
# causal. Head dims are cat(q, k), cat(k, v), cat(v, q) of pool 1; (batch, head) n takes
# positions (t + 17 n) % 300.
q128, k128, v128 = (np.concatenate([x, y], axis=3) for x, y in ((pq, pk), (pk, pv), (pv, pq)))
n_idx = np.arange(15)[:, None] * 17
iq = ((np.arange(130)[None, :] + n_idx) % 300).reshape(-1)
ik = ((np.arange(200)[None, :] + n_idx) % 300).reshape(-1)
d128_rows = np.array([0, 64, 65, 129])
T["d128.rows"] = d128_rows.astype(np.float32)
T["d128.causal"] = sdpa(q128[:, :, iq].reshape(3, 5, 130, 128), k128[:, :, ik].reshape(3, 5, 200, 128),
                        v128[:, :, ik].reshape(3, 5, 200, 128), causal=True)[:, :, d128_rows]

# Pool 2: a packed (B=1, T=100, 384) projection as GPT-2 produces it; viewed as
# q, k, v of (1, 2 heads, 100, 64) (strided over time and heads) or (1, 1, 100, 128).
qkv = randn(1, 100, 384)
T["qkv"] = qkv


def heads(x, h, d):  # (B, T, h*d) -> (B, h, T, d)
    return x.reshape(x.shape[0], x.shape[1], h, d).transpose(0, 2, 1, 3)


q2, k2, v2 = (heads(qkv[..., i * 128:(i + 1) * 128], 2, 64) for i in range(3))
T["qkv.h2d64.causal"] = sdpa(q2, k2, v2, causal=True)
q1, k1, v1 = (heads(qkv[..., i * 128:(i + 1) * 128], 1, 128) for i in range(3))
T["qkv.h1d128.plain"] = sdpa(q1, k1, v1)
T["qkv.h1d128.causal"] = sdpa(q1, k1, v1, causal=True)

# Batch 2 x heads 3, T = 7, D = 64; a mask (2, 1, 7, 7) broadcast over heads with one fully
# masked row (batch 1, query 3); an explicit scale.
bq, bk, bv = randn(2, 3, 7, 64), randn(2, 3, 7, 64), randn(2, 3, 7, 64)
bmask = randn(2, 1, 7, 7)
bmask[1, 0, 3, :] = -np.inf
bmask[0, 0, :, 5] = -np.inf
T["b2h3.q"], T["b2h3.k"], T["b2h3.v"], T["b2h3.mask"] = bq, bk, bv, bmask
T["b2h3.out"] = sdpa(bq, bk, bv, mask=bmask, scale=0.3)
T["b2h3.causal"] = sdpa(bq, bk, bv, causal=True)
T["b2h3.t1"] = sdpa(bq[:, :, :1], bk[:, :, :1], bv[:, :, :1])

# An odd head dim (80) at T = 40 with a full random mask and causal.
oq, ok_, ov = randn(1, 2, 40, 80), randn(1, 2, 40, 80), randn(1, 2, 40, 80)
omask = randn(1, 1, 40, 40)
T["d80.q"], T["d80.k"], T["d80.v"], T["d80.mask"] = oq, ok_, ov, omask
T["d80.out"] = sdpa(oq, ok_, ov, mask=omask, causal=True)

# RoPE: x (1, 2, 5, 8), tables (5, 4).
rx = randn(1, 2, 5, 8)
pos = np.arange(5)[:, None] * (10000.0 ** (-np.arange(4) / 4))[None, :]
rc, rs = bf16_exact(np.cos(pos)), bf16_exact(np.sin(pos))
T["rope.x"], T["rope.cos"], T["rope.sin"] = rx, rc, rs
T["rope.interleaved"] = rope(rx, rc, rs, True)
T["rope.half"] = rope(rx, rc, rs, False)


out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attention.safetensors")
# Attention sinks (gpt-oss), on b2h3's inputs: a moderate, a negative and a dominating sink
# (above every score: the overflow-free branch); with the mask, causal, and a row that sees no
# key (every key masked: zeros with a sink, NaN without).
T["b2h3.sinks"] = np.array([1.5, -2.0, 12.0], dtype=np.float32)
T["b2h3.sinks.out"] = sdpa(bq, bk, bv, mask=bmask, scale=0.3, sinks=T["b2h3.sinks"])
T["b2h3.sinks.causal"] = sdpa(bq, bk, bv, causal=True, sinks=T["b2h3.sinks"])
dead = np.zeros(bmask.shape[-2:], dtype=np.float32)
dead[1, :] = -np.inf
T["b2h3.deadrow"] = dead
T["b2h3.deadrow.sinks.out"] = sdpa(bq, bk, bv, mask=dead, sinks=T["b2h3.sinks"])

write_safetensors(out, T)
print(out, os.path.getsize(out), "bytes")
