"""Per-token mask time of constrained decoding, wick against XGrammar and llguidance on the same
schemas, documents, tokens and vocabulary (issue 40's speed row; docs/perf.md).

    python3 bench/grammar_masks.py --tokenizer models/ggml-vocab-llama-bpe.gguf \
        --wick-bench build/tools/wick/wick-bench [--cases tests/data/grammar/schema_cases.json]

The vocabulary comes from a GGUF file (llama.cpp ships ggml-vocab-llama-bpe.gguf, Llama 3's, and
ggml-vocab-qwen2.gguf in its models/ folder). `wick mask-bench` compiles each schema, tokenizes
its valid documents and times each token's mask before taking the token; its --json output
holds the token ids, which are replayed here through xgrammar (GrammarCompiler +
GrammarMatcher.fill_next_token_bitmask) and llguidance (LLMatcher.compute_bitmask), both from
PyPI (`pip install xgrammar llguidance`). Each peer's time is that call's alone, measured in
Python around the call (the call itself is native code; ~1 us of the figure is Python's).
With --llama-probe (bench/llama_grammar_masks.cpp, built as its header says against a llama.cpp
build), llama.cpp's grammar sampler too (json_schema_to_grammar, llama_sampler_apply over the
whole vocabulary). Reports compile median and mask mean / p50 / p99 / max, side by side.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def byte_decoder():
    """GPT-2's byte-level alphabet, inverted: character -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def gguf_vocab(path):
    """(raw bytes per token, special ids, eos id) of a byte-level BPE GGUF vocabulary."""
    from gguf import GGUFReader
    r = GGUFReader(path)
    f = r.fields
    tokens = [bytes(f["tokenizer.ggml.tokens"].parts[i]).decode("utf-8") for i in f["tokenizer.ggml.tokens"].data]
    types = [int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data]
    eos = int(f["tokenizer.ggml.eos_token_id"].parts[-1][0])
    dec = byte_decoder()
    raw, special = [], []
    for i, (t, ty) in enumerate(zip(tokens, types)):
        if ty == 3:  # control
            special.append(i)
            raw.append(b"\xff" + t.encode())
        elif ty == 4:  # user defined: as written
            raw.append(t.encode())
        else:
            raw.append(bytes(dec[c] for c in t) if all(c in dec for c in t) else t.encode())
    return raw, special, eos


def stats(times_us):
    a = np.array(times_us)
    return a.mean(), np.percentile(a, 50), np.percentile(a, 99), a.max()


def make_cases(path, per_schema):
    cases = []
    for c in json.load(open(path)):
        if c.get("strict") or not c.get("closed_objects", True):
            continue
        docs = [d["text"] for d in c["docs"] if d["valid"] and not d.get("skip")]
        for k, doc in enumerate(docs[:per_schema]):
            cases.append({"name": f"{c['name']} #{k}", "schema": c["schema"], "doc": doc})
    return cases


def run_xgrammar(cases, raw, eos):
    """Per case: (compile ms, mask us per token), or None where xgrammar refuses the schema or
    a token of the document."""
    import xgrammar as xgr
    info = xgr.TokenizerInfo(raw, xgr.VocabType.RAW, stop_token_ids=[eos])
    compiler = xgr.GrammarCompiler(info, cache_enabled=False)
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    out = []
    for c in cases:
        try:
            t0 = time.perf_counter()
            g = compiler.compile_json_schema(json.dumps(c["schema"]), any_whitespace=False)
            compile_ms = (time.perf_counter() - t0) * 1e3
        except Exception:
            out.append(None)
            continue
        m, times = xgr.GrammarMatcher(g), []
        for tok in c["ids"]:
            t0 = time.perf_counter()
            m.fill_next_token_bitmask(bitmask)
            times.append((time.perf_counter() - t0) * 1e6)
            if not m.accept_token(tok):
                times = None
                break
        out.append((compile_ms, times) if times is not None else None)
    return out


class GgufTokenizer:
    """What llguidance's TokenizerWrapper reads: tokens as bytes, specials, and a tokenize call
    (a greedy longest match: used only for forced text, which JSON Schema grammars rarely need)."""

    def __init__(self, raw, special, eos):
        self.tokens, self.special_token_ids, self.eos_token_id, self.bos_token_id = raw, special, eos, None
        self.by_bytes = {t: i for i, t in enumerate(raw) if i not in set(special)}
        self.longest = max(len(t) for t in raw)

    def __call__(self, s):
        b = s if isinstance(s, bytes) else s.encode()
        out, i = [], 0
        while i < len(b):
            for n in range(min(self.longest, len(b) - i), 0, -1):
                if b[i:i + n] in self.by_bytes:
                    out.append(self.by_bytes[b[i:i + n]])
                    i += n
                    break
            else:
                i += 1
        return out


