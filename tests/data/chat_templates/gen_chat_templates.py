#!/usr/bin/env python3
"""Renders every chat template here with jinja2 in transformers' environment and writes
expected.json, the oracle of tests/test_chat_template.cpp.

The environment is the one transformers.utils.chat_template_utils builds for
apply_chat_template (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
raise_exception, strftime_now, namespace, dict, tojson = json.dumps(ensure_ascii=False)).
When transformers imports, the first case of each template is also rendered by transformers'
own render_jinja_template and must match, which shows the environment here is the same.

Run from anywhere: python3 tests/data/chat_templates/gen_chat_templates.py
"""
import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    env.globals["dict"] = dict
    env.globals["namespace"] = jinja2.utils.Namespace
    return env


U, A, S = "user", "assistant", "system"


def msg(role, content):
    return {"role": role, "content": content}


UNICODE = "Grüße, 世界! 🙂 \"quoted\" and a \\ backslash\ttab"
TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city, e.g. Oslo"},
                           "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"],
        },
    },
}]
CALL = {"id": "call12345", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}}}

CONVERSATIONS = {
    "user_only": [msg(U, "Hello!")],
    "system_user": [msg(S, "You are terse."), msg(U, "What is 2+2?")],
    "multi_turn": [msg(U, "Hi."), msg(A, "Hello, how can I help?"), msg(U, "Tell me a joke.")],
    "system_multi_turn": [msg(S, "Be kind."), msg(U, "Hi."), msg(A, "Hello!"), msg(U, "Bye.")],
    "ends_with_assistant": [msg(U, "Ping"), msg(A, "Pong")],
    "unicode": [msg(U, UNICODE), msg(A, "Ça va — très bien ✓"), msg(U, "日本語で答えて")],
    "whitespace": [msg(U, "  padded question \n\n"), msg(A, "\n  padded answer  "), msg(U, "\tlast\t")],
    "empty_content": [msg(U, ""), msg(A, ""), msg(U, "")],
    "long_history": [msg(U if i % 2 == 0 else A, "turn %d" % i) for i in range(9)],
    "bad_alternation": [msg(U, "one"), msg(U, "two")],
    "assistant_first": [msg(A, "I speak first."), msg(U, "ok")],
    "unknown_role": [msg("narrator", "Once upon a time"), msg(U, "go on")],
}
TOOL_CONVERSATIONS = {
    "tools_user": ([msg(U, "Weather in Oslo?")], TOOLS),
    "tools_system_user": ([msg(S, "Use tools when useful."), msg(U, "Weather in Oslo?")], TOOLS),
    "tool_call_roundtrip": ([msg(U, "Weather in Oslo?"), {"role": A, "tool_calls": [CALL], "content": ""},
                             {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "{\"temp\": 21}"},
                             ], TOOLS),
}

