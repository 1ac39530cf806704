#!/usr/bin/env python3
"""GPT-2 small (124M, random weights) in wick against Hugging Face transformers eager, one run.

Forward of 1x1024 and 8x1024 tokens (median of >= 20 runs, CUDA events on the torch side,
`wick gpt2-bench` on ours) and greedy decoding of 128 tokens after a 32-token prompt with the
KV cache (`wick generate`, which replays the decode step from a CUDA graph; transformers'
generate()). Decode rate on both sides: tokens after the first / time after the first.
Ceilings measured in the same run: torch bf16 8192^3 matmul TFLOP/s, device copy GB/s.

    python3 bench/gpt2_h200.py --wick build/tools/wick/wick [--device cuda|cpu] [--quick]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER = os.path.join(HERE, "..", "tests", "data", "gpt2-tokenizer")
PROMPT = " hello" * 32  # 32 GPT-2 tokens (" hello" is one token)


def make_checkpoint(path, torch):
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config())  # GPT-2 small: 12 layers, 768 wide, 124M parameters
    with torch.no_grad():  # perturb the init so that logits are not near-uniform
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    model.save_pretrained(path, safe_serialization=True)
    for f in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(TOKENIZER, f), path)
    return model


def load_hf(path, torch, device, dtype):
    from transformers import GPT2LMHeadModel
    try:
        m = GPT2LMHeadModel.from_pretrained(path, attn_implementation="eager", torch_dtype=dtype)
    except TypeError:  # transformers before 4.36 has only the eager attention
        m = GPT2LMHeadModel.from_pretrained(path, torch_dtype=dtype)
    return m.to(device).eval()


def timed(torch, device, fn, runs):
    fn()
    fn()
    times = []
    for _ in range(runs):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def torch_forward_ms(torch, model, device, batch, seq, runs):
    ids = torch.randint(0, 50257, (batch, seq), device=device)
    with torch.no_grad():
        return 1e3 * timed(torch, device, lambda: model(ids, use_cache=False).logits, runs)


def torch_decode_rate(torch, model, device, new_tokens, runs):
    ids = torch.full((1, 32), 31373, device=device)  # " hello"
    kw = dict(do_sample=False, pad_token_id=50256)
    with torch.no_grad():
        first = timed(torch, device, lambda: model.generate(ids, max_new_tokens=1, min_new_tokens=1, **kw), runs)
        full = timed(torch, device,
                     lambda: model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, **kw), runs)
    return (new_tokens - 1) / (full - first)


def wick_forward_ms(wick, ckpt, device, batch, seq, dtype, iters):
    r = subprocess.run([wick, "gpt2-bench", "--model", ckpt, "--devices", device, "--batch", str(batch), "--seq",
                        str(seq), "--dtype", dtype, "--iters", str(iters)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["median_ms"]


def wick_decode_rate(wick, ckpt, device, dtype, new_tokens, runs):
    rates, nodes = [], None
    for _ in range(runs):
        r = subprocess.run([wick, "generate", "--model", ckpt, "--prompt", PROMPT, "--max-tokens", str(new_tokens),
                            "--temperature", "0", "--ignore-eos", "--device", device, "--dtype", dtype],
                           capture_output=True, text=True, check=True)
        assert re.search(r"prompt: 32 tokens", r.stderr), r.stderr
        assert re.search(rf"generated: {new_tokens} tokens", r.stderr), r.stderr
        rates.append(float(re.search(r"decode [0-9.]+ s \(([0-9.]+) tokens/s\)", r.stderr).group(1)))
        m = re.search(r"CUDA graph of (\d+) nodes", r.stderr)
        nodes = int(m.group(1)) if m else None
    return statistics.median(rates), nodes


def ceilings(torch):
    n = 1 << 28
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    copy_gbps = 2 * n * 4 / timed(torch, "cuda", lambda: dst.copy_(src), 20) / 1e9
    del src, dst
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    tflops = 2 * 8192**3 / timed(torch, "cuda", lambda: a @ a, 20) / 1e12
    return copy_gbps, tflops


def forward_flops(cfg, batch, seq):
    """Matmul FLOPs of one forward: the linear layers, the LM head, and attention's two
    T x T products (counted in full, as eager attention computes them)."""
    E, L, V = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"]
    per_token = L * (2 * E * 3 * E + 2 * E * E + 2 * 2 * E * 4 * E) + 2 * E * V
    return batch * seq * per_token + batch * L * 2 * 2 * seq * seq * E


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wick", required=True)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--quick", action="store_true", help="fewer runs and shapes (CPU)")
    ap.add_argument("--phases", default="forward,decode", help="which rows: forward, decode or both")
    args = ap.parse_args()
    import torch
    tdt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    gpu = args.device == "cuda"
    if not gpu:
        torch.set_num_threads(os.cpu_count())  # wick's CPU pool uses every core too
    shapes = [(1, 1024), (8, 1024)] if gpu and not args.quick else [(1, 1024)]
    phases = args.phases.split(",")
    if "forward" not in phases:
        shapes = []
    runs = 20 if gpu else 3
    new_tokens = 128 if gpu else 32
    with tempfile.TemporaryDirectory() as ckpt:
        make_checkpoint(ckpt, torch)
        with open(os.path.join(ckpt, "config.json")) as f:
            cfg = json.load(f)
        copy_gbps, tflops = ceilings(torch) if gpu else (None, None)
        rows = []
        for dt in args.dtypes.split(","):
            model = load_hf(ckpt, torch, args.device, tdt[dt])
            nparams = sum(p.numel() for p in model.parameters())
            wdev = "cuda:0" if gpu else "cpu"
            for b, t in shapes:
                tm = torch_forward_ms(torch, model, args.device, b, t, runs)
                try:
                    wm = wick_forward_ms(args.wick, ckpt, wdev, b, t, dt, runs)
                except subprocess.CalledProcessError as e:
                    print(f"wick gpt2-bench failed: {e.stderr[-500:]}")
                    rows.append((f"forward {b}x{t}", dt, "failed", f"{tm:.2f} ms", float("nan"), "-"))
                    continue
                tf = forward_flops(cfg, b, t) / (wm / 1e3) / 1e12
                ceil = f"{tf:.1f} TFLOP/s, {100 * tf / tflops:.0f}% of bf16 peak" if gpu else f"{tf * 1e3:.0f} GFLOP/s"
                rows.append((f"forward {b}x{t}", dt, f"{wm:.2f} ms", f"{tm:.2f} ms", tm / wm, ceil))
            if "decode" not in phases:
                del model
                continue
            tr = torch_decode_rate(torch, model, args.device, new_tokens, 3 if gpu else 1)
            wr, nodes = wick_decode_rate(args.wick, ckpt, wdev, dt, new_tokens, 3 if gpu else 1)
            weight_bytes = nparams * torch.tensor([], dtype=tdt[dt]).element_size()
            gbps = weight_bytes * wr / 1e9
            ceil = f"{gbps:.0f} GB/s of weights, {100 * gbps / copy_gbps:.0f}% of copy" if gpu else f"{gbps:.1f} GB/s"
            if nodes:
                ceil += f"; graph of {nodes} nodes"
            rows.append((f"decode {new_tokens} after 32", dt, f"{wr:.0f} tok/s", f"{tr:.0f} tok/s", wr / tr, ceil))
            del model
            if gpu:
                torch.cuda.empty_cache()
    dev = torch.cuda.get_device_name() if gpu else f"CPU, {torch.get_num_threads()} threads"
    print(f"\nGPT-2 small (124M, random weights), {dev}; torch {torch.__version__}", end="")
    import transformers
    print(f", transformers {transformers.__version__} eager")
    if gpu:
        print(f"ceilings this run: copy {copy_gbps:.0f} GB/s, torch bf16 matmul {tflops:.0f} TFLOP/s")
    print("\n| phase | dtype | wick | transformers | ratio (>1: wick faster) | wick vs ceiling |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.2f}x | {r[5]} |")


if __name__ == "__main__":
    main()
