// Internal pieces of the Llama family shared by the config readers (HF, GGUF), the loader
// and the forward pass.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "llama_arch.h"
#include "llama_names.h"
#include "wick/models/llama.h"

namespace wick::models {

// How the config's architecture spells its HF tensor names (llama_names.h).
NameStyle name_style(const LlamaConfig& c);

// The op name that the Llama family's errors start with.
inline constexpr const char* kLlamaOp = "llama";

// Fills what follows from the row (gemma norms, embedding scale, fused tensors, the
// default attention scale, the per-layer sliding flags when unset) and checks the sizes
// against each other: Format naming the key (`keys` spells them for the source, HF or GGUF).
struct ConfigKeys {
  std::string n_head, n_kv_head, head_dim, rope_dims;
};
void finish_config(LlamaConfig& c, const LlamaArch& arch, const ConfigKeys& keys);

// DeepSeek's expert groups: they split the experts evenly and at most all of them are searched;
// Format naming the source's two keys otherwise.
void check_expert_groups(const LlamaConfig& c, std::string_view groups_key, std::string_view used_key);

// Adds generation_config.json's eos_token_id (an id or a list) to c.eos_token_ids: chat
// checkpoints list their end-of-turn tokens there (Llama 3: 128001, 128008, 128009).
void merge_generation_config(LlamaConfig& c, const std::string& json, const std::string& origin);

// transformers' inverse frequencies (dims/2 of them) for the rope config, and the factor
// on cos/sin (yarn's attention factor, 1 otherwise). In double precision.
// long_factors picks longrope's long set (ignored by the other scalings).
std::vector<double> rope_inv_freq(const RopeConfig& r, bool long_factors = false);
double rope_attention_factor(const RopeConfig& r);
// Yarn's magnitude correction 0.1 mscale ln(factor) + 1 (1 for factor <= 1), transformers' get_mscale.
double yarn_mscale(double factor, double mscale);

// The rotary tables of a model: rows x dims/2 cos and sin in the compute dtype on the
// device (and longrope's long-factor pair), computed in double precision from the inverse
// frequencies and grown (doubling, up to the context length) when a longer sequence asks.
// Thread-safe; a grown table replaces the old one, which callers holding it keep alive.
struct RopeTables {
  struct Rows {
    Tensor cos, sin, cos_long, sin_long;  // the long pair only for longrope
    Tensor cos_local, sin_local;          // the sliding layers' pair (rope_local_theta)
  };
  RopeTables(const LlamaConfig& c, DType dtype, Device device);
  // Tables of at least `rows` rows (rows <= the context length).
  Rows at_least(int64_t rows);
  // Bytes of a model's first tables (what load() counts against free memory).
  static size_t initial_bytes(const LlamaConfig& c, DType dtype);

 private:
  Tensor table(const std::vector<double>& inv, int64_t rows, bool sine, double scale) const;
  std::mutex mutex_;
  std::vector<double> inv_, inv_long_, inv_local_;
  double scale_ = 1.0;
  int64_t context_ = 0, rows_ = 0;
  DType dtype_;
  Device device_;
  Rows tables_;
};

// softmax(q k^T * scale [tanh-softcapped] + mask) v over matching heads, q (B, H, Tq, D);
// with causal, query i sees keys j <= i + Tk - Tq (mask then undefined). sinks: the layer's
// (H) sink logits (gpt-oss), or undefined.
Tensor llama_attention(const LlamaConfig& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                       bool causal, const Tensor& sinks = {});

// epilogue(x @ W^T + b) (+ residual) for a float or packed W: one fused linear either way;
// a packed W's output is out_dtype (the LM head keeps f32).
Tensor apply_weight(const LlamaModel::Weight& w, const Tensor& x, const Tensor& bias, DType out_dtype,
                    QuantActivation act, const Tensor& residual = {}, const LinearEpilogue& e = {});

// Layer li's options of cache_attention: the model's scale and softcap, the layer's window
// and sinks.
CacheAttentionOptions cache_options(const LlamaConfig& c, size_t li, const LlamaModel::Layer& layer);

}  // namespace wick::models
