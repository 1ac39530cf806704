#!/usr/bin/python3
"""Golden values for tests/test_scan_sort.cpp (cumsum, cumprod, sort, argsort, topk).

Run with /usr/bin/python3 (numpy 1.24):  tests/data/gen_scan_sort.py
Writes tests/data/scan_sort.safetensors by hand (8-byte little-endian header length, JSON
header, raw little-endian data).

PyTorch is not installed on this machine, so the references are numpy and plain Python,
written to PyTorch's documented semantics:
- cumsum/cumprod: numpy in f64 (the float inputs are chosen so that every partial result is
  exact in f32 and in each output dtype, or the rounding is the test's tolerance) and in
  int64 (wrapping on overflow, as PyTorch's integer scans); integer inputs give i64.
- sort/argsort/topk: Python's stable sorted() over explicit keys: NaN greater than every
  number, -0 equal to +0, equal elements in index order (ascending and descending alike).
  topk(k) is the first k of that order (largest: the descending one), which is PyTorch's
  documented topk with ties broken by the smaller index.
"""
import json
import math
import os
import struct

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scan_sort.safetensors")
rng = np.random.default_rng(20261202)
T = {}


def put(name, arr):
    T[name] = np.ascontiguousarray(arr)


def bf16_round(a):
    """Round f64 values to the nearest bfloat16 (ties to even), returned as f64."""
    b = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return b.astype(np.uint32).view(np.float32).astype(np.float64)


# ---- cumsum / cumprod ------------------------------------------------------------------------
# Multiples of 1/8 in [-2, 2]: every partial sum along any dim is exact in bf16, f16, f32.
x = rng.integers(-16, 17, size=(5, 6, 7)) / 8.0
put("scan.x", x)
# Products of these are exact in f32 (and f64); the 16-bit outputs round once.
xp = rng.choice([-2.0, -1.5, -1.25, -1.0, -0.75, -0.5, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0], size=(5, 6, 7))
put("scan.xp", xp)
for d in range(3):
    put(f"scan.cumsum.{d}", np.cumsum(x, axis=d))
    put(f"scan.cumprod.{d}", np.cumprod(xp, axis=d))
# Integers: non-negative ones for u8/u32 (sums beyond 255: the i64 result does not wrap),
# signed ones for i64.
xu = rng.integers(0, 200, size=(4, 9)).astype(np.int64)
xs = rng.integers(-50, 51, size=(4, 9)).astype(np.int64)
xpu = rng.integers(0, 4, size=(4, 9)).astype(np.int64)
xps = rng.integers(-3, 4, size=(4, 9)).astype(np.int64)
put("scan.xu", xu)
put("scan.xs", xs)
put("scan.xpu", xpu)
put("scan.xps", xps)
for d in range(2):
    put(f"scan.xu.cumsum.{d}", np.cumsum(xu, axis=d))
    put(f"scan.xs.cumsum.{d}", np.cumsum(xs, axis=d))
    put(f"scan.xpu.cumprod.{d}", np.cumprod(xpu, axis=d))
    put(f"scan.xps.cumprod.{d}", np.cumprod(xps, axis=d))
# i64 overflow wraps modulo 2^64 (numpy's int64 arithmetic).
wrap_s = np.array([2**62, 2**62, 2**62, -7, 2**63 - 1, 5], dtype=np.int64)
wrap_p = np.full(50, 3, dtype=np.int64)
wrap_p[10] = -1
put("scan.wrap.x_sum", wrap_s)
put("scan.wrap.x_prod", wrap_p)
with np.errstate(over="ignore"):
    put("scan.wrap.cumsum", np.cumsum(wrap_s))
    put("scan.wrap.cumprod", np.cumprod(wrap_p))
# 16-bit accumulation: values rounded to f16 / bf16, exact f64 running sums of them. An f32
# accumulator rounded once per output stays within half an ulp; a 16-bit one drifts.
r = rng.standard_normal((3, 257))
put("scan.h16.x", r.astype(np.float16).astype(np.float64))
put("scan.h16.cumsum", np.cumsum(r.astype(np.float16).astype(np.float64), axis=1))
put("scan.b16.x", bf16_round(r))
put("scan.b16.cumsum", np.cumsum(bf16_round(r), axis=1))


# ---- sort / argsort / topk -------------------------------------------------------------------
def order(row, descending):
    """Stable order of row's indices, NaN greatest, -0 == +0."""
    def key(i):
        v = float(row[i])
        if math.isnan(v):
            return (1, 0.0) if not descending else (0, 0.0)
        return (0, v) if not descending else (1, -v)
    return sorted(range(len(row)), key=key)


def sort_along(a, axis, descending):
    moved = np.moveaxis(a, axis, -1)
    idx = np.empty(moved.shape, dtype=np.int64)
    for pos in np.ndindex(moved.shape[:-1]):
        idx[pos] = order(moved[pos], descending)
    idx = np.moveaxis(idx, -1, axis)
    return np.take_along_axis(a, idx, axis), idx


# Small integers (many ties; valid in every dtype), odd last dim.
xi = rng.integers(0, 10, size=(5, 6, 33)).astype(np.int64)
put("sort.xi", xi)
# Floats with NaN, infinities, both zeros and repeats, all exact in bf16 and f16.
specials = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, 2.5, -2.5, 0.5, 3.0, 7.0, -7.0]
xf = rng.choice(np.array(specials), size=(4, 5, 37))
xf[0, 0, :6] = [math.nan, -0.0, 0.0, math.nan, 0.0, -0.0]  # ties between the zeros, NaNs in one row
put("sort.xf", xf)
for name, a in [("xi", xi), ("xf", xf)]:
    for d in range(3):
        for desc, tag in [(False, "asc"), (True, "desc")]:
            v, i = sort_along(a, d, desc)
            put(f"sort.{name}.{tag}.{d}.values", v)
            put(f"sort.{name}.{tag}.{d}.indices", i)

# ---- write safetensors by hand ----------------------------------------------------------------
CODES = {np.dtype(np.float64): "F64", np.dtype(np.int64): "I64"}
header, blobs, off = {}, [], 0
for name in sorted(T):
    a = T[name]
    if a.dtype.kind == "f":
        a = a.astype("<f8")
    else:
        a = a.astype("<i8")
    raw = a.tobytes()
    header[name] = {"dtype": CODES[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
    blobs.append(raw)
    off += len(raw)
hjson = json.dumps(header, separators=(",", ":")).encode()
hjson += b" " * ((8 - len(hjson) % 8) % 8)
with open(OUT, "wb") as f:
    f.write(struct.pack("<Q", len(hjson)))
    f.write(hjson)
    for blob in blobs:
        f.write(blob)
print(OUT, os.path.getsize(OUT), "bytes,", len(T), "tensors")
