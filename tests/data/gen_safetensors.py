#!/usr/bin/python3
"""Writes the safetensors interop fixtures with the reference implementation.

Run with /usr/bin/python3 (safetensors 0.8, numpy 1.24, torch 1.13):
    /usr/bin/python3 tests/data/gen_safetensors.py

reference.safetensors        every dtype, written by safetensors.serialize_file from raw
                             little-endian buffers (numpy has no bf16/f8, so those bytes are
                             built here by hand and typed through the reference's TensorSpec)
reference_torch.safetensors  written by safetensors.torch.save_file from PyTorch tensors,
                             with f32 copies of the bf16/f16 values as the expected results
The values are small and fixed; tests/test_safetensors.cpp checks them literally.
"""
import os
import struct

import numpy as np
import safetensors
from safetensors import TensorSpec, serialize_file

HERE = os.path.dirname(os.path.abspath(__file__))

METADATA = {
    "greeting": "Grüße 世界 🚀",
    "ключ": "значение",
    "empty": "",
    "format": "np",
}


def bf16_bytes(values):
    # Values chosen to be exact in bf16, so truncating the f32 bits is exact.
    out = b""
    for v in values:
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        assert bits & 0xFFFF == 0, v
        out += struct.pack("<H", bits >> 16)
    return out


def write_reference():
    arrays = {
        "bool": np.array([True, False, True], dtype=np.bool_),
        "u8": np.array([0, 1, 255], dtype=np.uint8),
        "i8": np.array([-128, 0, 127], dtype=np.int8),
        "u16": np.array([0, 65535, 1234], dtype=np.uint16),
        "i16": np.array([-32768, 32767, -1], dtype=np.int16),
        "u32": np.array([0, 4294967295, 7], dtype=np.uint32),
        "i32": np.array([-2147483648, 2147483647, 5], dtype=np.int32),
        "u64": np.array([0, 2**64 - 1, 42], dtype=np.uint64),
        "i64": np.array([[-(2**63), 2**63 - 1, -5], [0, 1, 2**40]], dtype=np.int64),
        "f16": np.array([[1.0, -2.5], [65504.0, 0.000061035156]], dtype=np.float16),
        "f32": (np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 1.0),
        "f32_odd": np.array([[1, 2, 3, 4, 5, 6, 7]], dtype=np.float32) / 8,
        "f64": np.array([np.pi, np.e, -0.0], dtype=np.float64),
        "scalar": np.array(3.5, dtype=np.float32),
        "empty": np.zeros([0], dtype=np.float32),
        "empty2": np.zeros([2, 0], dtype=np.int64),
    }
    # (dtype name for TensorSpec, shape, raw bytes) for types numpy lacks.
    raw = {
        "bf16": ("bfloat16", [2, 2], bf16_bytes([1.0, -2.5, 3.140625, 0.5])),
        # E4M3FN: 0x38 = 1.0, 0xC0 = -2.0, 0x7E = 448 (max), 0x01 = 2^-9 (smallest subnormal)
        "f8_e4m3": ("float8_e4m3fn", [4], bytes([0x38, 0xC0, 0x7E, 0x01])),
        # E5M2: 0x3C = 1.0, 0xC0 = -2.0, 0x7B = 57344 (max)
        "f8_e5m2": ("float8_e5m2", [3], bytes([0x3C, 0xC0, 0x7B])),
    }
    keep = []
    specs = {}
    for name, a in arrays.items():
        a = a.copy(order="C")  # (ascontiguousarray would turn rank 0 into rank 1)
        keep.append(a)
        specs[name] = TensorSpec(dtype=a.dtype.name, shape=list(a.shape), data_ptr=a.ctypes.data, data_len=a.nbytes)
    for name, (dt, shape, data) in raw.items():
        buf = np.frombuffer(data, dtype=np.uint8).copy()
        keep.append(buf)
        specs[name] = TensorSpec(dtype=dt, shape=shape, data_ptr=buf.ctypes.data, data_len=buf.nbytes)
    serialize_file(specs, os.path.join(HERE, "reference.safetensors"), metadata=METADATA)


def write_torch():
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(0)
    w = torch.randn(3, 5, generator=g)
    tensors = {
        "w_bf16": w.to(torch.bfloat16),
        "w_bf16_as_f32": w.to(torch.bfloat16).float(),
        "w_f16": w.to(torch.float16),
        "w_f16_as_f32": w.to(torch.float16).float(),
        "w_t": w.t().contiguous(),  # expected: the transpose of w
        "w": w,
        "w_f64": w.double(),
        "idx": torch.tensor([[0, 3], [7, -1]], dtype=torch.int64),
        "mask": torch.tensor([True, False]),
        "bytes": torch.arange(0, 250, 50, dtype=torch.uint8),
        "i32": torch.tensor([1, -2, 3], dtype=torch.int32),
    }
    save_file(tensors, os.path.join(HERE, "reference_torch.safetensors"), metadata={"format": "pt"})


if __name__ == "__main__":
    print("safetensors", safetensors.__version__, "numpy", np.__version__)
    write_reference()
    try:
        write_torch()
    except ImportError as e:  # torch is optional
        print("torch not available, skipped reference_torch.safetensors:", e)
