// Fused neural-network ops: each is one backend call (one kernel on CUDA), numerically
// stable, for every float dtype (f16/bf16 compute in f32).
#pragma once

#include <optional>

#include "wick/tensor.h"

namespace wick {

// Over the last dim.
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);
// Over the last dim; weight and bias (shape [last dim]) may be undefined.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps = 1e-6);

// Rotary position embedding of x (B, H, T, D) with cos/sin tables (T, D/2).
// interleaved: pairs (2i, 2i+1) rotate (GPT-J); otherwise halves (i, i + D/2) (GPT-NeoX/Llama).
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved);

struct AttentionOptions {
  bool causal = false;
  std::optional<double> scale;  // default 1/sqrt(head dim)
};
// Scaled dot-product attention. q (B, H, Tq, D), k and v (B, H, Tk, D); an optional
// additive mask broadcastable to (B, H, Tq, Tk). With causal, query i (aligned to the end
// of the keys, for KV caches) sees keys j <= i + Tk - Tq.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask = {},
                                    const AttentionOptions& opt = {});

// x @ weight^T + bias without copying weight (weight (out, in), as PyTorch's Linear).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

}  // namespace wick
