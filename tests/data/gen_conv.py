#!/usr/bin/python3
"""Golden outputs for tests/test_conv.cpp and tests/test_pool.cpp, from PyTorch.

Run with /usr/bin/python3 (torch 1.13). Writes tests/data/conv.safetensors by hand (the
safetensors package is not installed there): 8-byte little-endian header length, JSON
header, raw little-endian data. Each case <name> stores
  <name>.x, <name>.w, <name>.b (when used)  inputs, f32
  <name>.y32                                output computed in f32
  <name>.y64                                output from the same inputs in f64
and its op and parameters as a JSON string in __metadata__[<name>].
"""
import json
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(1234)
tensors = {}
meta = {}


def rnd(*shape):
    return torch.randn(*shape, dtype=torch.float32)


def conv_case(name, op, x_shape, w_shape, bias, **kw):
    x, w = rnd(*x_shape), rnd(*w_shape) * 0.5
    c_out = w_shape[1] * kw.get("groups", 1) if "transpose" in op else w_shape[0]
    b = rnd(c_out) if bias else None
    fn = getattr(F, op)

    def run(dt):
        return fn(x.to(dt), w.to(dt), None if b is None else b.to(dt), **kw)

    add(name, dict(op=op, **kw), x=x, w=w, b=b, y32=run(torch.float32), y64=run(torch.float64))


def add(name, params, **ts):
    meta[name] = json.dumps(params)
    for k, t in ts.items():
        if t is not None:
            tensors[f"{name}.{k}"] = t.contiguous()


# ---- conv2d: (N, C_in, H, W), weight (C_out, C_in/groups, kh, kw)
conv_case("c2_basic", "conv2d", (1, 3, 5, 5), (4, 3, 3, 3), True)
conv_case("c2_stride2_pad1", "conv2d", (3, 4, 7, 9), (6, 4, 3, 3), True, stride=(2, 2), padding=(1, 1))
conv_case("c2_dilation2", "conv2d", (2, 2, 9, 8), (3, 2, 3, 2), False, padding=(2, 1), dilation=(2, 2))
conv_case("c2_groups2", "conv2d", (2, 4, 6, 7), (6, 2, 3, 3), True, padding=(1, 1), groups=2)
conv_case("c2_depthwise", "conv2d", (1, 5, 8, 8), (5, 1, 3, 3), False, stride=(2, 2), padding=(1, 1), groups=5)
conv_case("c2_1x1", "conv2d", (3, 8, 4, 6), (5, 8, 1, 1), True)
conv_case("c2_1x1_stride2", "conv2d", (1, 3, 5, 7), (2, 3, 1, 1), False, stride=(2, 2))
conv_case("c2_asym", "conv2d", (1, 3, 6, 11), (2, 3, 2, 4), True, stride=(2, 1), padding=(0, 2), dilation=(1, 2))
# Large enough that cpu_conv.cpp builds the column matrix in several bands of rows.
conv_case("c2_banded", "conv2d", (1, 16, 22, 100), (4, 16, 3, 3), True, stride=(1, 1), padding=(1, 1))
conv_case("c2_big_pad", "conv2d", (1, 2, 3, 3), (2, 2, 3, 3), True, stride=(3, 2), padding=(2, 2))
# ---- conv_transpose2d: weight (C_in, C_out/groups, kh, kw)
conv_case("ct2_basic", "conv_transpose2d", (1, 3, 4, 4), (3, 2, 3, 3), True, stride=(2, 2), padding=(1, 1),
          output_padding=(1, 1))
conv_case("ct2_groups_dil", "conv_transpose2d", (2, 4, 5, 3), (4, 3, 3, 2), True, stride=(1, 2), padding=(1, 0),
          dilation=(2, 1), output_padding=(0, 1), groups=2)
