"""A soak test of `wick serve`, bounded in time ($WICK_SOAK_SECONDS, default 60): random mixed
requests (completions and chat, streamed or not, random lengths and sampling, bad requests,
embeddings, /metrics) from several clients, with random hang-ups mid-stream and mid-embedding. Passes with 0
failed requests, the server alive throughout, every slot and cache position free at the end,
and its resident memory's floor over the end of the run within 5% of its peak during the warm-up."""
import http.client
import json
import os
import random
import threading
import time

from serve_util import Checks, Server, http_request_bytes, raw_socket, sse_events

CLIENTS = 8
WORDS = "the of and to in is was for on that with as by at from it his an were are which".split()


def one_request(port, rng, stats):
    kind = rng.random()
    body = {"max_tokens": rng.randint(1, 48), "temperature": rng.choice([0, 0.7, 1.0]), "seed": rng.randint(0, 99)}
    if rng.random() < 0.3:
        body.update(top_k=rng.randint(1, 50), top_p=rng.uniform(0.5, 1), presence_penalty=rng.uniform(-1, 1))
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40)))
    if kind < 0.40:
        path, body["prompt"] = "/v1/completions", text
    elif kind < 0.75:
        path, body["messages"] = "/v1/chat/completions", [{"role": "user", "content": text}]
    elif kind < 0.85:
        # Embeddings of 1-16 texts, now and then abandoned mid-way (the engine cancels them).
        texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 120))) for _ in range(rng.randint(1, 16))]
        if rng.random() < 0.2:
            s = raw_socket(port, timeout=60)
            s.sendall(http_request_bytes("/v1/embeddings", {"input": texts}))
            time.sleep(rng.uniform(0, 0.05))
            s.close()
            stats["hung_up"] += 1
            return
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("POST", "/v1/embeddings", json.dumps({"input": texts}), {"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        assert r.status == 200, (r.status, data[:300])
        assert len(json.loads(data)["data"]) == len(texts)
        conn.close()
        stats["embeddings"] += 1
        return
    elif kind < 0.92:
        # A bad request: must be a 400, not a failure.
        path, body = "/v1/completions", rng.choice([{"prompt": 3}, {"prompt": "x", "max_tokens": -1},
                                                    {"prompt": "x", "temperature": "hot"}])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 400 and "error" in json.loads(r.read())
        conn.close()
        stats["bad"] += 1
        return
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", rng.choice(["/metrics", "/health", "/v1/models"]))
        assert conn.getresponse().status == 200
        conn.close()
        stats["other"] += 1
        return
    stream = rng.random() < 0.6
    body["stream"] = stream
    if stream and rng.random() < 0.3:  # hang up mid-stream
        s = raw_socket(port, timeout=60)
        s.sendall(http_request_bytes(path, body))
        s.recv(rng.randint(1, 2000))
        s.close()
        stats["hung_up"] += 1
        return
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    assert r.status == 200, (r.status, data[:300])
    if stream:
        events = sse_events(data)
        assert events[-1] == "[DONE]" and json.loads(events[-2])["choices"][0]["finish_reason"] in ("stop", "length")
    else:
        out = json.loads(data)
        assert out["usage"]["completion_tokens"] <= body["max_tokens"]
    conn.close()
    stats["ok"] += 1


def run_clients(srv, seconds, seed):
    stats = {"ok": 0, "bad": 0, "other": 0, "hung_up": 0, "embeddings": 0}
    failures = []
    stop_at = time.time() + seconds

    def client(k):
        rng = random.Random(seed * 1000 + k)
        while time.time() < stop_at:
            try:
                one_request(srv.port, rng, stats)
            except Exception as e:  # noqa: BLE001 - every failure is reported
                failures.append(repr(e))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return stats, failures


def test_soak(srv):
    total = float(os.environ.get("WICK_SOAK_SECONDS", "60"))
    warm = min(15.0, total / 4)
    # The resident size under load swings with what the allocator holds at the moment (a
    # 60 s run here ended 9.5% below its warm-up peak, another in CI 5.0% above it; no
    # trend). So the baseline is its highest value over the second half of the warm-up and
    # the end is its lowest over the last quarter of the run (and once idle): a leak raises
    # that floor, a swing does not.
    def sampled(start, end, into):
        def sample():
            time.sleep(max(0.0, start - time.time()))
            while time.time() < end:
                into.append(srv.rss_kib())
                time.sleep(0.25)
        t = threading.Thread(target=sample)
        t.start()
        return t

    t0, warm_samples, end_samples = time.time(), [], []
    sampler = sampled(t0 + warm / 2, t0 + warm, warm_samples)
    stats, failures = run_clients(srv, warm, seed=1)
    sampler.join()
    assert not failures, failures[:5]
    assert srv.wait_metric("wick_running", 0) == 0
    rss0 = max(warm_samples + [srv.rss_kib()])
    t1 = time.time()
    sampler = sampled(t1 + 0.75 * (total - warm), t1 + total - warm, end_samples)
    stats, failures = run_clients(srv, total - warm, seed=2)
    sampler.join()
    assert not failures, failures[:5]
    assert srv.proc.poll() is None, "the server died"
    assert srv.wait_metric("wick_running", 0) == 0 and srv.wait_metric("wick_queue_length", 0) == 0
    assert srv.wait_metric("wick_kv_used_positions", 0) == 0
    rss1 = min(end_samples + [srv.rss_kib()])
    print(f"      {stats}; RSS peak over the warm-up {rss0} KiB, floor over the end {rss1} KiB ({100 * (rss1 - rss0) / rss0:+.1f}%)")
    assert stats["ok"] > 50 and stats["hung_up"] > 5 and stats["embeddings"] > 5
    assert srv.wait_metric("wick_embedding_active", 0) == 0
    if os.environ.get("WICK_SANITIZED"):
        # ASan's quarantine holds freed memory until it reaches its cap, so RSS grows by
        # design there; the server's exit status (checked on stop) carries LeakSanitizer's verdict.
        print("      sanitized build: RSS bound not asserted, leaks are LeakSanitizer's to report")
    else:
        assert rss1 <= rss0 * 1.05, (rss0, rss1)


def main():
    checks = Checks()
    with Server("--parallel", "8", "--max-queue", "64", "--ctx-size", "512", "--embedding-model", "minilm") as srv:
        checks.run(test_soak, srv)
    checks.finish()


if __name__ == "__main__":
    main()
