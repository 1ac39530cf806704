#!/usr/bin/env python3
"""GPT-2 small forward time: one GPU (LlamaModel's gpt2 row) against tensor parallelism over all GPUs
(Gpt2TensorParallel), through `wick gpt2-bench`.

Builds a randomly initialised GPT-2 small (transformers' GPT2Config() defaults: 12 layers,
12 heads, width 768, vocabulary 50257), every parameter redrawn from N(0, 0.02) so that no
weight is a trivial constant, and saves it with save_pretrained(safe_serialization=True) in
a temporary folder. Then, for bf16 and f32, times a batch of 8 x 1024 tokens on cuda:0 and on
cuda:0..N-1 and prints a markdown table. Logits cover every position, so the LM head (about
a quarter of the FLOPs, replicated rather than split) is part of the time.

The image's /usr/local/cuda has no libnccl: point wick at PyTorch's (the same NCCL),
  export LD_LIBRARY_PATH=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')/lib:$LD_LIBRARY_PATH
  python3 bench/gpt2_tp_h200.py --wick build/tools/wick/wick
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

os.environ["NCCL_NVLS_ENABLE"] = "0"  # NVLink multicast stays off, here and in wick


def make_model(folder):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config())
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(std=0.02)
    model.save_pretrained(folder, safe_serialization=True)


def run_bench(wick, folder, devices, dtype, batch, seq, iters):
    cmd = [wick, "gpt2-bench", "--model", folder, "--devices", ",".join(devices), "--dtype", dtype,
           "--batch", str(batch), "--seq", str(seq), "--iters", str(iters)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=dict(os.environ, NCCL_NVLS_ENABLE="0"))
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wick", required=True, help="path of the wick binary")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--json", help="also write the results to this file")
    a = ap.parse_args()

    import torch

    n = torch.cuda.device_count()
    if n < 1:
        sys.exit("gpt2_tp_h200.py: no CUDA device")
    gpu_counts = [1] + ([n] if n > 1 else [])
    results = []
    with tempfile.TemporaryDirectory() as folder:
        make_model(folder)
        for dtype in ("bf16", "f32"):
            for k in gpu_counts:
                r = run_bench(a.wick, folder, [f"cuda:{i}" for i in range(k)], dtype, a.batch, a.seq, a.iters)
                results.append(r)
                print(f"{dtype} on {k} GPU(s): {r['median_ms']:.2f} ms", file=sys.stderr)

    print(f"GPT-2 small (random weights), batch {a.batch} x {a.seq} tokens, full logits, "
          f"median of {a.iters} forwards; {torch.cuda.get_device_name(0)}")
    print("| devices | dtype | ms / forward | tokens/s | speedup over 1 GPU |")
    print("| --- | --- | ---: | ---: | ---: |")
    for r in results:
        base = next(b for b in results if b["dtype"] == r["dtype"] and b["world_size"] == 1)
        print(f"| {r['world_size']} | {r['dtype']} | {r['median_ms']:.2f} | {r['tokens_per_s']:,.0f} | "
              f"{base['median_ms'] / r['median_ms']:.2f}x |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
