"""64 concurrent streaming clients with different prompts and lengths, while others hang up
mid-stream: each gets exactly what it gets alone (greedy), no request is lost, and the
cache of the ones that left is freed (/metrics)."""
import http.client
import json
import threading

from serve_util import Checks, Server, generate, sse_events

N = 64


def request(i):
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]
    prompt = f"Story {i}: " + " ".join(words[: 1 + i % len(words)]) * (1 + i % 3)
    return {"prompt": prompt, "max_tokens": 8 + (i * 13) % 57, "temperature": 0}


def stream(port, body, hang_up_after=None):
    """The text of a streamed completion (None when hung up on purpose)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", "/v1/completions", json.dumps({**body, "stream": True}), {"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200, (r.status, r.read())
    if hang_up_after is not None:
        r.read1(hang_up_after)  # a few bytes of the stream, then gone
        conn.sock.close()
        return None
    events = sse_events(r.read())
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")
    conn.close()
    return "".join(c["choices"][0]["text"] for c in chunks)


def test_concurrent_streams(srv):
    # Alone: one request at a time (and the first few as `wick generate` prints them).
    alone = [srv.post("/v1/completions", request(i))[1]["choices"][0]["text"] for i in range(N)]
    for i in range(4):
        b = request(i)
        assert alone[i] == generate("--prompt", b["prompt"], "--max-tokens", str(b["max_tokens"]), "--temperature", "0")
    got, errors = [None] * N, []

    def client(i):
        try:
            got[i] = stream(srv.port, request(i))
        except Exception as e:  # noqa: BLE001 - collected and reported below
            errors.append((i, repr(e)))

    def leaver(i):
        try:
            # ignore_eos: a leaver whose text ended early would finish before it hangs up.
            stream(srv.port, {"prompt": f"Leaving {i}", "max_tokens": 400, "temperature": 0, "ignore_eos": True},
                   hang_up_after=300)
        except Exception as e:  # noqa: BLE001
            errors.append((f"leaver {i}", repr(e)))

    before = srv.metrics()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(N)]
    threads += [threading.Thread(target=leaver, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    wrong = [i for i in range(N) if got[i] != alone[i]]
    assert not wrong, [(i, got[i], alone[i]) for i in wrong[:3]]
    assert srv.wait_metric("wick_running", 0) == 0
    assert srv.wait_metric("wick_kv_used_positions", 0) == 0
    # A request is counted once its response is written, which may be just after the client
    # has read its end: wait for the counts.
    gone = before["wick_client_disconnects_total"] + 8
    seen = srv.wait_metric("wick_client_disconnects_total", gone)
    assert seen == gone, (seen, gone, srv.metrics())
    ok = 'wick_http_requests_total{endpoint="/v1/completions",status="200"}'
    assert srv.wait_metric(ok, before[ok] + N + 8) == before[ok] + N + 8
    assert srv.metrics()["wick_engine_rejected_total"] == before.get("wick_engine_rejected_total", 0)


def main():
    checks = Checks()
    # 48 slots: most clients decode in one batch, the rest wait in the queue and join later.
    with Server("--parallel", "48", "--max-queue", "128", "--ctx-size", "512") as srv:
        checks.run(test_concurrent_streams, srv)
    checks.finish()


if __name__ == "__main__":
    main()
