// BERT WordPiece (uncased, all-MiniLM-L6-v2's vocabulary) against Hugging Face `tokenizers`
// over a 200+ text corpus (wordpiece_corpus_ids.json, written by gen_wordpiece_corpus.py),
// plus truncation, batching and malformed vocabularies.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/golden.h"
#include "wick/text/wordpiece_tokenizer.h"

namespace wick {
namespace {

using text::WordPieceTokenizer;

const WordPieceTokenizer& minilm() {
  static const WordPieceTokenizer tok(test::data_path("minilm-vocab.txt"));
  return tok;
}

TEST(WordPiece, HuggingFaceCorpus) {
  std::ifstream in(test::data_path("wordpiece_corpus_ids.json"));
  ASSERT_TRUE(in.good());
  const nlohmann::json cases = nlohmann::json::parse(in);
  EXPECT_GE(cases.size(), 200u);
  for (const auto& c : cases) {
    const std::string t = c["text"].get<std::string>();
    const auto expected = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(minilm().encode(t), expected)
        << "text: " << nlohmann::json(t).dump()
        << "\ntokens: " << nlohmann::json(minilm().tokens(minilm().encode(t))).dump();
  }
}

TEST(WordPiece, VocabularyFacts) {
  EXPECT_EQ(minilm().vocab_size(), 30522u);
  EXPECT_EQ(minilm().pad_id(), 0);
  EXPECT_EQ(minilm().unk_id(), 100);
  EXPECT_EQ(minilm().cls_id(), 101);
  EXPECT_EQ(minilm().sep_id(), 102);
  EXPECT_EQ(minilm().token_id("hello"), 7592);
  EXPECT_EQ(minilm().token(7592), "hello");
}

TEST(WordPiece, TokensAndBasicTokenization) {
  const auto ids = minilm().encode("Unaffable!");
  EXPECT_EQ(minilm().tokens(ids), (std::vector<std::string>{"[CLS]", "una", "##ffa", "##ble", "!", "[SEP]"}));
  EXPECT_EQ(minilm().basic_tokenize("Caf\xC3\xA9, \xE4\xBD\xA0\xE5\xA5\xBD!"),
            (std::vector<std::string>{"cafe", ",", "\xE4\xBD\xA0", "\xE5\xA5\xBD", "!"}));
  EXPECT_EQ(minilm().encode("", 512, /*add_special_tokens=*/false), std::vector<int32_t>{});
  EXPECT_EQ(minilm().encode(""), (std::vector<int32_t>{101, 102}));
}

TEST(WordPiece, LongWordsAreUnknown) {
  EXPECT_EQ(minilm().encode(std::string(100, 'a'), 512, false).size(), 50u);  // pieces of "aaa..."
  EXPECT_EQ(minilm().encode(std::string(101, 'a'), 512, false), std::vector<int32_t>{100});
}

TEST(WordPiece, TruncatesToMaxLength) {
  const std::string t = "one two three four five six seven";
  EXPECT_EQ(minilm().encode(t).size(), 9u);
  const auto cut = minilm().encode(t, 5);
  ASSERT_EQ(cut.size(), 5u);
  EXPECT_EQ(minilm().tokens(cut), (std::vector<std::string>{"[CLS]", "one", "two", "three", "[SEP]"}));
  EXPECT_EQ(minilm().encode(t, 2), (std::vector<int32_t>{101, 102}));
  EXPECT_EQ(minilm().encode(t, 3, false).size(), 3u);
  // Truncation inside a word's pieces keeps the leading pieces.
  EXPECT_EQ(minilm().tokens(minilm().encode("unaffable", 3)), (std::vector<std::string>{"[CLS]", "una", "[SEP]"}));
  EXPECT_WICK_ERROR(minilm().encode(t, 1), InvalidArgument, "max_length 1 leaves no room");
}

TEST(WordPiece, BatchPadsToTheLongestRow) {
  const std::vector<std::string> texts{"hello world", "", "a much longer sentence here"};
  const text::WordPieceBatch b = minilm().encode_batch(texts, 6);
  EXPECT_EQ(b.batch, 3u);
  EXPECT_EQ(b.seq_len, 6u);
  EXPECT_EQ(b.lengths, (std::vector<int32_t>{4, 2, 6}));
  EXPECT_EQ(b.ids, (std::vector<int32_t>{101, 7592, 2088, 102, 0, 0,  //
                                         101, 102, 0, 0, 0, 0,        //
                                         101, 1037, 2172, 2936, 6251, 102}));
  EXPECT_EQ(b.attention_mask, (std::vector<int32_t>{1, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}));
  const text::WordPieceBatch empty = minilm().encode_batch(std::vector<std::string>{}, 8);
  EXPECT_EQ(empty.batch, 0u);
  EXPECT_TRUE(empty.ids.empty());
}

TEST(WordPiece, LiteralSpecialTokens) {
  EXPECT_EQ(minilm().tokens(minilm().encode("x[CLS]y [MASK]z [[UNK]] [cls]")),
            (std::vector<std::string>{"[CLS]", "x", "[CLS]", "y", "[MASK]", "z", "[", "[UNK]", "]", "[", "cl", "##s",
                                      "]", "[SEP]"}));
  text::WordPieceOptions plain;
  plain.match_special_tokens = false;
  const WordPieceTokenizer tok(test::data_path("minilm-vocab.txt"), plain);
  EXPECT_EQ(tok.tokens(tok.encode("[SEP]")), (std::vector<std::string>{"[CLS]", "[", "sep", "]", "[SEP]"}));
}

TEST(WordPiece, InvalidUtf8IsDropped) { EXPECT_EQ(minilm().encode("ab\xFF\xC3"), minilm().encode("ab")); }

TEST(WordPiece, CasedOptionKeepsCaseAndAccents) {
  text::WordPieceOptions cased;
  cased.lowercase = false;
  const auto tok = WordPieceTokenizer::from_string("[PAD]\n[UNK]\n[CLS]\n[SEP]\nHello\nh\n##ello\n\xC3\xA9\n", cased);
  EXPECT_EQ(tok.encode("Hello hello \xC3\xA9", 16, false), (std::vector<int32_t>{4, 5, 6, 7}));
}

TEST(WordPiece, MalformedVocabularies) {
  EXPECT_WICK_ERROR(WordPieceTokenizer::from_string(""), Format, "vocab.txt is empty");
  EXPECT_WICK_ERROR(WordPieceTokenizer::from_string("[PAD]\n[CLS]\n[SEP]\n"), Format, "lacks the special token [UNK]");
  EXPECT_WICK_ERROR(WordPieceTokenizer::from_string("[PAD]\n[UNK]\n[CLS]\n"), Format, "lacks the special token [SEP]");
  EXPECT_WICK_ERROR(WordPieceTokenizer::from_string("[PAD]\n[UNK]\n\xFF\n"), Format, "line 3 is not valid UTF-8");
  EXPECT_WICK_ERROR(WordPieceTokenizer("/nonexistent/vocab.txt"), Io, "cannot open '/nonexistent/vocab.txt'");
  // CRLF line ends and trailing spaces are trimmed; a repeated token keeps its last line.
  const auto tok = WordPieceTokenizer::from_string("[PAD]\r\n[UNK] \r\n[CLS]\r\n[SEP]\r\nx\r\nx\r\n");
  EXPECT_EQ(tok.vocab_size(), 6u);
  EXPECT_EQ(tok.encode("x y"), (std::vector<int32_t>{2, 5, 1, 3}));
  EXPECT_WICK_ERROR(tok.token(6), IndexOutOfRange, "id 6 is outside the vocabulary [0, 6)");
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
