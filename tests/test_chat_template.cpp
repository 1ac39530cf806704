// Chat templates against jinja2 in transformers' environment: every case of
// data/chat_templates/expected.json (20 real model templates, written by
// gen_chat_templates.py) byte for byte, then the language itself with hand-derived
// expectations, then hostile templates.
#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/golden.h"
#include "wick/error.h"
#include "wick/text/chat_template.h"

namespace wick {
namespace {

using text::ChatMessage;
using text::ChatTemplate;
using text::ChatTemplateLimits;
using text::ChatTemplateOptions;
using Json = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string render(std::string_view tmpl, const std::string& context = "{}") {
  return ChatTemplate::parse(tmpl).render_json(context);
}

// The error message of rendering, or "" when it renders.
std::string render_error(std::string_view tmpl, const std::string& context = "{}") {
  try {
    render(tmpl, context);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ChatTemplate, Jinja2Fixtures) {
  const Json doc = Json::parse(read_file(test::data_path("chat_templates/expected.json")));
  std::map<std::string, ChatTemplate> parsed;
  size_t rendered = 0, raised = 0, snippets = 0;
  for (const Json& c : doc["cases"]) {
    const bool snippet = c.contains("source");
    const std::string name = snippet ? "" : c["template"].get<std::string>();
    const std::string label = (snippet ? c["source"].get<std::string>() : name) + " " + c["case"].get<std::string>();
    const std::string context = c["context"].dump();
    snippets += snippet;
    std::string got, error;
    ErrorKind kind = ErrorKind::Internal;
    try {
      if (snippet) {
        got = ChatTemplate::parse(c["source"].get<std::string>()).render_json(context);
      } else {
        if (!parsed.count(name))
          parsed.emplace(name, ChatTemplate::parse(read_file(test::data_path("chat_templates/" + name + ".jinja"))));
        got = parsed.at(name).render_json(context);
      }
    } catch (const Error& e) {
      error = e.what();
      kind = e.kind();
    }
    if (c.contains("expected")) {
      EXPECT_EQ(error, "") << label;
      std::string want = c["expected"].get<std::string>();
      if (c.contains("today")) {  // strftime_now's local date, written {TODAY} by the generator
        const std::time_t now = std::time(nullptr);
        std::tm tm{};
        localtime_r(&now, &tm);
        char today[64];
        std::strftime(today, sizeof today, c["today"].get<std::string>().c_str(), &tm);
        for (size_t at; (at = want.find("{TODAY}")) != std::string::npos;) want.replace(at, 7, today);
      }
      EXPECT_EQ(got, want) << label;
      ++rendered;
      continue;
    }
    ++raised;
    EXPECT_NE(error, "") << label << " rendered, jinja2 raised " << c["error_type"] << ": " << c["error"];
    const std::string type = c["error_type"].get<std::string>();
    if (type == "TemplateSyntaxError") {
      EXPECT_EQ(kind, ErrorKind::Format) << label << ": " << error;
    } else {
      EXPECT_EQ(kind, ErrorKind::InvalidArgument) << label << ": " << error;
    }
    // raise_exception(msg) carries the template's message; Python's own TypeError wording
    // (and jinja2's) is not reproduced.
    if (type == "TemplateError") {
      EXPECT_NE(error.find(c["error"].get<std::string>()), std::string::npos) << label << ": " << error;
    }
  }
  EXPECT_EQ(parsed.size(), 20u);
  EXPECT_GE(rendered, 500u);
  EXPECT_GE(raised, 80u);
  EXPECT_GE(snippets, 40u);
}

TEST(ChatTemplate, RenderWithMessages) {
  const ChatTemplate t = ChatTemplate::parse(read_file(test::data_path("chat_templates/llama3_instruct.jinja")));
  ChatTemplateOptions o;
  o.bos_token = "<|begin_of_text|>";
  const std::vector<ChatMessage> chat = {{"system", " Be brief. "}, {"user", "Hi"}};
  EXPECT_EQ(
      t.render(chat, o),
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  o.add_generation_prompt = false;
  o.extra_context_json = R"({"bos_token": "[B]"})";
  EXPECT_EQ(t.render({{"user", "x"}}, o), "[B]<|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");
  // Llama 3.2 without date_string asks strftime_now for today's date.
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char today[32];
  std::strftime(today, sizeof today, "Today Date: %d %b %Y\n", &tm);
  const std::string llama32 =
      ChatTemplate::parse(read_file(test::data_path("chat_templates/llama3_2_instruct.jinja"))).render({{"user", "x"}});
  EXPECT_NE(llama32.find(today), std::string::npos) << llama32;
  // tools and documents are None, as transformers passes them.
  EXPECT_EQ(ChatTemplate::parse("{{ tools is none }}{{ documents }}{{ messages|length }}").render({}), "TrueNone0");
}

TEST(ChatTemplate, WhitespaceControl) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before it.
  EXPECT_EQ(render("{% if true %}\n  yes\n{% endif %}\nafter"), "  yes\nafter");
  EXPECT_EQ(render("a\n    {% if true %}\nb\n    {% endif %}\nc"), "a\nb\nc");
  EXPECT_EQ(render("a  {%- if true %} b {% endif -%}  \n c"), "a b c");
  EXPECT_EQ(render("x {{- ' y ' -}} z"), "x y z");
  EXPECT_EQ(render("x\n  {{ 1 }}"), "x\n  1");  // lstrip_blocks leaves {{ }} alone
  EXPECT_EQ(render("x\n  {%+ if true %}y{% endif %}"), "x\n  y");
  EXPECT_EQ(render("{% if true +%}\nkeep{% endif %}"), "\nkeep");
  EXPECT_EQ(render("a{# note #}\nb   {#- x -#}   c"), "abc");
  EXPECT_EQ(render("a\n  {# c #}\nb"), "a\nb");
  EXPECT_EQ(render("line\r\nnext\n"), "line\nnext");  // universal newlines, one trailing dropped
  EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
}

TEST(ChatTemplate, Expressions) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}"), "7 9 64 4");
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 6 / 3 }}"), "3 -4 2 3.5 2.0");
  EXPECT_EQ(render("{{ 1 ~ 2 ~ 'a' }} {{ 'a' + 'b' }} {{ 'ab' * 3 }} {{ [1] + [2] }}"), "12a ab ababab [1, 2]");
  EXPECT_EQ(render("{{ not 1 == 2 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'b' in 'abc' }} {{ 4 not in [1] }}"),
            "True True False True True");
  EXPECT_EQ(render("{{ none or 'x' }} {{ 0 and 1 }} {{ [] or {} }} {{ 'a' if 0 else 'b' }}[{{ 'a' if 0 }}]"),
            "x 0 {} b[]");
  EXPECT_EQ(render("{{ true }} {{ None }} {{ 1.0 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 1_000 }}"),
            "True None 1.0 1e+20 0.30000000000000004 1000");
  EXPECT_EQ(render("{{ [1, 'a', none, true, 2.5, [\"q'\"]] }} {{ {'k': 'v', 'n': [1]} }} {{ (1,) }} {{ (1, 2) }}"),
            "[1, 'a', None, True, 2.5, [\"q'\"]] {'k': 'v', 'n': [1]} (1,) (1, 2)");
  EXPECT_EQ(render("{{ 'a\\nb\\t\\'\\u00e9\\x41' }}|{{ \"x\" 'y' }}"), "a\nb\t'éA|xy");
  EXPECT_EQ(render("{{ -1|abs }} {{ 'abc'|upper|lower }} {{ 1 ~ 2|string }}"), "1 abc 12");
}

