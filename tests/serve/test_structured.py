"""Structured output through `wick serve` (issue 40): response_format json_schema and
json_object, llama-server's `grammar` and `json_schema`, vLLM's guided_choice / guided_regex,
the openai client's typed `parse` helper, and the 400s for bad constraints.

The model is the tiny random-weight Llama of serve_util, sampled at temperature 1: its text
is noise, so only the constraint makes an output valid. Every output is checked with the
`jsonschema` package (an independent validator) or Python's own parsers.
"""
import functools
import json
import os
import re

import jsonschema
import openai
import pydantic

from serve_util import DATA, MODEL_ID, Checks, Server, expect_400

WORD = {"type": "string", "maxLength": 6}


def schemas():
    """50+ schemas whose documents stay short (bounded strings and arrays): the model's
    context is 512 tokens."""
    scalars = [
        {"type": "integer"},
        {"type": "integer", "minimum": 0, "maximum": 9},
        {"type": "integer", "minimum": -20, "maximum": 300},
        {"type": "integer", "exclusiveMinimum": 5, "exclusiveMaximum": 12},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "string", "maxLength": 5},
        {"type": "string", "minLength": 2, "maxLength": 4},
        {"type": "string", "enum": ["red", "green", "blue"]},
        {"const": "fixed"},
        {"enum": [1, "two", None, True, {"a": 1}]},
        {"type": "string", "format": "date"},
        {"type": "string", "format": "time"},
        {"type": "string", "format": "date-time"},
        {"type": "string", "format": "uuid"},
        {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"},
        {"type": "string", "pattern": "^(yes|no|maybe)$"},
        {"type": "string", "pattern": "^\\d{3}-\\w{2}$"},
        {"type": "string", "pattern": "^[^a-z\"\\\\]{1,4}$"},
        {"type": "string", "pattern": "^[a-z]{1,3}@[a-z]{1,3}\\.(com|org)$"},
        {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 3}, "maxItems": 2},
        {"type": ["string", "null"], "maxLength": 3},
        {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 5}, {"type": "boolean"}]},
        {"oneOf": [{"type": "null"}, {"type": "string", "maxLength": 2}]},
    ]
    out = []
    for s in scalars:
        out.append({"type": "object", "properties": {"v": s}, "required": ["v"], "additionalProperties": False})
    out += [
        {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 99}, "maxItems": 4},
        {"type": "array", "items": WORD, "minItems": 2, "maxItems": 3},
        {"type": "array", "prefixItems": [{"type": "integer", "maximum": 10, "minimum": 0}, WORD], "items": False},
        {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 1},
        {"type": "object", "properties": {"a": WORD, "b": {"type": "integer", "minimum": 0, "maximum": 50}},
         "required": ["a", "b"], "additionalProperties": False},
        {"type": "object", "properties": {"a": WORD, "b": {"type": "boolean"}}, "required": ["b"],
         "additionalProperties": False},
        {"type": "object", "properties": {"a": WORD, "b": WORD, "c": WORD}, "additionalProperties": False},
        {"type": "object", "properties": {"x": {"type": "object", "properties": {"y": {"type": "integer",
                                                                                   "minimum": 1, "maximum": 3}},
                                               "required": ["y"], "additionalProperties": False}},
         "required": ["x"], "additionalProperties": False},
        {"type": "object", "properties": {"items": {"type": "array", "maxItems": 2, "items": {
            "type": "object", "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 9}, "ok": {"type": "boolean"}},
            "required": ["id", "ok"], "additionalProperties": False}}}, "required": ["items"], "additionalProperties": False},
        {"$defs": {"pt": {"type": "object", "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 9},
                                                           "y": {"type": "integer", "minimum": 0, "maximum": 9}},
                          "required": ["x", "y"], "additionalProperties": False}},
         "type": "object", "properties": {"from": {"$ref": "#/$defs/pt"}, "to": {"$ref": "#/$defs/pt"}},
         "required": ["from", "to"], "additionalProperties": False},
        {"$defs": {"node": {"type": "object", "properties": {
            "v": {"type": "integer", "minimum": 0, "maximum": 9},
            "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["v", "next"],
            "additionalProperties": False}}, "$ref": "#/$defs/node"},
        {"type": "object", "properties": {"name": WORD, "age": {"type": "integer", "minimum": 0, "maximum": 120},
                                          "email": {"type": "string", "pattern": "^[a-z]{1,4}@x\\.io$"}},
         "required": ["name", "age"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}, "n": {"type": ["integer", "null"],
                                                                             "minimum": 0, "maximum": 9}},
         "required": ["kind", "n"], "additionalProperties": False},
        {"allOf": [{"type": "object", "properties": {"a": WORD}, "required": ["a"]},
                   {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]}]},
        {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["x", "y", "z"]}, "maxItems": 3},
                                          "score": {"type": "number", "minimum": 0}},
         "required": ["tags", "score"], "additionalProperties": False},
        {"type": "object", "properties": {"d": {"type": "string", "format": "date"},
                                          "id": {"type": "string", "format": "uuid"}},
         "required": ["d", "id"], "additionalProperties": False},
        {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[a-f0-9]{4}$"},
                                          "level": {"type": "integer", "minimum": -3, "maximum": 3}},
         "required": ["code", "level"], "additionalProperties": False},
        {"type": "object", "properties": {"matrix": {"type": "array", "maxItems": 2, "items": {
            "type": "array", "maxItems": 2, "items": {"type": "integer", "minimum": 0, "maximum": 9}}}},
         "required": ["matrix"], "additionalProperties": False},
        {"type": "object", "properties": {"é": {"type": "string", "maxLength": 2}, "quote\"d": {"type": "boolean"}},
         "required": ["é", "quote\"d"], "additionalProperties": False},
        {"type": "object", "properties": {"answer": {"type": "string", "enum": ["A", "B", "C", "D"]},
                                          "confidence": {"type": "number", "minimum": 0}},
         "required": ["answer", "confidence"], "additionalProperties": False},
        {"type": "object", "properties": {"opt": {"type": "integer", "minimum": 0, "maximum": 9}},
         "additionalProperties": False},
        {"type": "object", "properties": {"zeta": {"type": "boolean"}, "alpha": {"type": "null"},
                                          "mid": {"type": "integer", "minimum": 0, "maximum": 1}},
         "required": ["zeta", "alpha", "mid"], "additionalProperties": False},
        {"type": "object", "properties": {"v": {"type": "string", "maxLength": 4, "nullable": True}},
         "required": ["v"], "additionalProperties": False},
        {"type": "object", "properties": {"big": {"type": "integer", "minimum": 1000000, "maximum": 1000100}},
         "required": ["big"], "additionalProperties": False},
        {"type": "object", "properties": {"neg": {"type": "integer", "maximum": -5}},
         "required": ["neg"], "additionalProperties": False},
        {"type": "object", "properties": {"pos": {"type": "integer", "minimum": 7}},
         "required": ["pos"], "additionalProperties": False},
        {"type": "object", "properties": {"t": {"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "null"}],
                                                "items": False, "minItems": 2}},
         "required": ["t"], "additionalProperties": False},
    ]
    return out


