// Model folders as a user hands them over: config.json readers against hostile JSON, a
// config whose layer count disagrees with the weights, and folders missing the tokenizer.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/golden.h"
#include "wick/io.h"
#include "wick/models/bert.h"
#include "wick/models/gpt2.h"
#include "wick/models/llama.h"
#include "wick/models/sentence_embedder.h"

namespace wick {
namespace {

namespace fs = std::filesystem;
using models::BertConfig;
using models::BertModel;
using models::Gpt2Config;

constexpr const char* kLimit = "arrays/objects nest deeper than the JSON nesting limit of 127 levels";

fs::path temp_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("wick_test_model_config_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}
void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}
std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
// A fresh empty folder under the temp dir.
fs::path fresh_dir(const std::string& name) {
  const fs::path d = temp_dir() / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
// n arrays nested in each other: 2n bytes.
std::string nested(size_t n) { return std::string(n, '[') + std::string(n, ']'); }

// ---- hostile config.json ------------------------------------------------------------------

TEST(ModelConfigJson, Gpt2RejectsDeepNestingInAKey) {
  // 100,000 levels (200 KB) overflowed the stack in the message's dump() (exit 139).
  const std::string deep = R"({"n_layer": )" + nested(100'000) + "}";
  EXPECT_WICK_ERROR(Gpt2Config::from_json_string(deep, "config.json"), Format,
                    std::string("gpt2: invalid JSON in 'config.json': ") + kLimit);
  const fs::path p = fresh_dir("gpt2_deep") / "config.json";
  write_file(p, R"({"n_embd": 32, "activation_function": )" + nested(100'000) + "}");
  EXPECT_WICK_ERROR(Gpt2Config::from_json_file(p), Format, "gpt2: invalid JSON in '" + p.string() + "': " + kLimit);
}

TEST(ModelConfigJson, BertRejectsDeepNestingInAKey) {
  const fs::path p = fresh_dir("bert_deep") / "config.json";
  write_file(p, R"({"hidden_size": )" + nested(100'000) + "}");
  EXPECT_WICK_ERROR(BertConfig::from_json_file(p), Format, "bert: invalid JSON in '" + p.string() + "': " + kLimit);
  EXPECT_WICK_ERROR(BertConfig::from_json_string(R"({"x": {"y": )" + nested(100'000) + "}}"), Format,
                    std::string("bert: invalid JSON in '<string>': ") + kLimit);
}

TEST(ModelConfigJson, NestingUpToTheLimitIsAccepted) {
  // The object itself is level 1; 126 arrays under an ignored key make 127 levels.
  EXPECT_EQ(Gpt2Config::from_json_string(R"({"n_layer": 3, "x": )" + nested(126) + "}").n_layer, 3);
  EXPECT_EQ(BertConfig::from_json_string(R"({"num_hidden_layers": 3, "x": )" + nested(126) + "}").num_layers, 3);
  EXPECT_WICK_ERROR(Gpt2Config::from_json_string(R"({"n_layer": 3, "x": )" + nested(127) + "}"), Format, kLimit);
}

TEST(ModelConfigJson, ValuesInMessagesAreCutShort) {
  // A 100,000-entry array as n_layer: the message quotes 60 characters of it.
  std::string many = "[1";
  for (int i = 0; i < 100'000; ++i) many += ",1";
  try {
    Gpt2Config::from_json_string(R"({"n_layer": )" + many + "]}");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    std::string shown = "[1";
    while (shown.size() < 60) shown += ",1";
    EXPECT_EQ(std::string(e.what()),
              "gpt2: config key 'n_layer' must be a positive integer, got " + shown.substr(0, 60) + "...");
  }
}

TEST(ModelConfigJson, RejectsAByteOrderMark) {
  // nlohmann skips it; transformers (Python's json.loads) refuses it.
  EXPECT_WICK_ERROR(Gpt2Config::from_json_string("\xEF\xBB\xBF{}", "config.json"), Format,
                    "gpt2: invalid JSON in 'config.json': it starts with a UTF-8 byte-order mark");
  EXPECT_WICK_ERROR(BertConfig::from_json_string("\xEF\xBB\xBF{}"), Format, "starts with a UTF-8 byte-order mark");
}

// ---- layer count: config.json against the checkpoint ----------------------------------------

// A copy of tests/data/gpt2/tiny2l (2 layers, "transformer.h.N." names) with n_layer set.
fs::path gpt2_with_layers(int64_t n_layer) {
  const fs::path d = fresh_dir("gpt2_layers_" + std::to_string(n_layer));
  const fs::path src = test::data_path("gpt2/tiny2l");
  nlohmann::json config = nlohmann::json::parse(read_file(src / "config.json"));
  config["n_layer"] = n_layer;
  write_file(d / "config.json", config.dump());
  fs::copy_file(src / "model.safetensors", d / "model.safetensors");
  return d;
}

TEST(ModelLayerCount, Gpt2ConfigMustNameEveryLayerOfTheCheckpoint) {
  EXPECT_EQ(models::LlamaModel::load(gpt2_with_layers(2)).config().n_layer, 2);
  // Fewer: the second layer was silently dropped.
  EXPECT_WICK_ERROR(models::LlamaModel::load(gpt2_with_layers(1)), Format,
                    "llama: the config has 1 layers but the checkpoint holds 2");
  EXPECT_WICK_ERROR(models::LlamaModel::load(gpt2_with_layers(3)), Format,
                    "llama: the config has 3 layers but the checkpoint holds 2");
}

// A tiny BERT checkpoint (hidden 4, 2 layers, "encoder.layer.N." names) with
// num_hidden_layers set; the weights are constants, only names and shapes matter here.
fs::path bert_with_layers(const std::string& name, int64_t num_layers, int64_t stored_layers = 2) {
  const fs::path d = fresh_dir(name);
  const nlohmann::json config = {
      {"vocab_size", 8},          {"hidden_size", 4},       {"num_hidden_layers", num_layers},
      {"num_attention_heads", 1}, {"intermediate_size", 8}, {"max_position_embeddings", 16},
      {"type_vocab_size", 2}};
  write_file(d / "config.json", config.dump());
  std::vector<std::pair<std::string, Tensor>> w = {
      {"embeddings.word_embeddings.weight", zeros({8, 4})},
      {"embeddings.position_embeddings.weight", zeros({16, 4})},
      {"embeddings.token_type_embeddings.weight", zeros({2, 4})},
      {"embeddings.LayerNorm.weight", zeros({4})},
      {"embeddings.LayerNorm.bias", zeros({4})},
  };
  const std::vector<std::pair<std::string, Shape>> layer = {
      {"attention.self.query.weight", {4, 4}},
      {"attention.self.query.bias", {4}},
      {"attention.self.key.weight", {4, 4}},
      {"attention.self.key.bias", {4}},
      {"attention.self.value.weight", {4, 4}},
      {"attention.self.value.bias", {4}},
      {"attention.output.dense.weight", {4, 4}},
      {"attention.output.dense.bias", {4}},
      {"attention.output.LayerNorm.weight", {4}},
      {"attention.output.LayerNorm.bias", {4}},
      {"intermediate.dense.weight", {8, 4}},
      {"intermediate.dense.bias", {8}},
      {"output.dense.weight", {4, 8}},
      {"output.dense.bias", {4}},
      {"output.LayerNorm.weight", {4}},
      {"output.LayerNorm.bias", {4}},
  };
  for (int64_t i = 0; i < stored_layers; ++i)
    for (const auto& [suffix, shape] : layer)
      w.emplace_back("encoder.layer." + std::to_string(i) + "." + suffix, zeros(shape));
  safetensors::save(d / "model.safetensors", w);
  return d;
}

TEST(ModelLayerCount, BertConfigMustNameEveryLayerOfTheCheckpoint) {
  EXPECT_EQ(BertModel::load(bert_with_layers("bert2", 2), Device::cpu()).config().num_layers, 2);
  EXPECT_WICK_ERROR(BertModel::load(bert_with_layers("bert1", 1), Device::cpu()), Format,
                    "bert: config.json says num_hidden_layers 1, but the checkpoint holds 2 layers "
                    "(encoder.layer.0.* to encoder.layer.1.*)");
  EXPECT_WICK_ERROR(BertModel::load(bert_with_layers("bert3", 3), Device::cpu()), Format,
                    "bert: config.json says num_hidden_layers 3, but the checkpoint holds 2 layers");
  EXPECT_WICK_ERROR(BertModel::load(bert_with_layers("bert0", 1, 0), Device::cpu()), Format,
                    "bert: config.json says num_hidden_layers 1, but the checkpoint holds no layer weights "
                    "(no tensor named encoder.layer.0.*)");
}

// ---- a folder without a tokenizer fails before the weights are read -------------------------

TEST(ModelFolder, SentenceEmbedderWithoutVocabFailsOnTheTokenizerFirst) {
  // The weights are garbage: an error about them would mean they were read first.
  const fs::path d = bert_with_layers("bert_no_vocab", 2);
  write_file(d / "model.safetensors", "not a safetensors file");
  EXPECT_WICK_ERROR(models::SentenceEmbedder::load(d, Device::cpu()), Io,
                    "tokenizer: '" + d.string() + "' has neither tokenizer.json, vocab.json + merges.txt");
}

TEST(ModelFolder, GenerateWithoutTokenizerFailsOnTheTokenizerFirst) {
  const fs::path d = gpt2_with_layers(2);
  write_file(d / "model.safetensors", "not a safetensors file");
  const fs::path err = temp_dir() / "generate.err";
  const std::string cmd = std::string("'") + WICK_CLI_PATH + "' generate --device cpu --max-tokens 1 --model '" +
                          d.string() + "' >/dev/null 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  const std::string message = read_file(err);
  EXPECT_NE(message.find("tokenizer: '" + d.string() + "' has neither tokenizer.json, vocab.json + merges.txt"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("safetensors"), std::string::npos) << message;
}

}  // namespace
}  // namespace wick
