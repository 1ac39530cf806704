"""Tool calling through `wick serve` (issue 40) with the official `openai` client: tools,
tool_choice (auto, none, required, a named function), parallel_tool_calls, tool turns in the
history, streamed and whole responses, and the 400s.

The model is serve_util's tiny random-weight Llama (temperature 1): its template takes no
tools, so the server describes them in a system turn and reads Hermes-style <tool_call>
blocks. With tool_choice required or named the reply is grammar-constrained, so it always
parses: every call's arguments are checked against its tool's parameters with `jsonschema`.
"""
import functools
import json

import jsonschema
import openai

from serve_util import MODEL_ID, Checks, Server, expect_400

# Small: the test model's context is 512 tokens of a 384-token vocabulary.
WEATHER = {"type": "function", "function": {
    "name": "weather",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 6},
        "days": {"type": "integer", "minimum": 1, "maximum": 7}},
        "required": ["city", "days"], "additionalProperties": False}}}
CLOCK = {"type": "function", "function": {"name": "now"}}
TOOLS = [WEATHER, CLOCK]
SCHEMAS = {t["function"]["name"]: t["function"].get("parameters", {"type": "object"}) for t in TOOLS}
ASK = [{"role": "user", "content": "Weather in Paris?"}]


def chat(client, **kw):
    kw.setdefault("messages", ASK)
    kw.setdefault("max_tokens", 150)
    return client.chat.completions.create(model=MODEL_ID, temperature=1.0, **kw)


def check_calls(calls, allowed):
    assert calls, "no tool calls"
    for c in calls:
        assert c.type == "function" and c.id.startswith("call_"), c
        assert c.function.name in allowed, c.function.name
        args = json.loads(c.function.arguments)
        jsonschema.validate(args, SCHEMAS[c.function.name])
    assert len({c.id for c in calls}) == len(calls)


def test_required_and_named(client, srv):
    for seed in range(6):
        # One call at most per reply (parallel_tool_calls false): the grammar ends after it.
        r = chat(client, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, seed=seed)
        c = r.choices[0]
        assert c.finish_reason == "tool_calls", (c.finish_reason, c.message)
        check_calls(c.message.tool_calls, {"weather", "now"})
        assert c.message.content is None and len(c.message.tool_calls) == 1
        # Parallel calls allowed: at least one well-formed call (a second may be cut by max_tokens).
        c = chat(client, tools=TOOLS, tool_choice="required", seed=seed).choices[0]
        assert c.finish_reason == "tool_calls", (c.finish_reason, c.message)
        check_calls(c.message.tool_calls, {"weather", "now"})
        r = chat(client, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "weather"}},
                 parallel_tool_calls=False, seed=seed)
        calls = r.choices[0].message.tool_calls
        check_calls(calls, {"weather"})
        assert len(calls) == 1


def test_streamed_calls(client, srv):
    for seed in range(3):
        kw = dict(tools=TOOLS, tool_choice="required", parallel_tool_calls=False, seed=seed)
        whole = chat(client, **kw).choices[0].message.tool_calls
        chunks = chat(client, stream=True, **kw)
        calls, finish = {}, None
        for ch in chunks:
            if not ch.choices:
                continue
            finish = ch.choices[0].finish_reason or finish
            for d in ch.choices[0].delta.tool_calls or []:
                c = calls.setdefault(d.index, {"id": None, "name": "", "arguments": ""})
                c["id"] = d.id or c["id"]
                c["name"] += (d.function.name or "") if d.function else ""
                c["arguments"] += (d.function.arguments or "") if d.function else ""
        assert finish == "tool_calls"
        got = [(calls[i]["name"], calls[i]["arguments"]) for i in sorted(calls)]
        assert got == [(c.function.name, c.function.arguments) for c in whole], (got, whole)


def test_auto_and_none(client, srv):
    # auto: the random model writes text (no call parses out of noise): a normal answer.
    r = chat(client, tools=TOOLS, tool_choice="auto", seed=1, max_tokens=30)
    c = r.choices[0]
    assert c.finish_reason in ("stop", "length") and not c.message.tool_calls and c.message.content
    # Streamed, the text that cannot be a call goes out as it comes (many chunks, not one at
    # the end) and adds up to the same content.
    pieces = [ch.choices[0].delta.content for ch in chat(client, tools=TOOLS, tool_choice="auto", seed=1, max_tokens=30,
                                                         stream=True) if ch.choices and ch.choices[0].delta.content]
    assert "".join(pieces) == c.message.content, (pieces, c.message.content)
    assert len(pieces) > 5, pieces
    # none: the tools are not offered; the same as no tools at all.
    a = chat(client, tools=TOOLS, tool_choice="none", seed=2, max_tokens=20).choices[0].message.content
    b = chat(client, seed=2, max_tokens=20).choices[0].message.content
    assert a == b


def test_history_with_tool_turns(client, srv):
    first = chat(client, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, seed=4).choices[0].message
    history = ASK + [
        {"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in first.tool_calls]},
        *[{"role": "tool", "tool_call_id": c.id, "content": "sunny, 21 C"} for c in first.tool_calls],
    ]
    r = chat(client, messages=history, tools=TOOLS, seed=5, max_tokens=8)
    assert r.choices[0].finish_reason in ("stop", "length", "tool_calls")
    # The earlier calls are in the prompt: it is longer than the question alone.
    alone = chat(client, tools=TOOLS, seed=5, max_tokens=1)
    assert r.usage.prompt_tokens > alone.usage.prompt_tokens


def test_bad_tools(client, srv):
    ask = functools.partial(chat, client)
    many = [{"type": "function", "function": {"name": f"f{i}"}} for i in range(129)]
    expect_400(ask, "at most 128", tools=many)
    expect_400(ask, "function.name", tools=[{"type": "function", "function": {"name": "bad name"}}])
    expect_400(ask, "parameters", tools=[{"type": "function", "function": {"name": "f", "parameters": [1]}}])
    expect_400(ask, "names no tool", tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}})
    expect_400(ask, "tool_choice", tool_choice="required")
    expect_400(ask, "tool_choice", tools=TOOLS, tool_choice="sometimes")
    expect_400(ask, "tools", tools=[{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"$ref": "#/nowhere"}}}}}], tool_choice="required")
    expect_400(ask, "cannot both apply", tools=TOOLS, tool_choice="required",
               response_format={"type": "json_object"})
    expect_400(ask, "arguments", messages=ASK + [{"role": "assistant", "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "now", "arguments": "not json"}}]}])


def main():
    checks = Checks()
    with Server("--parallel", "4") as srv:
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)
        for t in (test_required_and_named, test_streamed_calls, test_auto_and_none, test_history_with_tool_turns,
                  test_bad_tools):
            checks.run(t, client, srv)
    checks.finish()


if __name__ == "__main__":
    main()
