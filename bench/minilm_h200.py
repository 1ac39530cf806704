"""all-MiniLM-L6-v2 throughput, wick against sentence-transformers, in one run.

Usage (GPU machine): python3 bench/minilm_h200.py --wick build/tools/wick/wick --model DIR [--device cuda]
Prints sentences/s for batches of 1 and 256 sentences of about 32 tokens each.
"""
import argparse
import re
import statistics
import subprocess
import tempfile
import time

WORDS = ("the quick brown fox jumps over a lazy dog while people in the city watch films about science "
         "music travel history and cooking on a rainy afternoon near the old harbour").split()


def sentences(n):
    out = []
    for i in range(n):
        words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(28)]
        out.append(" ".join(words).capitalize() + ".")
    return out


def torch_rate(model, texts, batch, device, repeats):
    import torch
    model.encode(texts[:batch], batch_size=batch, device=device)
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize() if device.startswith("cuda") else None
        t0 = time.perf_counter()
        for s in range(0, len(texts), batch):
            model.encode(texts[s:s + batch], batch_size=batch, device=device, convert_to_numpy=True)
        torch.cuda.synchronize() if device.startswith("cuda") else None
        times.append(time.perf_counter() - t0)
    return len(texts) / statistics.median(times)


def wick_rate(wick, model_dir, texts, batch, device, repeats):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(texts))
        path = f.name
    r = subprocess.run([wick, "embed", "--model", model_dir, "--device", device, "--file", path, "--batch", str(batch),
                        "--benchmark", str(repeats)], capture_output=True, text=True, check=True)
    return float(re.search(r"([0-9.]+) sentences/s", r.stderr).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wick", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(args.model, device=args.device)
    tok = model.tokenizer(sentences(4))["input_ids"]
    print("tokens per sentence:", [len(t) for t in tok])
    rows = []
    for batch, n, repeats in ((1, 64, 5), (256, 256, 10)):
        texts = sentences(n)
        st = torch_rate(model, texts, batch, args.device, repeats)
        wk = wick_rate(args.wick, args.model, texts, batch, args.device, repeats)
        rows.append((batch, wk, st))
    print("| batch | wick sentences/s | sentence-transformers sentences/s | ratio wick/st |")
    print("| ---: | ---: | ---: | ---: |")
    for batch, wk, st in rows:
        print(f"| {batch} | {wk:.0f} | {st:.0f} | {wk / st:.2f}x |")


if __name__ == "__main__":
    main()
