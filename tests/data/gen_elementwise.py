#!/usr/bin/python3
"""Golden values for tests/test_elementwise.cpp and tests/test_cast.cpp.

Run with /usr/bin/python3 (torch 1.13, numpy 1.24):  tests/data/gen_elementwise.py
Writes tests/data/elementwise.safetensors (written by hand: 8-byte little-endian header
length, JSON header, raw little-endian data), holding for each op and dtype the inputs and
the reference outputs. Float references come from PyTorch computing in the dtype (f16/bf16:
in f32 then rounded once, as wick does). Integer references come from numpy (which wraps
like wick) or exact Python integer arithmetic for wick's own rules (x/0 = 0, integer pow).
"""
import json
import math
import os
import struct

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "elementwise.safetensors")
rng = np.random.default_rng(1234)
tensors = {}

FLOATS = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}
STORE = {"f32": np.float32, "f64": np.float64, "f16": np.float32, "bf16": np.float32}  # exact holders


def put(name, arr):
    tensors[name] = np.ascontiguousarray(arr)


# ---- unary ----------------------------------------------------------------------------------
N = 1007  # odd, above any vector width, so kernels run their tails
specials = [math.nan, math.inf, -math.inf, -0.0, 0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 1e-30, -1e-30, 1e30,
            -1e30, 88.0, -88.0, 100.0, -100.0, 1e-6, 65504.0, 7.0e4, -7.0e4, 1.0, -1.0, 2.0]
x64 = np.concatenate([np.array(specials), rng.uniform(-6, 6, N - len(specials))])
x64[40:60] = np.round(x64[40:60] * 2) / 2  # more halves for round() ties

UNARY = {
    "neg": torch.neg, "abs": torch.abs, "sqr": torch.square, "sqrt": torch.sqrt, "recip": torch.reciprocal,
    "exp": torch.exp, "log": torch.log, "sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh,
    "erf": torch.erf, "gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "gelu_erf": torch.nn.functional.gelu, "relu": torch.relu, "silu": torch.nn.functional.silu,
    "sigmoid": torch.sigmoid, "sign": torch.sign, "floor": torch.floor, "ceil": torch.ceil,
    "round": torch.round, "affine": lambda x: x * 1.5 + (-0.25), "powf": lambda x: torch.pow(x, 2.5),
    "powf3": lambda x: torch.pow(x, 3.0), "elu": lambda x: torch.nn.functional.elu(x, alpha=0.7),
    "clamp": lambda x: torch.clamp(x, -1.25, 2.0), "clamp_lo": lambda x: torch.clamp(x, min=0.5),
    "clamp_hi": lambda x: torch.clamp(x, max=-0.5),
}
for dname, dt in FLOATS.items():
    x = torch.from_numpy(x64).to(dt)
    put(f"unary/x/{dname}", x.double().numpy().astype(STORE[dname]))
    compute = x if dt in (torch.float32, torch.float64) else x.float()
    for op, fn in UNARY.items():
        y = fn(compute).to(dt)
        put(f"unary/{op}/{dname}", y.double().numpy().astype(STORE[dname]))

# Integer unary ops with numpy's wrapping arithmetic (matches wick's).
NI = 263
ints = {
    "u8": np.concatenate([[0, 1, 2, 127, 128, 254, 255], rng.integers(0, 256, NI - 7)]).astype(np.uint8),
    "u32": np.concatenate([[0, 1, 2, 2**31, 2**32 - 1, 65536, 65537],
                           rng.integers(0, 2**32, NI - 7)]).astype(np.uint32),
    "i64": np.concatenate([[0, 1, -1, 2**62, -2**63, 2**63 - 1, 3037000500],
                           rng.integers(-2**40, 2**40, NI - 7)]).astype(np.int64),
}
with np.errstate(over="ignore"):
    for dname, x in ints.items():
        put(f"unary_int/x/{dname}", x)
        info = np.iinfo(x.dtype)
        put(f"unary_int/neg/{dname}", np.negative(x))
        put(f"unary_int/abs/{dname}", np.abs(x))
        put(f"unary_int/sqr/{dname}", np.multiply(x, x))
        put(f"unary_int/sign/{dname}", np.sign(x).astype(x.dtype))
        put(f"unary_int/relu/{dname}", np.maximum(x, 0).astype(x.dtype))
        put(f"unary_int/floor/{dname}", x)
        lo, hi = (10, 200) if dname == "u8" else ((1000, 3000000000) if dname == "u32" else (-5, 2**41))
        put(f"unary_int/clamp/{dname}", np.clip(x, lo, hi).astype(x.dtype))
        # affine(x, 0.5, 3): f64 arithmetic, truncated toward zero, saturated.
        aff = np.trunc(x.astype(np.float64) * 0.5 + 3.0)
        aff = np.clip(aff, float(info.min), float(info.max))
        put(f"unary_int/affine/{dname}",
            np.array([min(max(int(v), info.min), info.max) for v in aff], dtype=x.dtype))

