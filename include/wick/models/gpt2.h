// GPT-2 (Hugging Face `GPT2LMHeadModel` checkpoints): a decoder-only transformer with
// learned positions, pre-norm blocks and the LM head tied to the token embedding.
// forward() returns logits; a KvCache makes step-by-step generation cost O(T) per token.
#pragma once

#include <filesystem>
#include <functional>
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
  // capacity: positions the buffers hold (0: the model's n_positions). A generation that
  // knows its length asks for no more: the static decode step attends over the whole
  // capacity, so a smaller one is proportionally cheaper.
  KvCache() = default;
  explicit KvCache(int64_t capacity);
  int64_t length() const { return length_; }      // positions cached
  int64_t capacity() const { return capacity_; }  // as requested; 0 = n_positions
  int64_t batch() const { return batch_; }
  // Forgets the cached positions (keeps the buffers for reuse with the same batch size).
  void clear() { length_ = 0; }

 private:
  friend class Gpt2Model;
  struct Layer {
    Tensor k, v;  // (B, H, capacity, head_dim)
  };
  std::vector<Layer> layers_;
  int64_t length_ = 0, batch_ = 0, capacity_ = 0;
};

// Device-resident state of step-by-step decoding with static shapes: the token ids and
// the position are tensors that kernels read, and attention spans the whole cache
// capacity under an additive mask (0 for written positions, -inf beyond). A step
// therefore launches the same kernels on the same addresses every time, which is what a
// CUDA graph needs to record it once and replay it (see Generator).
struct DecodeState {
  Tensor ids;       // (B, 1) i64 input tokens; a step overwrites them with its argmax
  Tensor position;  // (1) i64: the position a step writes; a step increments it
  Tensor mask;      // (1, 1, 1, cache capacity) in the model dtype
  Tensor logits;    // (B, 1, vocab_size): the last step's output
};

class Gpt2Model {
 public:
  // Loads config.json and model.safetensors from dir (weights memory-mapped, converted to
  // dtype f32/f16/bf16 and moved to device). Keys may carry the "transformer." prefix
  // (GPT2LMHeadModel) or not (GPT2Model). The LM head is wte (tied, save_pretrained omits
  // lm_head.weight) unless the checkpoint has an lm_head.weight.
  // on_tensor(done, total), if given, is called after each weight is in place (progress bars).
  static Gpt2Model load(const std::filesystem::path& dir, Device device = Device::cpu(), DType dtype = DType::F32,
                        const std::function<void(size_t done, size_t total)>& on_tensor = {});

  // ids (B, T) integer token ids -> logits (B, T, vocab_size) in the model dtype on the model
  // device. With a cache, ids are the positions after the cached ones (positions are offset
  // by cache->length()) and the cache is extended by T. With last_only, only the last
  // position's logits (B, 1, vocab_size): all that generation needs, and for a long prompt
  // the LM head over every position is a large share of the work.
  Tensor forward(const Tensor& ids, KvCache* cache = nullptr, bool last_only = false) const;

  // Decoding state for a cache already holding cache.length() positions (the prefill),
  // with ids (B, 1) as the first step's tokens (any integer dtype, any device).
  DecodeState begin_decode(const KvCache& cache, const Tensor& ids) const;
  // One decode step from s: logits of s.ids at s.position into s.logits, keys and values
  // written into the cache at s.position, then s.ids = argmax(s.logits) and
  // s.position += 1. Only device ops with static shapes, so it can be recorded in a
  // CudaGraph; the caller keeps count of the positions (cache.length() is not advanced)
  // and must stop before n_positions. On the CPU it runs directly (same results).
  void decode_step(DecodeState& s, KvCache& cache) const;

  const Gpt2Config& config() const { return config_; }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }

 private:
  struct Layer {
    Tensor ln1_w, ln1_b, attn_w, attn_b, attn_proj_w, attn_proj_b, ln2_w, ln2_b, fc_w, fc_b, mlp_proj_w, mlp_proj_b;
  };
  Tensor activation(const Tensor& x) const;
  // The transformer blocks and final norm over x (B, T, E) with attention computed by
  // attend(layer, q, k, v) -> context (B, H, T, Dh).
  Tensor blocks(Tensor x, const std::function<Tensor(size_t, const Tensor&, Tensor, Tensor)>& attend) const;

  Gpt2Config config_;
  Device device_;
  DType dtype_ = DType::F32;
  Tensor wte_, wpe_, ln_f_w_, ln_f_b_, lm_head_;
  std::vector<Layer> layers_;
};

}  // namespace wick::models
