// Tool calls in models' own syntaxes (wick/text/tool_calls.h): parsing replies (hand-derived
// cases), writing calls, and the grammar of forced calls checked against documents.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "wick/error.h"
#include "wick/text/chat_template.h"
#include "wick/text/grammar.h"
#include "wick/text/tool_calls.h"

using namespace wick::text;

TEST(ToolCalls, FormatsFromTemplates) {
  EXPECT_EQ(tool_call_format("{% for tool in tools %}...<tool_call>\n{{ c | tojson }}\n</tool_call>"),
            ToolCallFormat::Hermes);
  EXPECT_EQ(tool_call_format("{{- '[TOOL_CALLS]' + tool_calls | tojson }}"), ToolCallFormat::Mistral);
  EXPECT_EQ(tool_call_format("{{- '<|python_tag|>' }}{\"name\": ..., \"parameters\": ...}"), ToolCallFormat::Llama3);
  EXPECT_EQ(tool_call_format("{{ messages }}"), ToolCallFormat::Hermes);
  EXPECT_TRUE(template_takes_tools("{% if tools %}"));
  EXPECT_FALSE(template_takes_tools("{{ messages }}"));
}

TEST(ToolCalls, ParsesEachSyntax) {
  const ToolCallReply h = parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n"
      "</tool_call>\n<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>",
      ToolCallFormat::Hermes);
  EXPECT_EQ(h.content, "Let me check.");
  ASSERT_EQ(h.calls.size(), 2u);
  EXPECT_EQ(h.calls[0].name, "get_weather");
  EXPECT_EQ(h.calls[0].arguments, R"({"city":"Paris","days":2})");  // compact, in the order written
  EXPECT_EQ(h.calls[1].arguments, "{}");
  // Arguments written as JSON text are read as the object they hold.
  EXPECT_EQ(
      parse_tool_calls(R"(<tool_call>{"name": "f", "arguments": "{\"a\": 1}"}</tool_call>)", ToolCallFormat::Hermes)
          .calls.at(0)
          .arguments,
      R"({"a":1})");
  // Not calls: the text stays content.
  for (const char* text : {"<tool_call>not json</tool_call>", "<tool_call>{\"arguments\": {}}</tool_call>",
                           "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>", "plain text"}) {
    const ToolCallReply r = parse_tool_calls(text, ToolCallFormat::Hermes);
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
  const ToolCallReply l =
      parse_tool_calls("<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"x\"}}", ToolCallFormat::Llama3);
  ASSERT_EQ(l.calls.size(), 1u);
  EXPECT_EQ(l.calls[0].name, "search");
  EXPECT_EQ(l.calls[0].arguments, R"({"q":"x"})");
  EXPECT_EQ(l.content, "");
  EXPECT_TRUE(parse_tool_calls("The answer is {x}.", ToolCallFormat::Llama3).calls.empty());
  const ToolCallReply m =
      parse_tool_calls(R"([TOOL_CALLS] [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}])",
                       ToolCallFormat::Mistral);
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(m.calls[1].name, "b");
  EXPECT_EQ(parse_tool_calls(R"([{"name": "a", "arguments": {}}])", ToolCallFormat::Mistral).calls.size(), 1u);
}

TEST(ToolCalls, WrittenCallsParseBack) {
  const ToolCall c{"lookup", R"({"id":7,"tags":["a"]})"};
  for (const ToolCallFormat f : {ToolCallFormat::Hermes, ToolCallFormat::Llama3, ToolCallFormat::Mistral}) {
    const ToolCallReply r = parse_tool_calls(write_tool_call(c, f), f);
    ASSERT_EQ(r.calls.size(), 1u) << write_tool_call(c, f);
    EXPECT_EQ(r.calls[0].name, c.name);
    EXPECT_EQ(r.calls[0].arguments, c.arguments);
  }
}

TEST(ToolCalls, ForcedCallGrammarsAllowExactlyTheToolsCalls) {
  const std::vector<ToolSpec> tools{
      {"get_weather",
       R"({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"]})"},
      {"now", ""},
      {"tree",
       R"({"$defs": {"n": {"type": "object", "properties": {"k": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}}, "required": ["k"]}}, "$ref": "#/$defs/n"})"}};
  const Grammar hermes = Grammar::from_gbnf(tool_call_gbnf(tools, ToolCallFormat::Hermes, 2));
  EXPECT_TRUE(hermes.accepts(
      "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\",\"days\":3}}\n</tool_call>"));
  EXPECT_TRUE(
      hermes.accepts("<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
                     "{\"name\":\"tree\",\"arguments\":{\"k\":{\"k\":null}}}\n</tool_call>"));
  EXPECT_FALSE(hermes.accepts(
      "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\",\"days\":9}}\n</tool_call>"));
  EXPECT_FALSE(hermes.accepts("<tool_call>\n{\"name\":\"other\",\"arguments\":{}}\n</tool_call>"));
  EXPECT_FALSE(
      hermes.accepts("<tool_call>\n{\"name\":\"now\",\"arguments\":{}}\n</tool_call>\n<tool_call>\n"
                     "{\"name\":\"now\",\"arguments\":{}}\n</tool_call>\n<tool_call>\n"
                     "{\"name\":\"now\",\"arguments\":{}}\n</tool_call>"));  // 3 > max_calls
  const Grammar llama = Grammar::from_gbnf(tool_call_gbnf(tools, ToolCallFormat::Llama3, 1));
  EXPECT_TRUE(llama.accepts(R"({"name":"now","parameters":{}})"));
  EXPECT_FALSE(llama.accepts(R"({"name":"now","arguments":{}})"));
  const Grammar mistral = Grammar::from_gbnf(tool_call_gbnf(tools, ToolCallFormat::Mistral, 3));
  EXPECT_TRUE(mistral.accepts(R"([{"name":"now","arguments":{}}, {"name":"now","arguments":{}}])"));
  EXPECT_THROW(tool_call_gbnf({}, ToolCallFormat::Hermes, 1), wick::Error);
  const std::vector<ToolSpec> bad{{"f", "[1]"}};
  EXPECT_THROW(tool_call_gbnf(bad, ToolCallFormat::Hermes, 1), wick::Error);
  EXPECT_NE(tools_system_prompt(R"([{"type": "function", "function": {"name": "f"}}])").find("\n{\"name\":\"f\"}\n"),
            std::string::npos);
}

