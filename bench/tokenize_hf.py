#!/usr/bin/env python3
"""HF `tokenizers` twin of bench/tokenize_bench.cpp: encode each paragraph of CORPUS with each
MODEL (a folder with tokenizer.json, or GPT-2's vocab.json + merges.txt), single-threaded
(RAYON_NUM_THREADS=1, one encode call per paragraph), cold first pass and best of 3 warm.

    RAYON_NUM_THREADS=1 python3 bench/tokenize_hf.py /tmp/corpus.txt tests/data/gpt2-tokenizer ...
"""
import os
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # noqa: E402


def load(path):
    if path.endswith(".json"):
        return Tokenizer.from_file(path)
    if os.path.exists(os.path.join(path, "tokenizer.json")):
        return Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    tok = Tokenizer(models.BPE.from_file(os.path.join(path, "vocab.json"), os.path.join(path, "merges.txt")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])  # as Tokenizer::from_folder does for this layout
    return tok


def main():
    text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
    paras = [p for p in text.split("\n\n") if p]
    nbytes = sum(len(p.encode("utf-8")) for p in paras)
    print(f"{len(paras)} paragraphs, {nbytes / 1e6:.2f} MB")
    for path in sys.argv[2:]:
        t0 = time.perf_counter()
        tok = load(path)
        load_s = time.perf_counter() - t0
        times = []
        for _ in range(4):
            a = time.perf_counter()
            n = sum(len(tok.encode(p, add_special_tokens=False).ids) for p in paras)
            times.append(time.perf_counter() - a)
        print(f"{path:45s} load {load_s * 1e3:7.1f} ms  cold {nbytes / times[0] / 1e6:7.2f} MB/s  "
              f"warm {nbytes / min(times[1:]) / 1e6:7.2f} MB/s  {n} tokens")


if __name__ == "__main__":
    main()
