"""`wick serve` against clients that hold connections open: many slow senders must not starve
the others (the server reads requests in one reactor thread, not a thread per connection),
each is cut off with a 408 at its deadline, and open connections are capped with a 503."""
import os
import resource
import socket
import threading
import time

from serve_util import Checks, Server, raw_socket, read_until_closed

# Under a sanitizer the server is several times slower; the bounds are on starvation (tens of
# seconds before the reactor), not on speed.
SLACK = 4 if os.environ.get("WICK_SANITIZED") else 1


def raise_open_files(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, n))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return want


def test_many_slow_clients():
    # 1,000 connections each sending its headers one byte a second. Meanwhile /health and a
    # completion answer at once; each slow one gets a 408 when its 3 s run out.
    n = min(1000, raise_open_files(1200) - 100)
    with Server("--timeout", "3", "--parallel", "2") as srv:
        slow = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            slow.append(s)
        t0 = time.time()
        header = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
        done = threading.Event()

        def drip():
            for i in range(len(header)):
                for s in slow:
                    try:
                        s.send(header[i:i + 1])
                    except OSError:
                        pass
                if done.wait(1.0):
                    return

        sender = threading.Thread(target=drip)
        sender.start()
        try:
            time.sleep(1.0)
            for _ in range(3):
                t = time.time()
                assert srv.request("GET", "/health", timeout=30)[0] == 200
                assert time.time() - t < 1.0 * SLACK, time.time() - t
                t = time.time()
                status, body = srv.post("/v1/completions", {"prompt": "Hello", "max_tokens": 4, "temperature": 0},
                                        timeout=30)
                assert status == 200 and body["usage"]["completion_tokens"] >= 1, body
                assert time.time() - t < 1.0 * SLACK, time.time() - t
            # Every slow client is answered 408 and closed once its 3 s have passed.
            answers = []
            for s in slow:
                s.settimeout(10 * SLACK)
                answers.append(read_until_closed(s))
            took = time.time() - t0
            timed_out = sum(a.startswith(b"HTTP/1.1 408 ") for a in answers)
            assert timed_out == n, (timed_out, n, [a[:40] for a in answers if not a.startswith(b"HTTP/1.1 408")][:5])
            assert took < 3 + 4 * SLACK, took
        finally:
            done.set()
            sender.join()
            for s in slow:
                s.close()
        m = srv.metrics()
        assert m.get('wick_http_requests_total{endpoint="other",status="408"}', 0) == n, m


def test_connection_cap():
    # --max-connections 20: twenty idle connections fill it; the next one is answered 503 and
    # closed; once they leave, requests are served again.
    with Server("--max-connections", "20") as srv:
        idle = [raw_socket(srv.port) for _ in range(20)]
        time.sleep(0.3)
        extra = raw_socket(srv.port)
        extra.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = read_until_closed(extra)
        assert answer.startswith(b"HTTP/1.1 503 ") and b'"server_error"' in answer, answer[:200]
        extra.close()
        for s in idle:
            s.close()
        deadline = time.time() + 10
        while True:
            try:
                if srv.request("GET", "/health", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            assert time.time() < deadline, "still refused after the idle connections closed"
            time.sleep(0.1)


def main():
    checks = Checks()
    for t in (test_many_slow_clients, test_connection_cap):
        checks.run(t)
    checks.finish()


if __name__ == "__main__":
    main()
