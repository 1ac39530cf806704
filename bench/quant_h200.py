#!/usr/bin/env python3
"""Quantized matrix-vector rows on the GPU: `wick bench --device cuda --filter qmatvec`
(quant_matmul with one activation row; GB/s = packed weight bytes / time) against the
device-to-device copy bandwidth and PyTorch bf16 `x @ W.T` for the same (N, K), timed by
CUDA events (warm-up, median of >= 20 runs). Runs in well under 2 minutes. Rows ending in
_graph replay the products from a CUDA graph on both sides (the device time of products
back to back, without the host cost of issuing each one).

    python3 bench/quant_h200.py build/tools/wick/wick [--device cuda:0] [--out FILE] [--quick]

Both sides are timed by CUDA events (wick bench through wick::DeviceEvent), and both
sides cycle through copies of W totalling > 200 MB, so the weight is never L2-resident.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common as bc  # noqa: E402
from compare_cuda import ceilings, event_median  # noqa: E402


# Like wick's qmatvec rows on a GPU: products cycle through weight copies totalling more
# than this, so W comes from HBM, not from the L2 cache (50 MB on an H200).
COLD_BYTES = 200e6


def torch_bf16_matvec(torch, n, k, quick, graph=False):
    """Seconds per bf16 x @ W.T, each product on a different copy of W (L2-cold); with
    graph, the products recorded once into a CUDA graph and replayed (as wick's _graph rows)."""
    x = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
    copies = max(1, math.ceil(COLD_BYTES / (n * k * 2)))
    ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]

    def products():
        for w in ws:
            x @ w.T

    run = products
    if graph:
        side = torch.cuda.Stream()  # warm-up on a side stream, as torch.cuda.graph asks
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            products()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            products()
        run = g.replay
    t = event_median(torch, run, quick) / copies
    del ws
    torch.cuda.empty_cache()
    return t


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("wick", help="path of the wick binary")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--quick", action="store_true", help="the small --quick sizes")
    p.add_argument("--out", help="also write the markdown table to this file")
    args = p.parse_args()
    import torch

    rows = bc.run_wick(args.wick, args.device, args.quick, "qmatvec")
    torch.cuda.set_device(torch.device(args.device))
    copy_gbps = ceilings(torch, args.quick)[0]  # the same copy ceiling as compare_cuda.py
    torch_times = {}
    lines = [
        f"Copy bandwidth (d2d, read + write): {copy_gbps:.0f} GB/s; device {torch.cuda.get_device_name()}",
        "",
        "| row | wick | wick GB/s | % of copy BW | torch bf16 x @ W.T | torch / wick |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        n, k = r["args"]["n"], r["args"]["k"]
        graph = r["op"].endswith("_graph")
        if (n, k, graph) not in torch_times:
            torch_times[(n, k, graph)] = torch_bf16_matvec(torch, n, k, args.quick, graph)
        t = torch_times[(n, k, graph)]
        gbps = r["bytes"] / r["seconds"] / 1e9
        lines.append(
            f"| {r['op']}_{r['shape']} | {bc.fmt_time(r['seconds'])} | {gbps:.0f} | {100 * gbps / copy_gbps:.0f}% "
            f"| {bc.fmt_time(t)} | {bc.fmt_ratio(t, r['seconds'])} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
