// Internal pieces of the Llama family shared by the config readers (HF, GGUF), the loader
// and the forward pass.
#pragma once

#include <string>
#include <vector>

#include "llama_arch.h"
#include "wick/models/llama.h"

namespace wick::models {

// Fills what follows from the row (gemma norms, embedding scale, fused tensors, the
// default attention scale, the per-layer sliding flags when unset) and checks the sizes
// against each other: Format naming the key (`keys` spells them for the source, HF or GGUF).
struct ConfigKeys {
  std::string n_head, n_kv_head, head_dim, rope_dims;
};
void finish_config(LlamaConfig& c, const LlamaArch& arch, const ConfigKeys& keys);

// transformers' inverse frequencies (dims/2 of them) for the rope config, and the factor
// on cos/sin (yarn's attention factor, 1 otherwise). In double precision.
// long_factors picks longrope's long set (ignored by the other scalings).
std::vector<double> rope_inv_freq(const RopeConfig& r, bool long_factors = false);
double rope_attention_factor(const RopeConfig& r);

// softmax(q k^T * scale [tanh-softcapped] + mask) v over matching heads, q (B, H, Tq, D);
// with causal, query i sees keys j <= i + Tk - Tq (mask then undefined).
Tensor llama_attention(const LlamaConfig& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                       bool causal);

}  // namespace wick::models