# ---- binary and compare ----------------------------------------------------------------------
NB = 263
a64 = rng.uniform(-4, 4, NB)
b64 = rng.uniform(-4, 4, NB)
sp_a = [math.nan, 1.0, math.inf, -math.inf, math.inf, 0.0, 1.0, -1.0, 0.0, 2.0, -8.0, 2.0, 0.5, 3.0]
sp_b = [1.0, math.nan, math.inf, math.inf, 2.0, 0.0, 0.0, 0.0, -1.0, -3.0, 1 / 3, 0.5, 0.5, 3.0]
a64[:len(sp_a)] = sp_a
b64[:len(sp_b)] = sp_b
b64[20:40] = np.round(b64[20:40])  # integral exponents for pow of negative bases
a64[40:60] = b64[40:60]  # equal pairs for the comparisons

BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "minimum": torch.minimum,
          "maximum": torch.maximum, "pow": torch.pow}
COMPARE = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}
for dname, dt in FLOATS.items():
    a = torch.from_numpy(a64).to(dt)
    b = torch.from_numpy(b64).to(dt)
    put(f"binary/a/{dname}", a.double().numpy().astype(STORE[dname]))
    put(f"binary/b/{dname}", b.double().numpy().astype(STORE[dname]))
    ca, cb = (a, b) if dt in (torch.float32, torch.float64) else (a.float(), b.float())
    for op, fn in BINARY.items():
        put(f"binary/{op}/{dname}", fn(ca, cb).to(dt).double().numpy().astype(STORE[dname]))
    for op, fn in COMPARE.items():
        put(f"binary/{op}/{dname}", fn(a, b).numpy().astype(np.uint8))


def wrap(v, dname):
    bits = {"u8": 8, "u32": 32, "i64": 64}[dname]
    v &= (1 << bits) - 1
    if dname == "i64" and v >= 1 << 63:
        v -= 1 << 64
    return v


def trunc_div(x, y):
    if y == 0:
        return 0
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def int_pow(x, e):
    if e < 0:
        return 1 if x == 1 else ((-1 if e % 2 else 1) if x == -1 else 0)
    return pow(x, e, 1 << 64)  # then wrapped


INT_BINARY = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
              "div": trunc_div, "minimum": min, "maximum": max, "pow": int_pow}
INT_COMPARE = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
               "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}
for dname, x in ints.items():
    a = x.copy()
    b = np.roll(x, 5)
    b[:6] = [0, 0, 1, 2, 3, 1]  # x/0 and small exponents
    b[6:40] = b[6:40] % 5  # more small divisors and exponents
    if dname == "i64":
        a[1:6] = [7, -7, 7, -7, -2**63]
        b[1:6] = [-2, 2, 0, -3, -1]  # truncation toward zero, min / -1 wraps
        b[40:50] = -np.abs(b[40:50]) % 4 - 3  # negative exponents
        a[40:44] = [1, -1, -1, 2]
    a[60:80] = b[60:80]
    put(f"binary_int/a/{dname}", a)
    put(f"binary_int/b/{dname}", b)
    for op, fn in INT_BINARY.items():
        res = [wrap(fn(int(p), int(q)), dname) for p, q in zip(a, b)]
        put(f"binary_int/{op}/{dname}", np.array(res, dtype=a.dtype))
    for op, fn in INT_COMPARE.items():
        put(f"binary_int/{op}/{dname}", np.array([fn(int(p), int(q)) for p, q in zip(a, b)], dtype=np.uint8))

# ---- cast: f64 -> f16 / f32 with numpy (a single rounding from f64) ------------------------------
c64 = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-9, 6, 200),
                      [1 + 2**-11 + 2**-40, 65519.99, 65520.0, 2**-25, 2**-25 + 2**-60, 5.96e-8]])
put("cast/x/f64", c64)
put("cast/f16", c64.astype(np.float16).astype(np.float32))
put("cast/f32", c64.astype(np.float32))

# ---- write safetensors -----------------------------------------------------------------------
DT = {np.dtype(np.float64): "F64", np.dtype(np.float32): "F32", np.dtype(np.uint8): "U8",
      np.dtype(np.uint32): "U32", np.dtype(np.int64): "I64"}
header, blobs, off = {}, [], 0
for name in sorted(tensors):
    arr = tensors[name]
    raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
    header[name] = {"dtype": DT[arr.dtype], "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
    blobs.append(raw)
    off += len(raw)
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open(OUT, "wb") as f:
    f.write(struct.pack("<Q", len(h)))
    f.write(h)
    for raw in blobs:
        f.write(raw)
print(f"wrote {OUT}: {len(tensors)} tensors, {os.path.getsize(OUT)} bytes")
