// text::ReasoningSplit (wick/text/reasoning.h): a thinking model's output split into its
// reasoning and its answer, whatever the pieces it arrives in (hand-derived cases).
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "support/golden.h"
#include "wick/text/chat_template.h"
#include "wick/text/harmony.h"
#include "wick/text/reasoning.h"
#include "wick/text/tool_calls.h"

using wick::text::ReasoningSplit;

namespace {

// The output pushed in pieces of `step` bytes: (reasoning, answer).
std::pair<std::string, std::string> split(const std::string& out, size_t step, bool starts_inside = false) {
  ReasoningSplit s(starts_inside);
  std::string reasoning, answer;
  for (size_t i = 0; i < out.size(); i += step) {
    const ReasoningSplit::Piece p = s.push(out.substr(i, step));
    reasoning += p.reasoning;
    answer += p.content;
  }
  const ReasoningSplit::Piece p = s.flush();
  return {reasoning + p.reasoning, answer + p.content};
}

}  // namespace

TEST(ReasoningSplit, SplitsAtTheMarkersInAnyPieces) {
  using P = std::pair<std::string, std::string>;
  for (size_t step : {1, 2, 3, 5, 7, 100}) {
    EXPECT_EQ(split("<think>Let me see.</think>\n\nIt is 4.", step), P("Let me see.", "It is 4.")) << step;
    EXPECT_EQ(split("\n<think>a<b</think>c", step), P("a<b", "c")) << step;
    EXPECT_EQ(split("No thinking here.", step), P("", "No thinking here.")) << step;
    EXPECT_EQ(split("<thin", step), P("", "<thin")) << step;  // a marker cut short is text
    EXPECT_EQ(split("<think>never closed", step), P("never closed", "")) << step;
    EXPECT_EQ(split("<think>x</thin", step), P("x</thin", "")) << step;  // held back, then released
    EXPECT_EQ(split("<think></think>", step), P("", "")) << step;
    EXPECT_EQ(split("answer <think>not reasoning</think>", step), P("", "answer <think>not reasoning</think>")) << step;
    // DeepSeek-R1's prompt opens the reasoning: the output starts inside it.
    EXPECT_EQ(split("thinking...</think>\nDone", step, true), P("thinking...", "Done")) << step;
  }
}

