// GPT-2's own files (vocab.json + merges.txt, or encoder.json + vocab.bpe) through
// text::Tokenizer (the tokenizer.json Hugging Face builds from them) against two oracles: the
// reference implementation's ids (gpt2-tokenizer/expected_ids.json) and Hugging Face
// `tokenizers` over a 200+ text corpus (gpt2_corpus_ids.json, written by
// gen_tokenizer_corpus.py).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "support/golden.h"
#include "wick/text/tokenizer.h"

namespace wick {
namespace {

using text::Tokenizer;

const Tokenizer& gpt2() {
  static const Tokenizer tok = Tokenizer::from_folder(test::data_path("gpt2-tokenizer"));
  return tok;
}

// The text's ids; "<|endoftext|>" in it is plain text unless `special` (as the original
// encoder's allowed_special).
std::vector<int32_t> encode(const Tokenizer& tok, std::string_view t, bool special = false) {
  return tok.encode(t, {.add_special = false, .parse_special = special});
}
std::vector<int32_t> encode(std::string_view t, bool special = false) { return encode(gpt2(), t, special); }

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
    const std::vector<int32_t> ids = encode(t);
    EXPECT_EQ(ids, expected) << "text: " << nlohmann::json(t).dump();
    EXPECT_EQ(gpt2().decode(ids), t) << "text: " << nlohmann::json(t).dump();
  }
}

TEST(Gpt2Tokenizer, ReferenceIds) { expect_corpus("gpt2-tokenizer/expected_ids.json"); }

TEST(Gpt2Tokenizer, HuggingFaceCorpus) {
  EXPECT_GE(read_json(test::data_path("gpt2_corpus_ids.json")).size(), 200u);
  expect_corpus("gpt2_corpus_ids.json");
}

TEST(Gpt2Tokenizer, VocabularyFacts) {
  EXPECT_EQ(gpt2().vocab_size(), 50257u);
  EXPECT_EQ(gpt2().eos_id(), 50256);
  EXPECT_EQ(gpt2().end_of_generation_ids(), std::vector<int32_t>{50256});
  EXPECT_EQ(gpt2().token(50256), "<|endoftext|>");
  EXPECT_EQ(gpt2().token_id("Ġthe"), 262);
  EXPECT_EQ(gpt2().token_id("no such token"), std::nullopt);
  EXPECT_EQ(encode(""), std::vector<int32_t>{});
}

TEST(Gpt2Tokenizer, PreTokenizationFollowsTheRegex) {
  // GPT-2's split regex, piece by piece: each piece's ids alone, concatenated, are the text's.
  using V = std::vector<std::string>;
  const std::pair<std::string, V> cases[] = {
      {"Hello  world", {"Hello", " ", " world"}},
      {"it's IT'S", {"it", "'s", " IT", "'", "S"}},
      {"we'll've", {"we", "'ll", "'ve"}},
      {"a \n\nb", {"a", " \n", "\n", "b"}},
      {"12ab 34", {"12", "ab", " 34"}},
      {"caf\xC3\xA9 \xD9\xA1\xD9\xA2", {"caf\xC3\xA9", " \xD9\xA1\xD9\xA2"}},      // Arabic-Indic digits are N
      {"x\xE3\x80\x80\xE3\x80\x80y", {"x", "\xE3\x80\x80", "\xE3\x80\x80", "y"}},  // U+3000 is \s
  };
  for (const auto& [text, pieces] : cases) {
    std::vector<int32_t> joined;
    for (const std::string& p : pieces) {
      const std::vector<int32_t> ids = encode(p);
      joined.insert(joined.end(), ids.begin(), ids.end());
    }
    EXPECT_EQ(encode(text), joined) << nlohmann::json(text).dump();
  }
}

TEST(Gpt2Tokenizer, SpecialTokenOnlyWhenAllowed) {
  const std::string t = "a<|endoftext|>b<|endoftext|>";
  const auto plain = encode(t);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 50256), 0);
  EXPECT_EQ(plain, (std::vector<int32_t>{64, 27, 91, 437, 1659, 5239, 91, 29, 65, 27, 91, 437, 1659, 5239, 91, 29}));
  EXPECT_EQ(encode(t, /*special=*/true), (std::vector<int32_t>{64, 50256, 65, 50256}));
  EXPECT_EQ(gpt2().decode(encode(t, true)), t);
}

TEST(Gpt2Tokenizer, StreamedDecodeIsByteExactAcrossSplitCharacters) {
  const std::string emoji = "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD";  // thumbs up + skin tone: 4 bytes each
  const auto ids = encode(emoji);
  ASSERT_GT(ids.size(), 2u);
  EXPECT_EQ(gpt2().decode(ids), emoji);
  // Token by token, the stream holds back a character's first bytes until it is complete.
  auto stream = gpt2().decode_stream();
  std::string pieced;
  std::vector<std::string> parts;
  for (int32_t id : ids) parts.push_back(stream.push(id));
  for (const std::string& p : parts) pieced += p;
  EXPECT_EQ(pieced, emoji);
  EXPECT_EQ(parts[0], "");  // the first token holds only part of the first character
  // Alone, a partial character decodes as Hugging Face's decode() does: U+FFFD.
  EXPECT_EQ(gpt2().decode(std::span<const int32_t>(ids.data(), 1)).find("\xEF\xBF\xBD"), 0u);
}

