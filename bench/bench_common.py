"""Shared helpers of compare_cpu.py and compare_cuda.py: run `wick bench --json`, rebuild
each row's inputs from its `args` (the same sizes wick used) and time the same op in
PyTorch / numpy with the same rule as wick: warm-up, then the median of >= 20 runs."""
import json
import os
import statistics
import subprocess
import tempfile
import time

MIN_RUNS, MIN_TOTAL_S, MAX_RUNS, WARMUPS = 20, 0.2, 500, 2


def run_wick(binary, device, quick=False, filt=None, env=None):
    """Runs `wick bench` and returns its JSON rows (the table goes to our stdout too)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "wick.json")
        cmd = [binary, "bench", "--device", device, "--json", path]
        if quick:
            cmd.append("--quick")
        if filt:
            cmd += ["--filter", filt]
        subprocess.run(cmd, check=True, env=env)
        with open(path) as f:
            return json.load(f)


def median_seconds(fn, sync=lambda: None, quick=False):
    """Host clock around each run, synchronized before and after (as `wick bench` on the CPU)."""
    for _ in range(WARMUPS):
        fn()
    sync()
    times = []
    while len(times) < MIN_RUNS or (not quick and sum(times) < MIN_TOTAL_S and len(times) < MAX_RUNS):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def fmt_time(s):
    if s is None:
        return "n/a"
    if s < 1e-3:
        return f"{s * 1e6:.2f} µs"
    if s < 1:
        return f"{s * 1e3:.3f} ms"
    return f"{s:.3f} s"


def fmt_ratio(other, wick):
    return "n/a" if other is None or not wick else f"{other / wick:.2f}"


# ---- PyTorch versions of the rows ---------------------------------------------------------
def torch_dtype(torch, name):
    return {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "u8": torch.uint8}[name]


def torch_row(torch, row, device):
    """Returns (fn, ops_per_run) for the row, or None when it has no PyTorch version."""
    F = torch.nn.functional
    op, a = row["op"], row["args"]
    dt_name = row["dtype"].split("->")[0]
    dt = torch_dtype(torch, dt_name)

    def rn(*shape):
        return torch.randn(*shape, device=device).to(dt)

    def idx(shape, bound):
        return torch.randint(0, bound, shape, device=device, dtype=torch.int64)

    if op in ("copy", "add", "exp", "gelu", "affine", "where"):
        x, y = rn(a["n"]), rn(a["n"])
        cond = x > y
        return {
            "copy": lambda: x.clone(),
            "add": lambda: x + y,
            "exp": lambda: torch.exp(x),
            "gelu": lambda: F.gelu(x, approximate="tanh"),
            "affine": lambda: x * 1.5 + 0.25,  # eager PyTorch: two kernels
            "where": lambda: torch.where(cond, x, y),
        }[op], 1
    if op == "cast":
        x = torch.randn(a["n"], device=device)
        to = torch_dtype(torch, row["dtype"].split("->")[1])
        return (lambda: x.to(to)), 1
    if "rows" in a and "cols" in a and op not in ("gather",):
        r, c = a["rows"], a["cols"]
        m = rn(r, c)
        if op == "add_row_bcast":
            v = rn(c)
            return (lambda: m + v), 1
        if op in ("add_transposed", "transpose_copy"):
            b = rn(c, r)
            return ((lambda: m + b.t()) if op == "add_transposed" else (lambda: b.t().contiguous())), 1
        if op == "layer_norm":
            w, b = rn(c), rn(c)
            return (lambda: F.layer_norm(m, (c,), w, b)), 1
        return {
            "sum_last": lambda: m.sum(-1),
            "sum_first": lambda: m.sum(0),
            "sum_all": lambda: m.sum(),
            "max_last": lambda: m.amax(-1),
            "max_first": lambda: m.amax(0),
            "argmax_last": lambda: m.argmax(-1),
            "argmax_first": lambda: m.argmax(0),
            "softmax": lambda: torch.softmax(m, -1),
            "cumsum_last": lambda: m.cumsum(-1),
            "argsort_last": lambda: torch.sort(m, dim=-1, stable=True).indices,
            "topk50_last": lambda: m.topk(50, -1),
        }[op], 1
    if op == "index_select":
        table, ids = rn(a["vocab"], a["dim"]), idx((a["count"],), a["vocab"])
        return (lambda: torch.index_select(table, 0, ids)), 1
    if op == "gather":
        src, ids = rn(a["rows"], a["cols"]), idx((a["rows"], a["k"]), a["cols"])
        return (lambda: torch.gather(src, 1, ids)), 1
    if op in ("matmul", "matmul_nt"):
        x = rn(a["m"], a["k"])
        y = rn(a["n"], a["k"]).t() if op == "matmul_nt" else rn(a["k"], a["n"])
        return (lambda: x @ y), 1
    if op == "bmm":
        x, y = rn(a["batch"], a["m"], a["k"]), rn(a["batch"], a["k"], a["n"])
        return (lambda: torch.bmm(x, y)), 1
    if op in ("conv2d", "conv2d_tf32"):
        # conv2d: exact f32 on both sides (cuDNN's TF32 off, as wick's default);
        # conv2d_tf32: PyTorch's default (cudnn.allow_tf32), wick with allow_tf32 on.
        x, w = rn(a["n"], a["c"], a["h"], a["w"]), rn(a["cout"], a["c"], a["kh"], a["kh"])
        tf32 = op == "conv2d_tf32"

        def conv():
            before = torch.backends.cudnn.allow_tf32
            torch.backends.cudnn.allow_tf32 = tf32
            F.conv2d(x, w, padding=a["pad"])
            torch.backends.cudnn.allow_tf32 = before

        return conv, 1
    if op == "max_pool2d":
        x = rn(a["n"], a["c"], a["h"], a["w"])
        return (lambda: F.max_pool2d(x, a["k"])), 1
    if op == "upsample_nearest2d":
        x = rn(a["n"], a["c"], a["h"], a["w"])
        return (lambda: F.interpolate(x, scale_factor=a["scale"], mode="nearest")), 1
    if op == "tiny_add":
        x, y, ops = rn(16), rn(16), a["ops"]

        def tiny():
            for _ in range(ops):
                x + y

        return tiny, ops
    if op == "graph_tiny_add":  # the same chain of adds captured with torch.cuda.graph
        x, y, ops = rn(16), rn(16), a["ops"]
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm-up on a side stream, as PyTorch's docs require
            z = x
            for _ in range(3):
                z = z + y
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            z = x
            for _ in range(ops):
                z = z + y
        return g.replay, ops
    if op.startswith("alloc_"):
        sizes, s = [], 12345  # the same log-uniform 4 KB .. 64 MB sequence as wick
        for _ in range(a["count"]):
            s = (s * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            sizes.append(int(2.0 ** (12.0 + 14.0 * (s >> 11) / float(1 << 53))))

        def alloc():
            ring = [None] * 16
            for i, n in enumerate(sizes):
                ring[i % 16] = torch.empty(n, dtype=torch.uint8, device=device)

        return alloc, len(sizes)
    return None
