"""`wick serve` at the HTTP level, with curl and raw sockets: SSE framing, bad input of every
kind (each a clean 4xx in OpenAI's error JSON, the server serving on), slow clients,
keep-alive and pipelining, authentication, the bounded queue, disconnects that free their
cache, and graceful shutdown."""
import json
import re
import signal
import socket
import subprocess
import threading
import time

from serve_util import (MODEL, MODEL_ID, Checks, Server, generate, http_request_bytes, raw_socket, read_until_closed,
                        sse_events, wick_path)


def assert_error(status, body, want_status, param=None, code=None, contains=""):
    assert status == want_status, (status, body)
    e = body["error"]
    assert set(e) == {"message", "type", "param", "code"}, e
    assert contains in e["message"], e
    if param is not None:
        assert e["param"] == param, e
    if code is not None:
        assert e["code"] == code, e


def test_sse_framing_with_curl(srv):
    body = json.dumps({"prompt": "Hello", "max_tokens": 10, "temperature": 0, "stream": True})
    r = subprocess.run(["curl", "-sN", "-D", "-", srv.url + "/v1/completions", "-H", "Content-Type: application/json",
                        "-d", body], capture_output=True, check=True)
    head, _, raw = r.stdout.partition(b"\r\n\r\n")
    assert b"Content-Type: text/event-stream" in head, head
    events = sse_events(raw)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert "".join(c["choices"][0]["text"] for c in chunks) == generate("--prompt", "Hello", "--max-tokens", "10",
                                                                        "--temperature", "0")
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert all(c["object"] == "text_completion" and c["id"] == chunks[0]["id"] for c in chunks)


def test_bad_requests(srv):
    cases = [  # (body, status, param, text in the message)
        (b'{"prompt": "x", ', 400, None, "not valid JSON"),
        (b'[1, 2]', 400, None, "must be a JSON object"),
        (b'{"prompt": "\xff\xfe"}', 400, None, "UTF-8"),
        (b'{"prompt": "\\ud800"}', 400, None, "UTF-8"),
        (b'[' * 5000 + b']' * 5000, 400, None, "deeper"),
        ({"prompt": "x", "max_tokens": -3}, 400, "max_tokens", "max_tokens"),
        ({"prompt": "x", "max_tokens": 0}, 400, "max_tokens", ">= 1"),
        ({"prompt": "x", "max_tokens": "5"}, 400, "max_tokens", "expected an integer, got string"),
        ({"prompt": "x", "max_tokens": 2.5}, 400, "max_tokens", "expected an integer"),
        ({"prompt": "x", "temperature": "hot"}, 400, "temperature", "expected a number"),
        ({"prompt": "x", "temperature": 3}, 400, "temperature", "[0, 2]"),
        ({"prompt": "x", "top_p": -0.1}, 400, "top_p", ""),
        ({"prompt": "x", "logit_bias": {"1": 500}}, 400, "logit_bias", ""),
        ({"prompt": "x", "tools": [{"type": "function", "function": {"name": "f"}}]}, 400, "tools", ""),
        ({"prompt": "x", "stream": "yes"}, 400, "stream", "expected a boolean"),
        ({"prompt": "x", "stop": 5}, 400, "stop", ""),
        ({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]}, 400, "stop", "at most 4"),
        ({"prompt": "x", "n": 3}, 400, "n", ""),
        ({"prompt": "x", "stream_options": {"include_usage": 1}}, 400, "stream_options.include_usage", ""),
        ({"prompt": 12}, 400, "prompt", ""),
        ({"prompt": [1, 2, 99999999]}, 400, "prompt", "vocabulary"),
        ({"max_tokens": 3}, 400, "prompt", "required"),
        ({"prompt": "x", "max_tokens": 10 ** 6}, 400, "max_tokens", "context"),
    ]
    for body, status, param, text in cases:
        s, b = srv.post("/v1/completions", body)
        assert_error(s, b, status, param=param, contains=text)
    chat_cases = [
        ({"messages": "hi"}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": [{"content": "hi"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": 7}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages[0].content[0].type"),
        ({"messages": [{"role": "user", "content": "x"}], "logprobs": False, "top_logprobs": 2}, "top_logprobs"),
        ({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 50, "logprobs": True}, "top_logprobs"),
    ]
    for body, param in chat_cases:
        s, b = srv.post("/v1/chat/completions", body)
        assert_error(s, b, 400, param=param)
    s, b = srv.post("/v1/completions", {"model": "gpt-4o", "prompt": "x"})
    assert_error(s, b, 404, param="model", code="model_not_found")
    s, b = srv.post("/v1/embeddings", {"input": "x"})  # no embedding model loaded
    assert_error(s, b, 404, code="model_not_found")
    # Unknown fields are ignored.
    s, b = srv.post("/v1/completions", {"prompt": "Hello", "max_tokens": 2, "temperature": 0, "frobnicate": [1],
                                        "user": "me", "logit_bias": {}})
    assert s == 200 and b["usage"]["completion_tokens"] >= 1
    s, _, data = srv.request("GET", "/v2/nothing")
    assert_error(s, json.loads(data), 404)
    # Another method on a known endpoint: 405 naming what it takes, not 404.
    for method, path, allow in (("GET", "/v1/completions", "POST"), ("PUT", "/v1/chat/completions", "POST"),
                                ("DELETE", "/v1/embeddings", "POST"), ("POST", "/health", "GET, HEAD"),
                                ("POST", "/v1/models", "GET, HEAD"), ("PATCH", "/metrics", "GET, HEAD")):
        s, headers, data = srv.request(method, path, {"x": 1})
        assert_error(s, json.loads(data), 405, contains=allow)
        assert headers.get("Allow") == allow, (method, path, headers)
    # The server still serves.
    assert srv.request("GET", "/health")[0] == 200


