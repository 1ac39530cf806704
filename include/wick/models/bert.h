// A BERT encoder (Hugging Face `BertModel` checkpoints) and sentence embeddings with
// mean pooling and L2 normalization, as sentence-transformers computes them for
// all-MiniLM-L6-v2 and similar models.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "wick/nn.h"
#include "wick/tensor.h"

namespace wick::models {

struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden_size = 384;
  int64_t num_layers = 6;
  int64_t num_heads = 12;
  int64_t intermediate_size = 1536;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double layer_norm_eps = 1e-12;
  Activation activation = Activation::GeluErf;  // config key hidden_act (activation_named)

  // Reads Hugging Face's config.json; unknown keys are ignored, wrong types rejected.
  static BertConfig from_json_file(const std::filesystem::path& path);
  static BertConfig from_json_string(const std::string& json, const std::string& origin = "<string>");
};

class BertModel {
 public:
  // Loads config.json and model.safetensors from dir (weights memory-mapped, then
  // converted to dtype and uploaded to device).
  static BertModel load(const std::filesystem::path& dir, Device device = Device::cpu(), DType dtype = DType::F32);

  // ids (B, T) integer token ids, attention_mask (B, T) with 1 for real tokens and 0 for
  // padding (any dtype; undefined means all real). Returns the last hidden state (B, T, H).
  Tensor forward(const Tensor& ids, const Tensor& attention_mask = {}) const;

  const BertConfig& config() const { return config_; }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }

 private:
  struct Layer {
    Tensor qkv_w, qkv_b;  // query, key and value stacked: (3H, H) and (3H)
    Tensor o_w, o_b, ln1_w, ln1_b, ff1_w, ff1_b, ff2_w, ff2_b, ln2_w, ln2_b;
  };
  BertConfig config_;
  Device device_;
  DType dtype_ = DType::F32;
  Tensor word_emb_, pos_emb_, type_emb_, emb_ln_w_, emb_ln_b_;
  std::vector<Layer> layers_;
};

// Mean of hidden (B, T, H) over the positions where mask (B, T) is non-zero, then L2
// normalization; returns (B, H) in f32.
Tensor mean_pool_normalize(const Tensor& hidden, const Tensor& mask);

}  // namespace wick::models
