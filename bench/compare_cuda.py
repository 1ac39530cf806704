#!/usr/bin/env python3
"""Side-by-side GPU benchmark: `wick bench --device cuda` against PyTorch eager on the same
rows (CUDA events, warm-up, median of >= 20 runs), with this GPU's ceilings measured in the
same run: device-to-device copy bandwidth (2^28 f32, bytes read + written) and PyTorch's
bf16 8192^3 matmul TFLOP/s.

    python3 bench/compare_cuda.py build/tools/wick/wick --out docs/perf_gpu.md [--quick]
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common as bc  # noqa: E402


def event_median(torch, fn, quick):
    """GPU time of one call by CUDA events, median of >= 20 after warm-up."""
    for _ in range(bc.WARMUPS):
        fn()
    torch.cuda.synchronize()
    times = []
    while len(times) < bc.MIN_RUNS or (not quick and sum(times) < bc.MIN_TOTAL_S and len(times) < bc.MAX_RUNS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def ceilings(torch, quick):
    n = (1 << 20) if quick else (1 << 28)
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    s = event_median(torch, lambda: dst.copy_(src), quick)
    copy_gbps = 2 * n * 4 / s / 1e9
    del src, dst
    m = 1024 if quick else 8192
    a = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)
    s = event_median(torch, lambda: a @ b, quick)
    return copy_gbps, 2 * m**3 / s / 1e12


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("wick", help="path of the wick binary")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--quick", action="store_true", help="the small --quick sizes")
    p.add_argument("--filter", help="passed to wick bench --filter")
    p.add_argument("--out", help="write the markdown table to this file")
    args = p.parse_args()
    import torch

    rows = bc.run_wick(args.wick, args.device, args.quick, args.filter)
    torch.cuda.set_device(torch.device(args.device))
    copy_gbps, mm_tflops = ceilings(torch, args.quick)
    lines = [
        f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}; ceilings measured in this run: "
        f"device-to-device copy {copy_gbps:.0f} GB/s, torch bf16 {'1024' if args.quick else '8192'}^3 matmul "
        f"{mm_tflops:.0f} TFLOP/s",
        "",
        "| op | shape | dtype | wick | torch | torch/wick | wick rate | of ceiling |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        made = sdpa_torch_row(torch, row, args.device) or bc.torch_row(torch, row, args.device)
        torch_s = None
        if made is not None:
            fn, ops = made
            with torch.inference_mode():
                if ops > 1:  # host-cost rows: host clock, one synchronize at the end
                    torch_s = bc.median_seconds(fn, torch.cuda.synchronize, args.quick) / ops
                else:
                    torch_s = event_median(torch, fn, args.quick)
            del fn
            torch.cuda.empty_cache()
        w = row["seconds"]
        if row["flops"]:
            rate, frac = f"{row['tflops']:.1f} TFLOP/s", f"{row['tflops'] / mm_tflops:.0%}"
        elif row["bytes"]:
            rate, frac = f"{row['gbps']:.0f} GB/s", f"{row['gbps'] / copy_gbps:.0%}"
        else:
            rate, frac = "per op", "-"
        lines.append(
            f"| {row['op']} | {row['shape']} | {row['dtype']} | {bc.fmt_time(w)} | {bc.fmt_time(torch_s)} "
            f"| {bc.fmt_ratio(torch_s, w)} | {rate} | {frac} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "torch/wick above 1 = wick faster. Rates: GB/s counts each input read once and the output "
        "written once; the fraction is of the copy ceiling (GB/s rows) or of the bf16 matmul ceiling "
        "(TFLOP/s rows). tiny_add, graph_tiny_add (the same adds replayed from a CUDA graph) and alloc_* rows "
        "are per op (host cost); torch's alloc rows both use "
        "its caching allocator.",
    ]
    table = "\n".join(lines)
    print("\n" + table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


def sdpa_torch_row(torch, row, device):
    """The attention rows of `wick bench` (sdpa, sdpa_causal, sdpa_masked) in PyTorch; None otherwise."""
    if not row["op"].startswith("sdpa"):
        return None
    a, dt = row["args"], bc.torch_dtype(torch, row["dtype"])
    q = torch.randn(a["b"], a["h"], a["tq"], a["d"], device=device).to(dt)
    k = torch.randn(a["b"], a["h"], a["tk"], a["d"], device=device).to(dt)
    v = torch.randn(a["b"], a["h"], a["tk"], a["d"], device=device).to(dt)
    mask = None
    if row["op"] == "sdpa_masked":
        mask = torch.zeros(a["b"], 1, a["tq"], a["tk"], device=device, dtype=dt)
        mask[..., a["valid"]:] = float("-inf")
    F = torch.nn.functional
    return (lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=bool(a["causal"]))), 1


if __name__ == "__main__":
    main()
