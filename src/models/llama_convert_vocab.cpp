// The tokenizer.* metadata of a converted model: tokenizer.json's vocabulary as llama.cpp's
// `gpt2` model (convert_hf_to_gguf.py's get_vocab_base + _set_vocab_gpt2), and the special
// tokens, add-BOS/EOS flags and chat template as gguf-py's SpecialVocab reads them.
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

constexpr const char* kOp = "convert";

// llama.cpp's token types.
enum TokenType : int32_t { kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5 };

// convert_hf_to_gguf.py's does_token_look_special: added tokens written like these are
// control tokens even when tokenizer.json does not mark them special.
bool looks_special(std::string_view t) {
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
  if (t.starts_with("<|") && t.ends_with("|>")) return true;
  if (t.starts_with("<\xef\xbd\x9c") && t.ends_with("\xef\xbd\x9c>")) return true;  // <｜...｜> (DeepSeek)
  return t.starts_with("<unused") && t.ends_with(">");                              // Gemma
}

Json read_json(const fs::path& path, bool required) {
  if (!fs::exists(path)) {
    WICK_CHECK(!required, Io, kOp, ": '", path.parent_path().string(), "' has no ", path.filename().string(),
               " (the GGUF needs the vocabulary)");
    return Json::object();
  }
  Json j = parse_config_object(read_config_text(path, kOp), kOp, path.string());
  return j;
}

// The split regexes of a pre-tokenizer that ends in byte-level encoding; false when it is
// not byte-level. Unsupported for a component the GGUF pre names cannot express.
bool byte_level_regexes(const Json& pre, std::vector<std::string>& out) {
  if (!pre.is_object()) return false;
  const std::string type = pre.value("type", "");
  if (type == "Sequence") {
    bool byte_level = false;
    for (const Json& p : pre.value("pretokenizers", Json::array())) byte_level |= byte_level_regexes(p, out);
    return byte_level;
  }
  if (type == "ByteLevel") {
    if (pre.value("use_regex", true)) out.push_back(text::hf::gpt2_split_regex());
    return true;
  }
  if (type == "Split") {
    const Json pattern = pre.value("pattern", Json::object());
    WICK_CHECK(pattern.contains("Regex") && pattern["Regex"].is_string(), Unsupported, kOp,
               ": a Split pre-tokenizer without a Regex pattern has no GGUF pre name");
    out.push_back(pattern["Regex"].get<std::string>());
    return false;
  }
  fail(ErrorKind::Unsupported, kOp, ": pre-tokenizer '", type, "' has no GGUF pre name");
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

void add_chat_templates(gguf::Writer& w, const fs::path& dir, const Json& tconfig) {
  Json tmpl = tconfig.contains("chat_template") ? tconfig["chat_template"] : Json();
  if (tmpl.is_null() && fs::exists(dir / "chat_template.jinja"))
    tmpl = read_config_text(dir / "chat_template.jinja", kOp);
  if (tmpl.is_string()) return w.set("tokenizer.chat_template", gguf::Value(tmpl.get<std::string>()));
  if (!tmpl.is_array()) return;
  // Named templates: "default" is the chat template, the others tokenizer.chat_template.<name>.
  for (const Json& t : tmpl) {
    WICK_CHECK(t.is_object() && t.value("name", Json()).is_string() && t.value("template", Json()).is_string(), Format,
               kOp, ": tokenizer_config.json chat_template entries need a string name and template, got ",
               json::brief(t));
    const std::string name = t["name"].get<std::string>();
    w.set(name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name,
          gguf::Value(t["template"].get<std::string>()));
  }
}

}  // namespace

