// The Mixture-of-Experts feed-forward of the Llama family (Mixtral, Qwen2-MoE, Qwen3-MoE,
// OLMoE), as transformers computes it: router logits, their softmax over every expert in
// f32, the top k (equal scores: the lower expert index, as torch.topk), renormalized with
// norm_topk_prob, then the picked experts' gated MLPs summed with those weights; Qwen2-MoE
// adds a shared expert scaled by sigmoid(x . shared_gate).
#include "llama_config.h"
#include "wick/experts.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick::models {

bool LlamaModel::graph_recordable(int64_t lanes) const {
  return config_.n_expert == 0 || mul_mat_id_on_device(device_, lanes * config_.n_expert_used);
}

Tensor LlamaModel::moe_ffn(const Layer& l, const Tensor& h) const {
  const LlamaConfig& c = config_;
  const Tensor x = h.reshape({-1, c.hidden_size});
  // The router in f32 whatever the compute dtype (as llama.cpp's products are): a 16-bit
  // product would pick other experts for tokens whose scores are close.
  const Tensor logits = apply_weight(l.router, x.to(DType::F32), {}, DType::F32, quant_activation_);
  const SortResult top = topk(softmax(logits), c.n_expert_used);
  Tensor weights = top.values;
  if (c.norm_topk_prob) weights = weights / sum(weights, {-1}, true);
  // The picked experts of every token: (tokens, k, out).
  auto experts = [&](const Weight& w, const Tensor& in, const LinearEpilogue& e) {
    if (w.quantized()) return mul_mat_id(in, w.packed, top.indices, quant_activation_, e, dtype_);
    return mul_mat_id(in, w.dense, top.indices, e);
  };
  Tensor mid;
  if (l.gate_up_exps.present()) {
    mid = experts(l.gate_up_exps, x, {.act = c.activation, .glu = true});
  } else {
    mid = activate(experts(l.gate_exps, x, {}), c.activation) * experts(l.up_exps, x, {});
  }
  // The k outputs of each token weighted and summed as one batched product, (N, 1, k) @ (N, k, H).
  const Tensor out = experts(l.down_exps, mid, {});
  Tensor y = matmul(weights.to(dtype_).unsqueeze(1), out).reshape({x.dim(0), c.hidden_size});
  if (l.down.present()) {  // the shared expert
    Tensor s;
    if (l.gate_up.present()) {
      s = apply_weight(l.gate_up, x, {}, dtype_, quant_activation_, {}, {.act = c.activation, .glu = true});
    } else {
      s = activate(apply_weight(l.gate, x, {}, dtype_, quant_activation_), c.activation) *
          apply_weight(l.up, x, {}, dtype_, quant_activation_);
    }
    const Tensor gate = sigmoid(linear(x, l.shared_gate.unsqueeze(0)));
    y = y + apply_weight(l.down, s, {}, dtype_, quant_activation_) * gate;
  }
  return y.reshape(h.shape().dims());
}

}  // namespace wick::models
