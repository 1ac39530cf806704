#!/usr/bin/env python3
"""What the prefix cache saves: time to the first token of a prompt whose first P tokens an
earlier request already sent (a shared system prompt, the earlier turns of a chat), against
the same prompt cold, on an OpenAI-compatible server (`wick serve`; llama.cpp's
`llama-server` too, whose slots keep their last prompt).

    python3 bench/prefix_cache.py --server wick=http://127.0.0.1:8080 [--server llama=...] \\
        [--prefix-tokens 2048] [--suffix-tokens 16] [--rounds 5] [--between 2]

Each round draws a new random prefix (token ids, so its length is exact whatever the
tokenizer) and sends, one request at a time, max_tokens 1 each:
  cold:  prefix + suffix A          (nothing of it seen before)
  other: `--between` unrelated prompts of the same length (they take the slots' caches)
  hit:   prefix + suffix B          (the prefix was seen --between + 1 requests earlier)
Latency is the whole request (a one-token completion: prefill plus one step). The table gives
each server's medians over the rounds, the cold / hit ratio and the cached tokens the hit
request reports (`usage.prompt_tokens_details.cached_tokens`). Plain Python, no packages.
"""
import argparse
import json
import random
import statistics
import time
import urllib.error
import urllib.request


def complete(url, model, prompt):
    """(seconds, cached tokens) of one non-streamed one-token completion."""
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": 1, "temperature": 0}).encode()
    req = urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            answer = json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise SystemExit(f"{url}: {e.code} {e.read().decode(errors='replace')}")
    seconds = time.perf_counter() - t0
    usage = answer.get("usage", {})
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    return seconds, cached


def model_of(url):
    with urllib.request.urlopen(url + "/v1/models", timeout=30) as r:
        return json.loads(r.read())["data"][0]["id"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", action="append", required=True, help="NAME=URL (repeatable)")
    ap.add_argument("--prefix-tokens", type=int, default=2048)
    ap.add_argument("--suffix-tokens", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--between", type=int, default=2, help="unrelated prompts between cold and hit")
    ap.add_argument("--vocab", type=int, default=32000, help="token ids are drawn from [100, vocab)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    servers = [s.split("=", 1) for s in args.server]
    models = {name: model_of(url) for name, url in servers}
    rng = random.Random(args.seed)
    draw = lambda n: [rng.randrange(100, args.vocab) for _ in range(n)]  # noqa: E731
    times = {name: {"cold": [], "hit": []} for name, _ in servers}
    cached = {name: [] for name, _ in servers}
    for name, url in servers:  # warm-up: first requests pay one-time costs
        complete(url, models[name], draw(64))
    for _ in range(args.rounds):
        prefix = draw(args.prefix_tokens)
        cold = prefix + draw(args.suffix_tokens)
        hit = prefix + draw(args.suffix_tokens)
        others = [draw(args.prefix_tokens + args.suffix_tokens) for _ in range(args.between)]
        for name, url in servers:  # the servers take turns within a round
            t, _ = complete(url, models[name], cold)
            times[name]["cold"].append(t)
            for o in others:
                complete(url, models[name], o)
            t, c = complete(url, models[name], hit)
            times[name]["hit"].append(t)
            cached[name].append(c)
    print(f"prefix {args.prefix_tokens} + suffix {args.suffix_tokens} tokens, {args.between} unrelated prompts "
          f"between, {args.rounds} rounds, medians\n")
    print("| server | cold ms | hit ms | cold / hit | cached tokens (hit) |")
    print("|---|---:|---:|---:|---:|")
    for name, _ in servers:
        cold_ms = statistics.median(times[name]["cold"]) * 1e3
        hit_ms = statistics.median(times[name]["hit"]) * 1e3
        print(f"| {name} | {cold_ms:.1f} | {hit_ms:.1f} | {cold_ms / hit_ms:.2f}x | {statistics.median(cached[name]):.0f} |")


if __name__ == "__main__":
    main()