TEST(ChatTemplate, AccessAndSlicing) {
  const std::string ctx = R"({"m": [{"role": "user", "content": "héllo"}, {"role": "x"}], "s": "abcdef"})";
  EXPECT_EQ(render("{{ m[0].role }} {{ m[0]['content'] }} {{ m[-1].role }} {{ m[1].content is defined }}", ctx),
            "user héllo x False");
  EXPECT_EQ(render("{{ s[1:3] }} {{ s[::-1] }} {{ s[::2] }} {{ s[-2:] }} {{ s[:-1] }} {{ m[1:]|length }}", ctx),
            "bc fedcba ace ef abcde 1");
  EXPECT_EQ(render("{{ m[0].content[1] }} {{ m[0].content|length }} {{ m[5] is defined }}", ctx), "é 5 False");
  // Attribute of undefined is an error, as jinja2's default Undefined makes it.
  EXPECT_NE(render_error("{{ nope.x }}").find("'nope' is undefined"), std::string::npos);
  EXPECT_NE(render_error("{{ m[1].content.x }}", ctx).find("no attribute 'content'"), std::string::npos);
  EXPECT_EQ(render("[{{ nope }}]{{ nope|length }}{% for x in nope %}x{% endfor %}{{ nope is iterable }}"), "[]0True");
}

