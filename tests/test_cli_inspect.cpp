// `wick inspect`: names, keys and strings from the file are printed escaped (no raw
// terminal escapes or newlines) in both listings, and several files are listed in turn.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli.h"
#include "support/golden.h"
#include "wick/gguf.h"
#include "wick/io.h"

namespace wick {
namespace {

namespace fs = std::filesystem;

const std::string kEvil = "red\x1b[31m\nline";  // an escape sequence and a newline
const std::string kEscaped = "red\\x1b[31m\\x0aline";

class Inspect : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("wick_cli_inspect_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path evil_gguf() {
    gguf::Writer w;
    w.set("key." + kEvil, gguf::Value("value." + kEvil));
    w.set("list", gguf::Value(gguf::Array::of(std::vector<std::string>{kEvil})));
    w.add_tensor("tensor." + kEvil, zeros(Shape{2}));
    w.write(dir_ / "evil.gguf");
    return dir_ / "evil.gguf";
  }
  fs::path evil_safetensors() {
    safetensors::save(dir_ / "evil.safetensors", {{"tensor." + kEvil, zeros(Shape{2})}}, {{"key." + kEvil, kEvil}});
    return dir_ / "evil.safetensors";
  }
  fs::path dir_;
};

TEST_F(Inspect, GgufNamesKeysAndStringsAreEscaped) {
  const test::CliResult r = test::run_cli("inspect '" + evil_gguf().string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  key." + kEscaped + "  string"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"value." + kEscaped + "\"\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[\"" + kEscaped + "\"]\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  tensor." + kEscaped + "  f32"), std::string::npos) << r.out;
  // Every line is one listing entry: the newlines in the names did not split any.
  EXPECT_EQ(r.out.find("\nline"), std::string::npos) << r.out;
}

