// Loading the model that `wick generate` / `wick chat` name on the command line.
#include "model_args.h"

#include <fstream>
#include <sstream>

#include "commands.h"
#include "wick/wick.h"

namespace wick::cli {

std::filesystem::path default_model_dir(const char* command) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "share" / "wick" / "assets" / "gpt2-tiny");
#ifdef WICK_ASSETS_DIR
  candidates.push_back(fs::path(WICK_ASSETS_DIR) / "gpt2-tiny");
#endif
  for (const auto& c : candidates)
    if (fs::exists(c / "config.json", ec)) return c;
  fail(ErrorKind::Io, command, ": no --model given and the shipped assets/gpt2-tiny was not found (looked in ",
       candidates.empty() ? std::string("nothing") : candidates.front().string(), ")");
}

std::filesystem::path model_path(const ModelArgs& a, const char* command) {
  as_usage_error(
      [&] { WICK_CHECK(a.ctx_size >= 1, InvalidArgument, command, ": --ctx-size must be >= 1, got ", a.ctx_size); });
  return a.model.empty() ? default_model_dir(command) : std::filesystem::path(a.model);
}

std::string read_option_file(const std::string& path, const char* option, const char* command) {
  std::ifstream in(path, std::ios::binary);
  WICK_CHECK(in.good(), InvalidArgument, command, ": ", option, ": cannot read '", path, "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void check_chat_template(const ModelArgs& a, const char* command) {
  if (!a.chat_template_file.empty()) return;  // load_model reads it
  const std::filesystem::path path = model_path(a, command);
  WICK_CHECK(models::LanguageModel::has_chat_template_at(path), Unsupported, command, ": the model ",
             a.model.empty() ? "(the shipped tiny GPT-2, the default: pass --model)" : "'" + a.model + "'",
             " has no chat template (tokenizer_config.json 'chat_template', chat_template.jinja or GGUF "
             "'tokenizer.chat_template')");
}

models::LanguageModel load_model(const ModelArgs& a, const char* command) {
  models::ModelLoadOptions o;
  o.device = a.device.empty() ? default_device() : Device::parse(a.device);
  if (!a.dtype.empty()) o.dtype = dtype_from_name(a.dtype);
  if (!a.quantize.empty()) as_usage_error([&] { o.quantize = ggml_type_from_name(a.quantize); });
  o.quant_activation = quant_activation_from_name(a.quant_activation);
  o.on_tensor = [](size_t done, size_t total) { progress(done, total, "weights"); };
  if (!a.chat_template_file.empty()) {
    as_usage_error([&] { o.chat_template = read_option_file(a.chat_template_file, "--chat-template-file", command); });
    try {
      (void)text::ChatTemplate::parse(*o.chat_template);  // before any weight is read
    } catch (const Error& e) {
      throw UsageError(std::string(command) + ": --chat-template-file '" + a.chat_template_file + "': " + e.what());
    }
  }
  const std::filesystem::path path = model_path(a, command);
  std::fprintf(stderr, "loading %s\n", path.string().c_str());
  return models::LanguageModel::load(path, o);
}

std::optional<models::LanguageModel> load_draft(const ModelArgs& a, const SamplingArgs& s, const char* command) {
  as_usage_error([&] {
    WICK_CHECK((s.spec == "draft") == !s.draft_model.empty(), InvalidArgument, command,
               ": --spec draft and --draft-model go together");
  });
  if (s.spec != "draft") return std::nullopt;
  ModelArgs d = a;
  d.model = s.draft_model;
  d.quantize = s.draft_quantize;
  return load_model(d, command);
}

void check_speculative_args(const SamplingArgs& s, const char* command) {
  WICK_CHECK(s.spec == "none" || s.spec_opt.draft_tokens >= 1, InvalidArgument, command,
             ": --draft-tokens must be >= 1 with --spec ", s.spec);
  models::check_speculative_options(s.speculative());
}

models::SpeculativeOptions speculative_options(const SamplingArgs& s,
                                               const std::optional<models::LanguageModel>& draft) {
  models::SpeculativeOptions o = s.speculative();
  if (draft) o.draft_model = &draft->model();
  return o;
}

}  // namespace wick::cli
