// GPT-2 byte-level BPE tokenizer: GPT-2's regex pre-tokenization (hand-coded over UTF-8 code
// points), the byte-to-unicode alphabet, then BPE merges by rank. No tensor dependency.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wick::text {

class Gpt2Tokenizer {
 public:
  // Loads from a directory holding vocab.json + merges.txt (or encoder.json + vocab.bpe).
  // Throws wick::Error Io when files are missing/unreadable, Format when they are malformed.
  explicit Gpt2Tokenizer(const std::string& dir);
  // Loads from explicit paths to the vocabulary (JSON object token -> id) and the merges file.
  Gpt2Tokenizer(const std::string& vocab_path, const std::string& merges_path);
  // Builds from the file contents (what the constructors read). Throws wick::Error Format.
  static Gpt2Tokenizer from_strings(std::string_view vocab_json, std::string_view merges_txt);

  // Token ids for UTF-8 text (bytes that are not valid UTF-8 are encoded byte-exactly too).
  // With allow_special, each literal "<|endoftext|>" becomes its special id; otherwise it is
  // ordinary text, as in the reference implementation.
  std::vector<int32_t> encode(std::string_view text, bool allow_special = false) const;
  // The bytes the ids stand for, concatenated. A token sequence cut inside a multi-byte
  // character gives the partial bytes unchanged (possibly invalid UTF-8); decoding the pieces
  // one after another and concatenating equals decoding them all at once.
  // Throws wick::Error IndexOutOfRange for an id outside the vocabulary.
  std::string decode(std::span<const int32_t> ids) const;

  // The vocabulary string of id (in the byte-to-unicode alphabet), for debugging.
  const std::string& token(int32_t id) const;
  std::optional<int32_t> token_id(std::string_view token) const;
  size_t vocab_size() const;
  // The id of "<|endoftext|>" (50256 for GPT-2), or nullopt when the vocabulary lacks it.
  std::optional<int32_t> end_of_text_id() const;

  // GPT-2's pre-tokenization: the byte ranges [begin, end) of the regex matches
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ over text.
  static std::vector<std::pair<size_t, size_t>> pretokenize(std::string_view text);

  struct Impl;

 private:
  explicit Gpt2Tokenizer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;  // shared: immutable tables plus a thread-safe cache
};

}  // namespace wick::text
