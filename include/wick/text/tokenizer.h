// wick::text::Tokenizer: Hugging Face tokenizer.json pipelines (normalizer, pre-tokenizer,
// BPE / Unigram / WordPiece model, post-processor, decoder, added tokens) and the vocabularies
// embedded in GGUF files (llama.cpp's `llama` SentencePiece and `gpt2` byte-level BPE).
// Immutable once built: copies share one implementation and may be used from many threads.
// No tensor dependency.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wick::gguf {
class File;
}

namespace wick::text {

struct EncodeOptions {
  // Add what the post-processor adds (BOS/EOS, [CLS]/[SEP]); for GGUF: add_bos/add_eos_token.
  bool add_special = true;
  // Special tokens written in the text ("<|eot_id|>") become their ids; when false they are
  // tokenized as ordinary text (non-special added tokens are still matched, as in HF).
  bool parse_special = true;
  // At most this many ids, the added special tokens included (0: no limit). As HF's
  // truncation of one sequence (side right): the text's ids are cut, then BOS/EOS or
  // [CLS]/[SEP] are added. InvalidArgument when the special tokens alone exceed it.
  size_t max_length = 0;
};

// What `wick inspect` prints about a tokenizer.
struct TokenizerSummary {
  std::string source;         // "tokenizer.json" or "gguf"
  std::string model;          // "BPE", "Unigram", "WordPiece", "SentencePiece (llama)"
  std::string normalizer;     // component types, e.g. "Sequence[Prepend, Replace]", or "none"
  std::string pre_tokenizer;  // e.g. "Sequence[Split, ByteLevel]" or the GGUF pre name
  std::string decoder;
  size_t vocab_size = 0;
  size_t merges = 0;
  std::string bos, eos;                                         // token strings, "" when none
  std::vector<std::pair<std::string, int32_t>> special_tokens;  // added tokens marked special
  std::string to_string() const;                                // a few lines of "key: value"
};

class Tokenizer {
 public:
  struct Impl;  // src/text/tokenizer_impl.h
  // tokenizer.json (+ the optional tokenizer_config.json beside it, for bos/eos names).
  // Throws wick::Error Io (unreadable), Format (malformed JSON, merges naming unknown tokens,
  // bad ids) or Unsupported (a component type wick does not implement, named).
  static Tokenizer from_json_file(const std::filesystem::path& path, const std::filesystem::path& config = {});
  static Tokenizer from_json_string(std::string_view tokenizer_json, std::string_view tokenizer_config_json = {});
  // A folder with tokenizer.json (+ tokenizer_config.json); else GPT-2's vocab.json +
  // merges.txt (or OpenAI's encoder.json + vocab.bpe); else BERT's vocab.txt (+
  // tokenizer_config.json's do_lower_case): each as the tokenizer.json that Hugging Face's
  // fast tokenizer builds from those files.
  static Tokenizer from_folder(const std::filesystem::path& dir);
  // BERT's WordPiece from a vocab.txt (one token per line, id = line number), the file or a
  // folder holding it, as BertTokenizerFast builds it: BertNormalizer (lowercase and accents
  // stripped when `lowercase`; default: the folder's tokenizer_config.json do_lower_case,
  // true when absent), BertPreTokenizer, WordPiece ("##", [UNK], words over 100 characters
  // unknown), [CLS] ... [SEP], the five special tokens matched literally.
  static Tokenizer from_wordpiece_vocab(const std::filesystem::path& path, std::optional<bool> lowercase = {});
  // The same from the files' contents: vocab.txt's text; GPT-2's vocab.json and merges.txt.
  // Format naming the file when malformed.
  static Tokenizer from_wordpiece_text(std::string_view vocab_txt, bool lowercase = true);
  static Tokenizer from_gpt2_bpe(std::string_view vocab_json, std::string_view merges_txt);
  // The vocabulary of a GGUF file (tokenizer.ggml.*). Format naming the key when one is
  // missing or contradicts another; Unsupported for other tokenizer models or pre names.
  static Tokenizer from_gguf(const gguf::File& file);

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options = {}) const;
  // The text of ids (invalid UTF-8 from partial byte tokens becomes U+FFFD, as in HF).
  // Throws IndexOutOfRange for an id outside the vocabulary.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // Incremental decoding for generation: push() returns the text that the new token adds to
  // the text so far ("" while a UTF-8 character is still incomplete). The pieces concatenate
  // to decode(all ids), spaces included (first-token space stripping of SentencePiece and
  // Metaspace is applied once, at the start).
  class DecodeStream {
   public:
    std::string push(int32_t id);

   private:
    friend class Tokenizer;
    DecodeStream(std::shared_ptr<const Impl> impl, bool skip_special)
        : impl_(std::move(impl)), skip_special_(skip_special) {}
    std::shared_ptr<const Impl> impl_;  // keeps the tokenizer alive
    bool skip_special_;
    std::vector<int32_t> ids_;
    std::string prefix_;
    size_t prefix_index_ = 0;
  };
  DecodeStream decode_stream(bool skip_special = false) const { return DecodeStream(impl_, skip_special); }

  size_t vocab_size() const;                   // one past the largest id
  const std::string& token(int32_t id) const;  // IndexOutOfRange outside the vocabulary
  std::optional<int32_t> token_id(std::string_view token) const;
  // The bytes the token adds to a text in the middle of it (a leading space included,
  // a piece of a UTF-8 character as it is): what a grammar matches (grammar.h).
  std::string token_bytes(int32_t id) const;
  bool is_special(int32_t id) const;  // an added token marked special
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  std::string bos_token() const;  // "" when there is none
  std::string eos_token() const;
  // EOS plus the end-of-turn tokens present (<|eot_id|>, <|eom_id|>, <|im_end|>,
  // <end_of_turn>, <|end|>, <|endoftext|>) and GGUF's eot/eom ids; sorted, unique.
  std::vector<int32_t> end_of_generation_ids() const;
  TokenizerSummary summary() const;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace wick::text
