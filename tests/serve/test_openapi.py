"""`wick serve` against its own OpenAPI document (docs/openapi.json): the server answers GET
/openapi.json with the document, and schemathesis, generating requests from the document,
finds every answer documented: no 5xx, every status code and content type documented, every
body (JSON, or each event of a stream) conforming, no connection failure, and no answer that
belongs to another request on the keep-alive connection (each answer is checked against its
request, /metrics must have counted, by endpoint and status, exactly the answers the client
got, and a new connection may open only after an answer that closed its own).

The requests: the document's examples, then per operation schemathesis' valid cases
("positive"), valid cases with every field present ("dense": schemathesis seldom adds
optional fields, so streams and logprobs would hardly come), and invalid ones ("negative").
Valid cases are mostly fit to the test model (its id, token ids in its vocabulary, few
tokens); a third are sent as generated. The server runs with --cors-origin, so the documented
OPTIONS preflights get their 204 (the allowed origin) or 403 (another), and TRACE its 405.

Bounded for CI: a fixed number of cases per operation and mode (WICK_OPENAPI_EXAMPLES), a fixed
seed (WICK_OPENAPI_SEED), and a wall-time budget (WICK_OPENAPI_SECONDS); --ctx-size 256 bounds what
one request generates. WICK_OPENAPI_STRICT=1 adds schemathesis' checks that valid requests
are accepted and invalid ones refused, a help when editing the document: it also reports what
no schema can say (token ids beyond the model's vocabulary, prompts beyond the context, the
embedding size, TRACE's 405).

Needs the `schemathesis` package (scripts/setup.sh installs it); without it the test fails."""
import collections
import json
import os
import re
import sys
import time

from serve_util import HERE, MODEL_ID, Checks, Server

try:
    import hypothesis
    import requests
    import schemathesis
    import urllib3
    from hypothesis import strategies as st
    from schemathesis import GenerationMode
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (content_type_conformance, response_headers_conformance,
                                                   response_schema_conformance, status_code_conformance)
except ImportError as e:  # a failure, not a skip: CI installs it
    sys.exit(f"FAIL: {e}: this test needs schemathesis: python3 -m pip install schemathesis "
             "(scripts/setup.sh installs it)")

DOC_PATH = os.path.join(HERE, "..", "..", "docs", "openapi.json")
EMBEDDING_ID = "all-MiniLM-L6-v2"
EMBEDDING_DIM = 384
CORS_ORIGIN = "https://app.example"  # the server's --cors-origin: other origins' preflights are a 403
VOCAB = 384  # the test model's vocabulary (tests/data/llama_quant: random weights, a cut-down vocabulary)
EXAMPLES = int(os.environ.get("WICK_OPENAPI_EXAMPLES", "40"))  # per operation and mode
SEED = int(os.environ.get("WICK_OPENAPI_SEED", "1"))  # the same cases every run
BUDGET_S = float(os.environ.get("WICK_OPENAPI_SECONDS", "50"))  # wall time for the generated requests
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance]
EXTRA_CHECKS = []
if os.environ.get("WICK_OPENAPI_STRICT"):
    from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance
    EXTRA_CHECKS = [negative_data_rejection, positive_data_acceptance]
MAX_SHOWN = 60  # failures printed
ANSWERED = collections.Counter()  # (endpoint, status) of the answers outside schemathesis' run


def load_doc():
    with open(DOC_PATH, encoding="utf-8") as f:
        return json.load(f)


def test_served_document(srv):
    # The document is compiled into the server: a stale build serves an older one.
    s, headers, body = srv.request("GET", "/openapi.json")
    ANSWERED["/openapi.json", s] += 1
    assert s == 200 and headers["Content-Type"] == "application/json", (s, headers)
    assert json.loads(body) == load_doc(), "GET /openapi.json differs from docs/openapi.json: rebuild wick"


