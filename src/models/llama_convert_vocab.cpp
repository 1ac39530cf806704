// The tokenizer.* metadata of a converted model: tokenizer.json's vocabulary as llama.cpp's
// `gpt2` model (convert_hf_to_gguf.py's get_vocab_base + _set_vocab_gpt2), and the special
// tokens, add-BOS/EOS flags and chat template as gguf-py's SpecialVocab reads them.
#include <cctype>
#include <fstream>
#include <map>

#include "config_json.h"
#include "io/json_limits.h"
#include "llama_convert.h"
#include "text/gguf_pre.h"
#include "wick/error.h"

namespace wick::models {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// llama.cpp's token types.
enum TokenType : int32_t { kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

constexpr const char* kSpmSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's space

// convert_hf_to_gguf.py's does_token_look_special: added tokens written like these are
// control tokens even when tokenizer.json does not mark them special.
bool looks_special(std::string_view t) {
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
  if (t.starts_with("<|") && t.ends_with("|>")) return true;
  if (t.starts_with("<\xef\xbd\x9c") && t.ends_with("\xef\xbd\x9c>")) return true;  // <｜...｜> (DeepSeek)
  return t.starts_with("<unused") && t.ends_with(">");                              // Gemma
}

std::string read_optional(const fs::path& path) { return fs::exists(path) ? read_config_text(path, kConvertOp) : ""; }

Json parse_object(const std::string& text, const char* file) {
  return text.empty() ? Json::object() : parse_config_object(text, kConvertOp, file);
}

// Typed reads that treat a wrong type as absent (strings, flags) or as a Format error
// naming the key (lists, objects), never as nlohmann's exceptions.
std::string str_of(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
bool bool_of(const Json& j, const char* key, bool fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}
const Json& typed(const Json& j, const char* key, bool array) {
  static const Json kArray = Json::array(), kObject = Json::object();
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return array ? kArray : kObject;
  WICK_CHECK(array ? it->is_array() : it->is_object(), Format, kConvertOp, ": tokenizer key '", key, "' must be ",
             array ? "a list" : "an object", ", got ", json::brief(*it));
  return *it;
}
const Json& array_of(const Json& j, const char* key) { return typed(j, key, true); }
const Json& object_of(const Json& j, const char* key) { return typed(j, key, false); }

// The split regexes of a pre-tokenizer that ends in byte-level encoding; false when it is
// not byte-level. Unsupported for a component the GGUF pre names cannot express.
bool byte_level_regexes(const Json& pre, std::vector<std::string>& out) {
  if (!pre.is_object()) return false;
  const std::string type = str_of(pre, "type");
  if (type == "Sequence") {
    bool byte_level = false;
    for (const Json& p : array_of(pre, "pretokenizers")) byte_level |= byte_level_regexes(p, out);
    return byte_level;
  }
  if (type == "ByteLevel") {
    if (bool_of(pre, "use_regex", true)) out.push_back(text::hf::gpt2_split_regex());
    return true;
  }
  if (type == "Split") {
    const std::string regex = str_of(object_of(pre, "pattern"), "Regex");
    WICK_CHECK(!regex.empty(), Unsupported, kConvertOp,
               ": a Split pre-tokenizer without a Regex pattern has no GGUF pre name");
    out.push_back(regex);
    return false;
  }
  fail(ErrorKind::Unsupported, kConvertOp, ": pre-tokenizer '", type, "' has no GGUF pre name");
}

// A special token's text in tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> config_token(const Json& config, const std::string& key) {
  const auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return std::nullopt;
}

void add_chat_templates(gguf::Writer& w, const std::string& jinja, const Json& tconfig) {
  Json tmpl = tconfig.contains("chat_template") ? tconfig["chat_template"] : Json();
  if (tmpl.is_null() && !jinja.empty()) tmpl = jinja;
  if (tmpl.is_string()) return w.set("tokenizer.chat_template", gguf::Value(tmpl.get<std::string>()));
  if (!tmpl.is_array()) return;
  // Named templates: "default" is the chat template, the others tokenizer.chat_template.<name>.
  for (const Json& t : tmpl) {
    WICK_CHECK(t.is_object() && !str_of(t, "name").empty() && t.contains("template") && t["template"].is_string(),
               Format, kConvertOp,
               ": tokenizer_config.json chat_template entries need a string name and template, got ", json::brief(t));
    const std::string name = t["name"].get<std::string>();
    w.set(name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name,
          gguf::Value(t["template"].get<std::string>()));
  }
}

// Whether a SentencePiece-style normalizer prefixes "▁" (Prepend, as llama.cpp's
// add_space_prefix does); Unsupported for other normalizers, which llama.cpp cannot express.
bool prepends_space(const Json& normalizer) {
  if (normalizer.empty()) return false;
  const std::string type = str_of(normalizer, "type");
  if (type == "Prepend") return str_of(normalizer, "prepend") == kSpmSpace;
  if (type == "Replace") {
    WICK_CHECK(str_of(object_of(normalizer, "pattern"), "String") == " " && str_of(normalizer, "content") == kSpmSpace,
               Unsupported, kConvertOp, ": a Replace normalizer other than ' ' -> '\u2581' has no GGUF equivalent");
    return false;
  }
  WICK_CHECK(type == "Sequence", Unsupported, kConvertOp, ": normalizer '", type,
             "' has no GGUF equivalent for `llama`");
  bool prepend = false;
  for (const Json& n : array_of(normalizer, "normalizers")) prepend |= prepends_space(n.is_object() ? n : Json());
  return prepend;
}

// GGUF `llama` vocabularies merge the adjacent pair whose concatenation scores highest.
// A merge-ranked BPE is the same when each token scores by the first merge that makes it
// (earlier: higher). convert_hf_to_gguf.py's _set_vocab_llama_hf writes -1000 for every
// token instead, which llama.cpp then merges leftmost-first, unlike the tokenizer.json.
// Byte tokens "<0xNN>" get their type.
void add_spm_scores(gguf::Writer& w, const std::vector<std::string>& tokens, std::vector<int32_t>& types,
                    const std::vector<std::string>& merged) {
  std::map<std::string_view, size_t> rank;
  for (size_t r = 0; r < merged.size(); ++r) rank.emplace(merged[r], r);
  std::vector<float> scores(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    const auto it = rank.find(t);
    scores[i] = it == rank.end() ? -1e9f : -float(it->second);
    if (types[i] == kNormal && t.size() == 6 && t.starts_with("<0x") && t.ends_with(">") &&
        std::isxdigit(static_cast<unsigned char>(t[3])) && std::isxdigit(static_cast<unsigned char>(t[4])))
      types[i] = kByte;
  }
  w.set("tokenizer.ggml.scores", gguf::Value(gguf::Array::of(scores)));
}

}  // namespace

void add_vocab_metadata(gguf::Writer& w, const fs::path& dir, int64_t vocab_size) {
  WICK_CHECK(fs::exists(dir / "tokenizer.json"), Io, kConvertOp, ": '", dir.string(),
             "' has no tokenizer.json (the GGUF needs the vocabulary)");
  add_vocab_metadata(
      w,
      {read_config_text(dir / "tokenizer.json", kConvertOp), read_optional(dir / "tokenizer_config.json"),
       read_optional(dir / "config.json"), read_optional(dir / "chat_template.jinja")},
      vocab_size);
}

void add_vocab_metadata(gguf::Writer& w, const VocabFiles& files, int64_t vocab_size) {
  WICK_CHECK(vocab_size >= 0 && vocab_size <= kMaxConfigSize, InvalidArgument, kConvertOp, ": vocab_size ", vocab_size,
             " is out of range");
  const Json tok = parse_object(files.tokenizer_json, "tokenizer.json");
  const Json tconfig = parse_object(files.tokenizer_config_json, "tokenizer_config.json");
  const Json config = parse_object(files.config_json, "config.json");
  const Json& model = object_of(tok, "model");
  const std::string type = str_of(model, "type");
  WICK_CHECK(type == "BPE", Unsupported, kConvertOp, ": tokenizer.json model '", type,
             "' is not supported (byte-level BPE only)");
  std::vector<std::string> regexes;
  const Json pre_tokenizer = tok.contains("pre_tokenizer") ? tok["pre_tokenizer"] : Json();
  const bool byte_level = byte_level_regexes(pre_tokenizer, regexes);
  const bool spm = !byte_level && bool_of(model, "byte_fallback", false);
  WICK_CHECK(byte_level || spm, Unsupported, kConvertOp,
             ": tokenizer.json is BPE with neither byte-level pre-tokenization nor byte fallback");
  // SentencePiece-style (GGUF `llama`): llama.cpp splits nothing and prefixes one space, so
  // only the normalizer that does the same (Prepend "▁", spaces as "▁") is converted.
  WICK_CHECK(!spm || pre_tokenizer.is_null(), Unsupported, kConvertOp,
             ": a byte-fallback BPE tokenizer.json with a pre-tokenizer (Metaspace) is not converted");
  std::optional<std::string> pre = "default";
  if (byte_level) {
    pre = text::hf::gguf_pre_name(regexes, bool_of(model, "ignore_merges", false));
    WICK_CHECK(pre, Unsupported, kConvertOp,
               ": tokenizer.json's split regexes match no tokenizer.ggml.pre llama.cpp knows");
  }

  // Ids: the model's vocabulary, then the added tokens (which may sit outside it).
  const Json& vocab = object_of(model, "vocab");
  const size_t n = static_cast<size_t>(vocab_size);
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n, kUnused);
  std::vector<bool> set(n, false);
  auto place = [&](const std::string& text, const Json& id, int32_t token_type) {
    WICK_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < vocab_size, Format, kConvertOp,
               ": token ", json::brief(Json(text)), " has id ", json::brief(id), ", outside config.json's vocab_size ",
               vocab_size);
    const size_t i = size_t(id.get<int64_t>());
    tokens[i] = text;
    types[i] = token_type;
    set[i] = true;
  };
  for (const auto& [text, id] : vocab.items()) place(text, id, kNormal);
  std::map<std::string, int32_t> added;  // content -> id, for the special-token names
  for (const Json& a : array_of(tok, "added_tokens")) {
    WICK_CHECK(a.is_object() && a.contains("content") && a["content"].is_string(), Format, kConvertOp,
               ": tokenizer.json added_tokens entries need a string content, got ", json::brief(a));
    const std::string text = a["content"].get<std::string>();
    place(text, a.contains("id") ? a["id"] : Json(),
          bool_of(a, "special", false) || looks_special(text) ? kControl : kUserDefined);
    added.emplace(text, int32_t(a["id"].get<int64_t>()));
  }
  for (int64_t i = 0; i < vocab_size; ++i)
    if (!set[size_t(i)]) tokens[size_t(i)] = "[PAD" + std::to_string(i) + "]";

  // Merges: "a b" strings, or [a, b] pairs (spaces inside a part as U+0120, as gguf-py does).
  std::vector<std::string> merges, merged;  // merged: each merge's result, for SentencePiece scores
  for (const Json& m : array_of(model, "merges")) {
    if (m.is_string()) {
      merges.push_back(m.get<std::string>());
      std::string result = merges.back();
      if (const size_t sp = result.find(' '); sp != std::string::npos) result.erase(sp, 1);
      merged.push_back(std::move(result));
      continue;
    }
    WICK_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), Format, kConvertOp,
               ": tokenizer.json merges must be strings or pairs of strings, got ", json::brief(m));
    std::string joined;
    for (size_t k = 0; k < 2; ++k) {
      if (k) joined += ' ';
      for (const char ch : m[k].get<std::string>()) joined += ch == ' ' ? std::string("\xc4\xa0") : std::string(1, ch);
    }
    merges.push_back(std::move(joined));
    merged.push_back(m[0].get<std::string>() + m[1].get<std::string>());
  }

  w.set("tokenizer.ggml.model", gguf::Value(std::string(spm ? "llama" : "gpt2")));
  w.set("tokenizer.ggml.pre", gguf::Value(*pre));
  w.set("tokenizer.ggml.tokens", gguf::Value(gguf::Array::of(tokens)));
  if (spm) {
    add_spm_scores(w, tokens, types, merged);
    w.set("tokenizer.ggml.add_space_prefix", gguf::Value(prepends_space(object_of(tok, "normalizer"))));
  } else if (!merges.empty()) {
    w.set("tokenizer.ggml.merges", gguf::Value(gguf::Array::of(merges)));
  }
  w.set("tokenizer.ggml.token_type", gguf::Value(gguf::Array::of(types)));

  // Special ids: tokenizer_config.json's <typ>_token among the added tokens, else config.json's
  // <typ>_token_id when it is one id.
  static constexpr std::pair<const char*, const char*> kSpecials[] = {
      {"bos", "bos"},     {"eos", "eos"}, {"unk", "unknown"}, {"sep", "seperator"},
      {"pad", "padding"}, {"cls", "cls"}, {"mask", "mask"}};
  std::map<std::string, std::string> contents;
  for (const auto& [typ, gguf_typ] : kSpecials) {
    std::optional<int64_t> id;
    if (const auto text = config_token(tconfig, std::string(typ) + "_token")) {
      contents[typ] = *text;
      if (const auto it = added.find(*text); it != added.end()) id = it->second;
    }
    const auto cid = config.find(std::string(typ) + "_token_id");
    if (!id && cid != config.end() && cid->is_number_integer()) id = cid->get<int64_t>();
    if (id && *id >= 0 && *id < vocab_size)
      w.set(std::string("tokenizer.ggml.") + gguf_typ + "_token_id", gguf::Value(uint32_t(*id)));
  }
  // add_bos/add_eos: the post-processor's template (a special token first / last), then
  // tokenizer_config.json's add_<typ>_token.
  std::map<std::string, bool> add;
  const Json& post = object_of(tok, "post_processor");
  if (!post.empty()) {
    const Json procs = str_of(post, "type") == "Sequence" ? array_of(post, "processors") : Json::array({post});
    for (const Json& p : procs) {
      if (!p.is_object()) continue;
      const std::string ptype = str_of(p, "type");
      if (ptype == "ByteLevel") {
        add.emplace("bos", false);
        add.emplace("eos", false);
      } else if (ptype == "TemplateProcessing") {
        const Json& single = array_of(p, "single");
        if (single.size() < 2) continue;
        auto special_id = [](const Json& e) {
          return e.is_object() && e.contains("SpecialToken") && e["SpecialToken"].is_object()
                     ? str_of(e["SpecialToken"], "id")
                     : std::string();
        };
        if (const std::string first = special_id(single.front()); !first.empty())
          add["bos"] = contents.count("bos") ? contents["bos"] == first : true;
        if (const std::string last = special_id(single.back()); !last.empty())
          add["eos"] = contents.count("eos") ? contents["eos"] == last : true;
      }
    }
  }
  for (const char* typ : {"bos", "eos"}) {
    const auto it = tconfig.find(std::string("add_") + typ + "_token");
    if (it != tconfig.end() && it->is_boolean()) add.emplace(typ, it->get<bool>());
    if (add.count(typ)) w.set(std::string("tokenizer.ggml.add_") + typ + "_token", gguf::Value(add[typ]));
  }
  add_chat_templates(w, files.chat_template_jinja, tconfig);
}

}  // namespace wick::models
