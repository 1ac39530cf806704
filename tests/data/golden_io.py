"""Helpers of the golden generators: values exact in every float dtype, and a safetensors
writer (numpy only, so the generators need neither torch nor the safetensors package)."""
import json
import struct

import numpy as np


def bf16_exact(a):
    """a rounded to bf16 (nearest even), tiny values flushed to 0: exact in f16, bf16, f32, f64."""
    a = np.asarray(a, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    r = bits.astype(np.uint32).view(np.float32)
    return np.where(np.abs(r) < 1e-3, 0, r).astype(np.float32)


def write_safetensors(path, tensors):
    """tensors: name -> array; float arrays stored as F32, integer arrays as I64."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.asarray(tensors[name])
        a = np.ascontiguousarray(a.astype(np.int64) if a.dtype.kind in "iu" else a.astype(np.float32))
        b = a.tobytes()
        dtype = "I64" if a.dtype == np.int64 else "F32"
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