TEST(ReasoningSplit, TemplatesAndPrompts) {
  EXPECT_TRUE(wick::text::template_thinks("{{ '<think>' }}{{ x }}{{ '</think>' }}"));
  EXPECT_FALSE(wick::text::template_thinks("{{ messages }}"));
  EXPECT_TRUE(wick::text::prompt_opens_reasoning("<|Assistant|><think>\n"));
  EXPECT_FALSE(wick::text::prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
}

namespace {
std::string template_file(const std::string& name) {
  std::ifstream in(std::string(WICK_TEST_DATA_DIR) + "/chat_templates/" + name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

// Where a constrained answer starts, from real templates' rendered prompts: Qwen3 lets the
// model open its reasoning (or closes it in the prompt with enable_thinking false); the
// DeepSeek-R1 distills open it in the prompt; a template without markers has none.
TEST(ReasoningSplit, TheReasoningBeforeAConstrainedAnswer) {
  using wick::text::ChatTemplate;
  const std::vector<wick::text::ChatMessage> chat{{"user", "Hi"}};
  const std::string qwen3 = template_file("qwen3.jinja"), r1 = template_file("deepseek_r1_distill.jinja");
  ASSERT_FALSE(qwen3.empty());
  ASSERT_FALSE(r1.empty());
  const auto thinking = wick::text::reasoning_prefix(qwen3, ChatTemplate::parse(qwen3).render(chat));
  ASSERT_TRUE(thinking);
  EXPECT_EQ(thinking->open, "<think>");
  EXPECT_EQ(thinking->close, "</think>");
  wick::text::ChatTemplateOptions off;
  off.extra_context_json = R"({"enable_thinking": false})";
  EXPECT_FALSE(wick::text::reasoning_prefix(qwen3, ChatTemplate::parse(qwen3).render(chat, off)));
  const auto opened = wick::text::reasoning_prefix(r1, ChatTemplate::parse(r1).render(chat));
  ASSERT_TRUE(opened);
  EXPECT_EQ(opened->open, "");
  EXPECT_EQ(opened->close, "</think>");
  const std::string llama3 = template_file("llama3_instruct.jinja");
  EXPECT_FALSE(wick::text::reasoning_prefix(llama3, ChatTemplate::parse(llama3).render(chat)));
}

// gpt-oss's harmony format (wick/text/harmony.h), hand-derived: the decoder's rewrite into the
// <think> / Hermes form, in pieces of every size, then through the reasoning split and the
// tool-call parser the server runs after it.
namespace {

std::string harmony(const std::string& out, size_t step) {
  wick::text::HarmonyDecoder d;
  std::string got;
  for (size_t i = 0; i < out.size(); i += step) got += d.push(out.substr(i, step));
  return got + d.flush();
}

}  // namespace

TEST(Harmony, RewritesChannelsAndCallsInAnyPieces) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      // Reasoning, then the answer (<|return|> is a stop token: not in the output).
      {"<|channel|>analysis<|message|>User asks 2+2.<|end|><|start|>assistant<|channel|>final<|message|>4",
       "<think>User asks 2+2.</think>4"},
      // A tool call after the reasoning (<|call|> is a stop token too).
      {"<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
       "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}",
       "<think>Need the weather.</think><tool_call>\n{\"name\":\"get_weather\",\"arguments\":"
       "{\"city\":\"Oslo\"}}\n</tool_call>"},
      // The recipient in the role part, the call's end marker present.
      {"<|start|>assistant to=functions.f<|channel|>commentary json<|message|> {} <|call|>",
       "<tool_call>\n{\"name\":\"f\",\"arguments\":{}}\n</tool_call>"},
      // A preamble (commentary to no one) is shown; a final answer with markup-like text.
      {"<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>final<|message|>a <| b",
       "Checking.a <| b"},
      // Arguments that are not JSON become a JSON string (the parser then keeps them as content).
      {"<|channel|>commentary to=functions.g<|message|>not json",
       "<tool_call>\n{\"name\":\"g\",\"arguments\":\"not json\"}\n</tool_call>"},
      // No header at all: the text as it is. An unfinished analysis is closed at the end.
      {"plain answer", "plain answer"},
      {"<|channel|>analysis<|message|>cut sh", "<think>cut sh</think>"},
  };
  for (const auto& [in, want] : cases)
    for (size_t step : {size_t(1), size_t(2), size_t(5), size_t(13), in.size()}) {
      SCOPED_TRACE(in + " step " + std::to_string(step));
      EXPECT_EQ(harmony(in, step), want);
    }
}

TEST(Harmony, FeedsTheReasoningSplitAndTheToolCallParser) {
  const std::string out =
      "<|channel|>analysis<|message|>Two cities.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Oslo\", \"unit\": \"celsius\"}";
  const auto [reasoning, answer] = split(harmony(out, 3), 4);
  EXPECT_EQ(reasoning, "Two cities.");
  const wick::text::ToolCallReply r = wick::text::parse_tool_calls(answer, wick::text::ToolCallFormat::Hermes);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, "{\"city\":\"Oslo\",\"unit\":\"celsius\"}");
  EXPECT_EQ(r.content, "");
  // gpt-oss's template is harmony; a Qwen3-style one is not.
  std::ifstream f(wick::test::data_path("chat_templates/gpt_oss.jinja"));
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_TRUE(wick::text::template_is_harmony(ss.str()));
  EXPECT_TRUE(wick::text::template_thinks(ss.str()));
  EXPECT_FALSE(wick::text::template_is_harmony("{{ '<think>' }}{{ messages[0].content }}"));
}

// Random replies over harmony's markers and fragments of them (seeded): the rewrite does not
// depend on how the text is cut into pieces, and a message's markers never reach the output.
TEST(Harmony, PiecesNeverChangeTheRewrite) {
  const std::vector<std::string> parts = {"<|channel|>", "analysis", "final",     "commentary", " to=functions.f",
                                          "<|message|>", "<|end|>",  "<|start|>", "assistant",  "<|call|>",
                                          "x",           "<|",       "|>",        "{\"a\": 1}", " "};
  std::mt19937 gen(7);
  for (int round = 0; round < 2000; ++round) {
    std::string reply;
    const int n = int(gen() % 12);
    for (int i = 0; i < n; ++i) reply += parts[gen() % parts.size()];
    const std::string whole = harmony(reply, reply.size() + 1);
    for (size_t step : {size_t(1), size_t(2), size_t(3), size_t(7)}) {
      ASSERT_EQ(harmony(reply, step), whole) << "reply '" << reply << "' step " << step;
    }
    if (reply.find("<|channel|>") != std::string::npos || reply.find("<|start|>") != std::string::npos)
      continue;  // a header's text is consumed; plain replies pass as they are
    ASSERT_EQ(whole, reply);
  }
}
