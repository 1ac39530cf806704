#!/usr/bin/env python3
"""Writes a random-weight Llama GGUF of a real model's shape, for speed comparisons where the
weights' values do not matter (wick vs llama.cpp on the same file).

    python3 bench/make_llama_gguf.py --shape 1b --dtype f16 --out /tmp/llama1b-f16.gguf
    python3 bench/make_llama_gguf.py --shape 8b --dtype f16 --out /tmp/llama8b-f16.gguf

Shapes: `1b` is Llama-3.2-1B's layers (hidden 2048, 16 layers, 32 heads, 8 KV heads, FFN 8192),
`8b` Llama-3-8B's (4096, 32, 32, 8, 14336), `tiny` a 4-layer 256-wide model for smoke tests;
Mixture-of-Experts shapes: `olmoe` OLMoE-1B-7B's (2048, 16 layers, 16 heads, 64 experts of 1024,
top 8), `qwen3moe` Qwen3-30B-A3B's (2048, 48, 32 heads of 128, 4 KV heads, 128 experts of 768,
top 8, its 151,936-token vocabulary), `tinymoe` a 4-layer qwen3moe for smoke tests, `gptoss20b`
gpt-oss-20b's (2880, 24 layers, 64 heads of 64, 8 KV heads, 32 experts of 2880, top 4, its
201,088-token vocabulary; sinks, biases, even layers sliding over 128, yarn 32x over 4096) with
its experts in MXFP4 as released (`--experts mxfp4`, the default for it: random codes under a
scale of 2^-8, values of about the others' scale), `tinygptoss` a 4-layer one;
each with GPT-2's vocabulary (50257 tokens, from tests/data/gpt2-tokenizer) and an untied output
head, as in issue 22's llama.cpp figures. Quantized files come from llama.cpp's
`llama-quantize FILE OUT Q4_K_M` on the f16 file (nothing of llama.cpp is committed).

Values: one pool of N(0, 0.02) floats cut at random offsets, so writing 15 GB takes seconds of
CPU instead of minutes (the numbers only need to be finite and of a realistic scale). Tensors
are streamed one at a time, so memory stays at one tensor.
"""
import argparse
import json
import os

import gguf
import numpy as np
from gguf import GGUFWriter, GGMLQuantizationType, TokenType

SHAPES = {
    "tiny": dict(hidden=256, layers=4, heads=8, kv_heads=2, ffn=768),
    "1b": dict(hidden=2048, layers=16, heads=32, kv_heads=8, ffn=8192),
    "8b": dict(hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336),
    # Mixture of experts: OLMoE-1B-7B (q/k norms over the whole projection) and Qwen3-30B-A3B
    # (head dim 128 != hidden / heads, per-head q/k norms, 151,936 tokens: the GPT-2
    # vocabulary padded with control tokens), each layer a router and stacked experts.
    "olmoe": dict(arch="olmoe", hidden=2048, layers=16, heads=16, kv_heads=16, ffn=1024, experts=64, used=8,
                  qk_norm="full"),
    "qwen3moe": dict(arch="qwen3moe", hidden=2048, layers=48, heads=32, kv_heads=4, head_dim=128, ffn=6144,
                     expert_ffn=768, experts=128, used=8, qk_norm="head", vocab=151936),
    "tinymoe": dict(arch="qwen3moe", hidden=256, layers=4, heads=8, kv_heads=2, ffn=768, expert_ffn=256, experts=16,
                    used=4, qk_norm="head"),
    # gpt-oss: biases on attention, router and experts, a sink per head, the pre-MLP norm named
    # post_attention_norm, experts MXFP4 by default.
    "gptoss20b": dict(arch="gpt-oss", hidden=2880, layers=24, heads=64, kv_heads=8, head_dim=64, ffn=2880,
                      expert_ffn=2880, experts=32, used=4, vocab=201088, gptoss=True),
    "tinygptoss": dict(arch="gpt-oss", hidden=256, layers=4, heads=8, kv_heads=2, head_dim=32, ffn=256,
                       expert_ffn=256, experts=8, used=2, gptoss=True),
}
HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB_DIR = os.path.join(HERE, "..", "tests", "data", "gpt2-tokenizer")


