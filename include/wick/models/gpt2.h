// GPT-2 (Hugging Face `GPT2LMHeadModel` checkpoints): a decoder-only transformer with
// learned positions, pre-norm blocks and the LM head tied to the token embedding.
// forward() returns logits; a KvCache makes step-by-step generation cost O(T) per token.
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

class Gpt2Model final : public CausalLM {
 public:
  // Loads config.json and model.safetensors from dir (weights memory-mapped, converted to
  // dtype f32/f16/bf16 and moved to device). Keys may carry the "transformer." prefix
  // (GPT2LMHeadModel) or not (GPT2Model). The LM head is wte (tied, save_pretrained omits
  // lm_head.weight) unless the checkpoint has an lm_head.weight.
  // on_tensor(done, total), if given, is called after each weight is in place (progress bars).
  static Gpt2Model load(const std::filesystem::path& dir, Device device = Device::cpu(), DType dtype = DType::F32,
                        const std::function<void(size_t done, size_t total)>& on_tensor = {});

  // CausalLM (causal_lm.h). The context length is n_positions.
  int64_t vocab_size() const override { return config_.vocab_size; }
  int64_t context_length() const override { return config_.n_positions; }
  Device device() const override { return device_; }
  DType dtype() const override { return dtype_; }
  Tensor forward(const Tensor& ids, KvCache* cache = nullptr, bool last_only = false) const override;
  Tensor forward_batch(std::span<const BatchSequence> seqs) const override;  // gpt2_batch.cpp
  bool batch_decode_supported() const override { return true; }
  void decode_batch_step(BatchDecodeState& s) const override;  // gpt2_batch.cpp
  void reserve_cache(KvCache& cache) const override;

  const Gpt2Config& config() const { return config_; }

 protected:
  KvShape kv_shape() const override;

 private:
  struct Layer {
    Tensor ln1_w, ln1_b, attn_w, attn_b, attn_proj_w, attn_proj_b, ln2_w, ln2_b, fc_w, fc_b, mlp_proj_w, mlp_proj_b;
  };
  // The transformer blocks and final norm over x (B, T, E) with attention computed by
  // attend(layer, q, k, v) -> context (B, H, T, Dh).
  Tensor blocks(Tensor x, const std::function<Tensor(size_t, const Tensor&, Tensor, Tensor)>& attend) const;
  // Layer li's causal attention of one sequence whose T new positions follow past cached
  // ones: k, v written into the cache (if any), q attended against every cached position.
  static Tensor attend_seq(size_t li, const Tensor& q, Tensor k, Tensor v, KvCache* cache, int64_t past);
  Tensor head(const Tensor& y) const;  // final norm and LM head

  Gpt2Config config_;
  Device device_;
  DType dtype_ = DType::F32;
  Tensor wte_, wpe_, ln_f_w_, ln_f_b_, lm_head_;
  std::vector<Layer> layers_;
};

}  // namespace wick::models
