"""Shared by the `wick serve` tests: start the server on a free loopback port, talk to it
with plain sockets, read its /metrics, stop it.

Each test file is one ctest (tests/CMakeLists.txt): `python3 tests/serve/test_X.py WICK`,
where WICK is the built `wick` command. The model is the tiny Llama of tests/data/llama_quant
(random weights, Llama 3's tokenizer and chat template): its text is gibberish, but every
token of it is checked against `wick generate`.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
MODEL = os.path.join(DATA, "llama_quant", "q4_k_m.gguf")
MODEL_ID = "q4_k_m.gguf"


def wick_path():
    if len(sys.argv) < 2:
        sys.exit(f"usage: {sys.argv[0]} PATH/TO/wick")
    return sys.argv[1]


class Server:
    """`wick serve --port 0 ARGS...` until stop(); .port is the port it printed."""

    def __init__(self, *args, model=MODEL):
        cmd = [wick_path(), "serve", "--model", model, "--port", "0", *args]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.log = []
        deadline = time.time() + 60
        self.port = None
        while self.port is None:
            line = self.proc.stderr.readline()
            if not line:
                raise RuntimeError(f"wick serve exited ({self.proc.wait()}): {''.join(self.log)}")
            self.log.append(line)
            m = re.search(r"listening on https?://[^:]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
            if time.time() > deadline:
                raise RuntimeError("wick serve did not start: " + "".join(self.log))
        # Keep draining stderr so the server never blocks on a full pipe.
        self._drain = threading.Thread(target=self._read_log, daemon=True)
        self._drain.start()

    def _read_log(self):
        for line in self.proc.stderr:
            self.log.append(line)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Signals the server and returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
            self._drain.join(5)  # the log's last lines (what it printed on the way out)
            return code
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("wick serve did not exit after " + sig.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        code = self.stop()
        if exc[0] is None:
            assert code == 0, f"wick serve exited with {code}: {''.join(self.log[-20:])}"

    # ---- plain HTTP ----
    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, headers dict, body bytes) of one request on a fresh connection."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=data, headers=hdrs)
        r = conn.getresponse()
        out = (r.status, dict(r.getheaders()), r.read())
        conn.close()
        return out

    def post(self, path, body, **kw):
        status, headers, data = self.request("POST", path, body, **kw)
        return status, json.loads(data) if data else None

    def metrics(self):
        """The /metrics samples as {name{labels}: value}."""
        status, _, data = self.request("GET", "/metrics")
        assert status == 200
        out = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                out[key] = float(value)
        return out

    def wait_metric(self, name, want, timeout=10):
        """Polls /metrics until `name` equals want; returns the last value."""
        deadline = time.time() + timeout
        while True:
            v = self.metrics().get(name)
            if v == want or time.time() > deadline:
                return v
            time.sleep(0.05)

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")


def raw_socket(port, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    return s


def read_until_closed(s, limit=1 << 22):
    chunks = []
    while sum(map(len, chunks)) < limit:
        try:
            b = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks)


def http_request_bytes(path, body, extra_headers=""):
    data = json.dumps(body).encode() if not isinstance(body, bytes) else body
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra_headers}"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data


def sse_events(raw):
    """The data payloads of an SSE body, checking the framing: every event is 'data: X\\n\\n'."""
    text = raw.decode()
    assert text.endswith("\n\n"), repr(text[-40:])
    events = text[:-2].split("\n\n")
    out = []
    for e in events:
        assert e.startswith("data: ") and "\n" not in e, repr(e)
        out.append(e[len("data: "):])
    return out


def generate(*args):
    """What `wick generate` prints for the test model (stdout without its final newline)."""
    r = subprocess.run([wick_path(), "generate", "--model", MODEL, *args], capture_output=True, check=True)
    out = r.stdout.decode()
    assert out.endswith("\n")
    return out[:-1]


def expect_400(request, fragment, **kw):
    """request(**kw) through the openai client must fail with a 400 whose message holds
    `fragment` (the field or problem it names)."""
    import openai
    try:
        request(**kw)
    except openai.BadRequestError as e:
        assert fragment in str(e), (fragment, str(e))
        return
    raise AssertionError("no 400 for " + json.dumps(kw, default=str)[:200])


class Checks:
    """Runs test_* functions of a module, reporting each; exits 1 when any failed."""

    def __init__(self):
        self.failed = []

    def run(self, fn, *args):
        t0 = time.time()
        try:
            fn(*args)
            print(f"ok    {fn.__name__} ({time.time() - t0:.1f} s)", flush=True)
        except Exception as e:  # noqa: BLE001 - report every failure, keep going
            import traceback
            traceback.print_exc()
            print(f"FAIL  {fn.__name__}: {e!r}", flush=True)
            self.failed.append(fn.__name__)

    def finish(self):
        if self.failed:
            print("failed: " + ", ".join(self.failed))
            sys.exit(1)
        print("all passed")
