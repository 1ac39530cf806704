// Model summaries for `wick inspect` (inspect_model.h). Both sources fill one JSON object;
// the text form is printed from it, so the two never disagree.
#include "inspect_model.h"

#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "escape.h"
#include "wick/error.h"
#include "wick/io.h"
#include "wick/models/llama.h"
#include "wick/text/tokenizer.h"

namespace wick::cli {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

const char* scaling_name(const models::RopeConfig& r) {
  switch (r.scaling) {
    case models::RopeScaling::Linear: return "linear";
    case models::RopeScaling::Yarn: return "yarn";
    case models::RopeScaling::Llama3: return "llama3";
    case models::RopeScaling::LongRope: return "longrope";
    case models::RopeScaling::None: break;
  }
  return r.freq_factors.empty() ? "none" : "rope_freqs";  // GGUF: llama3's rule as stored factors
}

Json config_json(const models::LlamaConfig& c) {
  size_t sliding = 0;
  for (const bool s : c.sliding_layers) sliding += s;
  const models::RopeConfig& r = c.rope;
  // Learned positions (GPT-2): no rotary embedding (null in --json).
  Json rope = nullptr;
  if (!c.learned_positions) {
    rope = {{"theta", r.theta}, {"dims", r.dims}, {"scaling", scaling_name(r)}};
    if (r.scaling != models::RopeScaling::None) rope["factor"] = r.factor;
    if (r.original_context) rope["original_context"] = r.original_context;
    if (c.rope_local_theta > 0) rope["local_theta"] = c.rope_local_theta;  // Gemma 3's sliding layers
  }
  // Mixture of experts (null in --json without).
  Json experts = nullptr;
  if (c.n_expert > 0) {
    size_t routed = 0;
    for (const bool m : c.moe_layers) routed += m;
    experts = {{"count", c.n_expert},
               {"per_token", c.n_expert_used},
               {"ffn", c.expert_ffn},
               {"shared_ffn", c.shared_expert_ffn},
               {"normalized", c.norm_topk_prob},
               {"layers", routed}};
  }
  return {{"layers", c.n_layer},
          {"hidden", c.hidden_size},
          {"heads", c.n_head},
          {"kv_heads", c.n_kv_head},
          {"head_dim", c.head_dim},
          {"ffn", c.intermediate_size},
          {"context", c.context_length},
          {"vocab", c.vocab_size},
          {"rope", rope},
          {"sliding_window", c.sliding_window},
          {"sliding_layers", sliding},
          {"attn_logit_softcap", c.attn_logit_softcap},
          {"final_logit_softcap", c.final_logit_softcap},
          {"tied_embeddings", c.tie_embeddings},
          {"experts", experts}};
}

// Tensors, parameters and bytes per storage type.
struct TypeTally {
  std::map<std::string, std::array<size_t, 3>> by_type;
  void add(const std::string& type, size_t params, size_t bytes) {
    auto& t = by_type[type];
    t[0] += 1;
    t[1] += params;
    t[2] += bytes;
  }
  void into(Json& j) const {
    size_t params = 0;
    j["tensor_types"] = Json::object();
    for (const auto& [type, t] : by_type) {
      j["tensor_types"][type] = {{"tensors", t[0]}, {"parameters", t[1]}, {"bytes", t[2]}};
      params += t[1];
    }
    j["parameters"] = params;
  }
};

template <class Load>
Json tokenizer_json(Load&& load) {
  try {
    const text::TokenizerSummary s = load().summary();
    return {{"model", s.model},
            {"pre_tokenizer", s.pre_tokenizer},
            {"vocab_size", s.vocab_size},
            {"merges", s.merges},
            {"bos", s.bos},
            {"eos", s.eos}};
  } catch (const Error& e) {
    return {{"error", e.what()}};
  }
}

// The first line of a chat template, or null.
Json first_line(const std::string& tmpl) {
  if (tmpl.empty()) return nullptr;
  return tmpl.substr(0, tmpl.find('\n'));
}

std::string folder_chat_template(const fs::path& dir) {
  if (fs::exists(dir / "tokenizer_config.json")) {
    std::ifstream in(dir / "tokenizer_config.json");
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("chat_template")) {
      const auto& t = j["chat_template"];
      if (t.is_string()) return t.get<std::string>();
      if (t.is_array() && !t.empty() && t[0].is_object() && t[0].value("template", nlohmann::json()).is_string())
        return t[0]["template"].get<std::string>();
    }
  }
  if (fs::exists(dir / "chat_template.jinja")) {
    std::ifstream in(dir / "chat_template.jinja");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  return {};
}

std::string token_or_none(const Json& t) {
  return t.get<std::string>().empty() ? "none" : printable(t.get<std::string>());
}

}  // namespace

