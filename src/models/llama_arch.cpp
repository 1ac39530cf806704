// The rows of the Llama-family architecture table (llama_arch.h).
#include "llama_arch.h"

#include <array>
#include <string>

#include "wick/error.h"

namespace wick::models {

namespace {

constexpr std::string_view kLlamaHf[] = {"LlamaForCausalLM", "LLaMAForCausalLM"};
constexpr std::string_view kMistralHf[] = {"MistralForCausalLM"};
constexpr std::string_view kQwen2Hf[] = {"Qwen2ForCausalLM"};
constexpr std::string_view kQwen3Hf[] = {"Qwen3ForCausalLM"};
constexpr std::string_view kGemma2Hf[] = {"Gemma2ForCausalLM"};
constexpr std::string_view kGemma3Hf[] = {"Gemma3ForCausalLM"};
constexpr std::string_view kPhi3Hf[] = {"Phi3ForCausalLM"};
constexpr std::string_view kGpt2Hf[] = {"GPT2LMHeadModel", "GPT2Model"};
constexpr std::string_view kMixtralHf[] = {"MixtralForCausalLM"};
constexpr std::string_view kQwen2MoeHf[] = {"Qwen2MoeForCausalLM"};
constexpr std::string_view kQwen3MoeHf[] = {"Qwen3MoeForCausalLM"};
constexpr std::string_view kOlmoeHf[] = {"OlmoeForCausalLM"};
constexpr std::string_view kGptOssHf[] = {"GptOssForCausalLM"};
constexpr std::string_view kDeepseek2Hf[] = {"DeepseekV2ForCausalLM"};
constexpr std::string_view kDeepseek3Hf[] = {"DeepseekV3ForCausalLM"};

// Mistral has no GGUF architecture of its own: convert_hf_to_gguf.py writes it as "llama"
// (and llama.cpp's llama graph has no sliding window), so its name is never matched in GGUF.
constexpr std::array kArchs = {
    LlamaArch{.name = "llama",
              .hf_architectures = kLlamaHf,
              .hf_model_type = "llama",
              .activation = Activation::Silu,
              .moe_norm_topk = true,  // Mixtral's GGUF is written as llama
              .sliding = SlidingPattern::All,
              .gguf_interleaved_rope = true,
              .gguf_name = "llama",
              .gguf_vocab_size = true,
              .gguf_rope_dims = true},
    LlamaArch{.name = "mistral",
              .hf_architectures = kMistralHf,
              .hf_model_type = "mistral",
              .activation = Activation::Silu,
              .sliding = SlidingPattern::All,
              .gguf_interleaved_rope = true,
              .gguf_name = "llama",
              .gguf_vocab_size = true,
              .gguf_rope_dims = true},
    LlamaArch{.name = "qwen2",
              .hf_architectures = kQwen2Hf,
              .hf_model_type = "qwen2",
              .activation = Activation::Silu,
              .qkv_bias = true,
              .sliding = SlidingPattern::FromLayer,
              .gguf_name = "qwen2"},
    LlamaArch{.name = "qwen3",
              .hf_architectures = kQwen3Hf,
              .hf_model_type = "qwen3",
              .activation = Activation::Silu,
              .qk_norm = true,
              .sliding = SlidingPattern::FromLayer,
              .gguf_name = "qwen3"},
    LlamaArch{.name = "gemma2",
              .hf_architectures = kGemma2Hf,
              .hf_model_type = "gemma2",
              .activation = Activation::GeluTanh,
              .gemma = true,
              .sandwich_norms = true,
              .softcaps = true,
              .tie_default = true,
              .sliding = SlidingPattern::Alternate,
              .gguf_name = "gemma2",
              .gguf_sliding_window = true},
    // Gemma 3 (text): Gemma 2's norms without its softcaps, per-head q/k norms, five local
    // layers (window, base 10000) to one global.
    LlamaArch{.name = "gemma3",
              .hf_architectures = kGemma3Hf,
              .hf_model_type = "gemma3_text",
              .activation = Activation::GeluTanh,
              .qk_norm = true,
              .gemma = true,
              .sandwich_norms = true,
              .tie_default = true,
              .local_rope = true,
              .sliding = SlidingPattern::EverySixth,
              .gguf_name = "gemma3",
              .gguf_sliding_window = true},
    LlamaArch{.name = "phi3",
              .hf_architectures = kPhi3Hf,
              .hf_model_type = "phi3",
              .activation = Activation::Silu,
              .fused = true,
              .sliding = SlidingPattern::All,
              .gguf_name = "phi3",
              .gguf_rope_dims = true,
              .gguf_sliding_window = true},
    // Mixtral: written to GGUF as llama (with expert_count), like Mistral.
    LlamaArch{.name = "mixtral",
              .hf_architectures = kMixtralHf,
              .hf_model_type = "mixtral",
              .activation = Activation::Silu,
              .moe_norm_topk = true,
              .sliding = SlidingPattern::All,
              .gguf_interleaved_rope = true,
              .gguf_name = "llama",
              .gguf_vocab_size = true,
              .gguf_rope_dims = true},
    LlamaArch{.name = "qwen2moe",
              .hf_architectures = kQwen2MoeHf,
              .hf_model_type = "qwen2_moe",
              .activation = Activation::Silu,
              .qkv_bias = true,
              .shared_expert = true,
              .sliding = SlidingPattern::FromLayer,
              .gguf_name = "qwen2moe"},
    LlamaArch{.name = "qwen3moe",
              .hf_architectures = kQwen3MoeHf,
              .hf_model_type = "qwen3_moe",
              .activation = Activation::Silu,
              .qk_norm = true,
              .moe_norm_topk = true,
              .sliding = SlidingPattern::FromLayer,
              .gguf_name = "qwen3moe"},
    LlamaArch{.name = "olmoe",
              .hf_architectures = kOlmoeHf,
              .hf_model_type = "olmoe",
              .activation = Activation::Silu,
              .qk_norm = true,
              .qk_norm_full = true,
              .sliding = SlidingPattern::All,
              .gguf_name = "olmoe"},
    // gpt-oss: sinks, biases on attention, router and experts, the clamped SwiGLU, even layers
    // sliding (layer_types in config.json), the softmax over the picked experts' logits.
    LlamaArch{.name = "gpt-oss",
              .hf_architectures = kGptOssHf,
              .hf_model_type = "gpt_oss",
              .activation = Activation::Silu,
              .moe_norm_topk = true,
              .sliding = SlidingPattern::Alternate,
              .gguf_name = "gpt-oss",
              .gguf_sliding_window = true,
              .attn_sinks = true,
              .moe_bias = true,
              .clamped_swiglu = true,
              .gguf_yarn_truncate = false},
    // DeepSeek-V2 and V3 (GGUF: both "deepseek2", the routing told by its keys).
    LlamaArch{.name = "deepseek2",
              .hf_architectures = kDeepseek2Hf,
              .hf_model_type = "deepseek_v2",
              .activation = Activation::Silu,
              .shared_expert = true,
              .sliding = SlidingPattern::All,
              .gguf_name = "deepseek2",
              .mla = true},
    LlamaArch{.name = "deepseek3",
              .hf_architectures = kDeepseek3Hf,
              .hf_model_type = "deepseek_v3",
              .activation = Activation::Silu,
              .shared_expert = true,
              .sliding = SlidingPattern::All,
              .gguf_name = "deepseek2",
              .mla = true},
    LlamaArch{.name = "gpt2",
              .hf_architectures = kGpt2Hf,
              .hf_model_type = "gpt2",
              .activation = Activation::GeluTanh,
              .tie_default = true,
              .gpt2 = true,
              .sliding = SlidingPattern::All,
              .gguf_name = "gpt2"},
};

}  // namespace

bool layer_slides(SlidingPattern pattern, int64_t i, int64_t every, int64_t from) {
  switch (pattern) {
    case SlidingPattern::Alternate: return i % 2 == 0;
    case SlidingPattern::EverySixth: return (i + 1) % every != 0;
    case SlidingPattern::FromLayer: return i >= from;
    case SlidingPattern::All: break;
  }
  return true;
}

const LlamaArch* find_arch_hf(std::string_view architecture, std::string_view model_type) {
  for (const LlamaArch& a : kArchs)
    for (const std::string_view hf : a.hf_architectures)
      if (hf == architecture) return &a;
  if (!architecture.empty()) return nullptr;  // a class we do not know is not rescued by model_type
  for (const LlamaArch& a : kArchs)
    if (a.hf_model_type == model_type) return &a;
  return nullptr;
}

const LlamaArch* find_arch_gguf(std::string_view name) {
  for (const LlamaArch& a : kArchs)
    if (a.name == name && a.gguf_name == name) return &a;
  return nullptr;
}

const LlamaArch& arch_by_name(std::string_view name) {
  for (const LlamaArch& a : kArchs)
    if (a.name == name) return a;
  fail(ErrorKind::Internal, "llama: no architecture row '", name, "'");
}

std::string supported_arch_names() {
  std::string s;
  for (const LlamaArch& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

}  // namespace wick::models
