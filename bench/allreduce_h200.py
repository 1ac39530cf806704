#!/usr/bin/env python3
"""all_reduce bandwidth: wick against torch.distributed (NCCL), same sizes, same GPUs.

Runs torch.distributed with one process per GPU (torch.multiprocessing.spawn), all_reduce
sum of f32 tensors from 1 MiB to 1 GiB (x4 steps), the median of --reps repetitions of
--iters back-to-back calls, exactly as `wick allreduce-bench` times them; then runs (or
reads) wick's JSON and prints both side by side. busbw = bytes * 2(n-1)/n / time, as
nccl-tests. NVLink multicast stays off (NCCL_NVLS_ENABLE=0) in both.

The GPU machine's /usr/local/cuda has no libnccl: point wick at PyTorch's (the same NCCL),
  export LD_LIBRARY_PATH=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')/lib:$LD_LIBRARY_PATH
Small sizes measure per-call overhead (Python dispatch, c10d's stream/event bookkeeping)
as much as NCCL; from 64 MiB up both are NCCL's ring bandwidth.

  python3 bench/allreduce_h200.py --wick build/tools/wick/wick
  python3 bench/allreduce_h200.py --wick-json wick_allreduce.json --json torch.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["NCCL_NVLS_ENABLE"] = "0"  # before torch initializes NCCL, here and in the children

SIZES = [1 << 20 << (2 * k) for k in range(6)]  # 1 MiB .. 1 GiB


def worker(rank, world, port, reps, iters, out_path):
    import torch
    import torch.distributed as dist

    os.environ["NCCL_NVLS_ENABLE"] = "0"
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    results = []
    for nbytes in SIZES:
        x = torch.ones(nbytes // 4, dtype=torch.float32, device=f"cuda:{rank}")
        for _ in range(3):  # warm-up (connects)
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            dist.barrier()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(x)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) / iters)
        # A repetition takes as long as its slowest rank.
        t = torch.tensor(times, dtype=torch.float64, device=f"cuda:{rank}")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        med = statistics.median(t.tolist())
        algbw = nbytes / med / 1e9
        results.append({"bytes": nbytes, "time_us": med * 1e6, "algbw_gbs": algbw,
                        "busbw_gbs": algbw * 2 * (world - 1) / world})
        del x
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"library": "torch " + torch.__version__, "world_size": world,
                       "nccl": ".".join(map(str, torch.cuda.nccl.version())), "results": results}, f, indent=2)
    dist.destroy_process_group()


def run_torch(reps, iters):
    import torch
    import torch.multiprocessing as mp

    world = torch.cuda.device_count()
    if world < 1:
        sys.exit("allreduce_h200.py: no CUDA device")
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    mp.spawn(worker, args=(world, 29500 + os.getpid() % 1000, reps, iters, out), nprocs=world, join=True)
    with open(out) as f:
        return json.load(f)


def run_wick(binary, reps, iters):
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    subprocess.run([binary, "allreduce-bench", "--sizes", "1M..1G", "--reps", str(reps), "--iters", str(iters),
                    "--json", out], check=True, env=dict(os.environ, NCCL_NVLS_ENABLE="0"))
    with open(out) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wick", help="path of the wick binary to run (wick allreduce-bench)")
    ap.add_argument("--wick-json", help="read wick's results from this JSON instead of running it")
    ap.add_argument("--json", help="write both result sets to this file")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--iters", type=int, default=5)
    a = ap.parse_args()

    wick = None
    if a.wick_json:
        with open(a.wick_json) as f:
            wick = json.load(f)
    elif a.wick:
        wick = run_wick(a.wick, a.reps, a.iters)
    torch_res = run_torch(a.reps, a.iters)

    w_by = {r["bytes"]: r for r in (wick or {}).get("results", [])}
    print(f"all_reduce sum f32, {torch_res['world_size']} GPU(s), NCCL_NVLS_ENABLE=0, "
          f"median of {a.reps} x {a.iters}; {torch_res['library']} (NCCL {torch_res['nccl']})")
    print(f"{'size':>8} | {'torch us':>10} {'torch busbw':>12} | {'wick us':>10} {'wick busbw':>11} | {'wick/torch':>10}")
    for r in torch_res["results"]:
        size = f"{r['bytes'] >> 20} MiB"
        w = w_by.get(r["bytes"])
        if w:
            print(f"{size:>8} | {r['time_us']:10.1f} {r['busbw_gbs']:10.1f}GB/s | {w['time_us']:10.1f} "
                  f"{w['busbw_gbs']:9.1f}GB/s | {w['busbw_gbs'] / r['busbw_gbs']:10.2f}")
        else:
            print(f"{size:>8} | {r['time_us']:10.1f} {r['busbw_gbs']:10.1f}GB/s | {'-':>10} {'-':>11} | {'-':>10}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"torch": torch_res, "wick": wick}, f, indent=2)


if __name__ == "__main__":
    main()
