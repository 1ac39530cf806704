// BERT WordPiece from a vocab.txt (text::Tokenizer::from_wordpiece_vocab: the tokenizer.json
// BertTokenizerFast builds; uncased, all-MiniLM-L6-v2's vocabulary) against Hugging Face
// `tokenizers` over a 200+ text corpus (wordpiece_corpus_ids.json, written by
// gen_wordpiece_corpus.py), plus truncation, special tokens and malformed vocabularies.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/golden.h"
#include "wick/text/tokenizer.h"

namespace wick {
namespace {

using text::Tokenizer;

const Tokenizer& minilm() {
  static const Tokenizer tok = Tokenizer::from_wordpiece_vocab(test::data_path("minilm-vocab.txt"));
  return tok;
}

std::vector<int32_t> encode(const Tokenizer& tok, std::string_view t, size_t max_length = 512, bool special = true) {
  return tok.encode(t, {.add_special = special, .max_length = max_length});
}
std::vector<int32_t> encode(std::string_view t, size_t max_length = 512, bool special = true) {
  return encode(minilm(), t, max_length, special);
}

std::vector<std::string> tokens(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(tok.token(id));
  return out;
}
std::vector<std::string> tokens(const std::vector<int32_t>& ids) { return tokens(minilm(), ids); }

TEST(WordPiece, HuggingFaceCorpus) {
  std::ifstream in(test::data_path("wordpiece_corpus_ids.json"));
  ASSERT_TRUE(in.good());
  const nlohmann::json cases = nlohmann::json::parse(in);
  EXPECT_GE(cases.size(), 200u);
  for (const auto& c : cases) {
    const std::string t = c["text"].get<std::string>();
    const auto expected = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(encode(t), expected) << "text: " << nlohmann::json(t).dump()
                                   << "\ntokens: " << nlohmann::json(tokens(encode(t))).dump();
  }
}

TEST(WordPiece, VocabularyFacts) {
  EXPECT_EQ(minilm().vocab_size(), 30522u);
  EXPECT_EQ(minilm().token_id("[PAD]"), 0);
  EXPECT_EQ(minilm().token_id("[UNK]"), 100);
  EXPECT_EQ(minilm().token_id("[CLS]"), 101);
  EXPECT_EQ(minilm().token_id("[SEP]"), 102);
  EXPECT_TRUE(minilm().is_special(101));
  EXPECT_EQ(minilm().summary().model, "WordPiece");
  EXPECT_EQ(minilm().token_id("hello"), 7592);
  EXPECT_EQ(minilm().token(7592), "hello");
}

TEST(WordPiece, TokensAndBasicTokenization) {
  EXPECT_EQ(tokens(encode("Unaffable!")), (std::vector<std::string>{"[CLS]", "una", "##ffa", "##ble", "!", "[SEP]"}));
  // Lowercased, accents stripped, CJK characters split one by one (these two are not in
  // the vocabulary), punctuation apart.
  EXPECT_EQ(tokens(encode("Caf\xC3\xA9, \xE4\xBD\xA0\xE5\xA5\xBD!", 512, false)),
            (std::vector<std::string>{"cafe", ",", "[UNK]", "[UNK]", "!"}));
  EXPECT_EQ(encode("", 512, /*special=*/false), std::vector<int32_t>{});
  EXPECT_EQ(encode(""), (std::vector<int32_t>{101, 102}));
  EXPECT_EQ(minilm().decode(encode("Unaffable!"), /*skip_special=*/true), "unaffable!");
}

TEST(WordPiece, LongWordsAreUnknown) {
  EXPECT_EQ(encode(std::string(100, 'a'), 512, false).size(), 50u);  // pieces of "aaa..."
  EXPECT_EQ(encode(std::string(101, 'a'), 512, false), std::vector<int32_t>{100});
}

TEST(WordPiece, TruncatesToMaxLength) {
  const std::string t = "one two three four five six seven";
  EXPECT_EQ(encode(t).size(), 9u);
  const auto cut = encode(t, 5);
  ASSERT_EQ(cut.size(), 5u);
  EXPECT_EQ(tokens(cut), (std::vector<std::string>{"[CLS]", "one", "two", "three", "[SEP]"}));
  EXPECT_EQ(encode(t, 2), (std::vector<int32_t>{101, 102}));
  EXPECT_EQ(encode(t, 3, false).size(), 3u);
  // Truncation inside a word's pieces keeps the leading pieces.
  EXPECT_EQ(tokens(encode("unaffable", 3)), (std::vector<std::string>{"[CLS]", "una", "[SEP]"}));
  EXPECT_THROW(encode(t, 1), Error);  // [CLS] and [SEP] alone exceed it
}

TEST(WordPiece, LiteralSpecialTokens) {
  EXPECT_EQ(tokens(encode("x[CLS]y [MASK]z [[UNK]] [cls]")),
            (std::vector<std::string>{"[CLS]", "x", "[CLS]", "y", "[MASK]", "z", "[", "[UNK]", "]", "[", "cl", "##s",
                                      "]", "[SEP]"}));
  EXPECT_EQ(tokens(minilm().encode("[SEP]", {.parse_special = false})),
            (std::vector<std::string>{"[CLS]", "[", "sep", "]", "[SEP]"}));
}

TEST(WordPiece, InvalidUtf8IsAReplacementCharacter) {
  // Text is Unicode, as in Hugging Face: the stray bytes are U+FFFD, an unknown word here.
  EXPECT_EQ(encode("ab\xFF"), encode("ab \xEF\xBF\xBD"));
}

TEST(WordPiece, CasedOptionKeepsCaseAndAccents) {
  const auto tok = Tokenizer::from_wordpiece_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nHello\nh\n##ello\n\xC3\xA9\n", false);
  EXPECT_EQ(encode(tok, "Hello hello \xC3\xA9", 16, false), (std::vector<int32_t>{4, 5, 6, 7}));
}

TEST(WordPiece, MalformedVocabularies) {
  EXPECT_WICK_ERROR(Tokenizer::from_wordpiece_text(""), Format, "vocab.txt is empty");
  EXPECT_WICK_ERROR(Tokenizer::from_wordpiece_text("[PAD]\n[CLS]\n[SEP]\n"), Format, "lacks the special token [UNK]");
  EXPECT_WICK_ERROR(Tokenizer::from_wordpiece_text("[PAD]\n[UNK]\n[CLS]\n"), Format, "lacks the special token [SEP]");
  EXPECT_WICK_ERROR(Tokenizer::from_wordpiece_text("[PAD]\n[UNK]\n\xFF\n"), Format, "line 3 is not valid UTF-8");
  EXPECT_WICK_ERROR(Tokenizer::from_wordpiece_text("[PAD]\n\n[UNK]\n"), Format, "line 2 is empty");
  EXPECT_WICK_ERROR(Tokenizer::from_wordpiece_vocab("/nonexistent/vocab.txt"), Io, "/nonexistent/vocab.txt");
  // CRLF line ends and trailing spaces are trimmed; a repeated token keeps its last line (as
  // BertTokenizer's load_vocab), which leaves the earlier id unused.
  const auto tok = Tokenizer::from_wordpiece_text("[PAD]\r\n[UNK] \r\n[CLS]\r\n[SEP]\r\nx\r\nx\r\n");
  EXPECT_EQ(tok.vocab_size(), 6u);
  EXPECT_EQ(encode(tok, "x y"), (std::vector<int32_t>{2, 5, 1, 3}));
  EXPECT_WICK_ERROR(tok.token(6), IndexOutOfRange, "id 6 is not in the vocabulary (size 6)");
}

}  // namespace
}  // namespace wick

namespace wick {
namespace {

TEST(WordPiece, CliDetectsVocabTxt) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "wick_test_wordpiece_cli";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(test::data_path("minilm-vocab.txt"), dir / "vocab.txt");
  const std::string cmd =
      std::string(WICK_CLI_PATH) + " tokenize --model '" + dir.string() + "' 'Hello, World!!' 2>/dev/null";
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  pclose(pipe);
  fs::remove_all(dir);
  EXPECT_EQ(out, "101 7592 1010 2088 999 999 102\n");
}

}  // namespace
}  // namespace wick