def validate(schema, text):
    doc = json.loads(text)
    # OpenAPI's nullable is not JSON Schema: give the validator the type it means.
    plain = json.loads(json.dumps(schema).replace('"nullable": true', '"_nullable": true'))
    if '"_nullable": true' in json.dumps(plain):
        plain["properties"]["v"]["type"] = ["string", "null"]
    jsonschema.Draft202012Validator(plain, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(doc)
    return doc


def chat(client, max_tokens=400, **kw):
    return client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": "Answer in JSON."}],
                                          temperature=1.0, max_tokens=max_tokens, **kw)


def test_json_schema_outputs_validate(client, srv):
    all_schemas = schemas()
    assert len(all_schemas) >= 50, len(all_schemas)
    for i, schema in enumerate(all_schemas):
        rf = {"type": "json_schema", "json_schema": {"name": f"s{i}", "schema": schema, "strict": False}}
        # A recursive schema's documents are unbounded: noise may recurse until max_tokens.
        recursive = "#/$defs/node" in json.dumps(schema)
        r = chat(client, response_format=rf, seed=i)
        c = r.choices[0]
        if recursive and c.finish_reason == "length":
            continue
        assert c.finish_reason == "stop", (i, schema, c.finish_reason, c.message.content)
        doc = validate(schema, c.message.content)
        # Properties come in the order the schema writes them (not sorted).
        if isinstance(doc, dict) and "properties" in schema:
            order = list(schema["properties"])
            assert list(doc) == [k for k in order if k in doc], (list(doc), order)
        # Streamed: the concatenated deltas validate too.
        chunks = chat(client, response_format=rf, seed=1000 + i, stream=True)
        text, finish = "", None
        for ch in chunks:
            if ch.choices:
                text += ch.choices[0].delta.content or ""
                finish = ch.choices[0].finish_reason or finish
        if recursive and finish == "length":
            continue
        assert finish == "stop", (i, schema, finish, text)
        validate(schema, text)