def test_prompt_too_long(srv):
    # --ctx-size 256: a 300-token prompt cannot fit.
    s, b = srv.post("/v1/completions", {"prompt": list(range(1, 301)), "max_tokens": 1})
    assert_error(s, b, 400, code="context_length_exceeded")
    s, b = srv.post("/v1/completions", {"prompt": list(range(1, 201)), "max_tokens": 100})
    assert_error(s, b, 400, param="max_tokens", code="context_length_exceeded")
    # The largest max_tokens: the sum in the message does not overflow (UBSan aborted here).
    s, b = srv.post("/v1/completions", {"prompt": [1, 2], "max_tokens": 9223372036854775807})
    assert_error(s, b, 400, param="max_tokens", code="context_length_exceeded")
    assert "you requested 9223372036854775809 " in b["error"]["message"], b


def test_huge_bodies(srv):
    # Content-Length over the limit: refused before the body is read.
    s = raw_socket(srv.port)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000000\r\n\r\n{")
    resp = read_until_closed(s)
    assert resp.startswith(b"HTTP/1.1 413"), resp[:100]
    assert b'"request_too_large"' in resp
    assert b"\r\nConnection: close\r\n" in resp and b"\r\nKeep-Alive:" not in resp, resp[:300]
    # A body just over the limit (1 MiB here): refused as soon as its headers are read (the
    # client may not even finish sending it).
    s = raw_socket(srv.port)
    try:
        s.sendall(http_request_bytes("/v1/completions", b'{"prompt": "' + b"a" * (1 << 20) + b'"}'))
    except OSError:
        pass
    assert read_until_closed(s).startswith(b"HTTP/1.1 413")
    # Chunked bodies announce no size: refused.
    s = raw_socket(srv.port)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
    assert read_until_closed(s).startswith(b"HTTP/1.1 411")
    # A large body within the limit (what curl -d sends: form-urlencoded) is read as JSON.
    big = json.dumps({"prompt": "Hello", "max_tokens": 2, "pad": "x" * 100000})
    r = subprocess.run(["curl", "-s", srv.url + "/v1/completions", "-d", big], capture_output=True, check=True)
    assert json.loads(r.stdout)["usage"]["completion_tokens"] >= 1


def test_malformed_http(srv):
    for raw in [b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\nNoColonHere\r\n\r\n", b"\x00\x01\x02\r\n\r\n",
                b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n"]:
        s = raw_socket(srv.port)
        s.sendall(raw)
        resp = s.recv(65536)  # the first answer (the connection may stay open for more)
        assert resp == b"" or resp.startswith(b"HTTP/1.1 4"), resp[:80]
        s.close()
    assert srv.request("GET", "/health")[0] == 200


def one_answer(port, raw):
    """The statuses of everything the server answers to raw, which must end with it closing."""
    s = raw_socket(port)
    s.sendall(raw)
    data = read_until_closed(s)
    s.close()
    return [int(x) for x in re.findall(rb"HTTP/1\.1 (\d{3}) ", data)], data


def test_request_framing(srv):
    # What follows a request that was not read to its end is never taken for the next request:
    # the server answers the first and closes (saying so), whatever the rest looks like.
    smuggled = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
    cases = [
        # a GET that carries a body (which no GET reads): the body is a request of its own
        (b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(smuggled) + smuggled, 200),
        # an unknown method with a body
        (b"QUERY /health HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(smuggled) + smuggled, 400),
        # a request line over 8 KiB, then a request
        (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n" + smuggled, 414),
        # two Content-Length headers that disagree (CL.CL)
        (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}"
         + smuggled, 400),
        # chunked (refused: 411), its chunks a request
        (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
         + b"%x\r\n" % len(smuggled) + smuggled + b"\r\n0\r\n\r\n", 411),
        # TRACE: known to the parser, taken by no endpoint
        (b"TRACE /health HTTP/1.1\r\nHost: x\r\n\r\n" + smuggled, 405),
        # a file upload
        (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
         b"Content-Length: %d\r\n\r\n" % len(smuggled) + smuggled, 415),
    ]
    for raw, want in cases:
        statuses, data = one_answer(srv.port, raw)
        assert statuses == [want], (raw[:60], statuses, data[:300])
        assert b"\r\nConnection: close\r\n" in data, data[:300]
        assert b"\r\nKeep-Alive:" not in data, data[:300]  # a closing answer promises nothing more
        if want == 405:
            assert b"\r\nAllow: GET, POST\r\n" in data, data[:300]
    # A keep-alive client that sent a GET with a body goes on with its next requests (it
    # reconnects, as the answer said the connection closes).
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    conn.request("GET", "/health", body=b'{"prompt": "x"}', headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200 and r.getheader("Connection") == "close"
    r.read()
    for _ in range(2):
        conn.request("POST", "/v1/completions", json.dumps({"prompt": "Hi", "max_tokens": 2}),
                     {"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 200 and json.loads(r.read())["object"] == "text_completion"
    conn.close()


def test_slowloris(srv):
    # --timeout 2: a request must arrive within 2 s. Clients that send a byte every 0.5 s
    # (more often than any per-read timeout) are cut off all the same, and meanwhile others
    # are served.
    slow = [raw_socket(srv.port, timeout=20) for _ in range(20)]
    t0 = time.time()
    closed = [None] * len(slow)

    def drip(i, s):
        for b in b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" * 10:
            try:
                s.sendall(bytes([b]))
            except OSError:
                break
            time.sleep(0.5)
            if closed[i]:
                break
        closed[i] = closed[i] or time.time() - t0

    def watch(i, s):
        read_until_closed(s)
        closed[i] = time.time() - t0

    threads = [threading.Thread(target=f, args=(i, s)) for i, s in enumerate(slow) for f in (drip, watch)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    t1 = time.time()
    s, b = srv.post("/v1/completions", {"prompt": "Hello", "max_tokens": 4, "temperature": 0})
    assert s == 200 and time.time() - t1 < 5
    for t in threads:
        t.join()
    assert all(c is not None and c < 6 for c in closed), closed


def test_slow_body(srv):
    # Headers on time, the body never: the deadline covers the body too.
    s = raw_socket(srv.port, timeout=20)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{")
    t0 = time.time()
    read_until_closed(s)
    assert time.time() - t0 < 5


def test_keep_alive_and_pipelining(srv):
    reqs = [http_request_bytes("/v1/completions", {"prompt": p, "max_tokens": 3, "temperature": 0})
            for p in ("Hello", "The", "Once")]
    reqs.insert(1, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    reqs.append(http_request_bytes("/v1/completions", b'{"prompt": '))  # a bad one in the middle of the pipe
    reqs.append(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    s = raw_socket(srv.port)
    s.sendall(b"".join(reqs))  # all at once: pipelined
    data = read_until_closed(s)
    statuses = [int(x) for x in re.findall(rb"HTTP/1\.1 (\d{3}) ", data)]
    assert statuses == [200, 200, 200, 200, 400, 200], statuses
    # Keep-alive: sequential requests on one connection.
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    for _ in range(5):
        conn.request("POST", "/v1/completions", json.dumps({"prompt": "Hi", "max_tokens": 2}),
                     {"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 200 and json.loads(r.read())["object"] == "text_completion"
    conn.close()


def test_keep_alive_latency(srv):
    # Requests on a kept-alive connection are answered at once. Without TCP_NODELAY, the
    # second write of each answer waited for the client's delayed ACK: 44 ms a request.
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    times = []
    for _ in range(40):
        t0 = time.perf_counter()
        conn.request("GET", "/health")
        r = conn.getresponse()
        r.read()
        times.append(time.perf_counter() - t0)
    conn.close()
    times.sort()
    assert times[len(times) // 2] < 0.02, f"median {times[len(times) // 2] * 1000:.1f} ms"


def test_disconnect_frees_cache(srv):
    before = srv.metrics()
    # ignore_eos: each request could only end by its 200 tokens or by the cancel (an early end
    # of text let one finish before a busy CI machine's worker saw its client leave).
    for endpoint, body in [("/v1/completions", {"prompt": "Hello", "max_tokens": 200, "stream": True,
                                                "ignore_eos": True}),
                           ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}],
                                                     "max_tokens": 200, "stream": True, "ignore_eos": True}),
                           ("/v1/completions", {"prompt": "Hello", "max_tokens": 200, "ignore_eos": True})]:
        s = raw_socket(srv.port)
        s.sendall(http_request_bytes(endpoint, body))
        if body.get("stream"):
            assert s.recv(4096).startswith(b"HTTP/1.1 200")  # streaming has begun
        # A non-streaming request is closed at once: the worker looks at its client after
        # every batch of tokens, so it notices before the 200 tokens are done. (A pause here
        # let a fast machine finish them first: no disconnect to count.)
        s.close()
    # Waited for by count, not by `wick_running` reaching 0: that also holds for a moment
    # before the worker of the last request has submitted it.
    for name in ("wick_client_disconnects_total", "wick_engine_cancelled_total"):
        want = before[name] + 3
        assert srv.wait_metric(name, want) == want, srv.metrics()
    assert srv.wait_metric("wick_running", 0) == 0
    after = srv.metrics()
    assert srv.wait_metric("wick_kv_used_positions", 0) == 0
    # Every request was cut short: far fewer than 3 x 200 tokens were generated.
    assert after["wick_generated_tokens_total"] - before["wick_generated_tokens_total"] < 300


def test_metrics_format(srv):
    status, headers, data = srv.request("GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    m = srv.metrics()
    assert m['wick_http_requests_total{endpoint="/v1/completions",status="200"}'] >= 1
    assert m['wick_http_requests_total{endpoint="/v1/completions",status="400"}'] >= 1
    for name in ("wick_queue_length", "wick_running", "wick_batch_size", "wick_kv_used_positions",
                 "wick_kv_capacity_positions", "wick_prompt_tokens_total", "wick_generated_tokens_total",
                 'wick_time_to_first_token_seconds_bucket{le="+Inf"}', "wick_inter_token_latency_seconds_count"):
        assert name in m, name
    assert m['wick_time_to_first_token_seconds_bucket{le="+Inf"}'] == m["wick_time_to_first_token_seconds_count"] > 0


def test_api_key():
    with Server("--api-key", "sekrit") as srv:
        assert srv.request("GET", "/health")[0] == 200
        for method, path in [("GET", "/v1/models"), ("GET", "/metrics"), ("POST", "/v1/completions")]:
            status, _, data = srv.request(method, path, {"prompt": "x"} if method == "POST" else None)
            assert_error(status, json.loads(data), 401, code="invalid_api_key")
            status, _, _ = srv.request(method, path, {"prompt": "x"} if method == "POST" else None,
                                       headers={"Authorization": "Bearer wrong"})
            assert status == 401
        # The scheme's name is case-insensitive; the key and the space after the scheme are not optional.
        for header in ("Bearer sekrit", "bearer sekrit", "BEARER  sekrit"):
            s, _, _ = srv.request("GET", "/v1/models", headers={"Authorization": header})
            assert s == 200, header
        for header in ("Bearer Sekrit", "Bearer", "Bearer ", "Basic sekrit", "Bearersekrit", "sekrit"):
            s, _, _ = srv.request("GET", "/v1/models", headers={"Authorization": header})
            assert s == 401, header


def open_streams(port, n, max_tokens):
    """n streaming requests sent at once (the tiny model's context is 512 positions)."""
    socks = []
    for i in range(n):
        s = raw_socket(port, timeout=30)
        s.sendall(http_request_bytes("/v1/completions", {"prompt": f"Hello {i}", "max_tokens": max_tokens,
                                                         "stream": True, "temperature": 0},
                                       "Connection: close\r\n"))
        socks.append(s)
    return socks


def ended(raw):
    """A chunked SSE response that ended properly: [DONE], then the last chunk."""
    return raw.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")


def test_queue_full():
    # One slot and one place in the queue; six requests at once (faster than one generation
    # ends): one runs, one waits, the rest are refused with 429 and Retry-After.
    with Server("--parallel", "1", "--max-queue", "1") as srv:
        socks = open_streams(srv.port, 6, 400)
        # The first stream's answer up to its first bytes (it runs for a while); any other
        # answer, and a refusal wherever it lands, until the server closes it (a 429's
        # headers and body may arrive in two reads).
        answers = []
        for i, s in enumerate(socks):
            a = s.recv(1 << 16) if i == 0 else read_until_closed(s)
            answers.append(a + read_until_closed(s) if a.startswith(b"HTTP/1.1 429") and i == 0 else a)
        statuses = [int(a.split(b" ", 2)[1]) for a in answers]
        assert statuses.count(200) >= 2 and statuses.count(429) >= 1 and set(statuses) <= {200, 429}, statuses
        for a in answers:
            if a.startswith(b"HTTP/1.1 429"):
                assert re.search(rb"Retry-After: [1-9]", a) and b'"rate_limit_error"' in a, a
        for s in socks:
            s.close()
        assert srv.wait_metric("wick_running", 0) == 0
        assert srv.post("/v1/completions", {"prompt": "x", "max_tokens": 2})[0] == 200
        m = srv.metrics()
        assert m['wick_http_requests_total{endpoint="/v1/completions",status="429"}'] == statuses.count(429)


def test_graceful_shutdown():
    # SIGTERM while streams run and wait: they all finish (within --shutdown-timeout), new
    # connections are refused, exit status 0.
    srv = Server("--shutdown-timeout", "30", "--parallel", "1")
    socks = open_streams(srv.port, 3, 300)
    assert all(s.recv(12) == b"HTTP/1.1 200" for s in socks)
    srv.proc.send_signal(signal.SIGTERM)
    for s in socks:
        data = read_until_closed(s)
        assert ended(data) and b'"finish_reason":"' in data, data[-300:]
        assert b"shutting down" not in data
    assert srv.proc.wait(30) == 0
    try:
        socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()
        raise AssertionError("still accepting after shutdown")
    except OSError:
        pass
    # With no grace, what runs or waits is cancelled: its stream ends with an error event
    # (then [DONE]); the server still exits 0.
    srv = Server("--shutdown-timeout", "0", "--parallel", "1")
    socks = open_streams(srv.port, 4, 400)
    assert all(s.recv(12) == b"HTTP/1.1 200" for s in socks)
    srv.proc.send_signal(signal.SIGINT)
    ends = [read_until_closed(s) for s in socks]
    assert all(ended(e) for e in ends), [e[-100:] for e in ends]
    assert sum(b"shutting down" in e for e in ends) >= 2, [e[-200:] for e in ends]
    assert srv.proc.wait(30) == 0


def test_option_bounds():
    # Options out of range are a usage error (exit 2) before the model loads; --max-body has
    # no "off" value.
    for args in (["--max-body", "-1"], ["--max-body", "0"], ["--max-body", str(1 << 31)], ["--parallel", "0"]):
        r = subprocess.run([wick_path(), "serve", "--model", MODEL, "--port", "0", *args],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "must be in" in r.stderr, (args, r.returncode, r.stderr[-300:])


def test_port_in_use():
    # A second server on a port that one already listens on is an error (exit 1, the port
    # named), never a second listener that the kernel would split the connections with.
    with Server() as srv:
        second = subprocess.run([wick_path(), "serve", "--model", MODEL, "--port", str(srv.port)],
                                capture_output=True, text=True, timeout=120)
        assert second.returncode == 1, (second.returncode, second.stderr[-500:])
        assert f"cannot listen on 127.0.0.1:{srv.port}" in second.stderr, second.stderr[-500:]
        for _ in range(8):  # every answer still comes from the first server
            assert srv.request("GET", "/health")[0] == 200


def main():
    checks = Checks()
    with Server("--timeout", "2", "--ctx-size", "256", "--max-body", str(1 << 20), "--parallel", "4") as srv:
        for t in (test_sse_framing_with_curl, test_bad_requests, test_prompt_too_long, test_huge_bodies,
                  test_malformed_http, test_request_framing, test_slowloris, test_slow_body, test_keep_alive_and_pipelining,
                  test_keep_alive_latency,
                  test_disconnect_frees_cache, test_metrics_format):
            checks.run(t, srv)
    for t in (test_api_key, test_option_bounds, test_port_in_use, test_queue_full, test_graceful_shutdown):
        checks.run(t)
    checks.finish()


if __name__ == "__main__":
    main()
