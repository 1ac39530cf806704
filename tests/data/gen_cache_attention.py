#!/usr/bin/python3
"""Goldens for tests/test_cache_attention.cpp: cache_attention computed in numpy float64.
Writes tests/data/cache_attention.safetensors.

Each case is a pool of caches k, v (P, KV, N, D), queries q (B, H, D), the slots and lengths
of the rows, and the expected output (B, H, D): row b's query head h attends keys
[first, lengths[b]) of pool row slots[b], key/value head h // (H // KV), with
first = max(0, length - window) for a window > 0; scores q.k * scale, then
softcap * tanh(s / softcap) when softcap > 0. Inputs are bf16-exact (golden_io.bf16_exact),
so one golden serves every float dtype.

Paged cases (<name>.tables (B, M) instead of .slots): k, v are (P, KV, N, D) blocks of N
positions, and row b's key j is k[tables[b, j // N], :, j % N]; only the blocks its length
reaches are meaningful (the rest of a table is -1, which the op must not read).
"""
import os

import numpy as np

from golden_io import bf16_exact, write_safetensors

rng = np.random.default_rng(2026)


def row_keys(k, blocks, b, L):
    """(KV, L, D): row b's first L keys, through its slot (1-D blocks) or its block table."""
    if blocks.ndim == 1:
        return k[blocks[b], :, :L]
    N = k.shape[2]
    used = blocks[b, : (L + N - 1) // N]
    return np.concatenate([k[i] for i in used], axis=1)[:, :L]


def cache_attention(q, k, v, slots, lengths, scale, window=0, softcap=0.0, sinks=None):
    q, k, v = (np.asarray(t, dtype=np.float64) for t in (q, k, v))
    slots = np.asarray(slots)
    B, H, D = q.shape
    KV = k.shape[1]
    G = H // KV
    out = np.empty((B, H, D))
    for b in range(B):
        L = int(lengths[b])
        first = max(0, L - window) if window > 0 else 0
        rk, rv = row_keys(k, slots, b, L), row_keys(v, slots, b, L)
        for h in range(H):
            keys = rk[h // G, first:L]
            vals = rv[h // G, first:L]
            s = keys @ q[b, h] * scale
            if softcap > 0:
                s = softcap * np.tanh(s / softcap)
            if sinks is not None:  # gpt-oss: the head's sink logit joins the softmax, its value 0
                s = np.append(s, sinks[h])
            p = np.exp(s - s.max())
            out[b, h] = (p / p.sum())[: len(vals)] @ vals
    return out


T = {}


def case(name, P, KV, N, D, H, slots, lengths):
    """Inputs <name>.{k,v,q,slots,lengths} and the plain output <name>.out."""
    k = bf16_exact(rng.standard_normal((P, KV, N, D)))
    v = bf16_exact(rng.standard_normal((P, KV, N, D)))
    q = bf16_exact(rng.standard_normal((len(slots), H, D)))
    T[name + ".k"], T[name + ".v"], T[name + ".q"] = k, v, q
    T[name + ".slots"] = np.array(slots)
    T[name + ".lengths"] = np.array(lengths)
    T[name + ".out"] = cache_attention(q, k, v, slots, lengths, 1.0 / np.sqrt(D))


def variant(name, inputs, **options):
    """<name>.out: case `inputs` under other options (window, softcap, scale)."""
    g = {f: T[inputs + "." + f] for f in ("q", "k", "v", "slots", "lengths")}
    scale = options.pop("scale", 1.0 / np.sqrt(g["q"].shape[2]))
    T[name + ".out"] = cache_attention(g["q"], g["k"], g["v"], g["slots"], g["lengths"], scale, **options)


# Grouped-query (G = 3), head dim 64, a full row, a one-key row, rows sharing a slot.
case("gqa", P=4, KV=2, N=40, D=64, H=6, slots=[2, 0, 1, 2, 3], lengths=[1, 40, 17, 33, 5])
# The same inputs with a sliding window (rows shorter and longer than it) and a softcap.
variant("window", "gqa", window=8)
variant("softcap", "gqa", softcap=2.0, scale=0.3)
# Head dim 128, multi-head (G = 1), keys past one tile of every dtype.
case("mha128", P=2, KV=2, N=70, D=128, H=2, slots=[1, 0], lengths=[70, 37])
# An odd head dim (no 16-byte rows: the element-wise path), G = 9 (two head blocks on CUDA).
case("odd", P=3, KV=1, N=12, D=20, H=9, slots=[0, 2, 1], lengths=[12, 1, 7])



def paged(name, P, KV, N, D, H, tables, lengths):
    """Inputs <name>.{k,v,q,tables,lengths} and <name>.out, blocks of N positions."""
    k = bf16_exact(rng.standard_normal((P, KV, N, D)))
    v = bf16_exact(rng.standard_normal((P, KV, N, D)))
    q = bf16_exact(rng.standard_normal((len(tables), H, D)))
    tables = np.array(tables)
    T[name + ".k"], T[name + ".v"], T[name + ".q"] = k, v, q
    T[name + ".tables"] = tables
    T[name + ".lengths"] = np.array(lengths)
    T[name + ".out"] = cache_attention(q, k, v, tables, lengths, 1.0 / np.sqrt(D))


# Blocks of 16 positions (half a CUDA tile of 16-bit keys: tiles span blocks), scattered and
# shared tables (rows 0 and 2 share their first two blocks, as prefix-cached sequences do), a
# row ending inside its first block, one using every entry, and -1 past each row's length.
paged("paged", P=9, KV=2, N=16, D=64, H=4,
      tables=[[3, 7, 1, -1, -1], [8, -1, -1, -1, -1], [3, 7, 0, 5, 2], [6, 4, -1, -1, -1]],
      lengths=[40, 9, 80, 17])
# Blocks of 5 (odd: keys of one 16-key f32 tile fall in four blocks), a sliding window.
paged("paged5", P=12, KV=1, N=5, D=32, H=2, tables=[[11, 0, 9, 3, 4, 10], [2, 5, 6, -1, -1, -1]],
      lengths=[30, 13])
T["paged5_window.out"] = cache_attention(T["paged5.q"], T["paged5.k"], T["paged5.v"], T["paged5.tables"],
                                         T["paged5.lengths"], 1.0 / np.sqrt(32), window=7)

# Attention sinks (gpt-oss): one logit per query head, some above every score (the
# overflow-free branch), with and without a window, and over paged blocks.
T["gqa.sinks"] = np.array([0.5, -1.0, 9.0, 2.0, -30.0, 1.0], dtype=np.float32)
variant("sinks", "gqa", sinks=T["gqa.sinks"])
variant("sinks_window", "gqa", sinks=T["gqa.sinks"], window=8)
T["paged.sinks"] = np.array([1.0, 8.0, -3.0, 0.0], dtype=np.float32)
T["paged_sinks.out"] = cache_attention(T["paged.q"], T["paged.k"], T["paged.v"], T["paged.tables"],
                                       T["paged.lengths"], 1.0 / np.sqrt(64), sinks=T["paged.sinks"])

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cache_attention.safetensors")
write_safetensors(out, T)
print(out, os.path.getsize(out), "bytes")