def test_json_object(client, srv):
    ended = 0
    for seed in range(8):
        r = chat(client, response_format={"type": "json_object"}, seed=seed)
        c = r.choices[0]
        if c.finish_reason == "length":
            continue  # an unbounded string of noise ran into max_tokens
        assert isinstance(json.loads(c.message.content), dict), c.message.content
        ended += 1
    assert ended >= 2, ended


def test_grammar_fields(client, srv):
    gbnf = 'root ::= "(" expr ")"\nexpr ::= [0-9]{1,3} (("+" | "*") [0-9]{1,3}){0,3}'
    for seed in range(4):
        r = client.completions.create(model=MODEL_ID, prompt="Sum:", temperature=1.0, max_tokens=60, seed=seed,
                                      extra_body={"grammar": gbnf})
        t = r.choices[0].text
        assert re.fullmatch(r"\(\d{1,3}([+*]\d{1,3}){0,3}\)", t), t
        assert r.choices[0].finish_reason == "stop"
        r = chat(client, seed=seed, extra_body={"guided_choice": ["alpha", "beta", "gamma δ"]})
        assert r.choices[0].message.content in ("alpha", "beta", "gamma δ"), r.choices[0].message.content
        r = chat(client, seed=seed, extra_body={"guided_regex": r"[a-c]{2}\d{1,2}"})
        assert re.fullmatch(r"[a-c]{2}\d{1,2}", r.choices[0].message.content), r.choices[0].message.content
        r = chat(client, seed=seed, extra_body={"json_schema": {"type": "array", "items": {"type": "boolean"},
                                                                "maxItems": 3}})
        assert all(isinstance(x, bool) for x in json.loads(r.choices[0].message.content))


class Point(pydantic.BaseModel):
    x: int = pydantic.Field(ge=0, le=9)
    label: str = pydantic.Field(max_length=5)
    ok: bool


def test_openai_parse_helper(client, srv):
    for seed in range(3):
        r = client.beta.chat.completions.parse(model=MODEL_ID, messages=[{"role": "user", "content": "A point."}],
                                               response_format=Point, temperature=1.0, max_tokens=200, seed=seed)
        p = r.choices[0].message.parsed
        assert isinstance(p, Point) and 0 <= p.x <= 9 and len(p.label) <= 5, r.choices[0].message.content


def test_bad_constraints(client, srv):
    ask = functools.partial(chat, client)
    rf = lambda schema, strict=False: {"type": "json_schema", "json_schema": {"name": "x", "schema": schema,
                                                                                "strict": strict}}
    expect_400(ask, "$ref", response_format=rf({"$ref": "#/$defs/missing"}))
    expect_400(ask, "base case", response_format=rf({"$defs": {"a": {"type": "object", "properties": {
        "a": {"$ref": "#/$defs/a"}}, "required": ["a"]}}, "$ref": "#/$defs/a"}))
    expect_400(ask, "multipleOf", response_format=rf({"type": "integer", "multipleOf": 3}, strict=True))
    expect_400(ask, "response_format.type", response_format={"type": "yaml"})
    expect_400(ask, "grammar", extra_body={"grammar": "root ::= (\"a\""})
    expect_400(ask, "left-recursive", extra_body={"grammar": "root ::= root \"a\" | \"b\""})
    expect_400(ask, "one output constraint", response_format={"type": "json_object"},
               extra_body={"grammar": "root ::= \"a\""})
    expect_400(ask, "guided_regex", extra_body={"guided_regex": "(a"})
    # A large schema (an enum of 100k strings, ~1.5 MB) is refused or served, in bounded time.
    big = {"type": "object", "properties": {"v": {"enum": [f"value-{i}" for i in range(100000)]}},
           "required": ["v"], "additionalProperties": False}
    r = chat(client, response_format=rf(big), seed=1, max_tokens=40)
    assert r.choices[0].finish_reason == "stop"
    assert json.loads(r.choices[0].message.content)["v"].startswith("value-")
    # The server still serves.
    r = chat(client, response_format={"type": "json_object"}, seed=3, max_tokens=50)
    assert r.choices[0].finish_reason in ("stop", "length")