std::optional<Json> gguf_model_summary(const gguf::File& f) {
  models::LlamaConfig c;
  try {
    c = models::LlamaConfig::from_gguf(f);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Unsupported) return std::nullopt;  // not a Llama-family file
    return Json{{"error", e.what()}};
  }
  Json j = {{"architecture", c.arch}, {"source", "gguf"}, {"hyperparameters", config_json(c)}};
  TypeTally tally;
  for (const QuantTensor& t : f.tensors())
    tally.add(std::string(ggml_type_name(t.type)), size_t(t.shape.numel()), t.bytes.nbytes());
  tally.into(j);
  if (f.has("tokenizer.ggml.model")) j["tokenizer"] = tokenizer_json([&] { return text::Tokenizer::from_gguf(f); });
  const std::string key = "tokenizer.chat_template";
  j["chat_template"] =
      f.has(key) && f.get(key).holds<std::string>() ? first_line(f.get(key).get<std::string>()) : Json(nullptr);
  return j;
}

Json folder_model_summary(const fs::path& dir) {
  const models::LlamaConfig c = models::LlamaConfig::from_hf_json_file(dir / "config.json");
  Json j = {{"architecture", c.arch}, {"source", "hugging face folder"}, {"hyperparameters", config_json(c)}};
  // The shards model.safetensors.index.json names, else model.safetensors.
  std::set<std::string> files;
  if (const fs::path index = dir / "model.safetensors.index.json"; fs::exists(index)) {
    std::ifstream in(index);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    WICK_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), Format,
               "inspect: model.safetensors.index.json has no object 'weight_map'");
    for (const auto& [name, shard] : j["weight_map"].items())
      if (shard.is_string()) files.insert(shard.get<std::string>());
  } else {
    files.insert("model.safetensors");
  }
  TypeTally tally;
  for (const std::string& file : files) {
    const safetensors::File st = safetensors::File::open(dir / fs::path(file).filename());
    for (const auto& t : st.tensors()) tally.add(t.dtype, size_t(t.shape.numel()), t.nbytes());
  }
  tally.into(j);
  j["tokenizer"] = tokenizer_json([&] { return text::Tokenizer::from_folder(dir); });
  j["chat_template"] = first_line(folder_chat_template(dir));
  return j;
}

void print_model_summary(const Json& s) {
  if (s.contains("error")) {
    std::cout << "model: does not load: " << printable(s["error"].get<std::string>()) << '\n';
    return;
  }
  const Json& h = s["hyperparameters"];
  const Json& r = h["rope"];
  std::cout << "model: " << s["architecture"].get<std::string>() << " (" << s["source"].get<std::string>() << ")\n"
            << "  layers " << h["layers"] << ", hidden " << h["hidden"] << ", heads " << h["heads"] << " (kv "
            << h["kv_heads"] << "), head dim " << h["head_dim"] << ", ffn " << h["ffn"] << ", context " << h["context"]
            << ", vocab " << h["vocab"] << (h["tied_embeddings"].get<bool>() ? ", tied" : "") << '\n';
  if (r.is_null()) {
    std::cout << "  positions: learned";
  } else {
    std::cout << "  rope: theta " << r["theta"] << ", dims " << r["dims"] << ", scaling "
              << r["scaling"].get<std::string>();
    if (r.contains("factor")) std::cout << " (factor " << r["factor"] << ")";
    if (r.contains("original_context")) std::cout << ", original context " << r["original_context"];
    if (r.contains("local_theta")) std::cout << ", sliding layers theta " << r["local_theta"];
  }
  std::cout << "\n  sliding window: ";
  if (h["sliding_window"].get<int64_t>() == 0) {
    std::cout << "none\n";
  } else {
    std::cout << h["sliding_window"] << " on " << h["sliding_layers"] << " of " << h["layers"] << " layers\n";
  }
  if (const Json& e = h["experts"]; !e.is_null()) {
    std::cout << "  experts: " << e["count"] << ", " << e["per_token"] << " per token"
              << (e["normalized"].get<bool>() ? " (weights renormalized)" : "") << ", ffn " << e["ffn"];
    if (e["shared_ffn"].get<int64_t>() > 0) std::cout << ", a shared expert of " << e["shared_ffn"];
    std::cout << ", in " << e["layers"] << " of " << h["layers"] << " layers\n";
  }
  if (h["attn_logit_softcap"].get<double>() != 0 || h["final_logit_softcap"].get<double>() != 0)
    std::cout << "  softcaps: attention " << h["attn_logit_softcap"] << ", final " << h["final_logit_softcap"] << '\n';
  std::cout << "  parameters: " << s["parameters"] << '\n';
  for (const auto& [type, t] : s["tensor_types"].items())
    std::cout << "    " << type << ": " << t["tensors"] << " tensors, " << t["parameters"] << " parameters, "
              << t["bytes"] << " bytes\n";
  if (s.contains("tokenizer")) {
    const Json& t = s["tokenizer"];
    if (t.contains("error")) {
      std::cout << "  tokenizer: does not load: " << printable(t["error"].get<std::string>()) << '\n';
    } else {
      std::cout << "  tokenizer: " << printable(t["model"].get<std::string>()) << ", "
                << printable(t["pre_tokenizer"].get<std::string>()) << ", " << t["vocab_size"] << " tokens, "
                << t["merges"] << " merges, bos " << token_or_none(t["bos"]) << ", eos " << token_or_none(t["eos"])
                << '\n';
    }
  }
  std::cout << "  chat template: "
            << (s["chat_template"].is_null() ? std::string("none") : printable(s["chat_template"].get<std::string>()))
            << '\n';
}

}  // namespace wick::cli
