// A language model as a user holds it: the network (any CausalLM), its tokenizer, its chat
// template and its end-of-generation tokens, loaded together from one path: a GGUF file
// (llama.cpp's layout) or a Hugging Face folder (config.json + safetensors + tokenizer.json).
//
//   auto lm = wick::models::LanguageModel::load("Llama-3.2-1B-Instruct-Q4_K_M.gguf");
//   std::string prompt = lm.render_chat({{"user", "Hello!"}});
//   wick::serve::Generator gen(lm.model(), {.temperature = 0.7, .seed = 1});
//   auto out = lm.tokenizer().decode_stream();
//   gen.generate(lm.encode(prompt, false), 128, [&](int32_t id) { std::cout << out.push(id) << std::flush; },
//                lm.stop_tokens());
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wick/models/causal_lm.h"
#include "wick/quant.h"
#include "wick/text/chat_template.h"
#include "wick/text/tokenizer.h"

namespace wick::models {

struct ModelLoadOptions {
  Device device = Device::cpu();
  // Compute dtype (activations, KV cache); nullopt: f32 on the CPU, the checkpoint's
  // f16/bf16 on CUDA.
  std::optional<DType> dtype;
  // Quantize the float weights of a Llama-family checkpoint at load (q8_0, q4_0, q4_K, q6_K).
  std::optional<GgmlType> quantize;
  // How quantized weight matrices multiply activations (wick/quant.h): Q8 by default, the
  // activation rounded to q8_0 per 32 values as llama.cpp does (integer dot products: 1.3-2x
  // faster decode on CUDA, 2-6x on the CPU); F32 for the exact product of the stored weights.
  QuantActivation quant_activation = QuantActivation::Q8;
  std::function<void(size_t done, size_t total)> on_tensor;  // progress, per weight
  // A Jinja chat template used instead of the checkpoint's (llama-server's
  // --chat-template-file): one with tools or reasoning, or one the checkpoint lacks.
  std::optional<std::string> chat_template;
};

class LanguageModel {
 public:
  // Reads the path's kind from its contents: a GGUF file, or a folder whose config.json
  // names the architecture (GPT-2 or one of the Llama family: docs/models.md).
  static LanguageModel load(const std::filesystem::path& path, const ModelLoadOptions& opt = {});
  // The context length of the model at path, read from its configuration alone (no weight
  // is loaded): lets a caller check a request's length before paying for the load.
  static int64_t context_length_of(const std::filesystem::path& path);
  // Whether the model at path has a chat template, likewise read without loading a weight.
  static bool has_chat_template_at(const std::filesystem::path& path);

  const CausalLM& model() const { return *model_; }
  const text::Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::string& architecture() const { return architecture_; }  // "llama", "qwen2", "gpt2", ...

  // Token ids of text; add_special: BOS/EOS as the tokenizer's post-processing says (a
  // rendered chat prompt already holds them: pass false).
  std::vector<int32_t> encode(std::string_view text, bool add_special = true) const;
  // The tokens that end a generation: the tokenizer's EOS and end-of-turn tokens and
  // generation_config.json's eos_token_id.
  const std::vector<int32_t>& stop_tokens() const { return stop_tokens_; }

  bool has_chat_template() const { return chat_template_ != nullptr; }
  const text::ChatTemplate* chat_template() const { return chat_template_.get(); }  // nullptr: none
  // The conversation rendered by the model's chat template (as transformers'
  // apply_chat_template(tokenize=False)); Unsupported when the model has none.
  // extra_context_json: a JSON object merged into the template's context last (tools, the
  // messages with their tool calls: text::ChatTemplateOptions::extra_context_json).
  std::string render_chat(const std::vector<text::ChatMessage>& messages, bool add_generation_prompt = true,
                          std::string extra_context_json = {}) const;

 private:
  std::shared_ptr<const CausalLM> model_;
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  std::shared_ptr<const text::ChatTemplate> chat_template_;
  std::string architecture_;
  std::vector<int32_t> stop_tokens_;
};

}  // namespace wick::models