TEST(ChatTemplate, Loops) {
  EXPECT_EQ(render("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ x }}"
                   "{{ '|' if not loop.last }}{% endfor %}"),
            "103a|212b|321c");
  EXPECT_EQ(render("{% for x in [1,2,3] %}{% if loop.first %}F{% endif %}{{ loop.length }}"
                   "{{ loop.previtem|default('-') }}{{ loop.nextitem|default('-') }} {% endfor %}"),
            "F3-2 313 32- ");
  EXPECT_EQ(render("{% for x in range(10) if x is odd %}{{ x }}{{ loop.length }},{% endfor %}"), "15,35,55,75,95,");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(render("{% for x in range(1, 9, 3) %}{% if x > 5 %}{% break %}{% endif %}{{ x }}{% endfor %}"), "14");
  EXPECT_EQ(render("{% for x in range(4) %}{% if x is even %}{% continue %}{% endif %}{{ x }}{% endfor %}"), "13");
  EXPECT_EQ(render("{% for x in range(3) %}{{ loop.cycle('a', 'b') }}{% endfor %}"), "aba");
  // A set inside a loop stays in the loop; a namespace carries values out.
  EXPECT_EQ(render("{% set n = 0 %}{% set ns = namespace(n=0) %}{% for x in range(3) %}{% set n = n + 1 %}"
                   "{% set ns.n = ns.n + 1 %}{% endfor %}{{ n }} {{ ns.n }}"),
            "0 3");
}

