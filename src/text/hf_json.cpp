// tokenizer.json (+ tokenizer_config.json) -> Pipeline, and the GPT-2 vocab.json +
// merges.txt folder layout expressed as the equivalent tokenizer.json.
#include "text/hf_components.h"

namespace wick::text::hf {
namespace {

// Rejects JSON nested deeper than any tokenizer file before building a DOM of it.
void check_depth(std::string_view s, std::string_view what) {
  constexpr int kMaxDepth = 64;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      WICK_CHECK(++depth <= kMaxDepth, Format, what, ": JSON nested deeper than ", kMaxDepth, " levels");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

json parse_json(std::string_view text, std::string_view what) {
  check_depth(text, what);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(ErrorKind::Format, what, ": malformed JSON (", e.what(), ")");
  }
}

// A token name in tokenizer_config.json: a string or an AddedToken object {"content": ...}.
std::string config_token(const json& cfg, const char* key) {
  const auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"];
  fail(ErrorKind::Format, "tokenizer_config.json: ", key, " is neither a string nor {\"content\": ...}");
}

std::unique_ptr<Model> make_wordlevel(const json& j, Pipeline& p);

}  // namespace

[[noreturn]] void unsupported(std::string_view component, const json& j) {
  fail(ErrorKind::Unsupported, "tokenizer.json: ", component, " type '", j.value("type", std::string("?")),
       "' is not supported");
}

PrependScheme prepend_scheme(const json& j) {
  std::string scheme = get_or<std::string>(j, "prepend_scheme", "", "Metaspace");
  if (scheme.empty()) scheme = get_or(j, "add_prefix_space", true, "Metaspace") ? "always" : "never";
  if (scheme == "always") return PrependScheme::Always;
  if (scheme == "first") return PrependScheme::First;
  WICK_CHECK(scheme == "never", Format, "tokenizer.json: Metaspace prepend_scheme '", scheme,
             "' is not always/first/never");
  return PrependScheme::Never;
}

std::pair<bool, std::string> get_pattern(const json& j, std::string_view where) {
  const json& pat = field_ref(j, "pattern", where);
  if (pat.contains("Regex")) return {true, get_field<std::string>(pat, "Regex", where)};
  return {false, get_field<std::string>(pat, "String", where)};
}

std::string describe(const json& j) {
  if (j.is_null()) return "none";
  if (!j.is_object()) return "?";
  std::string type = j.value("type", std::string("?"));
  for (const char* list : {"normalizers", "pretokenizers", "decoders", "processors"}) {
    if (!j.contains(list) || !j[list].is_array()) continue;
    type += "[";
    for (size_t i = 0; i < j[list].size(); ++i) type += (i ? ", " : "") + describe(j[list][i]);
    type += "]";
  }
  return type;
}

std::unique_ptr<Model> make_model(const json& j, Pipeline& p) {
  WICK_CHECK(j.is_object(), Format, "tokenizer.json: 'model' is missing or not an object");
  // The type may be left out when the fields say which model it is (HF's untagged form).
  std::string type = j.value("type", std::string());
  if (type.empty()) type = j.contains("merges") ? "BPE" : j.contains("continuing_subword_prefix") ? "WordPiece" : "";
  if (type == "BPE") return make_bpe_json(j, p);
  if (type == "Unigram") return make_unigram(j, p);
  if (type == "WordPiece") return make_wordpiece(j, p);
  if (type == "WordLevel") return make_wordlevel(j, p);
  unsupported("model", j);
}

namespace {

// WordLevel: a piece is one token, or the unknown token.
class WordLevel : public Model {
 public:
  WordLevel(const Vocab& v, std::optional<int32_t> unk) : vocab_(v), unk_(unk) {}
  void encode(std::string_view piece, std::vector<int32_t>& out) const override {
    if (const auto id = vocab_.find(piece)) return out.push_back(*id);
    WICK_CHECK(unk_, InvalidArgument, "tokenizer: WordLevel has no token for '", piece, "' and no unk_token");
    out.push_back(*unk_);
  }

