// `wick chat` and `wick generate --chat` against the library: LanguageModel, its chat
// template and a fresh Generator per turn. The chat command keeps one Generator (its engine's
// KV blocks) across turns and recomputes only what follows the prefix its prefix cache shares
// with the new rendering; its replies
// must equal generating each turn from scratch over the whole rendered conversation (greedy,
// on llama.cpp's Q8_0 file of tests/data/llama_quant, which carries Llama 3's template).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli.h"
#include "support/golden.h"
#include "wick/models/language_model.h"
#include "wick/serve/generator.h"

namespace wick {
namespace {

namespace fs = std::filesystem;
using test::run_cli;

std::string model_file() { return test::data_path("llama_quant/q8_0.gguf"); }

// The reply to the conversation so far, computed from scratch: ids and the streamed text.
std::pair<std::vector<int32_t>, std::string> fresh_reply(const models::LanguageModel& lm,
                                                         const std::vector<text::ChatMessage>& messages,
                                                         int64_t max_tokens) {
  const std::vector<int32_t> prompt = lm.encode(lm.render_chat(messages), /*add_special=*/false);
  std::vector<int32_t> ids;
  serve::Generator(lm.model(), {})
      .generate(
          prompt, max_tokens, [&](int32_t id) { ids.push_back(id); }, lm.stop_tokens());
  std::string text;
  auto stream = lm.tokenizer().decode_stream();
  for (int32_t id : ids) text += stream.push(id);
  return {ids, text};
}

TEST(CliChat, RepliesEqualFreshGenerationsOverTheWholeConversation) {
  const auto lm = models::LanguageModel::load(model_file());
  ASSERT_TRUE(lm.has_chat_template());
  const std::vector<std::string> turns = {"Hello there", "What is two and two?", "Thanks, bye"};
  const fs::path input = fs::temp_directory_path() / ("wick_chat_in_" + std::to_string(::getpid()));
  {
    std::ofstream in(input);
    for (const auto& t : turns) in << t << '\n';
  }
  test::CliRun how;
  how.stdin_from = input.string();
  const auto r = run_cli("chat --device cpu --max-tokens 12 --system 'Be brief.' --model '" + model_file() + "'", how);
  fs::remove(input);
  ASSERT_EQ(r.code, 0) << r.err;

  std::vector<text::ChatMessage> messages = {{"system", "Be brief."}};
  std::string expected;
  for (const auto& t : turns) {
    messages.push_back({"user", t});
    const auto [ids, text] = fresh_reply(lm, messages, 12);
    expected += text + "\n";
    messages.push_back({"assistant", lm.tokenizer().decode(ids, /*skip_special=*/true)});
  }
  EXPECT_EQ(r.out, expected);
}

// --stop: each reply is the fresh reply's text up to the first stop string, and the
// conversation goes on from the cut reply (what the next turn renders as the assistant's).
TEST(CliChat, StopStringsCutRepliesAndTheConversationGoesOnFromThem) {
  const auto lm = models::LanguageModel::load(model_file());
  const std::vector<std::string> turns = {"Hello there", "What is two and two?"};
  // The first reply's text in full, to pick a stop string from its middle.
  // (Not a structured binding: the lambda below captures it, which clang 15 refuses.)
  const std::string first_text = fresh_reply(lm, {{"user", turns[0]}}, 16).second;
  ASSERT_GE(first_text.size(), 12u) << first_text;
  // Two letters or digits after its start (nothing the shell reads, and some text before).
  auto alnum = [&](size_t i) { return std::isalnum(static_cast<unsigned char>(first_text[i])) != 0; };
  size_t from = 2;
  while (from + 2 < first_text.size() && !(alnum(from) && alnum(from + 1))) ++from;
  ASSERT_LT(from + 2, first_text.size()) << first_text;
  const std::string stop = first_text.substr(from, 2);
  const fs::path input = fs::temp_directory_path() / ("wick_chat_stop_" + std::to_string(::getpid()));
  {
    std::ofstream in(input);
    for (const auto& t : turns) in << t << '\n';
  }
  test::CliRun how;
  how.stdin_from = input.string();
  const auto r = run_cli("chat --device cpu --max-tokens 16 --stop '" + stop + "' --model '" + model_file() + "'", how);
  fs::remove(input);
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<text::ChatMessage> messages;
  std::string expected;
  for (const auto& t : turns) {
    messages.push_back({"user", t});
    const std::string text = fresh_reply(lm, messages, 16).second;
    const std::string said = text.substr(0, text.find(stop));
    expected += said + "\n";
    messages.push_back({"assistant", said});
  }
  EXPECT_EQ(r.out, expected);
  EXPECT_LT(r.out.find('\n'), first_text.find(stop) + 1);  // the first reply was cut
  const auto empty = run_cli("chat --device cpu --stop '' --model '" + model_file() + "'");
  EXPECT_EQ(empty.code, 2);
  EXPECT_NE(empty.err.find("--stop string is empty"), std::string::npos) << empty.err;
}

TEST(CliChat, GenerateChatRendersOneUserTurn) {
  const auto lm = models::LanguageModel::load(model_file());
  const auto [ids, text] = fresh_reply(lm, {{"system", "S"}, {"user", "Hi"}}, 10);
  const auto r =
      run_cli("generate --device cpu --chat --system S --prompt Hi --max-tokens 10 --model '" + model_file() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, text + "\n");
  EXPECT_NE(r.err.find("(llama) on cpu"), std::string::npos) << r.err;
}

TEST(CliChat, ModelsWithoutATemplateAndBadOptionsAreClearErrors) {
  // The shipped GPT-2 has no chat template: said before it loads, naming it.
  auto r = run_cli("chat --device cpu", {});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("the model (the shipped tiny GPT-2, the default: pass --model) has no chat template"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("loading"), std::string::npos) << r.err;
  r = run_cli("generate --device cpu --chat --prompt Hi", {});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("has no chat template"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("loading"), std::string::npos) << r.err;
  // Sampling options are checked before anything loads.
  for (const std::string bad : {"--min-p 2", "--repeat-penalty 0", "--presence-penalty 3", "--ctx-size 0"}) {
    r = run_cli("chat --device cpu --model '" + model_file() + "' " + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
    EXPECT_EQ(r.err.find("loading"), std::string::npos) << r.err;
    r = run_cli("generate --device cpu --model '" + model_file() + "' " + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
    EXPECT_EQ(r.err.find("loading"), std::string::npos) << r.err;
  }
}

TEST(CliChat, GenerateRunsEveryFormatTheLoaderReads) {
  // A GGUF file (its own vocabulary) and the shipped GPT-2 folder (vocab.json + merges.txt).
  for (const std::string model : {model_file(), std::string()}) {
    const auto r = run_cli("generate --device cpu --max-tokens 4 --prompt 'The quick'" +
                           (model.empty() ? std::string() : " --model '" + model + "'"));
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("generated: "), std::string::npos) << r.err;
  }
}

// --json-schema: every reply is a document of the schema (the random model sampled at
// temperature 1: only the constraint makes it one). With a thinking template
// (--chat-template-file Qwen3's), the reply opens with the reasoning the model must write
// before the constrained answer.
TEST(CliChat, RepliesFollowTheConstraintAfterTheReasoning) {
  const fs::path input = fs::temp_directory_path() / ("wick_chat_in_" + std::to_string(::getpid()));
  {
    std::ofstream in(input);
    in << "Give me JSON\nAgain\n";
  }
  test::CliRun how;
  how.stdin_from = input.string();
  const std::string schema =
      R"('{"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["n"], "additionalProperties": false}')";
  const std::string base =
      "chat --device cpu --temperature 1 --seed 3 --model '" + model_file() + "' --json-schema " + schema;
  const auto r = run_cli(base + " --max-tokens 40", how);
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  int replies = 0;
  while (std::getline(lines, line)) {
    const auto doc = nlohmann::json::parse(line);
    EXPECT_LE(doc.at("n").get<int>(), 9);
    ++replies;
  }
  EXPECT_EQ(replies, 2);
  const auto thinking = run_cli(
      base + " --max-tokens 8 --chat-template-file '" + test::data_path("chat_templates/qwen3.jinja") + "'", how);
  fs::remove(input);
  ASSERT_EQ(thinking.code, 0) << thinking.err;
  EXPECT_EQ(thinking.out.rfind("<think>", 0), 0u) << thinking.out;
}

}  // namespace
}  // namespace wick
