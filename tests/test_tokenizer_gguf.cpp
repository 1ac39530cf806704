// Tokenizer::from_gguf on the vocabularies that gen_tokenizers.py writes into tiny GGUF files
// the way llama.cpp's converter does: gpt2 (byte-level BPE with the pre-tokenizer chosen by
// tokenizer.ggml.pre) against the HF fixtures of the same vocabulary, llama (SentencePiece)
// against sentencepiece's own ids; then missing and contradictory keys.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/golden.h"
#include "wick/gguf.h"
#include "wick/text/tokenizer.h"

namespace {

using nlohmann::json;
using wick::text::Tokenizer;
namespace gguf = wick::gguf;

std::string path_of(const std::string& name) { return wick::test::data_path("tokenizers/" + name); }

json load(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return json::parse(f);
}

class GgufBpe : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufBpe, MatchesTheHfTokenizerOfTheSameVocabulary) {
  const std::string name = GetParam();
  const Tokenizer tok = Tokenizer::from_gguf(gguf::File::open(path_of("gguf/" + name + ".gguf")));
  const json corpus = load(path_of("corpus.json"));
  const json expected = load(path_of(name + "/expected.json"));
  int failures = 0;
  for (size_t i = 0; i < corpus.size() && failures < 10; ++i) {
    const std::string text = corpus[i];
    const json& e = expected[i];
    // llama.cpp applies no normalizer: Qwen2's NFC is a documented divergence.
    if (name == "qwen2" && e.value("not_nfc", false)) continue;
    const auto want = e["ids"].get<std::vector<int32_t>>();
    const auto want_nospecial =
        (e.contains("ids_nospecial") ? e["ids_nospecial"] : e["ids_plain"]).get<std::vector<int32_t>>();
    const auto ids = tok.encode(text);
    const auto nospecial = tok.encode(text, {.add_special = false, .parse_special = false});
    EXPECT_EQ(ids, want) << name << " text " << i << " " << json(text).dump();
    EXPECT_EQ(tok.encode(text, {.add_special = false}), e["ids_plain"].get<std::vector<int32_t>>()) << i;
    EXPECT_EQ(nospecial, want_nospecial) << name << " text " << i << " " << json(text).dump();
    EXPECT_EQ(tok.decode(want), e["decode"].get<std::string>()) << i;
    failures += ids != want || nospecial != want_nospecial;
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, GgufBpe, ::testing::Values("gpt2", "llama3", "qwen2"));

TEST(TokenizerGguf, SentencePieceMatchesSentencepiece) {
  const Tokenizer tok = Tokenizer::from_gguf(gguf::File::open(path_of("gguf/spm.gguf")));
  const json corpus = load(path_of("corpus.json"));
  const json expected = load(path_of("gguf/spm.expected.json"));
  int failures = 0;
  for (size_t i = 0; i < corpus.size() && failures < 10; ++i) {
    const std::string text = corpus[i];
    // sentencepiece does not parse special tokens in the text.
    const auto ids = tok.encode(text, {.parse_special = false});
    const auto want = expected[i]["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(ids, want) << "text " << i << " " << json(text).dump();
    const std::vector<int32_t> body(want.begin() + 1, want.end());
    EXPECT_EQ(tok.decode(body), expected[i]["decode"].get<std::string>()) << "text " << i;
    failures += ids != want;
  }
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  EXPECT_EQ(tok.summary().model, "SentencePiece (llama)");
  // DecodeStream: the first token's leading space goes, later ones keep theirs.
  const auto ids = tok.encode("Hello world, the end", {.add_special = false});
  auto stream = tok.decode_stream();
  std::string streamed;
  for (int32_t id : ids) streamed += stream.push(id);
  EXPECT_EQ(streamed, "Hello world, the end");
}

// A GGUF holding the given tokenizer metadata (and one tensor, as real files have).
gguf::File vocab_file(const std::vector<std::pair<std::string, gguf::Value>>& kv) {
  gguf::Writer w;
  for (const auto& [k, v] : kv) w.set(k, v);
  w.add_tensor("dummy", wick::zeros(wick::Shape{4}));
  const std::string s = w.serialize();
  wick::Buffer b = wick::Buffer::allocate(wick::Device::cpu(), wick::DType::U8, wick::Shape{int64_t(s.size())});
  std::memcpy(b.mutable_data(), s.data(), s.size());
  return gguf::File::parse(b);
}

TEST(TokenizerGguf, MissingAndContradictoryKeys) {
  using V = gguf::Value;
  const V tokens(gguf::Array::of(std::vector<std::string>{"<unk>", "<s>", "</s>", "a", "b", "ab"}));
  const V model_llama(std::string("llama"));
  EXPECT_WICK_ERROR(Tokenizer::from_gguf(vocab_file({{"tokenizer.ggml.tokens", tokens}})), Format,
                    "tokenizer.ggml.model is missing");
  EXPECT_WICK_ERROR(Tokenizer::from_gguf(vocab_file({{"tokenizer.ggml.model", V(std::string("rwkv"))}})), Unsupported,
                    "'rwkv'");
  EXPECT_WICK_ERROR(Tokenizer::from_gguf(vocab_file({{"tokenizer.ggml.model", model_llama}})), Format,
                    "tokenizer.ggml.tokens is missing");
  EXPECT_WICK_ERROR(
      Tokenizer::from_gguf(vocab_file({{"tokenizer.ggml.model", model_llama},
                                       {"tokenizer.ggml.tokens", tokens},
                                       {"tokenizer.ggml.bos_token_id", V(uint32_t(1))},
                                       {"tokenizer.ggml.scores", V(gguf::Array::of(std::vector<float>{0, 0, 0}))}})),
      Format, "tokenizer.ggml.scores has 3 entries for 6 tokens");
  EXPECT_WICK_ERROR(
      Tokenizer::from_gguf(vocab_file({{"tokenizer.ggml.model", model_llama},
                                       {"tokenizer.ggml.tokens", tokens},
                                       {"tokenizer.ggml.token_type", V(gguf::Array::of(std::vector<int32_t>{1, 1}))}})),
      Format, "tokenizer.ggml.token_type has 2 entries");
  EXPECT_WICK_ERROR(Tokenizer::from_gguf(vocab_file({{"tokenizer.ggml.model", model_llama},
                                                     {"tokenizer.ggml.tokens", tokens},
                                                     {"tokenizer.ggml.bos_token_id", V(uint32_t(99))}})),
                    Format, "tokenizer.ggml.bos_token_id = 99 is outside the vocabulary");
  EXPECT_WICK_ERROR(
      Tokenizer::from_gguf(vocab_file({{"tokenizer.ggml.model", model_llama},
                                       {"tokenizer.ggml.tokens", tokens},
                                       {"tokenizer.ggml.scores", V(gguf::Array::of(std::vector<float>(6)))}})),
      Format, "add_bos_token is set but tokenizer.ggml.bos_token_id is missing");
  const V gpt2(std::string("gpt2"));
  const V merges(gguf::Array::of(std::vector<std::string>{"a b"}));
  EXPECT_WICK_ERROR(
      Tokenizer::from_gguf(vocab_file({{"tokenizer.ggml.model", gpt2}, {"tokenizer.ggml.tokens", tokens}})), Format,
      "tokenizer.ggml.merges is missing");
  EXPECT_WICK_ERROR(Tokenizer::from_gguf(vocab_file({{"tokenizer.ggml.model", gpt2},
                                                     {"tokenizer.ggml.tokens", tokens},
                                                     {"tokenizer.ggml.merges", merges},
                                                     {"tokenizer.ggml.pre", V(std::string("nonesuch"))}})),
                    Unsupported, "tokenizer.ggml.pre 'nonesuch'");
  EXPECT_WICK_ERROR(
      Tokenizer::from_gguf(vocab_file({{"tokenizer.ggml.model", gpt2},
                                       {"tokenizer.ggml.tokens", tokens},
                                       {"tokenizer.ggml.merges", V(gguf::Array::of(std::vector<std::string>{"a c"}))},
                                       {"tokenizer.ggml.pre", V(std::string("gpt2"))}})),
      Format, "names a token not in the vocabulary");
  // A well-formed one works, and smollm's two-regex rule splits digits one by one.
  const Tokenizer ok = Tokenizer::from_gguf(vocab_file({{"tokenizer.ggml.model", gpt2},
                                                        {"tokenizer.ggml.tokens", tokens},
                                                        {"tokenizer.ggml.merges", merges},
                                                        {"tokenizer.ggml.pre", V(std::string("smollm"))}}));
  EXPECT_EQ(ok.encode("ab"), (std::vector<int32_t>{5}));
  // Every pre-tokenizer name of the table compiles and splits.
  for (const char* pre : {"default", "gpt2", "llama-bpe", "llama3", "tekken", "gpt-4o", "deepseek-v3", "deepseek-coder",
                          "qwen2", "smollm", "falcon", "bloom", "viking", "dbrx", "starcoder"}) {
    const Tokenizer t = Tokenizer::from_gguf(vocab_file({{"tokenizer.ggml.model", gpt2},
                                                         {"tokenizer.ggml.tokens", tokens},
                                                         {"tokenizer.ggml.merges", merges},
                                                         {"tokenizer.ggml.bos_token_id", V(uint32_t(1))},
                                                         {"tokenizer.ggml.pre", V(std::string(pre))}}));
    EXPECT_EQ(t.encode("ab", {.add_special = false}), (std::vector<int32_t>{5})) << pre;
    EXPECT_EQ(t.summary().pre_tokenizer, pre);
  }
}

}  // namespace