TEST_F(Inspect, SafetensorsAndGgufListingsEscapeAlike) {
  const test::CliResult r = test::run_cli("inspect '" + evil_safetensors().string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  tensor." + kEscaped + "  F32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  key." + kEscaped + " = " + kEscaped + "\n"), std::string::npos) << r.out;
}

TEST_F(Inspect, SeveralFilesAreListedInOrder) {
  const std::string ref = test::data_path("reference.safetensors");
  const fs::path g = evil_gguf();
  test::CliResult r = test::run_cli("inspect '" + ref + "' '" + g.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t first = r.out.find(ref + ": safetensors, "), second = r.out.find(g.string() + ": GGUF v3");
  ASSERT_NE(first, std::string::npos) << r.out;
  ASSERT_NE(second, std::string::npos) << r.out;
  EXPECT_LT(first, second);
  EXPECT_EQ(r.out.substr(second - 2, 2), "\n\n");  // a blank line between listings

  // JSON: one object for one file, an array of objects for several.
  r = test::run_cli("inspect --json '" + g.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto one = nlohmann::json::parse(r.out);
  ASSERT_TRUE(one.is_object());
  EXPECT_EQ(one["tensors"][0]["name"], "tensor." + kEvil);  // JSON escapes it itself
  r = test::run_cli("inspect --json '" + ref + "' '" + g.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto both = nlohmann::json::parse(r.out);
  ASSERT_TRUE(both.is_array());
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0]["format"], "safetensors");
  EXPECT_EQ(both[1]["format"], "gguf");

  // A file that cannot be read is reported; the others are still listed; exit code 1.
  const std::string missing = (dir_ / "missing.gguf").string();
  r = test::run_cli("inspect '" + missing + "' '" + g.string() + "'");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(g.string() + ": GGUF v3"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.rfind("wick: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("cannot open '" + missing + "'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  r = test::run_cli("inspect --json '" + missing + "' '" + g.string() + "'");
  EXPECT_EQ(r.code, 1);
  const auto rest = nlohmann::json::parse(r.out);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0]["format"], "gguf");
}

// "-" reads one file's bytes from standard input; --file reads paths, one per line.
TEST_F(Inspect, FilesFromStandardInputAndFromAList) {
  const fs::path g = evil_gguf(), st = evil_safetensors();
  test::CliResult r = test::run_cli("inspect --json -", {.stdin_from = g.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["file"], "standard input");
  EXPECT_EQ(j["format"], "gguf");
  EXPECT_EQ(j["tensors"][0]["name"], "tensor." + kEvil);

  r = test::run_cli("inspect --json -", {.stdin_from = st.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "safetensors");
  EXPECT_EQ(j["tensors"][0]["shape"], nlohmann::json::array({2}));

  std::ofstream(dir_ / "list.txt") << st.string() << "\n" << g.string() << "\n";
  r = test::run_cli("inspect --json --file '" + (dir_ / "list.txt").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["file"], st.string());
  EXPECT_EQ(j[1]["file"], g.string());

  // The list itself from standard input, in order after the positional file.
  r = test::run_cli("inspect --json '" + g.string() + "' --file -", {.stdin_from = (dir_ / "list.txt").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["file"], g.string());
  EXPECT_EQ(j[1]["file"], st.string());
}

TEST_F(Inspect, BadInputsSayWhatIsWrong) {
  std::ofstream(dir_ / "junk") << "GGUF but not really";
  test::CliResult r = test::run_cli("inspect -", {.stdin_from = (dir_ / "junk").string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("wick: error: standard input: gguf", 0), 0u) << r.err;
  r = test::run_cli("inspect");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("inspect: no files given"), std::string::npos) << r.err;
  r = test::run_cli("inspect - --file -");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("standard input ('-') can be read only once"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace wick

namespace wick {
namespace {

using test::data_path;
using test::run_cli;
namespace fs = std::filesystem;

// The model summary: of a Hugging Face folder (gemma2: softcaps, sliding window on even
// layers), and of the GGUF `wick convert` writes of it (q8_0), whose numbers must agree.
TEST(InspectModel, FolderAndConvertedGgufAgree) {
  const std::string folder = data_path("llama/gemma2");
  const fs::path out = fs::temp_directory_path() / ("wick_inspect_model_" + std::to_string(::getpid()) + ".gguf");
  const auto conv = run_cli("convert " + folder + " " + out.string() + " --outtype q8_0");
  ASSERT_EQ(conv.code, 0) << conv.err;
  EXPECT_NE(conv.out.find("gemma2, 90688 parameters in 24 tensors (9 f32, 15 q8_0)"), std::string::npos) << conv.out;
  const auto text = run_cli("inspect " + folder);
  ASSERT_EQ(text.code, 0) << text.err;
  for (const char* line : {"model: gemma2 (hugging face folder)",
                           "layers 2, hidden 64, heads 4 (kv 2), head dim 32, ffn 64, context 128, vocab 256, tied",
                           "sliding window: 6 on 1 of 2 layers", "softcaps: attention 5.0, final 8.0",
                           "parameters: 90688", "tokenizer: BPE, ByteLevel, 256 tokens, 1 merges"})
    EXPECT_NE(text.out.find(line), std::string::npos) << line << "\n" << text.out;
  const auto a = nlohmann::json::parse(run_cli("inspect --json " + folder).out)["model"];
  const auto b = nlohmann::json::parse(run_cli("inspect --json " + out.string()).out)["model"];
  fs::remove(out);
  EXPECT_EQ(a["hyperparameters"], b["hyperparameters"]);
  EXPECT_EQ(a["parameters"], b["parameters"]);
  // Seven matrices a layer and the (tied) embedding: 2 x (q 8192 + k, v 4096 + o 8192 +
  // gate, up, down 4096) + 256 x 64; the 9 norms stay f32.
  EXPECT_EQ(b["tensor_types"]["q8_0"]["tensors"], 15);
  EXPECT_EQ(b["tensor_types"]["q8_0"]["parameters"], 2 * (8192 + 2 * 4096 + 8192 + 3 * 4096) + 256 * 64);
  EXPECT_EQ(b["tensor_types"]["f32"]["tensors"], 9);
  EXPECT_EQ(b["tokenizer"]["pre_tokenizer"], "gpt-2");
  EXPECT_TRUE(b["chat_template"].is_null());
}

TEST(InspectModel, ExpertsAndLocalRopeAreSummarized) {
  // A MoE folder and the GGUF llama.cpp's converter wrote of it agree on the experts; Gemma 3
  // names its sliding layers' rotary base.
  const auto folder = nlohmann::json::parse(run_cli("inspect --json " + data_path("llama/qwen2moe")).out)["model"];
  const auto gguf =
      nlohmann::json::parse(run_cli("inspect --json " + data_path("llama/qwen2moe/model.gguf")).out)["model"];
  const nlohmann::json want = {{"count", 6},       {"per_token", 2},      {"ffn", 32},
                               {"shared_ffn", 48}, {"normalized", false}, {"layers", 2}};
  EXPECT_EQ(folder["hyperparameters"]["experts"], want);
  EXPECT_EQ(gguf["hyperparameters"]["experts"], want);
  const auto text = run_cli("inspect " + data_path("llama/qwen2moe"));
  EXPECT_NE(text.out.find("experts: 6, 2 per token, ffn 32, a shared expert of 48, in 2 of 2 layers"),
            std::string::npos)
      << text.out;
  const auto gemma3 = run_cli("inspect " + data_path("llama/gemma3/model.gguf"));
  for (const char* line : {"sliding window: 6 on 5 of 6 layers",
                           "scaling linear (factor 2.0), sliding layers theta "
                           "10000.0"})
    EXPECT_NE(gemma3.out.find(line), std::string::npos) << line << "\n" << gemma3.out;
  const auto dense = nlohmann::json::parse(run_cli("inspect --json " + data_path("llama/llama3")).out)["model"];
  EXPECT_TRUE(dense["hyperparameters"]["experts"].is_null());
}

TEST(InspectModel, GPT2FoldersAndGgufsAreRowsOfTheArchitectureTable) {
  for (const std::string path : {data_path("gpt2/tiny2l"), data_path("gpt2/tiny2l/model.gguf")}) {
    const auto r = run_cli("inspect --json " + path);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["model"]["architecture"], "gpt2") << path;
    EXPECT_EQ(j["model"]["hyperparameters"]["layers"], 2) << path;
    EXPECT_TRUE(j["model"]["hyperparameters"]["rope"].is_null()) << path;  // learned positions
  }
  const auto text = run_cli("inspect " + data_path("gpt2/tiny2l"));
  EXPECT_NE(text.out.find("positions: learned"), std::string::npos) << text.out;
}

TEST(InspectModel, AFolderOfAnotherArchitectureIsAnError) {
  const fs::path d = fs::temp_directory_path() / ("wick_inspect_mamba_" + std::to_string(::getpid()));
  fs::create_directories(d);
  std::ofstream(d / "config.json") << R"({"architectures": ["MambaForCausalLM"], "model_type": "mamba"})";
  const auto r = run_cli("inspect " + d.string());
  fs::remove_all(d);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("unknown architecture"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace wick
