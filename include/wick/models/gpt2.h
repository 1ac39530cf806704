// GPT-2 (Hugging Face `GPT2LMHeadModel` checkpoints): a decoder-only transformer with
// learned positions, pre-norm blocks and the LM head tied to the token embedding.
// forward() returns logits; a KvCache makes step-by-step generation cost O(T) per token.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

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
  // "gelu_new" / "gelu_pytorch_tanh" / "gelu_fast" (tanh approximation) or "gelu" (erf).
  std::string activation_function = "gelu_new";

  int64_t inner_size() const { return n_inner > 0 ? n_inner : 4 * n_embd; }
  int64_t head_dim() const { return n_embd / n_head; }

  // Reads Hugging Face's config.json; unknown keys are ignored, wrong types and
  // inconsistent sizes are rejected (wick::Error Format / Unsupported).
  static Gpt2Config from_json_file(const std::filesystem::path& path);
  static Gpt2Config from_json_string(const std::string& json, const std::string& origin = "<string>");
};

// Keys and values of every layer for the positions seen so far. The buffers (B, H,
// n_positions, head_dim) per layer are allocated on first use and then written in place,
// so a step never reallocates or copies the history.
class KvCache {
 public:
  int64_t length() const { return length_; }  // positions cached
  int64_t batch() const { return batch_; }
  // Forgets the cached positions (keeps the buffers for reuse with the same batch size).
  void clear() { length_ = 0; }

 private:
  friend class Gpt2Model;
  struct Layer {
    Tensor k, v;  // (B, H, capacity, head_dim)
  };
  std::vector<Layer> layers_;
  int64_t length_ = 0, batch_ = 0;
};

class Gpt2Model {
 public:
  // Loads config.json and model.safetensors from dir (weights memory-mapped, converted to
  // dtype f32/f16/bf16 and moved to device). Keys may carry the "transformer." prefix
  // (GPT2LMHeadModel) or not (GPT2Model). The LM head is wte (tied, save_pretrained omits
  // lm_head.weight) unless the checkpoint has an lm_head.weight.
  static Gpt2Model load(const std::filesystem::path& dir, Device device = Device::cpu(), DType dtype = DType::F32);

  // ids (B, T) integer token ids -> logits (B, T, vocab_size) in the model dtype on the model
  // device. With a cache, ids are the positions after the cached ones (positions are offset
  // by cache->length()) and the cache is extended by T. With last_only, only the last
  // position's logits (B, 1, vocab_size): all that generation needs, and for a long prompt
  // the LM head over every position is a large share of the work.
  Tensor forward(const Tensor& ids, KvCache* cache = nullptr, bool last_only = false) const;

  const Gpt2Config& config() const { return config_; }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }

 private:
  struct Layer {
    Tensor ln1_w, ln1_b, attn_w, attn_b, attn_proj_w, attn_proj_b, ln2_w, ln2_b, fc_w, fc_b, mlp_proj_w, mlp_proj_b;
  };
  Tensor activation(const Tensor& x) const;

  Gpt2Config config_;
  Device device_;
  DType dtype_ = DType::F32;
  Tensor wte_, wpe_, ln_f_w_, ln_f_b_, lm_head_;
  std::vector<Layer> layers_;
};

}  // namespace wick::models
