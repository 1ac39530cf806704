// GPT-2 byte-level BPE tokenizer against two oracles: the reference implementation's ids
// (gpt2-tokenizer/expected_ids.json) and Hugging Face `tokenizers` over a 200+ text corpus
// (gpt2_corpus_ids.json, written by gen_tokenizer_corpus.py).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "support/golden.h"
#include "wick/text/gpt2_tokenizer.h"

namespace wick {
namespace {

using text::Gpt2Tokenizer;

const Gpt2Tokenizer& gpt2() {
  static const Gpt2Tokenizer tok(test::data_path("gpt2-tokenizer"));
  return tok;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in);
}

void expect_corpus(const std::string& file) {
  const nlohmann::json cases = read_json(test::data_path(file));
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const std::string t = c["text"].get<std::string>();
    const auto expected = c["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> ids = gpt2().encode(t);
    EXPECT_EQ(ids, expected) << "text: " << nlohmann::json(t).dump();
    EXPECT_EQ(gpt2().decode(ids), t) << "text: " << nlohmann::json(t).dump();
  }
}

std::vector<std::string> pieces(std::string_view s) {
  std::vector<std::string> out;
  for (auto [b, e] : Gpt2Tokenizer::pretokenize(s)) out.emplace_back(s.substr(b, e - b));
  return out;
}

TEST(Gpt2Tokenizer, ReferenceIds) { expect_corpus("gpt2-tokenizer/expected_ids.json"); }

TEST(Gpt2Tokenizer, HuggingFaceCorpus) {
  EXPECT_GE(read_json(test::data_path("gpt2_corpus_ids.json")).size(), 200u);
  expect_corpus("gpt2_corpus_ids.json");
}

TEST(Gpt2Tokenizer, VocabularyFacts) {
  EXPECT_EQ(gpt2().vocab_size(), 50257u);
  EXPECT_EQ(gpt2().end_of_text_id(), 50256);
  EXPECT_EQ(gpt2().token(50256), "<|endoftext|>");
  EXPECT_EQ(gpt2().token_id("Ġthe"), 262);
  EXPECT_EQ(gpt2().token_id("no such token"), std::nullopt);
  EXPECT_EQ(gpt2().encode(""), std::vector<int32_t>{});
}

TEST(Gpt2Tokenizer, PretokenizeFollowsTheRegex) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("Hello  world"), (V{"Hello", " ", " world"}));
  EXPECT_EQ(pieces("it's IT'S"), (V{"it", "'s", " IT", "'", "S"}));
  EXPECT_EQ(pieces("we'll've"), (V{"we", "'ll", "'ve"}));
  EXPECT_EQ(pieces("x!'s"), (V{"x", "!'", "s"}));
  EXPECT_EQ(pieces("a \n\nb"), (V{"a", " \n", "\n", "b"}));
  EXPECT_EQ(pieces("a\tb"), (V{"a", "\t", "b"}));
  EXPECT_EQ(pieces("end   "), (V{"end", "   "}));
  EXPECT_EQ(pieces("12ab 34"), (V{"12", "ab", " 34"}));
  EXPECT_EQ(pieces(" ?!x"), (V{" ?!", "x"}));
  EXPECT_EQ(pieces("caf\xC3\xA9 \xD9\xA1\xD9\xA2"),
            (V{"caf\xC3\xA9", " \xD9\xA1\xD9\xA2"}));  // Arabic-Indic digits are N
  EXPECT_EQ(pieces("x\xE3\x80\x80\xE3\x80\x80y"), (V{"x", "\xE3\x80\x80", "\xE3\x80\x80", "y"}));  // U+3000 is \s
  EXPECT_EQ(pieces("a \xFF\xFE"), (V{"a", " \xFF\xFE"}));  // invalid bytes are "other"
  EXPECT_EQ(pieces(""), V{});
}

