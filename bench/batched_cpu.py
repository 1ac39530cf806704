#!/usr/bin/env python3
"""Batched decoding on the CPU, wick against llama.cpp, side by side in one run:
`wick batched-bench` (forward_batch directly, or --mode engine) and llama.cpp's
`llama-batched-bench` on the same GGUF, alternating, several repetitions, one thread each
(the dev machine is shared: a second thread mostly measures the neighbours).

    python3 bench/batched_cpu.py --model /tmp/tiny-f16.gguf \\
        --llama-batched-bench /path/to/llama.cpp/build/bin/llama-batched-bench \\
        [--wick build/tools/wick/wick-bench] [-npp 256] [-ntg 256] [-npl 1,8,32] [--reps 3] [--mode batch]

Prints per npl the median prefill and decode rates (tok/s, as llama-batched-bench counts them:
npl*npp prompt tokens, npl*ntg generated tokens) of both and wick / llama.cpp ratios.
llama.cpp is not part of wick: build it yourself (`cmake --build build --target
llama-batched-bench`).
"""
import argparse
import json
import os
import re
import statistics
import subprocess


def run_wick(a, env):
    out = subprocess.run([a.wick, "batched-bench", "--model", a.model, "-npp", str(a.npp), "-ntg", str(a.ntg),
                          "-npl", a.npl, "--mode", a.mode, "--json"], check=True, env=env, stdout=subprocess.PIPE,
                         text=True).stdout
    return {r["npl"]: (r["s_pp"], r["s_tg"]) for r in json.loads(out)}


def run_llama(a, env):
    npls = [int(x) for x in a.npl.split(",")]
    ctx = max(npls) * (a.npp + a.ntg)
    out = subprocess.run([a.llama_batched_bench, "-m", a.model, "-c", str(ctx), "-b", "2048", "-ub", "512",
                          "-npp", str(a.npp), "-ntg", str(a.ntg), "-npl", a.npl, "-t", str(a.threads)],
                         check=True, env=env, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 10 and re.fullmatch(r"\d+", cells[0]):
            rows[int(cells[2])] = (float(cells[5]), float(cells[7]))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--llama-batched-bench", required=True)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--wick", default=os.path.join(here, "..", "build", "tools", "wick", "wick-bench"))
    ap.add_argument("-npp", type=int, default=256)
    ap.add_argument("-ntg", type=int, default=256)
    ap.add_argument("-npl", default="1,8,32")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mode", default="batch", choices=["batch", "engine"])
    a = ap.parse_args()
    env = dict(os.environ, WICK_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    wick, llama = [], []
    for _ in range(a.reps):  # alternating, so that both see the same machine load
        wick.append(run_wick(a, env))
        llama.append(run_llama(a, env))
    print(f"model {a.model}, npp {a.npp}, ntg {a.ntg}, {a.threads} thread(s), wick --mode {a.mode}, "
          f"median of {a.reps}")
    print("| npl | wick PP tok/s | llama.cpp PP tok/s | PP ratio | wick TG tok/s | llama.cpp TG tok/s | TG ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for npl in sorted(wick[0]):
        w_pp = statistics.median(r[npl][0] for r in wick)
        w_tg = statistics.median(r[npl][1] for r in wick)
        l_pp = statistics.median(r[npl][0] for r in llama)
        l_tg = statistics.median(r[npl][1] for r in llama)
        print(f"| {npl} | {w_pp:.0f} | {l_pp:.0f} | {w_pp / l_pp:.2f} | {w_tg:.1f} | {l_tg:.1f} | {w_tg / l_tg:.2f} |")


if __name__ == "__main__":
    main()
