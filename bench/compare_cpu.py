#!/usr/bin/env python3
"""Side-by-side CPU benchmark: `wick bench --device cpu` against numpy and PyTorch on the
same ops, shapes and thread count (median of >= 20 runs after warm-up each).

    python3 bench/compare_cpu.py build/tools/wick/wick [--threads N] [--quick] [--filter RE]
                                 [--repeat N] [--out F]

--repeat N alternates N passes of wick and of numpy/torch over the rows and reports each
side's median over the passes (and the load average before and after): on a machine shared
with other work, both sides then see the same conditions. Works under any interpreter: numpy and torch are imported if present, and a missing one
shows as "n/a" (/usr/bin/python3 on the dev machine has both)."""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("wick", help="path of the wick binary")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for wick, numpy's BLAS and torch")
    p.add_argument("--quick", action="store_true", help="the small --quick sizes")
    p.add_argument("--filter", help="passed to wick bench --filter")
    p.add_argument("--repeat", type=int, default=1, help="alternating passes of wick and numpy/torch (median of each)")
    p.add_argument("--out", help="also write the markdown table to this file")
    args = p.parse_args()

    # Thread counts must be set before numpy/torch load their BLAS.
    t = str(args.threads)
    for var in ("WICK_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = t
    import bench_common as bc

    try:
        import numpy as np
    except ImportError:
        np = None
    try:
        import torch

        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None

    load_before = os.getloadavg()
    passes = []  # per pass: the wick rows, and numpy's and torch's seconds per row
    for _ in range(max(1, args.repeat)):
        rows = bc.run_wick(args.wick, "cpu", args.quick, args.filter, env=dict(os.environ))
        passes.append((rows, [numpy_seconds(np, row, args.quick) for row in rows],
                       [torch_seconds(torch, row, args.quick) for row in rows]))
    load_after = os.getloadavg()
    rows = passes[0][0]
    lines = [
        f"threads: {args.threads}; numpy {np.__version__ if np else 'missing'}; "
        f"torch {torch.__version__ if torch else 'missing'}; passes: {len(passes)}; "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after",
        "",
        "| op | shape | dtype | wick | numpy | torch | best(numpy,torch)/wick |",
        "|---|---|---|---|---|---|---|",
    ]
    matmul_note = None
    for i, row in enumerate(rows):
        w = median_of([p[0][i]["seconds"] for p in passes])
        np_s = median_of([p[1][i] for p in passes])
        torch_s = median_of([p[2][i] for p in passes])
        others = [s for s in (np_s, torch_s) if s is not None]
        best = min(others) if others else None
        lines.append(
            f"| {row['op']} | {row['shape']} | {row['dtype']} | {bc.fmt_time(w)} | {bc.fmt_time(np_s)} "
            f"| {bc.fmt_time(torch_s)} | {bc.fmt_ratio(best, w)} |"
        )
        print(lines[-1], flush=True)
        if row["op"] == "matmul" and np_s is not None:
            gf = row["flops"] / 1e9
            matmul_note = (
                f"matmul {row['shape']} f32 vs numpy: wick {gf / w:.1f} GFLOP/s, numpy {gf / np_s:.1f} GFLOP/s "
                f"(numpy/wick time ratio {np_s / w:.2f}; above 1 = wick faster)"
            )
    lines += ["", "Ratio above 1 = wick faster. n/a = no such op in that library (numpy has no conv2d)."]
    if matmul_note:
        lines += ["", matmul_note]
    table = "\n".join(lines)
    print("\n" + table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def numpy_seconds(np, row, quick):
    import bench_common as bc  # loaded by main() after the thread counts are set

    fn = numpy_row(np, row) if np is not None else None
    return bc.median_seconds(fn, quick=quick) if fn is not None else None


def torch_seconds(torch, row, quick):
    import bench_common as bc

    made = bc.torch_row(torch, row, "cpu") if torch is not None else None
    if made is None:
        return None
    fn, ops = made
    with torch.inference_mode():
        return bc.median_seconds(fn, quick=quick) / ops


def numpy_row(np, row):
    """The numpy version of a row (each op as a numpy user would write it), or None."""
    op, a = row["op"], row["args"]
    rng = np.random.default_rng(0)

    def rn(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    if op in ("add", "exp", "gelu"):
        x, y = rn(a["n"]), rn(a["n"])
        c = np.float32(0.7978845608)
        return {
            "add": lambda: np.add(x, y),
            "exp": lambda: np.exp(x),
            "gelu": lambda: 0.5 * x * (1 + np.tanh(c * (x + np.float32(0.044715) * x * x * x))),
        }[op]
    if op in ("add_row_bcast", "transpose_copy", "sum_last", "softmax", "layer_norm"):
        r, cols = a["rows"], a["cols"]
        m = rn(r, cols)
        if op == "add_row_bcast":
            v = rn(cols)
            return lambda: m + v
        if op == "transpose_copy":
            b = rn(cols, r)
            return lambda: np.ascontiguousarray(b.T)
        if op == "sum_last":
            return lambda: m.sum(-1)
        if op == "softmax":

            def softmax():
                e = np.exp(m - m.max(-1, keepdims=True))
                return e / e.sum(-1, keepdims=True)

            return softmax
        w, b = rn(cols), rn(cols)

        def layer_norm():
            mu = m.mean(-1, keepdims=True)
            d = m - mu
            var = (d * d).mean(-1, keepdims=True)
            return d / np.sqrt(var + np.float32(1e-5)) * w + b

        return layer_norm
    if op == "index_select":
        table = rn(a["vocab"], a["dim"])
        ids = rng.integers(0, a["vocab"], a["count"])
        return lambda: np.take(table, ids, axis=0)
    if op == "matmul":
        x, y = rn(a["m"], a["k"]), rn(a["k"], a["n"])
        return lambda: x @ y
    return None


if __name__ == "__main__":
    main()