TEST(ChatTemplate, FiltersAndTests) {
  const std::string ctx = R"({"m": [{"role": "user", "n": 2}, {"role": "bot", "n": 1}, {"role": "user", "n": 3}]})";
  EXPECT_EQ(
      render("{{ m|selectattr('role', 'equalto', 'user')|map(attribute='n')|list }} "
             "{{ m|rejectattr('role', 'eq', 'user')|list|length }} {{ m|map(attribute='role')|unique|join(',') }}",
             ctx),
      "[2, 3] 1 user,bot");
  EXPECT_EQ(render("{{ [3, 1, 2]|sort }} {{ m|sort(attribute='n', reverse=true)|map(attribute='n')|join }} "
                   "{{ ['b', 'A', 'a']|sort }} {{ [1, 2]|reverse|list }} {{ {'b': 1, 'a': 2}|dictsort }}",
                   ctx),
            "[1, 2, 3] 321 ['A', 'a', 'b'] [2, 1] [('a', 2), ('b', 1)]");
  EXPECT_EQ(render("{{ '  x  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'hello world'|title }}|{{ 'hELLO'|capitalize }}|"
                   "{{ 'aaa'|replace('a', 'b', 2) }}|{{ [1, 2]|join('-') }}|{{ [4, 5]|first }}{{ [4, 5]|last }}"),
            "x|hi|Hello World|Hello|bba|1-2|45");
  EXPECT_EQ(render("{{ x|default('d') }} {{ ''|default('d', true) }} {{ '3'|int + 1 }} {{ 'x'|int(7) }} "
                   "{{ 2|float }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ [1, 2, 3, 4, 5]|batch(2)|list }}"),
            "d d 4 7 2.0 2.57 2.0 [[1, 2], [3, 4], [5]]");
  EXPECT_EQ(render("{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}"), "a\n  b\n\n  c|  a\n  b");
  EXPECT_EQ(
      render("{{ {'a': [1, 'é', none, true, 1.5]}|tojson }} {{ 'é\"\\n'|tojson }} {{ {'k': []}|tojson(indent=2) }}"),
      "{\"a\": [1, \"é\", null, true, 1.5]} \"é\\\"\\n\" {\n  \"k\": []\n}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': {'c': 2}}|tojson(indent=2, sort_keys=true) }}"),
            "{\n  \"a\": {\n    \"c\": 2\n  },\n  \"b\": 1\n}");
  EXPECT_EQ(render("{{ 1 is odd }}{{ 4 is divisibleby 2 }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}"
                   "{{ true is boolean }}{{ 1 is integer }}{{ {} is mapping }}{{ [] is sequence }}{{ x is undefined }}"
                   "{{ false is sameas false }}{{ 1 is true }}{{ 2 is gt 1 }}{{ 'a' is in 'abc' }}"),
            "TrueTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseTrueTrue");
  EXPECT_EQ(
      render("{{ ' a b '.strip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'x'.upper() }}|"
             "{{ 'ab'.startswith('a') }}{{ 'ab'.endswith(('x', 'b')) }}|{{ '{} and {name}'.format(1, name='n') }}|"
             "{{ '\\n\\nx\\n'.lstrip('\\n') }}|{{ 'a</think>b'.split('</think>')[-1] }}"),
      "a b|['a', 'b', '', 'c']|['a', 'b']|X|TrueTrue|1 and n|x\n|b");
  EXPECT_EQ(
      render("{{ {'a': 1}.get('a') }}{{ {'a': 1}.get('b', 2) }}{{ {'a': 1}.keys()|list }}{{ {'a': 1}.values()|list }}"),
      "12['a'][1]");
}

TEST(ChatTemplate, MacrosSetBlocksAndCalls) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ "
                   "greet('B', punct='?') }}"),
            "Hi A! Hi B?");
  EXPECT_EQ(render("{% set x %}a{{ 1 + 1 }}{% endset %}[{{ x }}]{% set y | upper %}b{% endset %}{{ y }}"), "[a2]B");
  EXPECT_EQ(render("{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}in{% endcall %}"), "<in>");
  EXPECT_EQ(render("{% filter upper %}abc{% endfilter %}"), "ABC");
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
  EXPECT_EQ(render("{% generation %}kept{% endgeneration %}"), "kept");
  // strftime_now is the local date, as Python's datetime.now().strftime.
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char year[8];
  std::strftime(year, sizeof year, "%Y", &tm);
  EXPECT_EQ(render("{{ strftime_now('%Y') }}"), year);
}

