#!/usr/bin/env python3
"""Writes tests/data/gguf/mxfp4.gguf: MXFP4 tensors (ggml type 39, gpt-oss's expert format)
quantized by gguf-py's reference (gguf.quants.MXFP4, ggml's quantize_row_mxfp4_ref in numpy),
each beside its f32 source and its dequantization by gguf-py (ggml's dequantize_row_mxfp4),
the goldens of tests/test_gguf.cpp and tests/test_quant_cuda.cpp.

  w.mxfp4      (8, 512)     normal values, a different scale per row
  t3d.mxfp4    (2, 4, 256)  as w, then edge cases written into the packed bytes: the scale
                            exponents 0, 1 (subnormal scales), 2, 127, 200, 254, 255 (whose
                            +-12 codes overflow to +-inf in f32, as in ggml), and one block
                            holding every code 0..15 twice
  NAME.source  f32 values quantized (the t3d source is that of the bytes before the edits)
  NAME.f32     f32 gguf-py's dequantization of NAME's bytes

Run: python3 tests/data/gguf/gen_mxfp4.py (numpy and gguf from PyPI).
"""
import os
import warnings

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf.quants import quantize, dequantize

HERE = os.path.dirname(os.path.abspath(__file__))


def source(shape, seed):
    rng = np.random.default_rng(seed)
    rows = int(np.prod(shape[:-1]))
    scales = np.logspace(-3, 2, rows).astype(np.float32).reshape(-1, 1)
    return (rng.standard_normal((rows, shape[-1])).astype(np.float32) * scales).reshape(shape)


def main():
    w = gguf.GGUFWriter(os.path.join(HERE, "mxfp4.gguf"), "fixture")
    w.add_name("ggml MXFP4 fixtures (gguf-py reference)")
    for name, shape, seed in (("w.mxfp4", (8, 512), 1), ("t3d.mxfp4", (2, 4, 256), 2)):
        x = source(shape, seed)
        q = quantize(x, Q.MXFP4)  # (..., row_bytes) uint8
        if name == "t3d.mxfp4":
            blocks = q.reshape(-1, 17)
            for i, e in enumerate((0, 1, 2, 127, 200, 254, 255)):
                blocks[3 * i + 1, 0] = e
            codes = np.arange(32, dtype=np.uint8) % 16
            blocks[5, 1:] = codes[:16] | (codes[16:] << 4)
            q = blocks.reshape(q.shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 12 * 2^127 overflows to inf, as in ggml
            golden = dequantize(q, Q.MXFP4).astype(np.float32)
        w.add_tensor(name, q, raw_dtype=Q.MXFP4)
        w.add_tensor(name + ".source", x)
        w.add_tensor(name + ".f32", golden)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