TEST(Gpt2Tokenizer, SpecialTokenOnlyWhenAllowed) {
  const std::string t = "a<|endoftext|>b<|endoftext|>";
  const auto plain = gpt2().encode(t);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 50256), 0);
  EXPECT_EQ(plain, (std::vector<int32_t>{64, 27, 91, 437, 1659, 5239, 91, 29, 65, 27, 91, 437, 1659, 5239, 91, 29}));
  EXPECT_EQ(gpt2().encode(t, /*allow_special=*/true), (std::vector<int32_t>{64, 50256, 65, 50256}));
  EXPECT_EQ(gpt2().decode(gpt2().encode(t, true)), t);
}

TEST(Gpt2Tokenizer, DecodeIsByteExactAcrossSplitCharacters) {
  const std::string emoji = "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD";  // thumbs up + skin tone: 4 bytes each
  const auto ids = gpt2().encode(emoji);
  ASSERT_GT(ids.size(), 2u);
  std::string pieced;
  for (int32_t id : ids) pieced += gpt2().decode(std::span<const int32_t>(&id, 1));
  EXPECT_EQ(pieced, emoji);
  // The first token holds only part of the first character: its raw bytes come back as they are.
  const std::string first = gpt2().decode(std::span<const int32_t>(ids.data(), 1));
  EXPECT_EQ(emoji.compare(0, first.size(), first), 0);
  EXPECT_LT(first.size(), 4u);
}

TEST(Gpt2Tokenizer, InvalidUtf8RoundTrips) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    std::string s(rng() % 40, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 4 == 0 ? ' ' : rng() % 256);
    const auto ids = gpt2().encode(s);
    EXPECT_EQ(gpt2().decode(ids), s);
    size_t bytes = 0;
    for (auto [b, e] : Gpt2Tokenizer::pretokenize(s)) {
      EXPECT_EQ(b, bytes);
      EXPECT_GT(e, b);
      bytes = e;
    }
    EXPECT_EQ(bytes, s.size());
  }
}

TEST(Gpt2Tokenizer, LongWordAndCacheGiveSameIds) {
  const std::string w(2000, 'a');
  const auto a = gpt2().encode(w);
  EXPECT_EQ(gpt2().encode(w), a);
  EXPECT_EQ(gpt2().decode(a), w);
  EXPECT_EQ(a.size(), 500u);  // "aaaa" is one token
  // A 200 KB piece without spaces: BPE must stay near-linear (it runs in milliseconds).
  std::mt19937 rng(7);
  std::string blob(200000, 'a');
  for (char& c : blob) c = static_cast<char>('a' + rng() % 26);
  EXPECT_EQ(gpt2().decode(gpt2().encode(blob)), blob);
}

TEST(Gpt2Tokenizer, LoadsAlternativeNamesAndExplicitPaths) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "wick_test_gpt2_names";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(test::data_path("gpt2-tokenizer/vocab.json"), dir / "encoder.json");
  fs::copy_file(test::data_path("gpt2-tokenizer/merges.txt"), dir / "vocab.bpe");
  const Gpt2Tokenizer by_dir(dir.string());
  const Gpt2Tokenizer by_paths((dir / "encoder.json").string(), (dir / "vocab.bpe").string());
  const std::vector<int32_t> expected{15496, 11, 2159, 3228};
  EXPECT_EQ(by_dir.encode("Hello, World!!"), expected);
  EXPECT_EQ(by_paths.encode("Hello, World!!"), expected);
  fs::remove_all(dir);
  EXPECT_WICK_ERROR(Gpt2Tokenizer(dir.string()), Io, "holds neither vocab.json");
  EXPECT_WICK_ERROR(Gpt2Tokenizer("/nonexistent/v.json", "/nonexistent/m.txt"), Io, "cannot open '/nonexistent/");
}

// A tiny but complete vocabulary: the 256 byte symbols (id = byte value) plus merged tokens.
std::string tiny_vocab(const std::vector<std::string>& extra) {
  nlohmann::json v = nlohmann::json::object();
  int id = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    static int shifted = 0;
    if (b == 0) shifted = 0;
    const char32_t cp = printable ? b : 256 + shifted++;
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    v[s] = id++;
  }
  for (const auto& e : extra) v[e] = id++;
  return v.dump();
}