TEST(ChatTemplate, ErrorsNameTheirPlace) {
  auto kind_of = [](std::string_view tmpl, const std::string& ctx = "{}") {
    try {
      render(tmpl, ctx);
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::Internal;
  };
  EXPECT_EQ(kind_of("{{ raise_exception('Roles must alternate') }}"), ErrorKind::InvalidArgument);
  EXPECT_NE(render_error("ab\n  {{ raise_exception('Roles must alternate') }}").find("line 2:6"), std::string::npos);
  EXPECT_NE(render_error("ab\n  {{ raise_exception('Roles must alternate') }}").find("Roles must alternate"),
            std::string::npos);
  for (const char* bad :
       {"{{ x", "{% if x %}", "{% for x in y %}", "{# open", "{{ 'abc }}", "{% endif %}", "{{ (1 }}",
        "{% if %}{% endif %}", "{{ 1 + }}", "{% set %}", "{% include 'x' %}", "{{ x | }}", "{{ 1 2 }}",
        "{% for in x %}{% endfor %}", "{{ a[] }}", "{{ 99999999999999999999 }}", "{{ x !y }}"}) {
    EXPECT_EQ(kind_of(bad), ErrorKind::Format) << bad;
    EXPECT_NE(render_error(bad).find("line 1:"), std::string::npos) << bad << ": " << render_error(bad);
  }
  EXPECT_EQ(kind_of("{{ 1 + 'a' }}"), ErrorKind::InvalidArgument);
  EXPECT_EQ(kind_of("{{ 1 // 0 }}"), ErrorKind::InvalidArgument);
  EXPECT_EQ(kind_of("{{ [1].append(2) }}"), ErrorKind::InvalidArgument);  // the sandbox forbids mutation
  EXPECT_EQ(kind_of("{{ x|nosuchfilter }}"), ErrorKind::Unsupported);
  EXPECT_EQ(kind_of("{{ 9223372036854775807 + 1 }}"), ErrorKind::InvalidArgument);
  EXPECT_EQ(kind_of("{}", "[1]"), ErrorKind::Format);
  EXPECT_EQ(kind_of("{}", "{bad json"), ErrorKind::Format);
}

TEST(ChatTemplate, HostileTemplates) {
  // Deep nesting in the source, by recursion in the parser or by long chains it builds in a
  // loop: one Format error, not a stack overflow.
  auto rep = [](std::string_view piece, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += piece;
    return s;
  };
  for (const std::string& deep :
       {"{{ " + rep("(", 10000) + "1" + rep(")", 10000) + " }}", "{{ " + rep("[", 10000) + rep("]", 10000) + " }}",
        "{{ " + rep("-", 20000) + "1 }}", "{{ " + rep("not ", 10000) + "1 }}", "{{ 1" + rep(" + 1", 20000) + " }}",
        "{{ x" + rep(".a", 20000) + " }}", "{{ x" + rep("|trim", 20000) + " }}", "{{ x" + rep("[0]", 20000) + " }}",
        "{{ x" + rep("()", 20000) + " }}", "{{ 1" + rep(" if 1 else 2", 5000) + " }}", rep("{% if true %}", 10000),
        rep("{% for x in y %}", 10000)}) {
    try {
      ChatTemplate::parse(deep);
      ADD_FAILURE() << "parsed " << deep.substr(0, 30);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Format);
      EXPECT_NE(std::string(e.what()).find("nesting deeper than"), std::string::npos) << e.what();
    }
  }
  ChatTemplateLimits small;
  small.max_steps = 100000;
  small.max_output_bytes = 1 << 16;
  auto limited = [&](std::string_view tmpl) -> std::string {
    try {
      ChatTemplate::parse(tmpl, small).render_json("{}");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
      std::cerr << "  " << tmpl.substr(0, 60) << " -> " << e.what() << "\n";
      return e.what();
    }
    return "";
  };
  // An infinite-ish loop: steps run out (only the step limit is small here).
  ChatTemplateLimits few_steps;
  few_steps.max_steps = 100000;
  try {
    ChatTemplate::parse("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", few_steps)
        .render_json("{}");
    ADD_FAILURE() << "a 10^6-iteration loop ran within 10^5 steps";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_steps"), std::string::npos) << e.what();
  }
  // Linear-time work in every step (s.find on a 10 MB string) runs into the time limit.
  ChatTemplateLimits short_time;
  short_time.max_seconds = 0.2;
  try {
    ChatTemplate::parse("{% set s = 'x' * 10000000 %}{% for i in range(1000000) %}{{ s.find('y') }}{% endfor %}",
                        short_time)
        .render_json("{}");
    ADD_FAILURE() << "10^13 bytes searched";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_seconds"), std::string::npos) << e.what();
  }
  // Output growth, repetition and lists that ask for too much.
  EXPECT_NE(limited("{% for i in range(100000) %}xxxxxxxxxx{% endfor %}").find("max_output_bytes"), std::string::npos);
  EXPECT_NE(limited("{{ 'x' * 1000000000000 }}").find("max_output_bytes"), std::string::npos);
  EXPECT_EQ(limited("{{ '' * 1000000000000 }}{{ [] * 1000000000000 }}"), "");  // found by fuzz_chat_template
  EXPECT_NE(limited("{{ range(1000000000000000)|length }}").find("max_container_items"), std::string::npos);
  EXPECT_NE(limited("{{ [1] * 1000000000000 }}").find("max_container_items"), std::string::npos);
  // Recursion through macros, self-referencing namespaces, nesting built at run time.
  EXPECT_NE(limited("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("max_depth"), std::string::npos);
  EXPECT_NE(limited("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}").find("nested deeper"),
            std::string::npos);
  // A macro kept past its loop in a namespace refuses to run rather than read a freed scope.
  EXPECT_NE(limited("{% set ns = namespace() %}{% for i in range(2) %}{% macro m() %}{{ i }}{% endmacro %}"
                    "{% set ns.m = m %}{% endfor %}{{ ns.m() }}")
                .find("after the scope it was defined in ended"),
            std::string::npos);
  EXPECT_NE(limited("{% set ns = namespace(x=1) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}")
                .find("nested deeper"),
            std::string::npos);
  // Recursion that is deep in both macros and expressions runs out of its stack budget.
  ChatTemplateLimits tight;
  tight.max_stack_bytes = 64 << 10;
  std::string deep_macro =
      "{% macro f(n) %}{% if n > 0 %}{{ (((((f(n - 1))))) ~ 'x')|trim }}{% endif %}{% endmacro %}{{ f(150) }}";
  try {
    ChatTemplate::parse(deep_macro, tight).render_json("{}");
    ADD_FAILURE() << "rendered with a 64 KiB stack budget";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_stack_bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ChatTemplate::parse(deep_macro).render_json("{}"), std::string(150, 'x'));
  // Many keys in the context or in a dict literal: time in proportion, not quadratic.
  std::string wide = "{\"messages\": []";
  for (int i = 0; i < 200000; ++i) wide += ", \"k" + std::to_string(i) + "\": " + std::to_string(i);
  wide += "}";
  EXPECT_EQ(ChatTemplate::parse("{{ k199999 }} {{ k7 }}").render_json(wide), "199999 7");
  std::string literal = "{% set d = {";
  for (int i = 0; i < 20000; ++i) literal += (i ? ", 'k" : "'k") + std::to_string(i) + "': " + std::to_string(i);
  literal += "} %}{{ d.k19999 }} {{ d|length }}";
  EXPECT_EQ(ChatTemplate::parse(literal).render_json("{}"), "19999 20000");
  // Values that share sub-lists: small to build, exponential to walk.
  std::string laughs = "{% set a = [1, 1] %}";
  for (int i = 0; i < 40; ++i) laughs += "{% set a = [a, a] %}";
  EXPECT_NE(limited(laughs + "{{ a }}").find("prints longer than"), std::string::npos);
  EXPECT_NE(limited(laughs + "{{ a == a }}").find("nodes"), std::string::npos);
  EXPECT_NE(limited(laughs + "{{ a|tojson }}").find("prints longer than"), std::string::npos);
  try {  // each `in` walks the list: the walks share the step budget
    ChatTemplate::parse("{% set r = range(100000) %}{% for i in r %}{{ -1 in r }}{% endfor %}", few_steps)
        .render_json("{}");
    ADD_FAILURE() << "10^10 comparisons finished";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nodes"), std::string::npos) << e.what();
  }
  EXPECT_NE(limited("{{ [1]|batch(1000000000000, 0)|list }}").find("max_container_items"), std::string::npos);
  // Deep JSON in the context.
  std::string deep_json = "{\"a\": " + std::string(5000, '[') + std::string(5000, ']') + "}";
  EXPECT_THROW(ChatTemplate::parse("x").render_json(deep_json), Error);
}

TEST(ChatTemplate, ConcurrentRenders) {
  const ChatTemplate t = ChatTemplate::parse(read_file(test::data_path("chat_templates/qwen2_5_instruct.jinja")));
  const std::string want = t.render({{"user", "hi"}});
  std::vector<std::thread> threads;
  std::vector<std::string> got(4);
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 50; ++k) got[i] = t.render({{"user", "hi"}});
    });
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

}  // namespace
}  // namespace wick
