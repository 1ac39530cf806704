#!/usr/bin/python3
"""Checks that the Python reference implementation reads a file written by wick.

    WICK_ROUNDTRIP_OUT=/tmp/wick_roundtrip.safetensors ./build/tests/test_safetensors \\
        --gtest_filter=SafetensorsSave.RoundTrip
    /usr/bin/python3 tests/data/check_roundtrip.py /tmp/wick_roundtrip.safetensors

The file holds the tensors of roundtrip_tensors() in tests/test_safetensors.cpp; this
script recomputes them with numpy/torch and compares. Exit status 0 on success.
"""
import sys

import numpy as np
from safetensors import safe_open


def main(path):
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected = {
        "z_first": m.astype(np.float64),
        "transposed": m.T,
        "narrowed": m[:, 1:3],
        "broadcast": np.broadcast_to(np.array([1, 2, 3], dtype=np.float32), (2, 3)),
        "f16": m.astype(np.float16),
        "u8": np.array([0, 7, 255], dtype=np.uint8),
        "u32": np.array([4000000000, 1], dtype=np.uint32),
        "i64": np.array([-(2**63), -1, 3], dtype=np.int64),
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros([0], dtype=np.float32),
        "empty2": np.zeros([2, 0], dtype=np.int64),
        'odd name "quoted" ü': np.arange(1, 8, dtype=np.float32),
    }
    # numpy has no bf16 (read it through torch); torch 1.13 has no u32 (read through numpy).
    with safe_open(path, framework="np") as f:
        names = list(f.keys())
        meta = f.metadata()
        arrays = {k: f.get_tensor(k) for k in names if k != "bf16"}
    assert meta == {"greeting": "Grüße 世界 🚀", "n": "1"}, meta
    assert set(names) == set(expected) | {"bf16"}, names
    for name, want in expected.items():
        have = arrays[name]
        assert have.dtype == want.dtype, (name, have.dtype, want.dtype)
        assert have.shape == want.shape, (name, have.shape, want.shape)
        assert np.array_equal(have, want), (name, have, want)

    import torch

    with safe_open(path, framework="pt") as f:
        bf = f.get_tensor("bf16")
    assert bf.dtype == torch.bfloat16 and bf.shape == (3, 4), (bf.dtype, bf.shape)
    assert torch.equal(bf.float(), torch.arange(12, dtype=torch.float32).reshape(3, 4))
    print(f"OK: the reference (safetensors) read all {len(names)} tensors and the metadata of {path}")


if __name__ == "__main__":
    main(sys.argv[1])
