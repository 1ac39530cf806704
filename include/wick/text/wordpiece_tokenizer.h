// BERT WordPiece tokenizer (uncased, as bert-base-uncased / all-MiniLM-L6-v2), matching
// Hugging Face's BertNormalizer + BertPreTokenizer + WordPiece + [CLS]/[SEP] template.
// No tensor dependency.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wick::text {

// encode_batch's result: row-major [batch, seq_len] ids and mask, padded with the [PAD] id to
// the longest sequence of the batch.
struct WordPieceBatch {
  std::vector<int32_t> ids;
  std::vector<int32_t> attention_mask;  // 1 for real tokens, 0 for padding
  std::vector<int32_t> lengths;         // real tokens per row
  size_t batch = 0;
  size_t seq_len = 0;
};

struct WordPieceOptions {
  // Lowercase and strip accents (NFD, drop Mn), as the uncased models do.
  bool lowercase = true;
  // Words longer than this many code points become [UNK].
  size_t max_input_chars_per_word = 100;
  // Literal special tokens in the text ([CLS], [SEP], [PAD], [UNK], [MASK], matched exactly,
  // before normalization) become their ids, as Hugging Face's added tokens do.
  bool match_special_tokens = true;
};

class WordPieceTokenizer {
 public:
  using Options = WordPieceOptions;

  // Loads vocab.txt (one token per line, id = line number). Throws wick::Error Io/Format.
  explicit WordPieceTokenizer(const std::string& vocab_path, Options options = Options());
  static WordPieceTokenizer from_string(std::string_view vocab_txt, Options options = Options());

  // [CLS] tokens [SEP], keeping at most max_length ids in all (the tokens are truncated).
  // Throws wick::Error InvalidArgument when max_length leaves no room for the special tokens.
  std::vector<int32_t> encode(std::string_view text, size_t max_length = 512, bool add_special_tokens = true) const;
  WordPieceBatch encode_batch(std::span<const std::string> texts, size_t max_length = 512) const;

  // The normalized, split words before WordPiece (for debugging and tests).
  std::vector<std::string> basic_tokenize(std::string_view text) const;
  // Token strings of ids, for debugging. Throws wick::Error IndexOutOfRange for unknown ids.
  std::vector<std::string> tokens(std::span<const int32_t> ids) const;
  const std::string& token(int32_t id) const;
  std::optional<int32_t> token_id(std::string_view token) const;
  size_t vocab_size() const;
  int32_t cls_id() const;
  int32_t sep_id() const;
  int32_t pad_id() const;
  int32_t unk_id() const;

  struct Impl;

 private:
  explicit WordPieceTokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace wick::text
