#!/usr/bin/env python3
"""Copies a Hugging Face folder with its f32 safetensors tensors rounded to f16 (or bf16): the
16-bit checkpoint of the same weights, for side-by-side runs against a 16-bit GGUF of them.

    python3 bench/safetensors_half.py GPT2_DIR GPT2_F16_DIR [--dtype f16|bf16]

Needs numpy only. Other files of the folder (config, tokenizer) are copied as they are.
"""
import argparse
import json
import shutil
import struct
from pathlib import Path

import numpy as np


def to_bf16(a):
    # Round to nearest even on the upper 16 bits of the f32 pattern (NaNs are not expected).
    u = a.astype(np.float32).view(np.uint32)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--dtype", choices=["f16", "bf16"], default="f16")
    a = ap.parse_args()
    src, dst = Path(a.src), Path(a.dst)
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and f.name != "model.safetensors":
            shutil.copy(f, dst / f.name)
    raw = (src / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
    out, blobs, off = {}, [], 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        s, e = info["data_offsets"]
        dt = info["dtype"]
        blob = data[s:e]
        if dt == "F32":
            x = np.frombuffer(blob, dtype=np.float32)
            blob = (x.astype(np.float16) if a.dtype == "f16" else to_bf16(x)).tobytes()
            dt = "F16" if a.dtype == "f16" else "BF16"
        out[name] = {"dtype": dt, "shape": info["shape"], "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    h = json.dumps(out).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(dst / "model.safetensors", "wb") as fo:
        fo.write(struct.pack("<Q", len(h)))
        fo.write(h)
        for b in blobs:
            fo.write(b)
    print(f"{len(out)} tensors, {off} bytes -> {dst}")


if __name__ == "__main__":
    main()