TEST(Gpt2Tokenizer, TinyVocabularyMergesByRank) {
  // "ab" merges before "bc": "abc" -> ab + c, even though "bc" also appears.
  const auto tok = Gpt2Tokenizer::from_strings(tiny_vocab({"ab", "bc", "abc"}), "#version: 0.2\na b\nb c\nab c\n");
  EXPECT_EQ(tok.encode("abc"), (std::vector<int32_t>{258}));
  EXPECT_EQ(tok.encode("bcb"), (std::vector<int32_t>{257, 'b'}));
  EXPECT_EQ(tok.decode(tok.encode("xabcx")), "xabcx");
}

TEST(Gpt2Tokenizer, MalformedFilesAreFormatErrors) {
  const std::string merges = "a b\n";
  EXPECT_WICK_ERROR(Gpt2Tokenizer::from_strings("", merges), Format, "invalid JSON");
  EXPECT_WICK_ERROR(Gpt2Tokenizer::from_strings("[1, 2]", merges), Format, "found an array");
  EXPECT_WICK_ERROR(Gpt2Tokenizer::from_strings("{\"a\": {\"b\": 1}}", merges), Format, "nested object");
  EXPECT_WICK_ERROR(Gpt2Tokenizer::from_strings("{\"a\": -1}", merges), Format, "negative id");
  EXPECT_WICK_ERROR(Gpt2Tokenizer::from_strings("{\"a\": 1.5}", merges), Format, "fractional id");
  EXPECT_WICK_ERROR(Gpt2Tokenizer::from_strings("{\"a\": 0, \"b\": 0}", merges), Format, "used twice");
  EXPECT_WICK_ERROR(Gpt2Tokenizer::from_strings("{\"a\": 0, \"b\": 7}", merges), Format, "ids must be dense");
  EXPECT_WICK_ERROR(Gpt2Tokenizer::from_strings("{}", merges), Format, "empty");
  EXPECT_WICK_ERROR(Gpt2Tokenizer::from_strings("{\"a\": 0}", merges), Format, "lacks the token for byte 0");
  const std::string vocab = tiny_vocab({"ab"});
  EXPECT_WICK_ERROR(Gpt2Tokenizer::from_strings(vocab, "a  b\n"), Format, "merges line 1 is not two tokens");
  EXPECT_WICK_ERROR(Gpt2Tokenizer::from_strings(vocab, "a b\nab\n"), Format, "merges line 2 is not two tokens");
  EXPECT_WICK_ERROR(Gpt2Tokenizer::from_strings(vocab, "a b\nb c\n"), Format, "merges line 2 ('b c') names a token");
  EXPECT_NO_THROW(Gpt2Tokenizer::from_strings(vocab, "#version: 0.2\r\na b\r\n\r\n"));
}

TEST(Gpt2Tokenizer, BadIdsAreIndexErrors) {
  const std::vector<int32_t> ids{50257};
  EXPECT_WICK_ERROR(gpt2().decode(ids), IndexOutOfRange, "id 50257 is outside the vocabulary [0, 50257)");
  EXPECT_WICK_ERROR(gpt2().token(-1), IndexOutOfRange, "id -1");
}

}  // namespace
}  // namespace wick

namespace wick {
namespace {

// Runs a command and returns its stdout.
std::string run_capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  pclose(pipe);
  return out;
}

TEST(Gpt2Tokenizer, CliPrintsIdsOnly) {
  const std::string cmd = std::string(WICK_CLI_PATH) + " tokenize --model '" + test::data_path("gpt2-tokenizer") +
                          "' 'Hello, World!!' 2>/dev/null";
  EXPECT_EQ(run_capture(cmd), "15496 11 2159 3228\n");
}

}  // namespace
}  // namespace wick