namespace {
std::string template_text(const std::string& name) {
  std::ifstream in(std::string(WICK_TEST_DATA_DIR) + "/chat_templates/" + name + ".jinja");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

// The real templates of tests/data/chat_templates (their sources: SOURCES.md).
TEST(ToolCalls, RealTemplatesFormatsAndRendering) {
  const std::vector<std::pair<std::string, ToolCallFormat>> takes{
      {"qwen2_5_instruct", ToolCallFormat::Hermes},  {"qwen3", ToolCallFormat::Hermes},
      {"hermes3_tool_use", ToolCallFormat::Hermes},  {"llama3_1_instruct", ToolCallFormat::Llama3},
      {"llama3_2_instruct", ToolCallFormat::Llama3}, {"mistral_nemo", ToolCallFormat::Mistral},
      {"mistral_v0_3", ToolCallFormat::Mistral}};
  for (const auto& [name, format] : takes) {
    const std::string t = template_text(name);
    ASSERT_FALSE(t.empty()) << name;
    EXPECT_TRUE(template_takes_tools(t)) << name;
    EXPECT_EQ(tool_call_format(t), format) << name;
  }
  for (const char* name : {"llama3_instruct", "gemma2_it", "zephyr", "phi3_mini"})
    EXPECT_FALSE(template_takes_tools(template_text(name))) << name;
  // What the server hands a tool-aware template: the tools, and a history whose call has
  // its arguments as an object; Qwen2.5 writes both back in its own syntax.
  const auto qwen = ChatTemplate::parse(template_text("qwen2_5_instruct"));
  ChatTemplateOptions o;
  o.extra_context_json =
      R"({"tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
    "messages": [{"role": "user", "content": "Paris?"},
                 {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "weather", "arguments": {"city": "Paris"}}}]},
                 {"role": "tool", "content": "sunny", "tool_call_id": "call_1"}]})";
  const std::string out = qwen.render({}, o);
  EXPECT_NE(out.find(R"({"type": "function", "function": {"name": "weather")"), std::string::npos) << out;
  EXPECT_NE(out.find("<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("<tool_response>\nsunny\n</tool_response>"), std::string::npos) << out;
}

// Streaming: a reply pushed in pieces of every size releases text that cannot belong to a
// call as it comes, and what it released followed by finish()'s content is the content
// parse_tool_calls gives the whole reply, with the same calls.
TEST(ToolCalls, StreamsTheTextBeforeACallAsItComes) {
  struct Case {
    ToolCallFormat format;
    std::string reply, early;  // early: released before the reply's end
  };
  const std::vector<Case> cases{
      {ToolCallFormat::Hermes,
       "  Let me check <the> weather.\n<tool_call>\n{\"name\": \"w\", \"arguments\": {\"c\": 1}}\n</tool_call>\n"
       "then <tool_call>{\"name\": \"n\", \"arguments\": {}}</tool_call> done ",
       "Let me check <the> weather."},
      {ToolCallFormat::Hermes, "No tools needed here. <tool", "No tools needed here."},
      {ToolCallFormat::Hermes, "Bad <tool_call>not json</tool_call> end", "Bad"},
      {ToolCallFormat::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", ""},
      {ToolCallFormat::Llama3, "\n<|python_tag|>{\"name\": \"s\", \"parameters\": {\"q\": \"x\"}}", ""},
      {ToolCallFormat::Llama3, "{\"name\": \"s\", \"parameters\": {}}", ""},
      {ToolCallFormat::Llama3, "The answer is {x}.\n\n", "The answer is {x}."},
      {ToolCallFormat::Llama3, "<b>bold</b> ", "<b>bold</b>"},
      {ToolCallFormat::Mistral, "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"x\": 1}}]", ""},
      {ToolCallFormat::Mistral, "Plain answer, [1] cited.", "Plain answer, [1] cited."},
  };
  for (const Case& c : cases) {
    const ToolCallReply whole = parse_tool_calls(c.reply, c.format);
    for (size_t step = 1; step <= c.reply.size(); ++step) {
      ToolCallStream s(c.format);
      std::string released;
      for (size_t at = 0; at < c.reply.size(); at += step) released += s.push(c.reply.substr(at, step));
      EXPECT_EQ(released, c.early) << c.reply << " in pieces of " << step;
      const ToolCallReply rest = s.finish();
      EXPECT_EQ(released + rest.content, whole.content) << c.reply << " in pieces of " << step;
      ASSERT_EQ(rest.calls.size(), whole.calls.size()) << c.reply;
      for (size_t k = 0; k < rest.calls.size(); ++k) {
        EXPECT_EQ(rest.calls[k].name, whole.calls[k].name);
        EXPECT_EQ(rest.calls[k].arguments, whole.calls[k].arguments);
      }
    }
  }
}
