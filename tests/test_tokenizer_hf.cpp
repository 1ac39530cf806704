// wick::text::Tokenizer on tokenizer.json files against Hugging Face `tokenizers`: every
// fixture of tests/data/tokenizers (gen_tokenizers.py) x every corpus text, ids with and
// without special tokens, with special tokens unparsed, decode, decode skipping specials,
// and DecodeStream's concatenation; then malformed and unsupported files.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/golden.h"
#include "wick/text/tokenizer.h"

namespace {

using nlohmann::json;
using wick::text::EncodeOptions;
using wick::text::Tokenizer;

std::string dir_of(const std::string& name) { return wick::test::data_path("tokenizers/" + name); }

json load(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return json::parse(f);
}

std::string show(const std::vector<int32_t>& v) {
  std::ostringstream os;
  for (int32_t x : v) os << x << ' ';
  return os.str();
}

class HfFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(HfFixture, MatchesTokenizersOnTheCorpus) {
  const std::string name = GetParam();
  const Tokenizer tok = Tokenizer::from_folder(dir_of(name));
  const json corpus = load(dir_of("corpus.json"));
  const json expected = load(dir_of(name + "/expected.json"));
  ASSERT_EQ(corpus.size(), expected.size());
  int failures = 0;
  for (size_t i = 0; i < corpus.size() && failures < 10; ++i) {
    const std::string text = corpus[i];
    const json& e = expected[i];
    const auto ids = tok.encode(text);
    const auto plain = tok.encode(text, {.add_special = false});
    const auto nospecial = tok.encode(text, {.add_special = false, .parse_special = false});
    const auto want_nospecial = e.contains("ids_nospecial") ? e["ids_nospecial"] : e["ids_plain"];
    bool ok = true;
    auto check = [&](bool cond, const std::string& what) {
      if (!cond) ok = false, ADD_FAILURE() << name << " text " << i << " " << json(text).dump() << ": " << what;
    };
    check(ids == e["ids"].get<std::vector<int32_t>>(), "ids " + show(ids) + " want " + e["ids"].dump());
    check(plain == e["ids_plain"].get<std::vector<int32_t>>(), "ids_plain " + show(plain));
    check(nospecial == want_nospecial.get<std::vector<int32_t>>(),
          "ids_nospecial " + show(nospecial) + " want " + want_nospecial.dump());
    const auto want_ids = e["ids"].get<std::vector<int32_t>>();
    check(tok.decode(want_ids) == e["decode"].get<std::string>(),
          "decode " + json(tok.decode(want_ids)).dump() + " want " + e["decode"].dump());
    check(tok.decode(want_ids, true) == e["decode_skip"].get<std::string>(),
          "decode_skip " + json(tok.decode(want_ids, true)).dump() + " want " + e["decode_skip"].dump());
    for (bool skip : {false, true}) {
      auto stream = tok.decode_stream(skip);
      std::string streamed;
      for (int32_t id : want_ids) streamed += stream.push(id);
      const std::string all = tok.decode(want_ids, skip);
      // The stream holds back a trailing incomplete character; everything else is equal.
      check(streamed == all || (all.starts_with(streamed) && all.ends_with("\xEF\xBF\xBD")),
            "stream " + json(streamed).dump() + " vs " + json(all).dump());
    }
    failures += !ok;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, HfFixture,
                         ::testing::Values("gpt2", "llama3", "qwen2", "llama2", "mistral_metaspace", "gemma", "unigram",
                                           "bpe_mix", "roberta", "bert", "split_a", "split_b", "spm_unigram",
                                           "added_opts"));

// Truncation of one sequence (HF's enable_truncation, side right): the text's ids are cut to
// leave room for what the post-processor adds around them. Hand-derived from the untruncated
// ids, which the corpus test checks against tokenizers: [CLS] + plain[:n-2] + [SEP] for BERT,
// BOS + plain[:n-1] for Llama 3, plain[:n] for GPT-2 (adds nothing).
TEST(TokenizerHf, MaxLengthCutsTheTextAndKeepsTheSpecialTokens) {
  const std::string text = "The quick brown fox jumps over the lazy dog, twice: the quick brown fox.";
  for (const char* name : {"bert", "llama3", "gpt2", "roberta"}) {
    SCOPED_TRACE(name);
    const Tokenizer tok = Tokenizer::from_folder(dir_of(name));
    const auto ids = tok.encode(text), plain = tok.encode(text, {.add_special = false});
    ASSERT_GT(plain.size(), 8u);
    // Where the text sits in ids: the special tokens before it, and how many there are.
    const size_t before = size_t(std::search(ids.begin(), ids.end(), plain.begin(), plain.end()) - ids.begin());
    const size_t specials = ids.size() - plain.size();
    ASSERT_LE(before, specials);
    for (size_t n : {specials, specials + 1, size_t(7), ids.size() - 1, ids.size(), ids.size() + 5}) {
      if (n == 0) continue;  // 0 is no limit
      std::vector<int32_t> want(ids.begin(), ids.begin() + long(before));
      want.insert(want.end(), plain.begin(), plain.begin() + long(std::min(plain.size(), n - specials)));
      want.insert(want.end(), ids.end() - long(specials - before), ids.end());
      EXPECT_EQ(tok.encode(text, {.max_length = n}), want) << "max_length " << n;
      EXPECT_LE(want.size(), n);
    }
    // Without the special tokens the whole budget is the text's.
    const auto cut = tok.encode(text, {.add_special = false, .max_length = 5});
    EXPECT_EQ(cut, std::vector<int32_t>(plain.begin(), plain.begin() + 5));
    if (specials > 1)  // (max_length 0 is no limit)
      EXPECT_WICK_ERROR(tok.encode(text, {.max_length = specials - 1}), InvalidArgument, "leaves no room");
    EXPECT_EQ(tok.encode(text, {.max_length = 0}), ids);
  }
}

TEST(TokenizerHf, SpecialTokensAndMetadata) {
  const Tokenizer l3 = Tokenizer::from_folder(dir_of("llama3"));
  EXPECT_EQ(l3.bos_token(), "<|begin_of_text|>");
  EXPECT_EQ(l3.eos_token(), "<|eot_id|>");
  ASSERT_TRUE(l3.token_id("<|eot_id|>"));
  EXPECT_TRUE(l3.is_special(*l3.token_id("<|eot_id|>")));
  const auto eog = l3.end_of_generation_ids();
  for (const char* t : {"<|eot_id|>", "<|eom_id|>"})
    EXPECT_NE(std::find(eog.begin(), eog.end(), *l3.token_id(t)), eog.end()) << t;
  const auto s = l3.summary();
  EXPECT_EQ(s.model, "BPE");
  EXPECT_EQ(s.pre_tokenizer, "Sequence[Split, ByteLevel]");
  EXPECT_GT(s.merges, 0u);
  EXPECT_EQ(s.vocab_size, l3.vocab_size());
  const Tokenizer l2 = Tokenizer::from_folder(dir_of("llama2"));
  EXPECT_EQ(l2.bos_id(), 1);
  EXPECT_EQ(l2.eos_id(), 2);
  EXPECT_EQ(l2.summary().normalizer, "Sequence[Prepend, Replace]");
}

TEST(TokenizerHf, IdsOutOfRange) {
  const Tokenizer tok = Tokenizer::from_folder(dir_of("gpt2"));
  const std::vector<int32_t> bad = {1, int32_t(tok.vocab_size())};
  EXPECT_WICK_ERROR(tok.decode(bad), IndexOutOfRange, "not in the vocabulary");
  EXPECT_WICK_ERROR(tok.token(-1), IndexOutOfRange, "-1");
  auto stream = tok.decode_stream();
  EXPECT_WICK_ERROR(stream.push(1 << 30), IndexOutOfRange, "not in the vocabulary");
}

TEST(TokenizerHf, BadFiles) {
  const std::string ok_model = R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";
  EXPECT_NO_THROW(Tokenizer::from_json_string(R"({"model": )" + ok_model + "}"));
  EXPECT_WICK_ERROR(Tokenizer::from_json_string("{\"model\": "), Format, "malformed JSON");
  EXPECT_WICK_ERROR(Tokenizer::from_json_string(std::string(100000, '[')), Format, "nested deeper");
  EXPECT_WICK_ERROR(Tokenizer::from_json_string(R"({"model": {"type": "Foo"}})"), Unsupported,
                    "model type 'Foo' is not supported");
  EXPECT_WICK_ERROR(Tokenizer::from_json_string(R"({"model": )" + ok_model + R"(, "pre_tokenizer": {"type": "Foo"}})"),
                    Unsupported, "tokenizer.json: pre_tokenizer type 'Foo' is not supported");
  EXPECT_WICK_ERROR(
      Tokenizer::from_json_string(R"({"model": )" + ok_model + R"(, "normalizer": {"type": "Precompiled"}})"),
      Unsupported, "normalizer type 'Precompiled'");
  EXPECT_WICK_ERROR(Tokenizer::from_json_string(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a c"]}})"),
                    Format, "names a token not in the vocabulary");
  EXPECT_WICK_ERROR(
      Tokenizer::from_json_string(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})"),
      Format, "not in the vocabulary");
  EXPECT_WICK_ERROR(Tokenizer::from_json_string(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}}})"), Format,
                    "gives id 0 to both");
  EXPECT_WICK_ERROR(Tokenizer::from_json_string(R"({"model": {"type": "BPE", "vocab": {"a": 4000000000}}})"), Format,
                    "out of range");
  EXPECT_WICK_ERROR(Tokenizer::from_json_string(
                        R"({"model": )" + ok_model +
                        R"(, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated"}})"),
                    Format, "regex does not compile");
  // Ids far past the entries the file holds would cost memory out of proportion to it.
  EXPECT_WICK_ERROR(Tokenizer::from_json_string(R"({"model": {"type": "BPE", "vocab": {"a": 5000}}})"), Format,
                    "out of range");
  EXPECT_WICK_ERROR(Tokenizer::from_json_string(R"({"model": {"type": "BPE", "vocab": {"": 0}}})"), Format,
                    "empty token");
  EXPECT_WICK_ERROR(Tokenizer::from_json_string(
                        R"({"model": )" + ok_model +
                        R"(, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "X"}}],
                                      "special_tokens": {"X": {"ids": [7]}}}})"),
                    Format, "adds id 7, which is not in the vocabulary");
  EXPECT_WICK_ERROR(Tokenizer::from_json_file("/nonexistent/tokenizer.json"), Io, "/nonexistent");
}