def run_llguidance(cases, raw, special, eos):
    """As run_xgrammar, through llguidance's LLMatcher."""
    import llguidance
    from llguidance import TokenizerWrapper
    tok = llguidance.LLTokenizer(TokenizerWrapper(GgufTokenizer(raw, special, eos)))
    bitmask = np.zeros((1, (len(raw) + 31) // 32), dtype=np.int32)
    out = []
    for c in cases:
        t0 = time.perf_counter()
        try:
            grammar = llguidance.LLMatcher.grammar_from_json_schema(
                json.dumps(c["schema"]), defaults={"whitespace_flexible": False} if isinstance(c["schema"], dict) else None)
            m = llguidance.LLMatcher(tok, grammar)
        except Exception:
            out.append(None)
            continue
        compile_ms = (time.perf_counter() - t0) * 1e3
        if m.is_error():
            out.append(None)
            continue
        times = []
        for t in c["ids"]:
            t0 = time.perf_counter()
            m.unsafe_compute_mask_ptr(bitmask.ctypes.data, bitmask.nbytes)
            times.append((time.perf_counter() - t0) * 1e6)
            if not m.consume_token(t):
                times = None
                break
        out.append((compile_ms, times) if times is not None else None)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--wick-bench", default="build/tools/wick/wick-bench")
    ap.add_argument("--cases", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data", "grammar",
                                                    "schema_cases.json"))
    ap.add_argument("--per-schema", type=int, default=3)
    ap.add_argument("--llama-probe", help="bench/llama_grammar_masks.cpp built against llama.cpp: adds its grammar "
                                          "sampler's row")
    a = ap.parse_args()
    cases = make_cases(a.cases, a.per_schema)
    with tempfile.TemporaryDirectory() as d:
        cin, cout = os.path.join(d, "cases.json"), os.path.join(d, "out.json")
        json.dump(cases, open(cin, "w"))
        r = subprocess.run([a.wick_bench, "mask-bench", "--tokenizer", a.tokenizer, "--cases", cin, "--json", cout],
                           capture_output=True, text=True)
        print(r.stdout, r.stderr, file=sys.stderr)
        w = json.load(open(cout))
        probe = None
        if a.llama_probe:  # one JSON line per case of cout, in order
            out = subprocess.run([a.llama_probe, a.tokenizer, cout], capture_output=True, text=True, check=True).stdout
            probe = [json.loads(line) for line in out.splitlines()]
    replay = [c for c in w["cases"] if c["accepted"]]
    raw, special, eos = gguf_vocab(a.tokenizer)
    results = {"wick": [(c["compile_ms"], c["mask_us"]) for c in replay],
               "xgrammar": run_xgrammar(replay, raw, eos),
               "llguidance": run_llguidance(replay, raw, special, eos)}
    if probe:
        taken = [p for p, c in zip(probe, w["cases"]) if c["accepted"]]
        results["llama.cpp"] = [(p["compile_ms"], p["mask_us"]) if p["ok"] else None for p in taken]
    # Compared on the documents every engine takes (each refuses some schemas, or some of the
    # documents: whitespace, key order).
    common = [i for i in range(len(replay)) if all(r[i] is not None for r in results.values())]
    print(f"{len(replay)} documents wick takes ({w['rejected']} it refuses), {len(common)} all take "
          f"({len(set(json.dumps(replay[i]['schema']) for i in common))} schemas, "
          f"{sum(len(replay[i]['ids']) for i in common)} tokens); vocabulary {len(raw)} ({os.path.basename(a.tokenizer)})")
    print("| engine | documents refused | masks | mean us | p50 us | p99 us | max us | compile median ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        masks = [t for i in common for t in r[i][1]]
        compiles = [r[i][0] for i in common]
        mean, p50, p99, mx = stats(masks)
        refused = sum(x is None for x in r)
        print(f"| {name} | {refused} | {len(masks)} | {mean:.1f} | {p50:.1f} | {p99:.1f} | {mx:.1f} | "
              f"{np.median(compiles):.3f} |")


if __name__ == "__main__":
    main()
