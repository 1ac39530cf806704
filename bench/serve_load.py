#!/usr/bin/env python3
"""Load generator for OpenAI-compatible servers (`wick serve`, llama.cpp's `llama-server`):
streaming /v1/completions requests from N concurrent clients, reporting aggregate output
tokens/s and p50/p99 time to first token (TTFT) and inter-token latency (ITL).

    python3 bench/serve_load.py --server wick=http://127.0.0.1:8080 \\
        [--server llama=http://127.0.0.1:8081] [--concurrency 1,8,32,64] \\
        [--prompt-tokens 256] [--max-tokens 256] [--rounds 2] [--reps 3] [--motif-tokens M] [--out table.md]

Several servers are measured side by side: for each concurrency and repetition the servers
take turns, so a busy machine slows them alike; the table gives each one's medians over the
repetitions and the ratios to the first server. Prompts are random token ids (the same for
every server: both take `prompt` as a token array), so each is exactly --prompt-tokens long
whatever the tokenizer; `ignore_eos` (an extension both honour) makes every request produce
exactly --max-tokens tokens. Each client sends --rounds requests one after another.

TTFT: from sending a request to its first streamed token. ITL: the gaps between consecutive
token chunks of a request (both servers send one SSE chunk per token). Throughput: all
requests' completion tokens over the wall time of the run.
Needs aiohttp (pip install aiohttp).
"""
import argparse
import asyncio
import json
import random
import statistics
import time

import aiohttp


def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


EXTRA = {}  # --extra: fields merged into every request body (an output constraint, ...)


async def one_request(session, url, model, prompt, max_tokens):
    """(completion tokens, ttft seconds, [gaps]) of one streamed completion."""
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True, "ignore_eos": True,
            "stream_options": {"include_usage": True}, **EXTRA}
    if model:
        body["model"] = model
    t0 = time.perf_counter()
    times, usage = [], None
    async with session.post(url + "/v1/completions", json=body) as r:
        if r.status != 200:
            raise RuntimeError(f"{url}: HTTP {r.status}: {(await r.text())[:200]}")
        async for raw in r.content:
            line = raw.strip()
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            if chunk.get("choices") and chunk["choices"][0].get("text"):
                times.append(time.perf_counter())
    tokens = usage["completion_tokens"] if usage else len(times)
    if not times:
        return tokens, float("nan"), []
    return tokens, times[0] - t0, [b - a for a, b in zip(times, times[1:])]


async def run(url, model, concurrency, prompts, max_tokens, rounds):
    timeout = aiohttp.ClientTimeout(total=3600)
    # A connection per request: a server closing an idle keep-alive connection (llama-server
    # does) must not fail the request that happened to reuse it.
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        results = []

        async def client(k):
            for r in range(rounds):
                results.append(await one_request(session, url, model, prompts[(k * rounds + r) % len(prompts)],
                                                 max_tokens))

        t0 = time.perf_counter()
        await asyncio.gather(*(client(k) for k in range(concurrency)))
        wall = time.perf_counter() - t0
    tokens = sum(r[0] for r in results)
    ttft = [r[1] for r in results]
    gaps = [g for r in results for g in r[2]]
    return {"tok_s": tokens / wall, "ttft_p50": percentile(ttft, 50), "ttft_p99": percentile(ttft, 99),
            "itl_p50": percentile(gaps, 50), "itl_p99": percentile(gaps, 99), "tokens": tokens,
            "per_request": tokens / len(results)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", action="append", required=True, help="NAME=URL (repeat for side by side)")
    ap.add_argument("--model", default="", help="the model field to send (default: none)")
    ap.add_argument("--concurrency", default="1,8,32,64")
    ap.add_argument("--prompt-tokens", type=int, default=256)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=2, help="requests per client, one after another")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each row (medians reported)")
    ap.add_argument("--vocab", type=int, default=1000, help="prompt token ids are drawn from [10, VOCAB)")
    ap.add_argument("--motif-tokens", type=int, default=0,
                    help="each prompt repeats a random motif of this many tokens (text that repeats itself, where "
                         "--spec ngram drafts); 0: random throughout")
    ap.add_argument("--out", help="also write the table (markdown) here")
    ap.add_argument("--extra", default="{}", help="JSON object merged into every request body, e.g. "
                                                  "'{\"response_format\": {\"type\": \"json_object\"}}'")
    args = ap.parse_args()
    EXTRA.update(json.loads(args.extra))
    servers = [s.split("=", 1) for s in args.server]
    rng = random.Random(0)
    motif = args.motif_tokens or args.prompt_tokens
    prompts = []
    for _ in range(128):
        m = [rng.randrange(10, args.vocab) for _ in range(motif)]
        prompts.append([m[i % motif] for i in range(args.prompt_tokens)])
    levels = [int(c) for c in args.concurrency.split(",")]

    # Warm-up: one request per server (first-request costs are not what is measured).
    for name, url in servers:
        asyncio.run(run(url, args.model, 1, prompts, 8, 1))

    first = servers[0][0]
    rows = []
    for c in levels:
        samples = {name: [] for name, _ in servers}
        for rep in range(args.reps):
            order = servers if rep % 2 == 0 else servers[::-1]  # alternate who goes first
            for name, url in order:
                samples[name].append(asyncio.run(run(url, args.model, c, prompts, args.max_tokens, args.rounds)))
        med = {name: {k: statistics.median(s[k] for s in samples[name]) for k in samples[name][0]}
               for name in samples}
        rows.append((c, med))
        for name, _ in servers:
            m = med[name]
            print(f"c={c:3d} {name:>8}: {m['tok_s']:9.1f} tok/s  TTFT p50 {m['ttft_p50'] * 1e3:8.1f} ms  "
                  f"p99 {m['ttft_p99'] * 1e3:8.1f} ms  ITL p50 {m['itl_p50'] * 1e3:7.2f} ms  "
                  f"p99 {m['itl_p99'] * 1e3:7.2f} ms  {m['per_request']:.0f} tokens/request", flush=True)

    head = (f"| streams | server | output tok/s | {first} tok/s ÷ this | TTFT p50 (ms) | TTFT p99 (ms) | ITL p50 (ms) "
            "| ITL p99 (ms) | tokens / request |")
    shape = f" (a {args.motif_tokens}-token motif repeated)" if args.motif_tokens else ""
    lines = [f"prompt {args.prompt_tokens} tokens{shape}, output {args.max_tokens} tokens, {args.rounds} requests per "
             f"stream, medians of {args.reps}", "", head, "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for c, med in rows:
        for name, _ in servers:
            m = med[name]
            ratio = f"{med[first]['tok_s'] / m['tok_s']:.2f}"
            lines.append(f"| {c} | {name} | {m['tok_s']:.1f} | {ratio} | {m['ttft_p50'] * 1e3:.1f} | "
                         f"{m['ttft_p99'] * 1e3:.1f} | {m['itl_p50'] * 1e3:.2f} | {m['itl_p99'] * 1e3:.2f} | "
                         f"{m['per_request']:.0f} |")
    table = "\n".join(lines)
    print("\n" + table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