TEST(TokenizerConcurrency, SharedAcrossThreads) {
  // One tokenizer (and its BPE cache), copies of it, used from several threads at once.
  const Tokenizer tok = Tokenizer::from_folder(dir_of("llama3"));
  const json corpus = load(dir_of("corpus.json"));
  std::vector<std::vector<int32_t>> want;
  const Tokenizer reference = Tokenizer::from_folder(dir_of("llama3"));  // its own cache
  for (const auto& t : corpus) want.push_back(reference.encode(t.get<std::string>()));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k, copy = tok] {
      for (int rep = 0; rep < 3; ++rep)
        for (size_t i = 0; i < corpus.size(); ++i)
          mismatches[k] += copy.encode(corpus[(i * (k + 1)) % corpus.size()].get<std::string>()) !=
                           want[(i * (k + 1)) % corpus.size()];
    });
  for (auto& t : threads) t.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(TokenizerHf, Gpt2FolderLayout) {
  // The vocab.json + merges.txt folder gives the ids of the existing GPT-2 tokenizer.
  const Tokenizer tok = Tokenizer::from_folder(wick::test::data_path("gpt2-tokenizer"));
  const json cases = load(wick::test::data_path("gpt2-tokenizer/expected_ids.json"));
  for (const json& c : cases) {
    const std::string text = c["text"];
    EXPECT_EQ(tok.encode(text, {.parse_special = false}), c["ids"].get<std::vector<int32_t>>()) << text;
  }
}

}  // namespace
