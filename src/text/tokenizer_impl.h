// The tokenizer pipeline behind wick::text::Tokenizer, as Hugging Face tokenizers runs it:
// added tokens split off first, then per remaining segment normalizer -> pre-tokenizer ->
// model, then the post-processor; decoding maps ids to token strings and runs the decoder
// chain. tokenizer.json (hf_json.cpp) and GGUF (gguf_vocab.cpp) both build one of these.
#pragma once

#include <array>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "wick/text/tokenizer.h"

namespace wick::text::hf {

// A pre-tokenized piece of text. `first`: it starts at offset 0 of the input (Metaspace's
// prepend_scheme "first" and SentencePiece's leading space look at that).
struct Piece {
  std::string text;
  bool first = false;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& s) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces pieces by their sub-pieces (empty ones dropped).
  virtual void split(std::vector<Piece>& pieces) const = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one pre-tokenized piece.
  virtual void encode(std::string_view piece, std::vector<int32_t>& out) const = 0;
  virtual size_t merges() const { return 0; }
};

enum class ByteMode { ValidUtf8, Raw };

class Decoder {
 public:
  virtual ~Decoder() = default;
  // HF's decode_chain: token strings in, strings out (joined by the caller).
  // Raw: bytes as the tokens hold them, pieces of a UTF-8 character included (what a
  // grammar matches); ValidUtf8: what decode() returns (broken characters as U+FFFD).
  virtual void decode(std::vector<std::string>& tokens, ByteMode mode) const = 0;
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Adds the special tokens of a single sequence (only called with add_special).
  virtual void process(std::vector<int32_t>& ids) const = 0;
  // How many ids process() adds (truncation leaves room for them).
  virtual size_t added() const = 0;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// A model's vocabulary: id -> string and back.
struct Vocab {
  std::vector<std::string> tokens;  // by id; "" for ids without a token
  TokenMap ids;
  // Ids past this are refused: a file may leave gaps, but not claim ids far beyond the
  // number of entries it holds (which would cost memory out of proportion to its size).
  size_t max_id = size_t(INT32_MAX) - 1;
  std::optional<int32_t> find(std::string_view s) const {
    auto it = ids.find(s);
    return it == ids.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }
  // The ids of the byte tokens <0x00>..<0xFF> (byte fallback), `missing` where absent.
  std::array<int32_t, 256> byte_ids(int32_t missing) const;
  // Adds token at id (growing tokens); Format error on duplicate ids or negative ids.
  void add(std::string token, int64_t id, const char* where);
};

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool lstrip = false, rstrip = false, single_word = false;
  bool normalized = false;
  // What id -> token and decode give: the content, normalized for `normalized` tokens (HF
  // stores the normalized form; token_id still looks the original content up).
  std::string text;
};

// A text segment after splitting off added tokens: a token id, or text (begin/end into the
// string it was split from).
struct Segment {
  int32_t id = -1;  // >= 0: an added token
  size_t begin = 0, end = 0;
};

// Added tokens, matched leftmost-longest in the raw text (normalized == false) or in each
// normalized segment (normalized == true), as HF's AddedVocabulary does.
class AddedVocab {
 public:
  void add(AddedToken token);
  // Prepares the match tables; normalizer (may be null) normalizes the `normalized` ones.
  void finish(const Normalizer* normalizer);
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* by_id(int32_t id) const;
  const AddedToken* by_content(std::string_view s) const;
  bool empty() const { return tokens_.empty(); }
  // Splits text into segments; normalized_pass picks which tokens are looked for.
  std::vector<Segment> split(std::string_view text, bool normalized_pass, bool parse_special) const;

 private:
  struct Pattern {
    std::string text;
    size_t token;  // index into tokens_
  };
  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::vector<Pattern> raw_, normalized_;               // sorted by first byte, then longest first
  std::vector<uint32_t> raw_first_, normalized_first_;  // 257 offsets per first byte
};

struct Pipeline {
  Vocab vocab;
  AddedVocab added;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;  // null: tokens joined with " "
  TokenizerSummary summary;
  std::optional<int32_t> bos, eos;
  std::vector<int32_t> extra_eog;  // GGUF eot/eom ids
  size_t vocab_size = 0;           // one past the largest id (model or added)
};

// Builders (hf_json.cpp, gguf_vocab.cpp).
std::unique_ptr<Pipeline> pipeline_from_json(std::string_view json, std::string_view config);
std::unique_ptr<Pipeline> pipeline_from_gguf(const gguf::File& file);
// Fills vocab_size, bos/eos (from names when ids are unset) and the summary's special tokens.
void finish_pipeline(Pipeline& p, const std::string& bos_name, const std::string& eos_name);

}  // namespace wick::text::hf

namespace wick::text {
struct Tokenizer::Impl {
  std::unique_ptr<hf::Pipeline> p;
};
}  // namespace wick::text
