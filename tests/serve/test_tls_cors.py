"""HTTPS (--ssl-cert-file/--ssl-key-file), the warning for a server other machines can reach,
and CORS (--cors-origin). The certificates are made for the test with the openssl command.

Usage: python3 tests/serve/test_tls_cors.py PATH/TO/wick
"""
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_util import MODEL, Checks, Server, raw_socket, read_until_closed, sse_events, wick_path  # noqa: E402

TMP = tempfile.mkdtemp(prefix="wick-tls-")
CERT, KEY, OTHER_KEY = (os.path.join(TMP, n) for n in ("cert.pem", "key.pem", "other_key.pem"))


def make_certificates():
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", KEY, "-out", CERT, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], check=True, capture_output=True)
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", OTHER_KEY], check=True,
                   capture_output=True)


def https(srv, timeout=60):
    ctx = ssl.create_default_context(cafile=CERT)
    return http.client.HTTPSConnection("127.0.0.1", srv.port, timeout=timeout, context=ctx)


def test_https(srv):
    auth = {"Authorization": "Bearer k", "Content-Type": "application/json"}
    conn = https(srv)
    conn.request("GET", "/health")
    r = conn.getresponse()
    assert r.status == 200 and json.loads(r.read()) == {"status": "ok"}
    # Keep-alive: more requests on the same TLS connection, a completion and a stream.
    conn.request("POST", "/v1/completions", json.dumps({"prompt": "Hello", "max_tokens": 4, "temperature": 0}), auth)
    r = conn.getresponse()
    body = json.loads(r.read())
    assert r.status == 200 and body["usage"]["completion_tokens"] >= 1, body
    conn.request("POST", "/v1/completions",
                 json.dumps({"prompt": "Hello", "max_tokens": 4, "temperature": 0, "stream": True}), auth)
    r = conn.getresponse()
    events = sse_events(r.read())
    assert r.status == 200 and events[-1] == "[DONE]", events[-3:]
    streamed = "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1])
    assert streamed == body["choices"][0]["text"], (streamed, body)
    conn.request("GET", "/v1/models")  # without the key: refused, over TLS too
    r = conn.getresponse()
    assert r.status == 401, r.status
    r.read()
    conn.close()


def test_plain_http_to_tls_port(srv):
    # A client speaking plain HTTP gets no answer in clear: the handshake fails, the
    # connection closes.
    s = raw_socket(srv.port)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    data = read_until_closed(s)
    assert b"HTTP/1.1" not in data, data[:100]
    # The server goes on serving.
    conn = https(srv)
    conn.request("GET", "/health")
    assert conn.getresponse().status == 200


def test_stalled_handshake(srv):
    # A connection that never starts its handshake is closed at the header deadline (--timeout 2).
    s = raw_socket(srv.port, timeout=20)
    t0 = time.time()
    data = read_until_closed(s)
    took = time.time() - t0
    assert data == b"" and 1.5 < took < 8, (data[:50], took)
    # A handshake begun and left half-way is closed too.
    s = raw_socket(srv.port, timeout=20)
    s.sendall(b"\x16\x03\x01\x00\x05\x01\x00")  # a TLS record header and a cut ClientHello
    t0 = time.time()
    read_until_closed(s)
    assert time.time() - t0 < 8


def test_bad_certificates():
    def run(*args):
        return subprocess.run([wick_path(), "serve", "--model", MODEL, "--port", "0", *args], capture_output=True,
                              text=True, timeout=60)
    r = run("--ssl-cert-file", CERT)  # the key missing: a usage error
    assert r.returncode == 2 and "go together" in r.stderr, (r.returncode, r.stderr[-300:])
    r = run("--ssl-cert-file", os.path.join(TMP, "missing.pem"), "--ssl-key-file", KEY)
    assert r.returncode != 0 and "missing.pem" in r.stderr and "listening" not in r.stderr, r.stderr[-300:]
    r = run("--ssl-cert-file", CERT, "--ssl-key-file", OTHER_KEY)
    assert r.returncode != 0 and "does not match" in r.stderr, r.stderr[-300:]
    r = run("--ssl-cert-file", KEY, "--ssl-key-file", KEY)  # a key where the certificate goes
    assert r.returncode != 0 and "certificate file" in r.stderr, r.stderr[-300:]


def warnings_of(*args):
    with Server(*args) as srv:
        time.sleep(0.3)  # the warnings follow the line that gave the port
        return [line for line in srv.log if "warning" in line]


def test_exposure_warnings():
    w = warnings_of("--host", "0.0.0.0")
    assert len(w) == 2 and "clear text" in w[0] and "--api-key" in w[1], w
    w = warnings_of("--host", "0.0.0.0", "--api-key", "k", "--ssl-cert-file", CERT, "--ssl-key-file", KEY)
    assert w == [], w
    assert warnings_of() == []  # loopback: nobody else can connect


def test_cors():
    origin = "https://app.example"
    with Server("--cors-origin", origin, "--api-key", "k") as srv:
        # The preflight carries no credentials and is answered before the key is checked.
        status, headers, _ = srv.request("OPTIONS", "/v1/chat/completions", headers={
            "Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        assert status == 204, status
        assert headers["Access-Control-Allow-Origin"] == origin and headers["Vary"] == "Origin", headers
        assert "POST" in headers["Access-Control-Allow-Methods"], headers
        assert "Authorization" in headers["Access-Control-Allow-Headers"], headers
        status, headers, body = srv.request("POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 2},
                                            headers={"Origin": origin, "Authorization": "Bearer k"})
        assert status == 200 and headers["Access-Control-Allow-Origin"] == origin, (status, headers)
        # Errors carry the header too, so the page can read why.
        status, headers, _ = srv.request("POST", "/v1/completions", {"prompt": "Hi"}, headers={"Origin": origin})
        assert status == 401 and headers["Access-Control-Allow-Origin"] == origin, (status, headers)
        # Another origin: no CORS headers, its preflight refused.
        status, headers, _ = srv.request("POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 2},
                                         headers={"Origin": "https://evil.example", "Authorization": "Bearer k"})
        assert status == 200 and "Access-Control-Allow-Origin" not in headers, headers
        status, headers, _ = srv.request("OPTIONS", "/v1/completions", headers={
            "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
        assert status == 403 and "Access-Control-Allow-Origin" not in headers, (status, headers)
    with Server("--cors-origin", "*") as srv:
        status, headers, _ = srv.request("GET", "/v1/models", headers={"Origin": "https://any.example"})
        assert status == 200 and headers["Access-Control-Allow-Origin"] == "*" and "Vary" not in headers, headers
    with Server() as srv:  # the default: no CORS at all
        status, headers, _ = srv.request("GET", "/v1/models", headers={"Origin": origin})
        assert status == 200 and not any(h.startswith("Access-Control") for h in headers), headers
        status, headers, _ = srv.request("OPTIONS", "/v1/models", headers={
            "Origin": origin, "Access-Control-Request-Method": "GET"})
        assert status != 204 and not any(h.startswith("Access-Control") for h in headers), (status, headers)


def main():
    make_certificates()
    checks = Checks()
    with Server("--ssl-cert-file", CERT, "--ssl-key-file", KEY, "--api-key", "k", "--timeout", "2") as srv:
        for t in (test_https, test_plain_http_to_tls_port, test_stalled_handshake):
            checks.run(t, srv)
    for t in (test_bad_certificates, test_exposure_warnings, test_cors):
        checks.run(t)
    checks.finish()


if __name__ == "__main__":
    main()