def integral_floats_to_ints(x):
    """JSON Schema counts 16.0 as an integer; wick (as nlohmann's parser types it) does not, and
    answers 400 for "max_tokens": 16.0. No schema can say "without a fraction", so valid cases
    send integral numbers as integers."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**64:
        return int(x)
    if isinstance(x, list):
        return [integral_floats_to_ints(v) for v in x]
    if isinstance(x, dict):
        return {k: integral_floats_to_ints(v) for k, v in x.items()}
    return x


def fit(body, path):
    """A valid body changed to what the test model can answer, within the schema: token ids
    inside its vocabulary, few tokens to generate, the embedding size it has (a schema for any
    model cannot say these)."""
    def ids(p):
        if isinstance(p, list) and p and all(isinstance(x, int) for x in p):
            return [x % VOCAB for x in p]
        return [ids(x) for x in p] if isinstance(p, list) else p

    if "prompt" in body:
        body["prompt"] = ids(body["prompt"])
    if isinstance(body.get("logit_bias"), dict):
        body["logit_bias"] = {str(int(k) % VOCAB): v for k, v in body["logit_bias"].items()}
    for name in ("max_tokens", "max_completion_tokens"):
        if isinstance(body.get(name), int):
            body[name] = min(body[name], 24)
    if isinstance(body.get("dimensions"), int):
        body["dimensions"] = EMBEDDING_DIM
    if path == "/v1/chat/completions" and body.get("max_tokens") is None and body.get("max_completion_tokens") is None:
        body["max_tokens"] = 24  # else the rest of the context


def prepare(case, mode, choice):
    """Makes most generated cases reach the model: a random `model` is a 404 before anything is
    generated, so a string model is dropped or set to the served id, and a valid body is fit
    to the test model, unless the drawn choice is to keep the case as generated."""
    if case.method == "OPTIONS" and choice == "served" and case.headers and "Origin" in case.headers:
        case.headers["Origin"] = CORS_ORIGIN  # a preflight the server allows (204), if it is one
    body = case.body
    if not isinstance(body, dict):
        return
    if mode != "negative":
        body = integral_floats_to_ints(body)
    if choice != "keep":
        if mode != "negative":
            fit(body, case.path)
        if isinstance(body.get("model"), str):
            if choice == "drop" and mode == "dense":
                body["model"] = None  # the loaded model, and the field still there
            elif choice == "drop":
                del body["model"]
            else:
                body["model"] = EMBEDDING_ID if case.path == "/v1/embeddings" else MODEL_ID
    case.body = body


def dense(doc):
    """The document with every field of a request body required: schemathesis' positive cases
    leave most optional fields out (streams, logprobs, stop strings come seldom); these have
    every one, each drawn from its schema (null too)."""
    doc = json.loads(json.dumps(doc))
    for name in ("CompletionRequest", "ChatCompletionRequest", "EmbeddingRequest"):
        schema = doc["components"]["schemas"][name]
        schema["required"] = list(schema["properties"])
    return doc


def header(r, name):
    return (r.headers.get(name) or [""])[0]


def top_field(param):
    return re.split(r"[.\[]", param, maxsplit=1)[0]


class Answers:
    """Checks that each answer is the answer to its request (not one meant for another request
    on the same keep-alive connection)."""

    def __init__(self):
        self.last_serial = 0

    def mismatch(self, case, r):
        path, status, ctype = case.path, r.status_code, header(r, "content-type")
        body = case.body if isinstance(case.body, dict) else None
        if ctype.startswith("application/json"):
            data = json.loads(r.content)
        if status >= 400:
            if not ctype.startswith("application/json") or "error" not in data:
                return f"{status} without an error body"
            param = data["error"]["param"]
            if param is not None and body is not None:
                aliases = {"max_tokens": {"max_tokens", "max_completion_tokens"}}.get(param, {top_field(param)})
                required = {"prompt", "messages", "input", "model"}
                if not aliases & set(body) and top_field(param) not in required:
                    return f"error about {param!r}, a field the request does not have"
            return None
        if case.method == "OPTIONS":  # an allowed preflight
            ok = status == 204 and header(r, "access-control-allow-origin") == CORS_ORIGIN and not r.content
            return None if ok else f"a preflight answered {status} {r.content[:200]!r}"
        if path == "/health":
            return None if data == {"status": "ok"} else f"/health answered {data}"
        if path == "/v1/models":
            ids = [m["id"] for m in data.get("data", [])] if data.get("object") == "list" else None
            return None if ids == [MODEL_ID, EMBEDDING_ID] else f"/v1/models answered {str(data)[:200]}"
        if path == "/metrics":
            ok = ctype.startswith("text/plain") and r.text.startswith("# HELP wick_http_requests_total")
            return None if ok else f"/metrics answered {r.text[:200]!r}"
        if path == "/openapi.json":
            return None if data.get("openapi") == "3.1.0" and "paths" in data else "/openapi.json answered another"
        if path == "/v1/embeddings":
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            ok = data.get("object") == "list" and [d["index"] for d in data["data"]] == list(range(len(inputs)))
            return None if ok else f"{len(inputs)} inputs, answered {str(data)[:200]}"
        # Generation: the object kind, the prompt length when given as token ids, and the
        # serial in the id, which grows with every request the two endpoints take.
        chat = path == "/v1/chat/completions"
        if ctype.startswith("text/event-stream"):
            events = [e[len("data: "):] for e in r.text.split("\n\n") if e]
            if events[-1] != "[DONE]":
                return "a stream without [DONE]"
            chunks = [json.loads(e) for e in events[:-1]]
            chunks = [c for c in chunks if "error" not in c]
            if not chunks:
                return None
            want = "chat.completion.chunk" if chat else "text_completion"
            if any(c["object"] != want or c["id"] != chunks[0]["id"] for c in chunks):
                return f"stream chunks of another kind or request: {chunks[0]}"
            ident, usage = chunks[0]["id"], next((c["usage"] for c in chunks if c.get("usage")), None)
        else:
            want = "chat.completion" if chat else "text_completion"
            if data.get("object") != want:
                return f"a {want} request answered {str(data)[:200]}"
            ident, usage = data["id"], data["usage"]
        serial = int(ident.rsplit("-", 1)[1])
        if serial <= self.last_serial:
            return f"id {ident} after serial {self.last_serial}: an old answer"
        self.last_serial = serial
        prompt = body.get("prompt") if body else None
        while isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], list):
            prompt = prompt[0]
        if usage and isinstance(prompt, list) and prompt and isinstance(prompt[0], int):
            if usage["prompt_tokens"] != len(prompt):
                return f"prompt of {len(prompt)} token ids, usage says {usage['prompt_tokens']}"
        return None


def counting_session():
    """A requests session (one keep-alive connection at a time) that counts the TCP connections
    it opens, reconnections of a pooled connection included."""
    class Connection(urllib3.connection.HTTPConnection):
        def connect(self):
            session.connections += 1
            super().connect()

    session = requests.Session()
    session.connections = 0
    manager = session.get_adapter("http://").poolmanager
    pool = type("Pool", (urllib3.HTTPConnectionPool,), {"ConnectionCls": Connection})
    manager.pool_classes_by_scheme = {**manager.pool_classes_by_scheme, "http": pool}
    return session


def test_schemathesis(srv):
    doc = load_doc()
    config = schemathesis.Config.from_dict({
        "base-url": srv.url,
        "request-timeout": 60,
        "max-stream-events": 100000,  # read every stream to its end (the default cuts it, closing the connection)
        "output": {"sanitization": {"enabled": False}},  # "max_tokens" is no secret: reproducers show it
    })
    schemas = {mode: schemathesis.openapi.from_dict(d, config=config)
               for mode, d in (("positive", doc), ("dense", dense(doc)), ("negative", doc))}
    session = counting_session()  # one keep-alive connection for every request
    answers = Answers()
    sent = collections.Counter()  # (endpoint, status) as the client got them
    failures, stats = [], collections.Counter()
    closes = 0  # answers after which the connection is closed (a new one opens)

    def record(kind, case, detail):
        failures.append(f"{kind}: {case.method} {case.path}: {detail}\n    reproduce: {case.as_curl_command()}")

    def run_case(case, mode, choice):
        nonlocal closes
        prepare(case, mode, choice)
        try:
            r = case.call(session=session)
        except requests.RequestException as e:
            stats["connection failures"] += 1
            record("connection failure", case, repr(e))
            return
        except Exception as e:  # noqa: BLE001 - reported with the others, not raised into hypothesis
            record("error", case, repr(e))
            return
        sent[case.path, r.status_code] += 1
        stats[f"{mode} {r.status_code // 100}xx"] += 1
        if header(r, "content-type").startswith("text/event-stream"):
            stats["streams"] += 1
        if header(r, "connection").lower() == "close" or r.stream_cut_short:
            closes += 1
        try:
            case.validate_response(r, checks=CHECKS + EXTRA_CHECKS)
        except schemathesis.errors.FailureGroup as group:
            for f in group.exceptions:
                record(type(f).__name__, case, f"{r.status_code}: {f.title}: {f.message}"[:1500] +
                       f"\n    answer: {r.content[:300]!r}")
        try:
            why = answers.mismatch(case, r)
        except Exception as e:  # noqa: BLE001 - an answer that does not parse is a mismatch too
            why = f"{e!r} reading {r.content[:200]!r}"
        if why:
            record("stale or mismatched answer", case, f"{r.status_code}: {why}")

    # The document's own examples, as they are.
    for result in schemas["positive"].get_all_operations():
        op = result.ok()
        media = (op.definition.raw.get("requestBody") or {}).get("content", {}).get("application/json", {})
        for example in media.get("examples", {}).values():
            run_case(op.Case(body=example["value"], media_type="application/json"), "examples", "keep")

    # Then generated cases, operation by operation and mode by mode, each taking its share of
    # the time budget (what one leaves goes to the next): the operations without a request
    # body (a few quick cases each) first.
    plan = [(mode, result.ok()) for mode in ("positive", "dense", "negative")
            for result in schemas[mode].get_all_operations()]
    plan = [(mode, op) for mode, op in plan if op.body or mode != "dense"]  # dense differs in bodies only
    plan.sort(key=lambda step: bool(step[1].body))
    end = time.monotonic() + BUDGET_S
    for i, (mode, op) in enumerate(plan):
        deadline = time.monotonic() + (end - time.monotonic()) / (len(plan) - i)
        generation_mode = GenerationMode.NEGATIVE if mode == "negative" else GenerationMode.POSITIVE

        # Few cases where there is little to vary (no body: at most the CORS headers).
        @hypothesis.settings(max_examples=EXAMPLES if op.body else 8, database=None, deadline=None,
                             phases=[hypothesis.Phase.generate], suppress_health_check=list(hypothesis.HealthCheck),
                             verbosity=hypothesis.Verbosity.quiet)
        @hypothesis.seed(SEED)
        @hypothesis.given(case=op.as_strategy(generation_mode=generation_mode),
                          choice=st.sampled_from(["drop", "served", "keep"]))
        def fuzz(case, choice):
            if time.monotonic() < deadline:
                run_case(case, mode, choice)
            else:
                stats["left out (time)"] += 1

        try:
            fuzz()
        except hypothesis.errors.Unsatisfiable:
            pass  # no negative cases for an operation that takes no input
    stats["requests"] = sum(sent.values())
    stats["connections"] = session.connections
    print("  " + ", ".join(f"{k}: {v}" for k, v in sorted(stats.items())), flush=True)

    # /metrics counted exactly the answers the client got, endpoint by endpoint (an answer is
    # counted right after it is written, so the count may lag a moment: polled).
    sent.update(ANSWERED)
    scrapes, until = 0, time.time() + 10
    while True:
        got = {}
        for key, v in srv.metrics().items():
            m = re.fullmatch(r'wick_http_requests_total\{endpoint="([^"]*)",status="(\d+)"\}', key)
            if m:
                got[m.group(1), int(m.group(2))] = int(v)
        want = dict(sent)
        if scrapes:  # the earlier scrapes are counted too
            want["/metrics", 200] = want.get(("/metrics", 200), 0) + scrapes
        scrapes += 1
        if got == want or time.time() > until:
            break
        time.sleep(0.05)
    for f in failures[:MAX_SHOWN]:
        print(f, flush=True)
    assert not failures, f"{len(failures)} failures (the first {MAX_SHOWN} above)"
    assert got == want, f"/metrics counted {sorted(got.items())}, the client got {sorted(want.items())}"
    # Keep-alive held: one connection, and a new one only after an answer that closed its own
    # (a connection dropped under a request, which schemathesis sends again on a new one, shows here).
    assert stats["connections"] <= 1 + closes, \
        f"{stats['connections']} connections opened, but only {closes} answers closed theirs"


def main():
    checks = Checks()
    with Server("--embedding-model", "minilm", "--ctx-size", "256", "--parallel", "2",
                "--cors-origin", CORS_ORIGIN) as srv:
        for t in (test_served_document, test_schemathesis):
            checks.run(t, srv)
    checks.finish()


if __name__ == "__main__":
    main()