# name -> (bos, eos, conversation names, tool conversations?, extra kwargs)
ALL = list(CONVERSATIONS)
TEMPLATES = {
    "llama2_chat": ("<s>", "</s>", ALL, False, {}),
    "llama3_instruct": ("<|begin_of_text|>", "<|eot_id|>", ALL, False, {}),
    "llama3_1_instruct": ("<|begin_of_text|>", "<|eot_id|>", ALL, True, {}),
    "llama3_2_instruct": ("<|begin_of_text|>", "<|eot_id|>", ALL, True, {"date_string": "02 Dec 2026"}),
    "mistral_v0_1": ("<s>", "</s>", ALL, False, {}),
    "mistral_v0_2": ("<s>", "</s>", ALL, False, {}),
    "mistral_v0_3": ("<s>", "</s>", ALL, True, {}),
    "mistral_nemo": ("<s>", "</s>", ALL, True, {}),
    "qwen2_5_instruct": ("", "<|im_end|>", ALL, True, {}),
    "qwen3": ("", "<|im_end|>", ALL, True, {}),
    "gemma2_it": ("<bos>", "<eos>", ALL, False, {}),
    "gemma3_it": ("<bos>", "<eos>", ALL, False, {}),
    "phi3_mini": ("<s>", "<|endoftext|>", ALL, False, {}),
    "phi3_5_mini": ("<s>", "<|endoftext|>", ALL, False, {}),
    "zephyr": ("<s>", "</s>", ALL, False, {}),
    "deepseek_coder": ("<｜begin▁of▁sentence｜>", "<|EOT|>", ALL, False, {}),
}
# Template-specific extras: (case name, messages, tools, kwargs)
EXTRA = {
    "qwen3": [
        ("thinking_history", [msg(U, "2+2?"), msg(A, "<think>\nadd them\n</think>\n\n4"), msg(U, "3+3?")], None, {}),
        ("thinking_last", [msg(U, "2+2?"), {"role": A, "content": "4", "reasoning_content": "add them"}], None, {}),
        ("enable_thinking_false", [msg(U, "Hi")], None, {"enable_thinking": False}),
    ],
    "gemma3_it": [
        ("content_list", [{"role": S, "content": [{"type": "text", "text": "Sys text"}]},
                          {"role": U, "content": [{"type": "image"}, {"type": "text", "text": " describe "}]}], None, {}),
    ],
    "llama3_1_instruct": [
        ("tools_in_system", [msg(S, "sys"), msg(U, "Weather?")], TOOLS, {"tools_in_user_message": False}),
        ("builtin_tools", [msg(U, "Search it")], None, {"builtin_tools": ["brave_search", "code_interpreter"]}),
    ],
    "llama2_chat": [("default_prompt", [msg(U, "Hi")], None, {"USE_DEFAULT_PROMPT": True})],
}


def render(env, source, context):
    try:
        return {"expected": env.from_string(source).render(**context)}
    except jinja2.exceptions.TemplateError as e:
        return {"error": str(e), "error_type": type(e).__name__}
    except (TypeError, ValueError, AttributeError, IndexError, KeyError) as e:
        return {"error": str(e), "error_type": type(e).__name__}


def context_of(bos, eos, messages, tools, gen, kwargs):
    ctx = {"messages": messages, "add_generation_prompt": gen, "bos_token": bos, "eos_token": eos}
    if tools is not None:
        ctx["tools"] = tools
    ctx.update(kwargs)
    return ctx


def cross_check(source, ctx, want):
    """transformers' own renderer on the same inputs (tools/documents None when absent)."""
    try:
        from transformers.utils.chat_template_utils import render_jinja_template
    except ImportError:
        return None
    kwargs = {k: v for k, v in ctx.items() if k not in ("messages", "tools", "add_generation_prompt")}
    rendered, _ = render_jinja_template(conversations=[ctx["messages"]], tools=ctx.get("tools"), chat_template=source,
                                        add_generation_prompt=ctx["add_generation_prompt"], **kwargs)
    if rendered[0] != want:
        sys.exit("transformers renders %r differently:\n%r\n%r" % (ctx, rendered[0], want))
    return True


def main():
    env = make_env()
    cases = []
    checked = 0
    for name, (bos, eos, convs, tools_ok, kwargs) in TEMPLATES.items():
        source = open(os.path.join(HERE, name + ".jinja"), encoding="utf-8").read()
        todo = [(c, CONVERSATIONS[c], None, {}) for c in convs]
        if tools_ok:
            todo += [(c, m, t, {}) for c, (m, t) in TOOL_CONVERSATIONS.items()]
        todo += EXTRA.get(name, [])
        first = True
        for case, messages, tools, extra in todo:
            for gen in (True, False):
                ctx = context_of(bos, eos, messages, tools, gen, {**kwargs, **extra})
                out = render(env, source, ctx)
                if first and "expected" in out and cross_check(source, ctx, out["expected"]):
                    checked += 1
                    first = False
                cases.append({"template": name, "case": "%s/%s" % (case, "gen" if gen else "nogen"), "context": ctx, **out})
    path = os.path.join(HERE, "expected.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"generator": "gen_chat_templates.py", "jinja2": jinja2.__version__, "cases": cases}, f,
                  ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum("error" in c for c in cases)
    print("%d cases (%d raise), %d templates cross-checked with transformers -> %s" % (len(cases), errors, checked, path))


if __name__ == "__main__":
    main()