void add_vocab_metadata(gguf::Writer& w, const fs::path& dir, int64_t vocab_size) {
  const Json tok = read_json(dir / "tokenizer.json", true);
  const Json tconfig = read_json(dir / "tokenizer_config.json", false);
  const Json config = read_json(dir / "config.json", false);
  const Json model = tok.value("model", Json::object());
  const std::string type = model.is_object() ? model.value("type", "") : "";
  WICK_CHECK(type == "BPE", Unsupported, kOp, ": tokenizer.json model '", type,
             "' is not supported (byte-level BPE only)");
  std::vector<std::string> regexes;
  const bool byte_level = byte_level_regexes(tok.value("pre_tokenizer", Json()), regexes);
  WICK_CHECK(byte_level, Unsupported, kOp,
             ": tokenizer.json is BPE without byte-level pre-tokenization (SentencePiece-style, GGUF `llama`), "
             "which is not converted");
  const bool ignore_merges = model.value("ignore_merges", false);
  const auto pre = text::hf::gguf_pre_name(regexes, ignore_merges);
  WICK_CHECK(pre, Unsupported, kOp, ": tokenizer.json's split regexes match no tokenizer.ggml.pre llama.cpp knows");

  // Ids: the model's vocabulary, then the added tokens (which may sit outside it).
  const Json vocab = model.value("vocab", Json::object());
  WICK_CHECK(vocab.is_object(), Format, kOp, ": tokenizer.json model.vocab is not an object");
  const size_t n = static_cast<size_t>(vocab_size);
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n, kUnused);
  std::vector<bool> set(n, false);
  auto place = [&](const std::string& text, const Json& id, int32_t token_type) {
    WICK_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < vocab_size, Format, kOp,
               ": token ", json::brief(Json(text)), " has id ", json::brief(id), ", outside config.json's vocab_size ",
               vocab_size);
    const size_t i = size_t(id.get<int64_t>());
    tokens[i] = text;
    types[i] = token_type;
    set[i] = true;
  };
  for (const auto& [text, id] : vocab.items()) place(text, id, kNormal);
  std::map<std::string, int32_t> added;  // content -> id, for the special-token names
  for (const Json& a : tok.value("added_tokens", Json::array())) {
    WICK_CHECK(a.is_object() && a.value("content", Json()).is_string(), Format, kOp,
               ": tokenizer.json added_tokens entries need a string content, got ", json::brief(a));
    const std::string text = a["content"].get<std::string>();
    place(text, a.value("id", Json()), a.value("special", false) || looks_special(text) ? kControl : kUserDefined);
    added.emplace(text, int32_t(a["id"].get<int64_t>()));
  }
  for (int64_t i = 0; i < vocab_size; ++i)
    if (!set[size_t(i)]) tokens[size_t(i)] = "[PAD" + std::to_string(i) + "]";

  // Merges: "a b" strings, or [a, b] pairs (spaces inside a part as U+0120, as gguf-py does).
  std::vector<std::string> merges;
  for (const Json& m : model.value("merges", Json::array())) {
    if (m.is_string()) {
      merges.push_back(m.get<std::string>());
      continue;
    }
    WICK_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), Format, kOp,
               ": tokenizer.json merges must be strings or pairs of strings, got ", json::brief(m));
    std::string joined;
    for (size_t k = 0; k < 2; ++k) {
      if (k) joined += ' ';
      for (const char ch : m[k].get<std::string>()) joined += ch == ' ' ? std::string("\xc4\xa0") : std::string(1, ch);
    }
    merges.push_back(std::move(joined));
  }

  w.set("tokenizer.ggml.model", gguf::Value(std::string("gpt2")));
  w.set("tokenizer.ggml.pre", gguf::Value(*pre));
  w.set("tokenizer.ggml.tokens", gguf::Value(gguf::Array::of(tokens)));
  w.set("tokenizer.ggml.token_type", gguf::Value(gguf::Array::of(types)));
  if (!merges.empty()) w.set("tokenizer.ggml.merges", gguf::Value(gguf::Array::of(merges)));

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
  const Json post = tok.value("post_processor", Json());
  if (post.is_object()) {
    const Json procs =
        post.value("type", "") == "Sequence" ? post.value("processors", Json::array()) : Json::array({post});
    for (const Json& p : procs) {
      if (!p.is_object()) continue;
      const std::string ptype = p.value("type", "");
      if (ptype == "ByteLevel") {
        add.emplace("bos", false);
        add.emplace("eos", false);
      } else if (ptype == "TemplateProcessing") {
        const Json single = p.value("single", Json::array());
        if (!single.is_array() || single.size() < 2) continue;
        auto special_id = [](const Json& e) {
          return e.is_object() && e.contains("SpecialToken") ? e["SpecialToken"].value("id", "") : std::string();
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
  add_chat_templates(w, dir, tconfig);
}

}  // namespace wick::models
