// The architecture table of the Llama family: one row per architecture with the names it
// goes by (Hugging Face `architectures` / `model_type`, GGUF `general.architecture`) and
// the switches the generic decoder reads. Adding an architecture is a row here (and, if
// it needs one, the op its switch turns on); docs/models.md says how.
#pragma once

#include <span>
#include <string_view>

#include "wick/models/llama.h"

namespace wick::models {

// Which layers use the sliding window when a config gives one.
enum class SlidingPattern : uint8_t {
  All,         // Mistral, Phi-3: every layer
  Alternate,   // Gemma 2: even layers (0, 2, ...), odd ones attend globally
  FromLayer,   // Qwen2/3: use_sliding_window, layers >= max_window_layers
  EverySixth,  // Gemma 3: five sliding layers, then a global one (5, 11, ...; sliding_window_pattern)
};

struct LlamaArch {
  std::string_view name;                               // wick's id and the GGUF general.architecture
  std::span<const std::string_view> hf_architectures;  // config.json "architectures"
  std::string_view hf_model_type;                      // config.json "model_type"
  Activation activation = Activation::Silu;            // the default when config.json names none
  bool qkv_bias = false;                               // q/k/v projections always carry biases (Qwen2)
  bool qk_norm = false;                                // per-head RMSNorm of q and k (Qwen3)
  bool gemma = false;                                  // (1 + w) norms in f32, embeddings * sqrt(hidden)
  bool sandwich_norms = false;                         // post-attention / post-MLP norms (Gemma 2)
  bool fused = false;                                  // qkv_proj / gate_up_proj stored fused (Phi-3)
  bool softcaps = false;                               // attention / final logit softcapping (Gemma 2)
  bool tie_default = false;                            // tie_word_embeddings when config.json omits it
  bool gpt2 = false;          // GPT-2: LayerNorm, learned positions, a plain MLP, biases everywhere, its own names
  bool qk_norm_full = false;  // OLMoE: q/k RMSNorm over the whole projection
  bool local_rope = false;    // Gemma 3: sliding layers rotate with their own base (rope_local_theta)
  // Mixture of experts: the router's picked weights renormalized (when config.json's
  // norm_topk_prob is absent, and always in GGUF, as llama.cpp's graph for the arch), and a
  // gated shared expert (Qwen2-MoE). GGUF files say they have experts by <arch>.expert_count.
  bool moe_norm_topk = false;
  bool shared_expert = false;
  SlidingPattern sliding = SlidingPattern::All;
  // GGUF: convert_hf_to_gguf.py permutes this arch's q/k rows for ggml's "NORM" rope, which
  // rotates adjacent pairs; the model then rotates pairs instead of un-permuting the rows.
  bool gguf_interleaved_rope = false;
  // What convert_hf_to_gguf.py writes for the arch (the converter follows it): the
  // general.architecture (Mistral is written as llama), and the optional keys it adds.
  std::string_view gguf_name;
  bool gguf_vocab_size = false;      // <arch>.vocab_size
  bool gguf_rope_dims = false;       // <arch>.rope.dimension_count
  bool gguf_sliding_window = false;  // <arch>.attention.sliding_window (0 when none)
  // gpt-oss: a learned sink logit per query head in every softmax of attention (nn.h
  // AttentionOptions::sinks), biases on the router and on every expert's projections, and the
  // clamped SwiGLU of its experts (LlamaConfig::swiglu_limit).
  bool attn_sinks = false;
  bool moe_bias = false;
  bool clamped_swiglu = false;
  // GGUF: yarn's correction range rounded outward to whole dims (llama.cpp always does; gpt-oss
  // was trained with transformers' truncate false, which its GGUF cannot say).
  bool gguf_yarn_truncate = true;
  // DeepSeek-V2/V3: multi-head latent attention, rotary pairs on the rope dims, the softmax
  // scale times yarn's mscale_all_dim factor squared, routing from the config's keys
  // (LlamaConfig::moe_*), shared experts without a gate, dense first layers.
  bool mla = false;
};

// Whether layer i uses the window under pattern: Alternate the even layers, EverySixth all but
// every `every`-th (Gemma 3's sliding_window_pattern), FromLayer those from layer `from` on
// (Qwen2/3's max_window_layers; 0: all), All every layer.
bool layer_slides(SlidingPattern pattern, int64_t i, int64_t every, int64_t from);

// The row for an HF config (its architectures[0], else its model_type) or a GGUF
// general.architecture; nullptr when none matches.
const LlamaArch* find_arch_hf(std::string_view architecture, std::string_view model_type);
const LlamaArch* find_arch_gguf(std::string_view name);
const LlamaArch& arch_by_name(std::string_view name);  // Internal error if absent
// "llama, mistral, ..." for error messages.
std::string supported_arch_names();

}  // namespace wick::models
