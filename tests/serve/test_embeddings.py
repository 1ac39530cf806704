"""/v1/embeddings through the embedding engine: a client that leaves stops its work within a
forward, a small request is not kept waiting behind a large one, and a request's tokens are
bounded (400 beyond). The embeddings themselves are checked against `wick embed` in
test_openai_client.py and against sentence-transformers in tests/test_minilm.cpp.

Usage: python3 tests/serve/test_embeddings.py PATH/TO/wick
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_util import Checks, Server, http_request_bytes, raw_socket  # noqa: E402

# Time bounds are this many times longer in the sanitizer builds (forwards run 3-5x slower).
SLACK = 4 if os.environ.get("WICK_SANITIZED") else 1
# 256 tokens each (MiniLM truncates there): 200 of them are 51,200 tokens, several seconds of
# forwards on a CPU.
LONG = "the quick brown fox jumps over the lazy dog " * 40


def wait_for_work(srv, timeout=30):
    """Waits until the embedding engine has run a forward of the request just sent."""
    before = srv.metrics().get("wick_embedding_forwards_total", 0)
    deadline = time.time() + timeout
    while srv.metrics().get("wick_embedding_forwards_total", 0) == before:
        assert time.time() < deadline, "the embedding request never started"
        time.sleep(0.005)


def forward_seconds(srv, timeout=60):
    """How long one forward of the running request takes here: the time between two increments
    of the forwards counter. The bounds below are in forwards, not seconds: a sanitizer build
    (ASan: 3-4 s for a forward that takes 0.15 s otherwise) or a busy machine stretches both."""
    def next_change(before):
        deadline = time.time() + timeout
        while True:
            now = srv.metrics().get("wick_embedding_forwards_total", 0)
            if now != before:
                return now, time.time()
            assert time.time() < deadline, "the embedding engine stopped running forwards"
            time.sleep(0.005)
    first, t0 = next_change(srv.metrics().get("wick_embedding_forwards_total", 0))
    _, t1 = next_change(first)
    return t1 - t0


def test_cancel_on_disconnect(srv):
    m0 = srv.metrics()
    s = raw_socket(srv.port)
    s.sendall(http_request_bytes("/v1/embeddings", {"input": [LONG] * 200}))
    wait_for_work(srv)
    forward = forward_seconds(srv)
    s.close()
    t0 = time.time()
    while srv.metrics()["wick_embedding_active"] != 0:
        assert time.time() - t0 < 30 * forward + 5 * SLACK, "the abandoned embedding request was not cancelled"
        time.sleep(0.005)
    latency = time.time() - t0
    print(f"      cancelled {latency * 1000:.0f} ms after the client closed (a forward: {forward * 1000:.0f} ms)")
    # Within the forward in flight (1024 tokens, the CPU's default: 0.1-0.2 s on 2 cores) and
    # a 10 ms poll; the whole request is 50 forwards.
    assert latency < 2 * forward + 0.5 * SLACK, (latency, forward)
    m = srv.metrics()
    assert m["wick_embedding_cancelled_total"] == m0["wick_embedding_cancelled_total"] + 1
    assert m["wick_client_disconnects_total"] == m0["wick_client_disconnects_total"] + 1
    texts = m["wick_embedding_texts_total"] - m0["wick_embedding_texts_total"]
    assert texts < 100, f"{texts} of the 200 texts were embedded after all"


def test_small_request_not_blocked(srv):
    # A large request runs (tens of seconds on 2 cores); a one-word request sent meanwhile is
    # answered at once: the waiting requests take turns leading a forward.
    s = raw_socket(srv.port, timeout=120)
    s.sendall(http_request_bytes("/v1/embeddings", {"input": [LONG] * 200}))
    wait_for_work(srv)
    forward = forward_seconds(srv)
    t0 = time.time()
    status, body = srv.post("/v1/embeddings", {"input": "hello"})
    small = time.time() - t0
    assert status == 200 and len(body["data"]) == 1, (status, body)
    print(f"      a one-word request took {small * 1000:.0f} ms beside a 51,200-token one "
          f"(a forward: {forward * 1000:.0f} ms)")
    # The forward in flight, then its own (which it leads); it waited for all 50 before the engine.
    assert small < 4 * forward + 1.0 * SLACK, (small, forward)
    assert srv.metrics()["wick_embedding_active"] == 1, "the big request should still be running"
    s.close()  # and it is cancelled (the engine's own test checks that a large one completes)
    assert srv.wait_metric("wick_embedding_active", 0) == 0


def test_token_budget():
    with Server("--embedding-model", "minilm", "--max-embedding-tokens", "1000", "--embedding-batch-tokens", "256") as srv:
        status, body = srv.post("/v1/embeddings", {"input": [LONG] * 4})  # 1,024 tokens
        assert status == 400, (status, body)
        assert body["error"]["param"] == "input" and body["error"]["code"] == "context_length_exceeded", body
        assert "1000" in body["error"]["message"], body
        status, body = srv.post("/v1/embeddings", {"input": [LONG] * 3})  # 768 tokens
        assert status == 200 and body["usage"]["prompt_tokens"] == 768, (status, body)
        assert srv.metrics()["wick_embedding_forwards_total"] >= 3  # 256 padded tokens per forward


def main():
    checks = Checks()
    with Server("--embedding-model", "minilm") as srv:
        for t in (test_cancel_on_disconnect, test_small_request_not_blocked):
            checks.run(t, srv)
    checks.run(test_token_budget)
    checks.finish()


if __name__ == "__main__":
    main()
