// `wick tokenize` / `wick detokenize` on tokenizer.json folders and files and GGUF
// vocabularies: the ids are the library's (checked against HF in test_tokenizer_hf), --json
// lines, --no-special, and the errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli.h"
#include "support/golden.h"
#include "wick/gguf.h"
#include "wick/text/tokenizer.h"

namespace {

using wick::test::run_cli;
using wick::text::Tokenizer;

std::string data(const std::string& name) { return wick::test::data_path("tokenizers/" + name); }

std::string line_of(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s + "\n";
}

TEST(CliTokenize, FoldersFilesAndGguf) {
  const Tokenizer l3 = Tokenizer::from_folder(data("llama3"));
  const std::string text = "Hello world<|eot_id|>";
  for (const std::string model : {data("llama3"), data("llama3/tokenizer.json"), data("gguf/llama3.gguf")}) {
    const auto r = run_cli("tokenize --model '" + model + "' '" + text + "' 'It'\"'\"'s'");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, line_of(l3.encode(text)) + line_of(l3.encode("It's"))) << model;
  }
  const auto plain = run_cli("tokenize --model '" + data("llama3") + "' --no-special '" + text + "'");
  EXPECT_EQ(plain.out, line_of(l3.encode(text, {.add_special = false, .parse_special = false})));
}

TEST(CliTokenize, JsonLinesAndDetokenize) {
  const Tokenizer spm = Tokenizer::from_gguf(wick::gguf::File::open(data("gguf/spm.gguf")));
  const std::string model = data("gguf/spm.gguf");
  const auto r = run_cli("tokenize --model '" + model + "' --json 'Hello world' 'caf\xC3\xA9'");
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t nl = r.out.find('\n');
  const auto first = nlohmann::json::parse(r.out.substr(0, nl));
  const auto ids = spm.encode("Hello world");
  EXPECT_EQ(first["text"], "Hello world");
  EXPECT_EQ(first["ids"].get<std::vector<int32_t>>(), ids);
  ASSERT_EQ(first["pieces"].size(), ids.size());
  EXPECT_EQ(first["pieces"][0], spm.token(ids[0]));
  EXPECT_EQ(nlohmann::json::parse(r.out.substr(nl + 1))["text"], "caf\xC3\xA9");

  std::string args;
  for (int32_t id : ids) args += " " + std::to_string(id);
  const auto d = run_cli("detokenize --model '" + model + "'" + args);
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(d.out, spm.decode(ids) + "\n");
  const auto skip = run_cli("detokenize --model '" + model + "' --skip-special" + args);
  EXPECT_EQ(skip.out, "Hello world\n");
}

TEST(CliTokenize, InspectSummarizesGgufVocabularies) {
  const auto r = run_cli("inspect '" + data("gguf/spm.gguf") + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("tokenizer: SentencePiece (llama) (gguf), vocab 900\n  bos: <s>, eos: </s>\n"),
            std::string::npos)
      << r.out;
  const auto j = run_cli("inspect --json '" + data("gguf/llama3.gguf") + "'");
  ASSERT_EQ(j.code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  const auto& file = doc.is_array() ? doc[0] : doc;
  EXPECT_NE(file["tokenizer"].get<std::string>().find("pre-tokenizer: llama-bpe"), std::string::npos) << j.out;
}

TEST(CliTokenize, ErrorsSayWhatIsWrong) {
  const auto range = run_cli("detokenize --model '" + data("llama2") + "' 99999");
  EXPECT_EQ(range.code, 1);
  EXPECT_EQ(range.err, "wick: error: tokenizer: id 99999 is not in the vocabulary (size 901)\n");
  const auto negative = run_cli("detokenize --model '" + data("llama2") + "' -- -3");
  EXPECT_EQ(negative.code, 2) << negative.err;
  const auto missing = run_cli("tokenize --model /nonexistent x");
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err, "wick: error: tokenize: --model '/nonexistent' does not exist\n");
  const auto not_tok = run_cli("tokenize --model '" + data("spm_bpe.model") + "' x");
  EXPECT_EQ(not_tok.code, 1);
  EXPECT_NE(not_tok.err.find("is neither a folder, a tokenizer.json nor a .gguf file"), std::string::npos)
      << not_tok.err;
}

}  // namespace