def test_reasoning(client, srv):
    ask = functools.partial(chat, client)
    # A grammar makes the random model think in <think> markers; the server returns the
    # reasoning apart (reasoning_format deepseek: this model's template has no markers).
    gbnf = 'root ::= "<think>" [a-z ]{1,12} "</think>" "\\n"? [A-Z][a-z]{0,5} "."'
    for seed in range(3):
        kw = dict(seed=seed, max_tokens=60, extra_body={"grammar": gbnf, "reasoning_format": "deepseek"})
        r = chat(client, **kw)
        m = r.choices[0].message
        reasoning = m.model_extra.get("reasoning_content")
        assert re.fullmatch(r"[a-z ]{1,12}", reasoning or ""), (reasoning, m.content)
        assert re.fullmatch(r"[A-Z][a-z]{0,5}\.", m.content), m.content
        # Streamed: the same split, as delta.reasoning_content then delta.content.
        chunks = chat(client, stream=True, **kw)
        sr, sc = "", ""
        for ch in chunks:
            if ch.choices:
                sr += (ch.choices[0].delta.model_extra or {}).get("reasoning_content") or ""
                sc += ch.choices[0].delta.content or ""
        assert (sr, sc) == (reasoning, m.content), (sr, sc, reasoning, m.content)
        # reasoning_format none: the markers stay in the content.
        r = chat(client, seed=seed, max_tokens=60, extra_body={"grammar": gbnf, "reasoning_format": "none"})
        assert r.choices[0].message.content.startswith("<think>" + reasoning + "</think>"), r.choices[0].message.content
        # auto: this template writes no markers, so nothing is split.
        r = chat(client, seed=seed, max_tokens=60, extra_body={"grammar": gbnf})
        assert r.choices[0].message.content.startswith("<think>"), r.choices[0].message.content
    expect_400(ask, "reasoning_format", extra_body={"reasoning_format": "yes"})


def test_constraint_after_thinking(client, srv):
    """Qwen3's template (--chat-template-file): the model opens its reasoning itself, so a
    constrained reply is "<think>", free text up to "</think>", then the constrained answer.
    The random model never writes "</think>" (single-byte tokens): its whole reply is
    reasoning, cut by max_tokens. Thinking turned off in the prompt (chat_template_kwargs)
    or reasoning_format none: the constraint applies from the first token."""
    fmt = {"type": "json_object"}
    for seed in range(3):
        r = chat(client, response_format=fmt, seed=seed, max_tokens=30)
        m = r.choices[0].message
        assert r.choices[0].finish_reason == "length", r
        assert not m.content, m.content
        assert len(m.model_extra.get("reasoning_content") or "") > 0, m
        raw = chat(client, response_format=fmt, seed=seed, max_tokens=30, extra_body={"reasoning_format": "none"})
        assert not raw.choices[0].message.content.startswith("<think>"), raw.choices[0].message.content
        for extra in ({"reasoning_format": "none"}, {"chat_template_kwargs": {"enable_thinking": False}}):
            r = chat(client, response_format=fmt, seed=seed, max_tokens=120, extra_body=extra)
            if r.choices[0].finish_reason == "stop":
                assert isinstance(json.loads(r.choices[0].message.content), dict), r.choices[0].message.content
            else:
                assert r.choices[0].message.content.lstrip().startswith("{"), r.choices[0].message.content
            assert not (r.choices[0].message.model_extra.get("reasoning_content") or ""), r
    # Without a constraint the reply is free: the template's variables reach the template.
    r = chat(client, seed=0, max_tokens=5, extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    assert r.choices[0].finish_reason in ("stop", "length")
    ask = functools.partial(chat, client, max_tokens=5)
    expect_400(ask, "chat_template_kwargs", extra_body={"chat_template_kwargs": [1]})
    expect_400(ask, "chat_template_kwargs", extra_body={"chat_template_kwargs": {"messages": []}})


def main():
    checks = Checks()
    with Server("--parallel", "4") as srv:
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)
        for t in (test_json_schema_outputs_validate, test_json_object, test_grammar_fields, test_openai_parse_helper,
                  test_bad_constraints, test_reasoning):
            checks.run(t, client, srv)
    qwen3 = os.path.join(DATA, "chat_templates", "qwen3.jinja")
    with Server("--parallel", "2", "--chat-template-file", qwen3) as srv:
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)
        checks.run(test_constraint_after_thinking, client, srv)
    checks.finish()


if __name__ == "__main__":
    main()
