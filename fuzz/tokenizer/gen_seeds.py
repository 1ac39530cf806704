#!/usr/bin/env python3
"""Writes seed inputs for fuzz_tokenizer into fuzz/corpus/tokenizer/ (run from the repo root)."""
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus", "tokenizer")
SEP = b"\n----\n"


def byte_symbols():
    out, shift = [], 0
    for b in range(256):
        printable = 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255
        out.append(chr(b) if printable else chr(256 + shift))
        shift += 0 if printable else 1
    return out


def gpt2_seed(extra, merges, text, special=False):
    vocab = {s: i for i, s in enumerate(byte_symbols())}
    for t in extra:
        vocab[t] = len(vocab)
    mode = b"d" if not special else b"f"  # low bit 0: GPT-2; bit 1: allow_special
    return mode + SEP + json.dumps(vocab).encode() + SEP + merges.encode() + SEP + text.encode()


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {
        "gpt2_tiny": gpt2_seed(["ab", "bc", "abc", "\u0120a"], "#version: 0.2\na b\nb c\nab c\n\u0120 a\n",
                               "abc bcb it's  x\u00e9\U0001f600"),
        "gpt2_special": gpt2_seed(["<|endoftext|>"], "", "a<|endoftext|>b", special=True),
        "gpt2_bad_json": b"b" + SEP + b'{"a": [1, {"b": 2}]}' + SEP + b"a b\n" + SEP + b"x",
        "wordpiece_tiny": b"w" + SEP + "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n##lo\nhel\n\u00e9\n".encode() + SEP + SEP +
                          "Hello, HELLO caf\u00e9 \u4f60\u597d [SEP] x\u0301".encode(),
        "wordpiece_crlf": b"w" + SEP + b"[PAD]\r\n[UNK] \r\n[CLS]\r\n[SEP]\r\n" + SEP + SEP + b"a\x00b\xff",
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {OUT}")


if __name__ == "__main__":
    main()
