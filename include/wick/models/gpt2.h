// GPT-2's Hugging Face config.json as tensor-parallel GPT-2 (gpt2_tp.h) reads it. GPT-2
// itself is a row of the Llama family's architecture table (llama.h: LlamaModel loads GPT-2
// folders and llama.cpp's gpt2 GGUF files, LayerNorm, learned positions and a plain MLP
// being switches of the one decoder).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "wick/models/causal_lm.h"
#include "wick/nn.h"
#include "wick/tensor.h"

namespace wick::models {

struct Gpt2Config {
  int64_t vocab_size = 50257;
  int64_t n_positions = 1024;
  int64_t n_embd = 768;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_inner = 0;  // MLP width; 0 (config "n_inner": null) means 4 * n_embd
  double layer_norm_epsilon = 1e-5;
  Activation activation = Activation::GeluTanh;  // config key activation_function (activation_named)

  int64_t inner_size() const { return n_inner > 0 ? n_inner : 4 * n_embd; }
  int64_t head_dim() const { return n_embd / n_head; }

  // Reads Hugging Face's config.json; unknown keys are ignored, wrong types and
  // inconsistent sizes are rejected (wick::Error Format / Unsupported).
  static Gpt2Config from_json_file(const std::filesystem::path& path);
  static Gpt2Config from_json_string(const std::string& json, const std::string& origin = "<string>");
};

}  // namespace wick::models
