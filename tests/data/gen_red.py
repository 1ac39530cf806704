"""Golden data for tests/test_{reduce,index,matmul,nn}.cpp, computed with PyTorch in f64.

Run with /usr/bin/python3 (torch 1.13). Writes red.safetensors next to this script by
hand (8-byte little-endian header length, JSON header, raw little-endian data), since
the safetensors package is not installed there.
"""
import json
import os
import struct

import numpy as np
import torch

torch.manual_seed(1234)
T = {}


def put(name, t):
    T[name] = t.detach().contiguous()


# ---- reductions --------------------------------------------------------------------------
x = torch.randn(5, 7, 9, dtype=torch.float64)
x[1, 2, 3] = x[1, 2, 5]  # a tie inside one row (dim 2): arg* must pick the first
put("reduce.x", x)
for dims in [(), (0,), (1,), (2,), (0, 2), (1, 2)]:
    tag = "".join(map(str, dims)) or "all"
    d = dims if dims else tuple(range(3))
    put(f"reduce.sum.{tag}", x.sum(d))
    put(f"reduce.mean.{tag}", x.mean(d))
    put(f"reduce.min.{tag}", x.amin(d))
    put(f"reduce.max.{tag}", x.amax(d))
xp = 1 + 0.1 * torch.randn(5, 7, 9, dtype=torch.float64)
put("reduce.xp", xp)
put("reduce.prod.2", xp.prod(2))
put("reduce.prod.0", xp.prod(0))
for d in [0, 1, 2]:
    put(f"reduce.argmin.{d}", x.argmin(d))
    put(f"reduce.argmax.{d}", x.argmax(d))
put("reduce.argmin.flat", x.argmin())
put("reduce.argmax.flat", x.argmax())
xi = torch.randint(0, 20, (5, 7, 9), dtype=torch.int64)
put("reduce.xi", xi)
put("reduce.isum.2", xi.sum(2))
put("reduce.isum.0", xi.sum(0))
put("reduce.isum.all", xi.sum())
xpi = torch.randint(1, 4, (5, 7, 9), dtype=torch.int64)
put("reduce.xpi", xpi)
put("reduce.iprod.2", xpi.prod(2))
# a long row (sum accuracy and the parallel split path)
long = torch.randn(100003, dtype=torch.float64)
put("reduce.long", long.float())
put("reduce.long.sum", long.float().double().sum())

# ---- indexing -----------------------------------------------------------------------------
src = torch.randn(6, 5, dtype=torch.float64)
put("index.src", src)
idx = torch.tensor([4, 0, 4, 2], dtype=torch.int64)
put("index.idx", idx)
put("index.select.0", src.index_select(0, idx))
put("index.select.1", src.index_select(1, idx))
gi0 = torch.randint(0, 6, (3, 5))
gi1 = torch.randint(0, 5, (6, 3))
put("index.gidx0", gi0)
put("index.gidx1", gi1)
put("index.gather.0", src.gather(0, gi0))
put("index.gather.1", src.gather(1, gi1))
upd = torch.randn(3, 5, dtype=torch.float64)
put("index.upd", upd)
# scatter golden uses unique indices per column (duplicates: last wins, tested by hand)
si0 = torch.stack([torch.randperm(6)[:3] for _ in range(5)], 1)
put("index.sidx0", si0)
put("index.scatter.0", src.scatter(0, si0, upd))
put("index.scatter_add.0", src.scatter_add(0, gi0, upd))  # gi0 has duplicates
put("index.index_add.0", src.index_add(0, torch.tensor([5, 1, 5]), upd))

# ---- matmul -------------------------------------------------------------------------------
a = torch.randn(7, 5, dtype=torch.float64)
b = torch.randn(5, 3, dtype=torch.float64)
put("mm.a", a)
put("mm.b", b)
put("mm.ab", a @ b)
ba = torch.randn(2, 1, 4, 5, dtype=torch.float64)
bb = torch.randn(3, 5, 6, dtype=torch.float64)
put("mm.ba", ba)
put("mm.bb", bb)
put("mm.bab", ba @ bb)
v = torch.randn(5, dtype=torch.float64)
put("mm.v", v)
put("mm.vb", v @ b)
put("mm.av", a @ v)
put("mm.vv", v @ v)
put("mm.bav", ba @ v)  # batched matrix-vector
ai = torch.randint(-5, 6, (4, 7), dtype=torch.int64)
bi = torch.randint(-5, 6, (7, 3), dtype=torch.int64)
put("mm.ai", ai)
put("mm.bi", bi)
put("mm.aibi", ai @ bi)

# ---- nn -----------------------------------------------------------------------------------
nx = 3 * torch.randn(6, 33, dtype=torch.float64)
nx[2, 7] = 40.0  # a large value (stability)
put("nn.x", nx)
put("nn.softmax", torch.softmax(nx, -1))
put("nn.log_softmax", torch.log_softmax(nx, -1))
w = torch.randn(33, dtype=torch.float64)
bias = torch.randn(33, dtype=torch.float64)
put("nn.w", w)
put("nn.b", bias)
F = torch.nn.functional
put("nn.layer_norm", F.layer_norm(nx, (33,), w, bias, 1e-5))
put("nn.layer_norm.plain", F.layer_norm(nx, (33,), None, None, 1e-5))
put("nn.rms_norm", nx / torch.sqrt((nx * nx).mean(-1, keepdim=True) + 1e-6) * w)
put("nn.rms_norm.plain", nx / torch.sqrt((nx * nx).mean(-1, keepdim=True) + 1e-6))
lx = torch.randn(4, 3, 10, dtype=torch.float64)
lw = torch.randn(7, 10, dtype=torch.float64)
lb = torch.randn(7, dtype=torch.float64)
put("nn.lx", lx)
put("nn.lw", lw)
put("nn.lb", lb)
put("nn.linear", F.linear(lx, lw, lb))
put("nn.linear.nobias", F.linear(lx, lw))

# ---- write safetensors by hand --------------------------------------------------------------
DT = {torch.float64: ("F64", "<f8"), torch.float32: ("F32", "<f4"), torch.int64: ("I64", "<i8")}
header, blobs, off = {}, [], 0
for name in sorted(T):
    t = T[name]
    code, npdt = DT[t.dtype]
    raw = t.numpy().astype(npdt).tobytes()
    header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
    blobs.append(raw)
    off += len(raw)
hjson = json.dumps(header, separators=(",", ":")).encode()
hjson += b" " * ((8 - len(hjson) % 8) % 8)
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "red.safetensors")
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(hjson)))
    f.write(hjson)
    for blob in blobs:
        f.write(blob)
print(path, os.path.getsize(path), "bytes,", len(T), "tensors")