 private:
  const Vocab& vocab_;
  std::optional<int32_t> unk_;
};

std::unique_ptr<Model> make_wordlevel(const json& j, Pipeline& p) {
  for (const auto& [token, id] : field_ref(j, "vocab", "model").items())
    p.vocab.add(token, id.get<int64_t>(), "model.vocab");
  const auto unk = get_or<std::string>(j, "unk_token", "", "WordLevel");
  return std::make_unique<WordLevel>(p.vocab, unk.empty() ? std::nullopt : p.vocab.find(unk));
}

}  // namespace

std::unique_ptr<Pipeline> pipeline_from_json(std::string_view text, std::string_view config_text) {
  const json cfg = config_text.empty() ? json::object() : parse_json(config_text, "tokenizer_config.json");
  return pipeline_from_json_value(parse_json(text, "tokenizer.json"), cfg);
}

std::unique_ptr<Pipeline> pipeline_from_json_value(const json& j, const json& cfg) {
  WICK_CHECK(j.is_object(), Format, "tokenizer.json: the top level is not an object");
  WICK_CHECK(cfg.is_object(), Format, "tokenizer_config.json: the top level is not an object");
  auto p = std::make_unique<Pipeline>();
  try {
    const json null;
    auto at = [&](const char* key) -> const json& { return j.contains(key) ? j[key] : null; };
    // Ids beyond twice the entries the file holds are refused (Vocab::max_id).
    const json& model = at("model");
    const size_t entries = (model.is_object() && model.contains("vocab") ? model["vocab"].size() : 0) +
                           (j.contains("added_tokens") ? j["added_tokens"].size() : 0);
    p->vocab.max_id = 2 * entries + 1024;
    p->model = make_model(model, *p);
    for (const json& a : get_or(j, "added_tokens", json::array(), "top level")) {
      AddedToken t;
      t.id = get_field<int32_t>(a, "id", "added_tokens");
      t.content = get_field<std::string>(a, "content", "added_tokens");
      t.special = get_or(a, "special", false, "added_tokens");
      t.lstrip = get_or(a, "lstrip", false, "added_tokens");
      t.rstrip = get_or(a, "rstrip", false, "added_tokens");
      t.single_word = get_or(a, "single_word", false, "added_tokens");
      t.normalized = get_or(a, "normalized", !t.special, "added_tokens");
      WICK_CHECK(t.id >= 0 && size_t(t.id) <= p->vocab.max_id, Format, "tokenizer.json: added token '", t.content,
                 "' has id ", t.id, ", out of range");
      if (auto in_vocab = p->vocab.find(t.content); in_vocab && *in_vocab != t.id)
        fail(ErrorKind::Format, "tokenizer.json: added token '", t.content, "' has id ", t.id, " but the vocabulary ",
             *in_vocab);
      p->added.add(std::move(t));
    }
    p->normalizer = make_normalizer(at("normalizer"));
    p->pre_tokenizer = make_pre_tokenizer(at("pre_tokenizer"));
    p->post_processor = make_post_processor(at("post_processor"), *p);
    p->decoder = make_decoder(at("decoder"));
    p->added.finish(p->normalizer.get());
    p->summary.source = "tokenizer.json";
    p->summary.model = at("model").value("type", std::string("BPE"));
    p->summary.normalizer = describe(at("normalizer"));
    p->summary.pre_tokenizer = describe(at("pre_tokenizer"));
    p->summary.decoder = describe(at("decoder"));
  } catch (const json::exception& e) {
    fail(ErrorKind::Format, "tokenizer.json: ", e.what());
  }
  finish_pipeline(*p, config_token(cfg, "bos_token"), config_token(cfg, "eos_token"));
  return p;
}

}  // namespace wick::text::hf
