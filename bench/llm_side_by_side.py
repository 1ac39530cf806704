#!/usr/bin/env python3
"""wick against llama.cpp on the same GGUF files, in one run: prompt processing (pp) and
token generation (tg) tokens/s from `wick lm-bench` and llama.cpp's `llama-bench`, the ratio,
and the fraction of the weight-read limit a decode step reaches (file bytes / copy bandwidth).

    python3 bench/llm_side_by_side.py --wick build/tools/wick/wick --llama-bin LLAMA_CPP/build/bin \
        --device cuda --files a.gguf,b.gguf [--pp 512] [--tg 128] [--reps 3] [--rounds 2]

llama.cpp is not part of wick: build it from the llama-cpp-python sdist (docs/perf.md says how)
and pass its bin folder. Each round runs every file on both sides (alternating, so drift in clocks
or load hits both); the best round's mean is reported per side. On CUDA llama.cpp offloads every
layer (-ngl 99); on the CPU both sides use --threads threads (wick: WICK_NUM_THREADS).
--wick-args passes extra options to lm-bench (e.g. "--dtype f16"). A file given as A.gguf=DIR is
read by llama.cpp from A.gguf and by wick from DIR (a Hugging Face folder of the same weights,
e.g. GPT-2, which wick loads from folders).
Prints a markdown table; --json FILE also writes the rows.
"""
import argparse
import json
import os
import subprocess
import sys


def run_json(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.stderr.write(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}\n")
        return None
    out = p.stdout
    return json.loads(out[out.index("[") if out.lstrip().startswith("[") else out.index("{"):])


def llama_bench(a, f):
    cmd = [os.path.join(a.llama_bin, "llama-bench"), "-m", f, "-p", str(a.pp), "-n", str(a.tg), "-r", str(a.reps),
           "-o", "json"]
    cmd += ["-ngl", "99"] if a.device.startswith("cuda") else ["-ngl", "0", "-t", str(a.threads)]
    rows = run_json(cmd)
    if rows is None:
        return {}
    out = {}
    for r in rows:
        test = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
        out[test] = (r["avg_ts"], r["stddev_ts"])
    return out


def wick_bench(a, f):
    cmd = [a.wick, "lm-bench", "-m", f, "-p", str(a.pp), "-n", str(a.tg), "-r", str(a.reps), "--device", a.device,
           "--json"] + a.wick_args.split()
    env = dict(os.environ, WICK_NUM_THREADS=str(a.threads))
    j = run_json(cmd, env)
    if j is None:
        return {}
    return {t["test"]: (t["tokens_per_s"], t["stdev"]) for t in j["tests"]}


def best(rounds, test):
    vals = [r[test] for r in rounds if test in r]
    return max(vals) if vals else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wick", required=True)
    ap.add_argument("--llama-bin", required=True)
    ap.add_argument("--files", required=True, help="comma-separated GGUF files (or folders: wick only)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--tg", type=int, default=128)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--bandwidth", type=float, default=4.2e12, help="copy bandwidth, bytes/s (H200: 4.2e12)")
    ap.add_argument("--wick-args", default="")
    ap.add_argument("--json")
    a = ap.parse_args()
    files = a.files.split(",")
    results = {f: {"llama": [], "wick": []} for f in files}
    for _ in range(a.rounds):
        for f in files:
            peer, ours = f.split("=") if "=" in f else (f, f)
            results[f]["llama"].append(llama_bench(a, peer))
            results[f]["wick"].append(wick_bench(a, ours))
    rows = []
    print(f"| file | test | llama.cpp t/s | wick t/s | wick / llama.cpp | wick % of weight-read limit |")
    print("|---|---|---:|---:|---:|---:|")
    for f in files:
        size = os.path.getsize(f.split("=")[0])
        for test in (f"pp{a.pp}", f"tg{a.tg}"):
            lb, wb = best(results[f]["llama"], test), best(results[f]["wick"], test)
            limit = a.bandwidth / size
            ratio = wb[0] / lb[0] if lb and wb else None
            frac = wb[0] / limit if wb and test.startswith("tg") else None
            rows.append(dict(file=os.path.basename(f), test=test, llama=lb, wick=wb, ratio=ratio, limit=limit,
                             fraction=frac, bytes=size))
            fmt = lambda v: f"{v[0]:.1f} ± {v[1]:.1f}" if v else "—"
            print(f"| {os.path.basename(f)} | {test} | {fmt(lb)} | {fmt(wb)} | "
                  f"{f'{ratio:.2f}x' if ratio else '—'} | {f'{100 * frac:.0f}% of {limit:.0f}' if frac else ''} |")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
