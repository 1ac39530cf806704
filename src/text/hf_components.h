// Factories for the pipeline components from their tokenizer.json objects (HF tokenizers'
// serde layout). The GGUF loader builds the same JSON objects for its pre-tokenizers and
// decoders, so there is one implementation of each component.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "text/tokenizer_impl.h"
#include "wick/error.h"

namespace wick::text::hf {

using json = nlohmann::json;

// tokenizer.json and tokenizer_config.json already parsed (the GPT-2 folder layout builds one).
std::unique_ptr<Pipeline> pipeline_from_json_value(const json& tokenizer, const json& config);

// null / absent -> nullptr. Unsupported naming an unknown "type", Format for bad fields.
std::unique_ptr<Normalizer> make_normalizer(const json& j);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j);
std::unique_ptr<Decoder> make_decoder(const json& j);
// Token names in templates are resolved through token_id.
std::unique_ptr<PostProcessor> make_post_processor(const json& j, const Pipeline& p);

// Models. They read the pipeline's vocab (which make_model fills from the JSON).
std::unique_ptr<Model> make_model(const json& j, Pipeline& p);
struct BpeOptions {
  bool byte_fallback = false, fuse_unk = false, ignore_merges = false;
  std::optional<int32_t> unk;
};
std::unique_ptr<Model> make_bpe(const Vocab& vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                const BpeOptions& options);
std::unique_ptr<Model> make_bpe_json(const json& j, Pipeline& p);
std::unique_ptr<Model> make_unigram(const json& j, Pipeline& p);
std::unique_ptr<Model> make_wordpiece(const json& j, Pipeline& p);
// llama.cpp's SentencePiece tokenizer over scores (gguf_vocab_spm.cpp).
// mergeable[id]: the piece may be formed by merging (SentencePiece never forms control tokens).
std::unique_ptr<Model> make_spm(const Vocab& vocab, std::vector<float> scores, std::vector<bool> mergeable,
                                std::optional<int32_t> unk);

// "Sequence[Prepend, Replace]" / "ByteLevel" / "none": the component types, for summaries.
std::string describe(const json& j);

// j[key] as T, or a Format error naming where and key (missing or of another type).
template <class T>
T get_field(const json& j, const char* key, std::string_view where) {
  const auto it = j.find(key);
  if (it == j.end()) fail(ErrorKind::Format, "tokenizer.json: ", where, " has no '", key, "'");
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    fail(ErrorKind::Format, "tokenizer.json: ", where, ".", key, " has the wrong type");
  }
}
// j[key] itself (no copy), or a Format error naming where and key.
inline const json& field_ref(const json& j, const char* key, std::string_view where) {
  const auto it = j.find(key);
  if (it == j.end()) fail(ErrorKind::Format, "tokenizer.json: ", where, " has no '", key, "'");
  return *it;
}
// j[key] as T, or fallback when absent or null.
template <class T>
T get_or(const json& j, const char* key, T fallback, std::string_view where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return get_field<T>(j, key, where);
}
// A {"String": s} or {"Regex": r} pattern; returns (is_regex, text).
std::pair<bool, std::string> get_pattern(const json& j, std::string_view where);
[[noreturn]] void unsupported(std::string_view component, const json& j);
// Metaspace's prepend_scheme ("always", "first", "never"; older files: add_prefix_space).
enum class PrependScheme { Never, First, Always };
PrependScheme prepend_scheme(const json& j);

}  // namespace wick::text::hf