def gpt2_vocab():
    with open(os.path.join(VOCAB_DIR, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    with open(os.path.join(VOCAB_DIR, "merges.txt"), encoding="utf-8") as f:
        merges = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#version")]
    return tokens, merges


def tensor_plan(s, vocab):
    h, f = s["hidden"], s["ffn"]
    d = s.get("head_dim", h // s["heads"])
    qd, kvd = d * s["heads"], d * s["kv_heads"]
    yield "token_embd.weight", (vocab, h)
    for i in range(s["layers"]):
        p = f"blk.{i}."
        yield p + "attn_norm.weight", (h,)
        yield p + "attn_q.weight", (qd, h)
        yield p + "attn_k.weight", (kvd, h)
        yield p + "attn_v.weight", (kvd, h)
        yield p + "attn_output.weight", (h, qd)
        if s.get("gptoss"):
            for n, size in (("attn_q", qd), ("attn_k", kvd), ("attn_v", kvd), ("attn_output", h)):
                yield p + n + ".bias", (size,)
            yield p + "attn_sinks.weight", (s["heads"],)
        if s.get("qk_norm"):
            yield p + "attn_q_norm.weight", (qd if s["qk_norm"] == "full" else d,)
            yield p + "attn_k_norm.weight", (kvd if s["qk_norm"] == "full" else d,)
        yield p + ("post_attention_norm.weight" if s.get("gptoss") else "ffn_norm.weight"), (h,)
        if s.get("experts"):
            e, ef = s["experts"], s.get("expert_ffn", f)
            yield p + "ffn_gate_inp.weight", (e, h)
            yield p + "ffn_gate_exps.weight", (e, ef, h)
            yield p + "ffn_up_exps.weight", (e, ef, h)
            yield p + "ffn_down_exps.weight", (e, h, ef)
            if s.get("gptoss"):
                yield p + "ffn_gate_inp.bias", (e,)
                yield p + "ffn_gate_exps.bias", (e, ef)
                yield p + "ffn_up_exps.bias", (e, ef)
                yield p + "ffn_down_exps.bias", (e, h)
            continue
        yield p + "ffn_gate.weight", (f, h)
        yield p + "ffn_up.weight", (f, h)
        yield p + "ffn_down.weight", (h, f)
    yield "output_norm.weight", (h,)
    yield "output.weight", (vocab, h)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="1b")
    ap.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f16")
    ap.add_argument("--layers", type=int, help="override the layer count")
    ap.add_argument("--context", type=int, default=8192)
    ap.add_argument("--experts", choices=["float", "mxfp4"],
                    help="the expert stacks' type: the file's float dtype, or MXFP4 (default for gpt-oss shapes)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    s = dict(SHAPES[a.shape])
    if a.layers:
        s["layers"] = a.layers
    tokens, merges = gpt2_vocab()
    types = [TokenType.NORMAL] * len(tokens)
    if s.get("vocab", len(tokens)) > len(tokens):  # the real vocabulary's size: control tokens pad it
        pad = s["vocab"] - len(tokens)
        tokens += [f"<|pad_{i}|>" for i in range(pad)]
        types += [TokenType.CONTROL] * pad
    rng = np.random.default_rng(a.seed)
    pool = (rng.standard_normal(1 << 24) * 0.02).astype(np.float32)

    arch = s.get("arch", "llama")
    w = GGUFWriter(a.out, arch)
    w.add_name(f"random-llama-{a.shape}")
    w.add_block_count(s["layers"])
    w.add_context_length(a.context)
    w.add_embedding_length(s["hidden"])
    w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    head_dim = s.get("head_dim", s["hidden"] // s["heads"])
    w.add_rope_dimension_count(head_dim)
    if "head_dim" in s:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if s.get("gptoss"):
        w.add_sliding_window(128)
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(32.0)
        w.add_rope_scaling_orig_ctx_len(4096)
    if s.get("experts"):
        w.add_expert_count(s["experts"])
        w.add_expert_used_count(s["used"])
        if "expert_ffn" in s:
            w.add_expert_feed_forward_length(s["expert_ffn"])
    w.add_vocab_size(len(tokens))
    mxfp4 = (a.experts or ("mxfp4" if s.get("gptoss") else "float")) == "mxfp4"
    w.add_file_type(38 if mxfp4 else {"f32": 0, "f16": 1, "bf16": 32}[a.dtype])  # 38: MOSTLY_MXFP4_MOE
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(50256)
    w.add_eos_token_id(50256)

    plan = list(tensor_plan(s, len(tokens)))

    def packed(name, shape):  # MXFP4 expert matrices: 17-byte blocks along the rows
        return mxfp4 and name.endswith("_exps.weight")

    for name, shape in plan:
        n = int(np.prod(shape))
        # Norm weights and biases stay f32 (as convert_hf_to_gguf.py writes them).
        if packed(name, shape):
            byte_shape = tuple(shape[:-1]) + (shape[-1] // 32 * 17,)
            w.add_tensor_info(name, byte_shape, np.dtype(np.uint8), int(np.prod(byte_shape)),
                              raw_dtype=GGMLQuantizationType.MXFP4)
        elif len(shape) == 1 or name.endswith(".bias") or a.dtype == "f32":
            w.add_tensor_info(name, shape, np.dtype(np.float32), n * 4)
        elif a.dtype == "f16":
            w.add_tensor_info(name, shape, np.dtype(np.float16), n * 2)
        else:
            w.add_tensor_info(name, shape, np.dtype(np.uint16), n * 2, raw_dtype=GGMLQuantizationType.BF16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    bytes_pool = rng.integers(0, 256, 1 << 24, dtype=np.uint8)
    for name, shape in plan:
        n = int(np.prod(shape))
        if packed(name, shape):
            blocks = n // 32
            start = int(rng.integers(0, bytes_pool.size))
            data = np.resize(np.roll(bytes_pool, -start), blocks * 17).reshape(blocks, 17)
            data[:, 0] = 120  # the scale 2^(120 - 128): codes up to 12 give values up to 0.047
            w.write_tensor_data(data)
            continue
        if name.endswith(".bias") or name.endswith("attn_sinks.weight"):
            start = int(rng.integers(0, pool.size))
            data = np.resize(np.roll(pool, -start), n).reshape(shape).astype(np.float32)
        elif len(shape) == 1:
            data = np.ones(shape, np.float32)
        else:
            start = int(rng.integers(0, pool.size))
            data = np.resize(np.roll(pool, -start), n).reshape(shape)
            if a.dtype == "f16":
                data = data.astype(np.float16)
            elif a.dtype == "bf16":
                data = (data.view(np.uint32) >> 16).astype(np.uint16)
        w.write_tensor_data(data)
    w.close()
    params = sum(int(np.prod(sh)) for _, sh in plan)
    print(f"{a.out}: {a.shape} {a.dtype}, {s['layers']} layers, {params / 1e9:.3f} B parameters")


if __name__ == "__main__":
    main()
