"""The HTTP layer's cost per request, several servers side by side on loopback: latency of
sequential requests (one keep-alive connection, or a new connection each) and the rate of
16 concurrent keep-alive clients, for GET /health and for a one-token completion of a tiny
model (what the server adds around the model's work).

Usage: python3 bench/http_overhead.py --server NAME=http://127.0.0.1:PORT [--server ...] [--rounds 3]
Start the servers first, e.g. `wick serve --model tests/data/llama_quant/q4_k_m.gguf --port 8080`
and `llama-server -m tests/data/llama_quant/q4_k_m.gguf --port 8081`. Rows alternate between
the servers round by round; each cell is the median over the rounds.
"""
import argparse
import http.client
import json
import statistics
import threading
import time
from urllib.parse import urlparse

COMPLETION = json.dumps({"prompt": "Hello", "max_tokens": 1, "temperature": 0})


def one(conn, kind):
    if kind == "health":
        conn.request("GET", "/health")
    else:
        conn.request("POST", "/v1/completions", COMPLETION, {"Content-Type": "application/json"})
    r = conn.getresponse()
    r.read()
    assert r.status == 200, r.status


def sequential(host, port, kind, n, keep_alive):
    """Median and p99 latency in microseconds of n requests one after another."""
    times = []
    conn = http.client.HTTPConnection(host, port, timeout=30)
    for _ in range(n):
        if not keep_alive:
            conn = http.client.HTTPConnection(host, port, timeout=30)
        t0 = time.perf_counter()
        one(conn, kind)
        times.append(time.perf_counter() - t0)
        if not keep_alive:
            conn.close()
    conn.close()
    times.sort()
    return statistics.median(times) * 1e6, times[int(len(times) * 0.99) - 1] * 1e6


def concurrent(host, port, kind, clients, seconds):
    count = [0] * clients
    stop_at = time.time() + seconds

    def client(k):
        conn = http.client.HTTPConnection(host, port, timeout=30)
        while time.time() < stop_at:
            one(conn, kind)
            count[k] += 1
        conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(count) / (time.time() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", action="append", required=True, help="NAME=URL")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--seconds", type=float, default=3)
    args = ap.parse_args()
    servers = {}
    for s in args.server:
        name, url = s.split("=", 1)
        u = urlparse(url)
        servers[name] = (u.hostname, u.port)
    rows = [("health, keep-alive: median / p99 us", lambda h, p: sequential(h, p, "health", args.n, True)),
            ("health, new connection each: median / p99 us", lambda h, p: sequential(h, p, "health", args.n // 2, False)),
            ("1-token completion, keep-alive: median / p99 us",
             lambda h, p: sequential(h, p, "completion", args.n // 5, True)),
            ("health, 16 keep-alive clients: requests/s", lambda h, p: (concurrent(h, p, "health", 16, args.seconds),)),
            ("1-token completion, 16 clients: requests/s",
             lambda h, p: (concurrent(h, p, "completion", 16, args.seconds),))]
    results = {(r, n): [] for r, _ in rows for n in servers}
    for _ in range(args.rounds):
        for label, fn in rows:
            for name, (h, p) in servers.items():
                results[(label, name)].append(fn(h, p))
    print("| measure | " + " | ".join(servers) + " |")
    print("|---|" + "---:|" * len(servers))
    for label, _ in rows:
        cells = []
        for name in servers:
            v = results[(label, name)]
            cells.append(" / ".join(f"{statistics.median(x[i] for x in v):,.0f}" for i in range(len(v[0]))))
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
