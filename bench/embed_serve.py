"""Embedding throughput through the HTTP servers: `wick serve --embedding-model` against
llama.cpp's `llama-server --embeddings` on the same MiniLM (llama.cpp reads the GGUF that its
convert_hf_to_gguf.py writes from the same folder, f32), both up at once, the same load
alternating between them (OpenAI's /v1/embeddings, which both speak).

Usage:
  python3 bench/embed_serve.py --wick build/tools/wick/wick --minilm DIR \
      [--llama-server PATH --gguf FILE] [--device cpu|cuda:0] [--threads N] \
      [--clients 8] [--batch 32] [--seconds 10] [--rounds 3]

Each client posts `--batch` sentences of ~32 tokens per request (bench/minilm_h200.py's), as
fast as answers come, for `--seconds`; the table gives each server's median texts/s over the
rounds, and the ratio. The first embeddings of both are compared (cosine) before timing.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from minilm_h200 import sentences  # noqa: E402


def post(port, body, timeout=600):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def wait_up(port, proc, name, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{name} exited with {proc.returncode}")
        try:
            post(port, {"input": ["warm up"]}, timeout=5)
            return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.5)
    sys.exit(f"{name} did not come up")


def load(port, texts, clients, batch, seconds):
    """texts/s and tokens/s under `clients` closed-loop clients."""
    done = {"texts": 0, "tokens": 0, "errors": 0}
    lock = threading.Lock()
    stop_at = time.time() + seconds

    def client(k):
        i = k * batch
        while time.time() < stop_at:
            chunk = [texts[(i + j) % len(texts)] for j in range(batch)]
            i += clients * batch
            try:
                r = post(port, {"input": chunk})
                with lock:
                    done["texts"] += len(r["data"])
                    done["tokens"] += r.get("usage", {}).get("prompt_tokens", 0)
            except Exception:  # noqa: BLE001 - counted
                with lock:
                    done["errors"] += 1

    t0 = time.time()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - t0
    return done["texts"] / took, done["tokens"] / took, done["errors"]


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wick", required=True)
    ap.add_argument("--minilm", required=True, help="the sentence-transformers folder of all-MiniLM-L6-v2")
    ap.add_argument("--llama-server")
    ap.add_argument("--gguf", help="the same model as llama.cpp's GGUF (convert_hf_to_gguf.py --outtype f32)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--wick-args", default="", help="more `wick serve` options, e.g. --embedding-batch-tokens 4096")
    ap.add_argument("--tiny-model", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data",
                                                         "llama_quant", "q4_k_m.gguf"))
    args = ap.parse_args()

    servers = {}
    wick_cmd = [args.wick, "serve", "--model", args.tiny_model, "--embedding-model", args.minilm, "--port", "18181",
                "--device", args.device, "--parallel", "1", "--max-queue", str(4 * args.clients), *args.wick_args.split()]
    env = dict(os.environ, WICK_NUM_THREADS=str(args.threads))
    servers["wick"] = (18181, subprocess.Popen(wick_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
    if args.llama_server:
        gpu = [] if args.device == "cpu" else ["-ngl", "99"]
        llama_cmd = [args.llama_server, "-m", args.gguf, "--embeddings", "--pooling", "mean", "--port", "18182",
                     "-t", str(args.threads), "-np", str(args.clients), "-c", str(512 * args.clients),
                     "-b", "8192", "-ub", "8192", *gpu]
        servers["llama.cpp"] = (18182, subprocess.Popen(llama_cmd, stdout=subprocess.DEVNULL,
                                                         stderr=subprocess.DEVNULL))
    try:
        for name, (port, proc) in servers.items():
            wait_up(port, proc, name)
        texts = sentences(4096)
        first = {name: post(port, {"input": texts[:4]})["data"] for name, (port, _) in servers.items()}
        if "llama.cpp" in first:
            cos = min(cosine(a["embedding"], b["embedding"]) for a, b in zip(first["wick"], first["llama.cpp"]))
            print(f"lowest cosine between the two servers' embeddings of 4 sentences: {cos:.6f}")
        rates = {name: [] for name in servers}
        for r in range(args.rounds):
            for name, (port, _) in servers.items():
                rate, tokens, errors = load(port, texts, args.clients, args.batch, args.seconds)
                rates[name].append(rate)
                print(f"round {r + 1} {name}: {rate:.0f} texts/s, {tokens:.0f} tokens/s, {errors} errors", flush=True)
        print(f"\n{args.clients} clients x {args.batch} texts per request, {args.device}, {args.threads} threads")
        print("| server | texts/s (median of %d) |" % args.rounds)
        print("|---|---:|")
        for name, v in rates.items():
            print(f"| {name} | {statistics.median(v):.0f} |")
        if "llama.cpp" in rates:
            print(f"wick / llama.cpp: {statistics.median(rates['wick']) / statistics.median(rates['llama.cpp']):.2f}x")
    finally:
        for _, proc in servers.values():
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