conv_case("ct2_stride3", "conv_transpose2d", (3, 2, 3, 4), (2, 3, 2, 2), False, stride=(3, 3))
conv_case("ct2_1x1", "conv_transpose2d", (2, 4, 3, 5), (4, 2, 1, 1), True)
# ---- 1-D
conv_case("c1_basic", "conv1d", (3, 4, 11), (6, 2, 3), True, stride=2, padding=1, dilation=2, groups=2)
conv_case("c1_k1", "conv1d", (1, 3, 7), (4, 3, 1), False)
conv_case("ct1_basic", "conv_transpose1d", (2, 3, 6), (3, 4, 3), True, stride=2, padding=1, output_padding=1)
conv_case("ct1_depthwise", "conv_transpose1d", (1, 4, 5), (4, 1, 4), False, stride=3, padding=2, groups=4)


# ---- pooling
def pool_case(name, op, x_shape, **kw):
    x = rnd(*x_shape)
    fn = getattr(F, op)
    add(name, dict(op=op, **kw), x=x, y32=fn(x, **kw), y64=fn(x.double(), **kw))


pool_case("mp_pad", "max_pool2d", (2, 3, 7, 8), kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))
pool_case("mp_rect", "max_pool2d", (1, 2, 5, 9), kernel_size=(2, 3), stride=(1, 2))
pool_case("mp_default_stride", "max_pool2d", (3, 1, 6, 6), kernel_size=(2, 2))
pool_case("ap_pad_incl", "avg_pool2d", (2, 3, 7, 8), kernel_size=(3, 3), stride=(2, 2), padding=(1, 1),
          count_include_pad=True)
pool_case("ap_pad_excl", "avg_pool2d", (2, 3, 7, 8), kernel_size=(3, 3), stride=(2, 2), padding=(1, 1),
          count_include_pad=False)
pool_case("ap_rect_excl", "avg_pool2d", (1, 2, 5, 9), kernel_size=(3, 2), stride=(1, 3), padding=(1, 1),
          count_include_pad=False)
pool_case("ap_nopad", "avg_pool2d", (1, 2, 6, 5), kernel_size=(2, 2))


# ---- upsampling (F.interpolate with explicit sizes)
def up_case(name, mode, x_shape, size, align_corners=None):
    x = rnd(*x_shape)
    kw = dict(size=size, mode=mode)
    if align_corners is not None:
        kw["align_corners"] = align_corners
    params = dict(op=f"upsample_{mode}", size=list(size) if isinstance(size, tuple) else [size])
    if align_corners is not None:
        params["align_corners"] = align_corners
    add(name, params, x=x, y32=F.interpolate(x, **kw), y64=F.interpolate(x.double(), **kw))


up_case("un1_up", "nearest", (2, 3, 5), 12)
up_case("un1_down", "nearest", (1, 2, 7), 3)
up_case("un2_double", "nearest", (1, 2, 4, 5), (8, 10))
up_case("un2_mixed", "nearest", (2, 1, 5, 7), (3, 11))
up_case("un2_odd", "nearest", (1, 3, 4, 4), (9, 6))
up_case("ub_up_ac", "bilinear", (2, 2, 4, 5), (7, 9), True)
up_case("ub_up", "bilinear", (2, 2, 4, 5), (7, 9), False)
up_case("ub_down_ac", "bilinear", (1, 3, 8, 7), (3, 5), True)
up_case("ub_down", "bilinear", (1, 3, 8, 7), (3, 5), False)
up_case("ub_to1_ac", "bilinear", (1, 1, 3, 3), (1, 1), True)
up_case("ub_to1", "bilinear", (1, 1, 3, 3), (1, 1), False)

# ---- write safetensors
DT = {torch.float32: ("F32", "<f4"), torch.float64: ("F64", "<f8")}
header = {"__metadata__": meta}
blobs, offset = [], 0
for k in sorted(tensors):
    t = tensors[k]
    name, npdt = DT[t.dtype]
    data = t.numpy().astype(npdt).tobytes()
    header[k] = {"dtype": name, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
hjson = json.dumps(header, separators=(",", ":")).encode()
hjson += b" " * (-len(hjson) % 8)
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv.safetensors")
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(hjson)))
    f.write(hjson)
    for b in blobs:
        f.write(b)
print(f"wrote {path}: {len(tensors)} tensors, {offset} data bytes")
