// LanguageModel::load: which network, tokenizer and chat template a path holds.
#include "wick/models/language_model.h"

#include <algorithm>
#include <fstream>

#include "config_json.h"
#include "wick/gguf.h"
#include "wick/models/llama.h"

namespace wick::models {

namespace {
namespace fs = std::filesystem;
constexpr std::string_view kOp = "load model";

bool is_gguf_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

// tokenizer_config.json's "chat_template": a string, or a list of {"name", "template"}
// whose "default" entry is the chat template (transformers' rule); a chat_template.jinja
// beside it (transformers >= 4.43 saves it there) wins, as in transformers.
std::optional<std::string> folder_chat_template(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "chat_template.jinja", ec)) return read_config_text(dir / "chat_template.jinja", kOp);
  if (!fs::exists(dir / "tokenizer_config.json", ec)) return std::nullopt;
  const auto path = dir / "tokenizer_config.json";
  const nlohmann::json j = parse_config_object(read_config_text(path, kOp), kOp, path.string());
  const auto it = j.find("chat_template");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  WICK_CHECK(it->is_array(), Format, kOp, ": '", path.string(),
             "': chat_template must be a string or a list of {name, template}, got ", json::brief(*it));
  for (const auto& e : *it)
    if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string())
      return e["template"].get<std::string>();
  fail(ErrorKind::Format, kOp, ": '", path.string(), "': chat_template lists no 'default' template");
}

// generation_config.json's eos_token_id: one id or a list (Llama 3.1 lists three).
std::vector<int32_t> generation_config_eos(const fs::path& dir) {
  std::error_code ec;
  const auto path = dir / "generation_config.json";
  if (!fs::exists(path, ec)) return {};
  const nlohmann::json j = parse_config_object(read_config_text(path, kOp), kOp, path.string());
  const auto it = j.find("eos_token_id");
  if (it == j.end() || it->is_null()) return {};
  std::vector<int32_t> ids;
  auto add = [&](const nlohmann::json& v) {
    WICK_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= kMaxConfigSize, Format, kOp, ": '",
               path.string(), "': eos_token_id must be a token id or a list of them, got ", json::brief(v));
    ids.push_back(int32_t(v.get<int64_t>()));
  };
  if (it->is_array())
    for (const auto& v : *it) add(v);
  else
    add(*it);
  return ids;
}

}  // namespace

LanguageModel LanguageModel::load(const fs::path& path, const ModelLoadOptions& opt) {
  std::error_code ec;
  WICK_CHECK(fs::exists(path, ec), Io, kOp, ": '", path.string(), "' does not exist");
  LanguageModel lm;
  std::optional<std::string> chat_template;
  std::vector<int32_t> extra_eos;
  LlamaLoadOptions lo;
  lo.device = opt.device;
  lo.dtype = opt.dtype;
  lo.quantize = opt.quantize;
  lo.quant_activation = opt.quant_activation;
  lo.on_tensor = opt.on_tensor;
  if (fs::is_directory(path, ec)) {
    // The tokenizer and template first: a folder without them fails before any weight is read.
    lm.tokenizer_ = std::make_shared<text::Tokenizer>(text::Tokenizer::from_folder(path));
    chat_template = folder_chat_template(path);
    extra_eos = generation_config_eos(path);
    auto m = std::make_shared<LlamaModel>(LlamaModel::load(path, lo));
    lm.architecture_ = m->config().arch;
    lm.model_ = std::move(m);
  } else {
    WICK_CHECK(is_gguf_file(path), Format, kOp, ": '", path.string(),
               "' is neither a GGUF file nor a Hugging Face folder (config.json + safetensors)");
    const auto f = gguf::File::open(path);
    lm.tokenizer_ = std::make_shared<text::Tokenizer>(text::Tokenizer::from_gguf(f));
    if (f.has("tokenizer.chat_template")) chat_template = f.get("tokenizer.chat_template").get<std::string>();
    auto m = std::make_shared<LlamaModel>(LlamaModel::load(path, lo));
    lm.architecture_ = m->config().arch;
    lm.model_ = std::move(m);
  }
  if (opt.chat_template) chat_template = opt.chat_template;
  if (chat_template)
    lm.chat_template_ = std::make_shared<text::ChatTemplate>(text::ChatTemplate::parse(*chat_template));
  lm.stop_tokens_ = lm.tokenizer_->end_of_generation_ids();
  for (int32_t id : extra_eos)
    if (std::find(lm.stop_tokens_.begin(), lm.stop_tokens_.end(), id) == lm.stop_tokens_.end())
      lm.stop_tokens_.push_back(id);
  return lm;
}

int64_t LanguageModel::context_length_of(const fs::path& path) {
  std::error_code ec;
  WICK_CHECK(fs::exists(path, ec), Io, kOp, ": '", path.string(), "' does not exist");
  if (!fs::is_directory(path, ec)) {
    WICK_CHECK(is_gguf_file(path), Format, kOp, ": '", path.string(),
               "' is neither a GGUF file nor a Hugging Face folder (config.json + safetensors)");
    return LlamaConfig::from_gguf(gguf::File::open(path)).context_length;
  }
  return LlamaConfig::from_hf_json_file(path / "config.json").context_length;
}

bool LanguageModel::has_chat_template_at(const fs::path& path) {
  std::error_code ec;
  WICK_CHECK(fs::exists(path, ec), Io, kOp, ": '", path.string(), "' does not exist");
  if (fs::is_directory(path, ec)) return folder_chat_template(path).has_value();
  WICK_CHECK(is_gguf_file(path), Format, kOp, ": '", path.string(),
             "' is neither a GGUF file nor a Hugging Face folder (config.json + safetensors)");
  return gguf::File::open(path).has("tokenizer.chat_template");
}

std::vector<int32_t> LanguageModel::encode(std::string_view text, bool add_special) const {
  text::EncodeOptions o;
  o.add_special = add_special;
  return tokenizer_->encode(text, o);
}

std::string LanguageModel::render_chat(const std::vector<text::ChatMessage>& messages, bool add_generation_prompt,
                                       std::string extra_context_json) const {
  WICK_CHECK(chat_template_, Unsupported,
             "chat: this model has no chat template (tokenizer_config.json "
             "'chat_template' or GGUF 'tokenizer.chat_template')");
  text::ChatTemplateOptions o;
  o.add_generation_prompt = add_generation_prompt;
  o.bos_token = tokenizer_->bos_token();
  o.eos_token = tokenizer_->eos_token();
  o.extra_context_json = std::move(extra_context_json);
  return chat_template_->render(messages, o);
}

}  // namespace wick::models
