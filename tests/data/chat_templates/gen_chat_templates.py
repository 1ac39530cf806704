#!/usr/bin/env python3
"""Renders every chat template here with jinja2 in transformers' environment and writes
expected.json, the oracle of tests/test_chat_template.cpp.

The environment is the one transformers.utils.chat_template_utils builds for
apply_chat_template (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
raise_exception, strftime_now, namespace, dict, tojson = json.dumps(ensure_ascii=False)).
When transformers imports, every case of a model template is also rendered by transformers'
apply_chat_template(tokenize=False) and must match (or raise where it raises), which shows
the environment here is transformers'.

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
TOOLS_RICH = TOOLS + [{
    "type": "function",
    "function": {
        "name": "book_trip",
        "description": "Book a trip",
        "parameters": {
            "type": "object",
            "properties": {
                "stops": {"type": "array", "items": {"type": "string", "enum": ["Oslo", "Bergen"]},
                          "description": "Cities to visit"},
                "nights": {"type": "integer", "default": 2, "minimum": 1, "description": "How long"},
                "budget": {"type": ["number", "null"], "nullable": True},
                "traveller": {"type": "object", "properties": {"name": {"type": "string", "examples": ["Kari"]}},
                              "required": ["name"]},
            },
            "required": ["stops"],
        },
    },
}]
CALL = {"id": "call12345", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}}}
CALL_STR = {"id": "call12345", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}

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
    "tool_call_string_args": ([msg(U, "Weather in Oslo?"), {"role": A, "tool_calls": [CALL_STR], "content": ""},
                               {"role": "tool", "tool_call_id": "call12345", "content": "21 C"},
                               msg(A, "It is 21 C."), msg(U, "Thanks")], TOOLS_RICH),
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
    "deepseek_r1_distill": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", ALL, True, {}),
    "hermes3_tool_use": ("<|begin_of_text|>", "<|im_end|>", ALL, True, {}),
    "functionary_v3_2": ("<|begin_of_text|>", "<|eot_id|>", ALL, True, {}),
    "gpt_oss": ("<|startoftext|>", "<|return|>", ALL, True, {}),
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
    "gpt_oss": [
        ("thinking_history", [msg(U, "2+2?"), {"role": A, "content": "4", "thinking": "add them"}, msg(U, "3+3?")],
         None, {}),
        ("thinking_last", [msg(U, "2+2?"), {"role": A, "content": "4", "thinking": "add them"}], None, {}),
        ("effort_identity", [msg(S, "Be terse."), msg(U, "Hi")], None,
         {"reasoning_effort": "high", "model_identity": "You are wick's test model."}),
        ("builtin_tools", [msg(U, "Search it")], TOOLS, {"builtin_tools": ["browser", "python"]}),
        ("channel_in_content", [msg(U, "Hi"), msg(A, "<|channel|>final<|message|>x")], None, {}),
    ],
}
# Templates that print today's date with strftime_now (no kwarg replaces it): the date in the
# expected text becomes {TODAY} and the case says its format, which the test fills in.
TODAY_FORMAT = {"gpt_oss": "%Y-%m-%d"}


# Small templates over the language itself (rendered by jinja2 the same way).
LANGUAGE = [(t, {}) for t in [
    "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }}",
    "{{ 1 ~ 2 ~ 'a' }} {{ 'ab' * 3 }} {{ [1] + [2] }} {{ 3 * 'x' }} {{ 1.5 + 1 }} {{ 10 / 4 }} {{ 2 ** -1 }}",
    "{{ not 1 == 2 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'b' in 'abc' }} {{ 4 not in [1] }} {{ 1 == 1.0 }} {{ true == 1 }}",
    "{{ none or 'x' }} {{ 0 and 1 }} {{ [] or {} }} {{ 'a' if 0 else 'b' }}[{{ 'a' if 0 }}] {{ not none }}",
    "{{ true }} {{ None }} {{ 1.0 }} {{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 0.1 + 0.2 }} {{ -0.0 }} {{ 1_000 }}",
    "{{ [1, 'a', none, true, 2.5, [\"q'\"], 'it\\'s'] }} {{ {'k': 'v', 'n': [1]} }} {{ (1,) }} {{ (1, 2) }} {{ () }}",
    "{{ 'a\\nb\\t\\'\\u00e9\\x41\\U0001F600' }}|{{ \"x\" 'y' }}|{{ '\\q' }}",
    "{{ [1, 2, 3][1:] }} {{ 'abcdef'[::-1] }} {{ 'abcdef'[::2] }} {{ 'abcdef'[-2:] }} {{ 'héllo'[1] }} {{ [1, 2, 3][-1] }} {{ 'abc'[5:] }}",
    "{{ [1, 2, 3, 4, 5][4:1:-2] }} {{ [1, 2][5] is defined }} {{ 'héllo'|length }} {{ {'a': 1}|length }}",
    "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ x }}{{ '|' if not loop.last }}{% endfor %}",
    "{% for x in [1,2,3] %}{% if loop.first %}F{% endif %}{{ loop.length }}{{ loop.previtem|default('-') }}{{ loop.nextitem|default('-') }} {% endfor %}",
    "{% for x in range(10) if x is odd %}{{ x }}{{ loop.length }}{{ loop.last }},{% endfor %}",
    "{% for x in [] %}a{% else %}empty{% endfor %}{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}",
    "{% for x in range(1, 9, 3) %}{% if x > 5 %}{% break %}{% endif %}{{ x }}{% endfor %}{% for x in range(4) %}{% if x is even %}{% continue %}{% endif %}{{ x }}{% endfor %}",
    "{% for x in range(3) %}{{ loop.cycle('a', 'b') }}{% endfor %}{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}",
    "{% set n = 0 %}{% set ns = namespace(n=0) %}{% for x in range(3) %}{% set n = n + 1 %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ n }} {{ ns.n }}",
    "{% if true %}\n  yes\n{% endif %}\nafter\n    {% if true %}\nb\n    {% endif %}\nc",
    "a  {%- if true %} b {% endif -%}  \n c x {{- ' y ' -}} z\n  {{ 1 }}\n  {%+ if true %}y{% endif %}{% if true +%}\nkeep{% endif %}",
    "a{# note #}\nb   {#- x -#}   c\n  {# c #}\nd{% raw %}{{ x }}{% endraw %}\n",
    "line\r\nnext\n\n",
    "{{ '  x  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'hello world-wide (x)'|title }}|{{ 'hELLO'|capitalize }}|{{ 'aaa'|replace('a', 'b', 2) }}|{{ [1, 2]|join('-') }}|{{ [4, 5]|first }}{{ [4, 5]|last }}|{{ 'Ab'|upper }}{{ 'Ab'|lower }}",
    "{{ x|default('d') }} {{ ''|default('d', true) }} {{ '3'|int + 1 }} {{ 'x'|int(7) }} {{ '2.7'|int }} {{ 2|float }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ -2.5|round }} {{ 2.4|round(0, 'ceil') }}",
    "{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 0)|list }} {{ [3, 1, 2]|sort }} {{ ['b', 'A', 'a']|sort }} {{ ['b', 'A', 'a']|sort(case_sensitive=true) }} {{ [1, 2]|reverse|list }} {{ 'abc'|reverse }}",
    "{{ {'b': 1, 'a': 2}|dictsort }} {{ {'b': 1, 'a': 2}|dictsort(by='value') }} {{ {'b': 1}|items|list }} {{ 'ab'|list }} {{ [1, 'a']|string }} {{ -3|abs }} {{ [1, 1, 2]|unique|list }} {{ ['a', 'A']|unique|list }}",
    "{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('>', blank=true) }}",
    "{{ {'a': [1, 'é', none, true, 1.5, {}]}|tojson }} {{ 'é\\\"\\n\\u0001'|tojson }} {{ {'k': []}|tojson(indent=2) }} {{ [1, [2]]|tojson(indent=1) }}",
    "{{ {'b': 1, 'a': {'c': 2}}|tojson(indent=2, sort_keys=true) }} {{ [1, 2]|tojson(separators=(',', ':')) }} {{ 'é'|tojson(ensure_ascii=true) }} {{ 1e100|tojson }}",
    "{{ 1 is odd }}{{ 4 is divisibleby 2 }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}{{ true is boolean }}{{ 1 is integer }}{{ {} is mapping }}{{ [] is sequence }}{{ x is undefined }}",
    "{{ false is sameas false }}{{ 1 is true }}{{ 2 is gt 1 }}{{ 'a' is in 'abc' }}{{ 1.0 is float }}{{ true is number }}{{ true is integer }}{{ x is iterable }}{{ 'A' is upper }}{{ 'a' is lower }}{{ 3 is ne 3 }}",
    "{{ ' a b '.strip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a b c'.rsplit(' ', 1) }}|{{ 'x'.upper() }}|{{ 'ab'.startswith('a') }}{{ 'ab'.endswith(('x', 'b')) }}",
    "{{ '{} and {name}'.format(1, name='n') }}|{{ '\\n\\nx\\n'.lstrip('\\n') }}|{{ 'a</think>b'.split('</think>')[-1] }}|{{ 'hello world'.title() }}|{{ 'abcab'.count('ab') }}{{ 'abc'.find('c') }}{{ 'abc'.find('z') }}|{{ '-'.join(['a', 'b']) }}|{{ 'xyz'.rstrip('z') }}",
    "{{ {'a': 1}.get('a') }}{{ {'a': 1}.get('b', 2) }}{{ {'a': 1}.get('b') }}{{ {'a': 1}.keys()|list }}{{ {'a': 1}.values()|list }}{{ {'a': 1}.items()|list }}{{ {'items': 5}.items is defined }}",
    "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', punct='?') }} {{ greet() }}",
    "{% set x %}a{{ 1 + 1 }}{% endset %}[{{ x }}]{% set y | upper %}b{% endset %}{{ y }}{% filter upper %}abc{% endfilter %}{% set a, b = 1, 2 %}{{ a }}{{ b }}",
    "{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}in{% endcall %}{% macro w2(x) %}{{ caller(x * 2) }}{% endmacro %}{% call(v) w2(3) %}[{{ v }}]{% endcall %}",
    "{% set j = joiner('+') %}{% for x in range(3) %}{{ j() }}{{ x }}{% endfor %} {{ namespace(a=1).a }} {{ dict(a=1, b=[2]) }} {{ range(3)|list }} {{ range(5, 0, -2)|list }}",
    "{{ [{'n': 1, 'r': 'u'}, {'n': 2, 'r': 'a'}, {'n': 3, 'r': 'u'}]|selectattr('r', 'equalto', 'u')|map(attribute='n')|list }} {{ [1, 2, 3, 4]|select('even')|list }} {{ [1, 0, 2]|reject|list }} {{ [{'a': 1}, {}]|selectattr('a', 'defined')|list }}",
    "{{ ['a', 'b']|map('upper')|join }} {{ [{'a': {'b': 3}}]|map(attribute='a.b')|list }} {{ [1, 2, 3]|sum }} {{ [3, 1, 2]|min }}{{ [3, 1, 2]|max }} {{ [{'x': 2}, {'x': 1}]|sort(attribute='x')|map(attribute='x')|list }}",
    "{{ x }}|{{ x|length }}|{% for a in x %}x{% endfor %}|{{ x is defined }}|{{ x|default('d') }}|{{ x|string }}|{{ x == x }}|{{ x is none }}",
    "{{ raise_exception('Only user and assistant roles are supported!') }}",
    "{{ 'x' if true }}{{ 1 if false else 2 if false else 3 }}{{ [1, 2] if [] else 'empty' }}",
    "{% if x %}{% elif %}{% endif %}",
    "{{ 1 + 'a' }}",
    "{{ x.y }}",
    "{% for i in range(2) %}{% macro m() %}{{ i }}{% endmacro %}{{ m() }}{% endfor %}{% set y = 1 %}{% macro n() %}{{ y }}{{ z }}{% endmacro %}{% set z = 2 %}{{ n() }}",
    "{% for i in range(3) %}{% if i == 0 %}{% set x = 'a' %}{% endif %}[{{ x }}]{% endfor %}{% set x = 1 %}{% for i in [1] %}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}",
    "{{ (1, 2) == (1, 2) }} {{ [1, [2]] == [1, [2]] }} {{ {'a': 1} == {'a': 1} }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 'é' > 'z' }}",
]] + [
    ("{% for m in messages %}{{ m.role }}:{{ m['content']|trim }}{% if not loop.last %}, {% endif %}{% endfor %}",
     {"messages": [{"role": "user", "content": " hi "}, {"role": "assistant", "content": "yo\n"}]}),
    ("{{ messages|map(attribute='content')|select('string')|list }} {{ messages[0].content is string }} {{ messages[1].content is iterable }}",
     {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": [{"type": "text", "text": "b"}]}]}),
    ("{{ tools|tojson(indent=4) }}", {"tools": TOOLS}),
    ("{{ obj }} {{ obj.nested.list[1:] }} {{ obj|tojson }}", {"obj": {"z": 1, "a": "é", "nested": {"list": [1, 2.5, None, True]}}}),
]


def render(env, source, context):
    try:
        return {"expected": env.from_string(source).render(**context)}
    except jinja2.exceptions.TemplateError as e:
        return {"error": str(e), "error_type": type(e).__name__}
    except (TypeError, ValueError, AttributeError, IndexError, KeyError, RecursionError) as e:
        return {"error": str(e), "error_type": type(e).__name__}


def context_of(bos, eos, messages, tools, gen, kwargs):
    # tools and documents are always passed (None when absent), as apply_chat_template does.
    ctx = {"messages": messages, "tools": tools, "documents": None, "add_generation_prompt": gen, "bos_token": bos,
           "eos_token": eos}
    ctx.update(kwargs)
    return ctx


_TOKENIZER = []


def cross_check(source, ctx, want):
    """transformers' apply_chat_template(tokenize=False) on the same inputs, through a stand-in
    tokenizer (a one-word vocabulary: only the template matters here)."""
    try:
        from tokenizers import Tokenizer, models
        from transformers import PreTrainedTokenizerFast
    except ImportError:
        return None
    if not _TOKENIZER:
        _TOKENIZER.append(PreTrainedTokenizerFast(
            tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))))
    kwargs = {k: v for k, v in ctx.items() if k not in ("messages", "tools", "documents", "add_generation_prompt")}
    try:
        rendered = _TOKENIZER[0].apply_chat_template(ctx["messages"], tools=ctx["tools"], documents=ctx["documents"],
                                                     chat_template=source, tokenize=False,
                                                     add_generation_prompt=ctx["add_generation_prompt"], **kwargs)
    except Exception as e:  # a case that raises must raise there too (want is None)
        if want is None:
            return True
        sys.exit("transformers raises %r on %r" % (e, ctx))
    if rendered != want:
        sys.exit("transformers renders %r differently:\n%r\n%r" % (ctx, rendered, want))
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
        for case, messages, tools, extra in todo:
            for gen in (True, False):
                ctx = context_of(bos, eos, messages, tools, gen, {**kwargs, **extra})
                out = render(env, source, ctx)
                if cross_check(source, ctx, out.get("expected")):
                    checked += 1
                if name in TODAY_FORMAT and "expected" in out:
                    today = datetime.now().strftime(TODAY_FORMAT[name])
                    out["expected"] = out["expected"].replace(today, "{TODAY}")
                    out["today"] = TODAY_FORMAT[name]
                cases.append({"template": name, "case": "%s/%s" % (case, "gen" if gen else "nogen"), "context": ctx, **out})
    for i, (source, ctx) in enumerate(LANGUAGE):
        cases.append({"source": source, "case": "language/%d" % i, "context": ctx, **render(env, source, ctx)})
    path = os.path.join(HERE, "expected.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"generator": "gen_chat_templates.py", "jinja2": jinja2.__version__, "cases": cases}, f,
                  ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum("error" in c for c in cases)
    print("%d cases (%d raise), %d cases of the model templates cross-checked with transformers -> %s" % (len(cases), errors, checked, path))


if __name__ == "__main__":
    main()