TEST(Gpt2Tokenizer, ValidUtf8RoundTripsAndInvalidBytesBecomeReplacementCharacters) {
  std::mt19937 rng(1234);
  auto utf8 = [](char32_t cp) {
    std::string s;
    if (cp < 0x80) {
      s += char(cp);
    } else if (cp < 0x800) {
      s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += char(0xE0 | (cp >> 12)), s += char(0x80 | ((cp >> 6) & 0x3F)), s += char(0x80 | (cp & 0x3F));
    } else {
      s += char(0xF0 | (cp >> 18)), s += char(0x80 | ((cp >> 12) & 0x3F)), s += char(0x80 | ((cp >> 6) & 0x3F)),
          s += char(0x80 | (cp & 0x3F));
    }
    return s;
  };
  for (int trial = 0; trial < 300; ++trial) {
    std::string s;
    for (size_t n = rng() % 40; n > 0; --n) {
      char32_t cp = rng() % 4 == 0 ? U' ' : char32_t(rng() % (rng() % 2 ? 0x80 : 0x110000));
      if (cp >= 0xD800 && cp < 0xE000) cp = U'x';  // surrogates are not characters
      s += utf8(cp);
    }
    EXPECT_EQ(gpt2().decode(encode(s)), s);
  }
  // Text is Unicode, as in Hugging Face: a stray byte is U+FFFD.
  EXPECT_EQ(gpt2().decode(encode("ab\xFF c")), "ab\xEF\xBF\xBD c");
}

TEST(Gpt2Tokenizer, LongWordAndCacheGiveSameIds) {
  const std::string w(2000, 'a');
  const auto a = encode(w);
  EXPECT_EQ(encode(w), a);
  EXPECT_EQ(gpt2().decode(a), w);
  EXPECT_EQ(a.size(), 500u);  // "aaaa" is one token
  // A 200 KB piece without spaces: BPE must stay near-linear (it runs in milliseconds).
  std::mt19937 rng(7);
  std::string blob(200000, 'a');
  for (char& c : blob) c = static_cast<char>('a' + rng() % 26);
  EXPECT_EQ(gpt2().decode(encode(blob)), blob);
}

TEST(Gpt2Tokenizer, LoadsAlternativeNamesAndExplicitPaths) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "wick_test_gpt2_names";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(test::data_path("gpt2-tokenizer/vocab.json"), dir / "encoder.json");
  fs::copy_file(test::data_path("gpt2-tokenizer/merges.txt"), dir / "vocab.bpe");
  const std::vector<int32_t> expected{15496, 11, 2159, 3228};
  EXPECT_EQ(encode(Tokenizer::from_folder(dir), "Hello, World!!"), expected);
  fs::remove_all(dir);
  EXPECT_WICK_ERROR(Tokenizer::from_folder(dir), Io, "has neither tokenizer.json, vocab.json + merges.txt");
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
  const auto tok = Tokenizer::from_gpt2_bpe(tiny_vocab({"ab", "bc", "abc"}), "#version: 0.2\na b\nb c\nab c\n");
  EXPECT_EQ(encode(tok, "abc"), (std::vector<int32_t>{258}));
  EXPECT_EQ(encode(tok, "bcb"), (std::vector<int32_t>{257, 'b'}));
  EXPECT_EQ(tok.decode(encode(tok, "xabcx")), "xabcx");
}

TEST(Gpt2Tokenizer, MalformedFilesAreFormatErrors) {
  const std::string merges = "a b\n";
  EXPECT_WICK_ERROR(Tokenizer::from_gpt2_bpe("", merges), Format, "vocab.json: not a JSON object of token -> id");
  EXPECT_WICK_ERROR(Tokenizer::from_gpt2_bpe("[1, 2]", merges), Format, "vocab.json: not a JSON object");
  EXPECT_WICK_ERROR(Tokenizer::from_gpt2_bpe("{\"a\": {\"b\": 1}}", merges), Format, "['a'] is not an integer id");
  EXPECT_WICK_ERROR(Tokenizer::from_gpt2_bpe("{\"a\": -1}", merges), Format, "id -1 of 'a' is out of range");
  EXPECT_WICK_ERROR(Tokenizer::from_gpt2_bpe("{\"a\": 1.5}", merges), Format, "['a'] is not an integer id");
  EXPECT_WICK_ERROR(Tokenizer::from_gpt2_bpe("{\"a\": 0, \"b\": 0}", merges), Format, "gives id 0 to both 'a' and 'b'");
  EXPECT_WICK_ERROR(Tokenizer::from_gpt2_bpe("{}", merges), Format,
                    "merge 0 'a b' names a token not in the vocabulary");
  const std::string vocab = tiny_vocab({"ab"});
  EXPECT_WICK_ERROR(Tokenizer::from_gpt2_bpe(vocab, "a  b\n"), Format, "merge 0 'a  b' names a token not in");
  EXPECT_WICK_ERROR(Tokenizer::from_gpt2_bpe(vocab, "a b\nab\n"), Format, "merge 'ab' is not 'a b'");
  EXPECT_WICK_ERROR(Tokenizer::from_gpt2_bpe(vocab, "a b\nb c\n"), Format,
                    "merge 1 'b c' makes 'bc', which is not in the vocabulary");
  EXPECT_NO_THROW(Tokenizer::from_gpt2_bpe(vocab, "#version: 0.2\r\na b\r\n\r\n"));
}

TEST(Gpt2Tokenizer, BadIdsAreIndexErrors) {
  const std::vector<int32_t> ids{50257};
  EXPECT_WICK_ERROR(gpt2().decode(ids), IndexOutOfRange, "id 50257 is not in the vocabulary (size 50257)");
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
