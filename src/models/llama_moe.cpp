// The Mixture-of-Experts feed-forward of the Llama family (Mixtral, Qwen2-MoE, Qwen3-MoE,
// OLMoE, gpt-oss), as transformers computes it: router logits (plus gpt-oss's bias), their
// softmax over every expert in f32, the top k (equal scores: the lower expert index, as
// torch.topk), renormalized with norm_topk_prob (gpt-oss's softmax over the k picked logits is
// the same), then the picked experts' gated MLPs summed with those weights; Qwen2-MoE adds a
// shared expert scaled by sigmoid(x . shared_gate). gpt-oss's experts carry biases and gate
// with the clamped SwiGLU.
#include "llama_config.h"
#include "wick/experts.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick::models {

namespace {

// gpt-oss's expert activation (transformers' GptOssExperts): g = min(gate, limit),
// u = clamp(up, -limit, limit), (u + 1) * (g * sigmoid(alpha g)), in that order.
Tensor clamped_swiglu(const Tensor& gate, const Tensor& up, double limit, double alpha) {
  const Tensor g = clamp(gate, std::nullopt, Scalar(limit));
  const Tensor u = clamp(up, Scalar(-limit), Scalar(limit));
  return (u + Scalar(1.0)) * (g * sigmoid(g * Scalar(alpha)));
}

// The experts each token routes to and their weights, (tokens, k) each. Mixtral, Qwen-MoE,
// OLMoE, gpt-oss: softmax over the logits, the top k, renormalized with norm_topk_prob.
// DeepSeek: softmax (V2) or sigmoid (V3) scores; V3 adds a per-expert bias for the choice only;
// with groups, only the moe_topk_groups best groups (by their best score, or V3's sum of two
// best) are searched (the others' scores masked: 0 under softmax as transformers' V2, -inf
// under V3); the weights are the picked scores (without the bias), renormalized with
// norm_topk_prob, times moe_routed_scale.
SortResult route(const LlamaConfig& c, const Tensor& logits, const Tensor& select_bias) {
  const Tensor scores = c.moe_sigmoid ? sigmoid(logits) : softmax(logits);
  Tensor choice = select_bias.defined() ? scores + select_bias : scores;
  if (c.moe_groups > 1) {
    const int64_t n = logits.dim(0), G = c.moe_groups, per = c.n_expert / G, keep = c.moe_topk_groups;
    const Tensor grouped = choice.reshape({n, G, per});
    const Tensor group_score = c.moe_group_top2 ? sum(topk(grouped, 2).values, {-1}) : max(grouped, {-1});
    const Tensor best = topk(group_score, keep).indices;
    const Device dev = logits.device();
    const Tensor kept = scatter(zeros(Shape{n, G}, DType::F32, dev), 1, best, ones(Shape{n, keep}, DType::F32, dev));
    const Tensor in_kept =
        gt(kept.unsqueeze(2).expand(Shape{n, G, per}).reshape({n, c.n_expert}), zeros(Shape{}, DType::F32, dev));
    const double masked = c.moe_sigmoid ? -INFINITY : 0.0;
    choice = where(in_kept, choice, full(Shape{}, masked, choice.dtype(), choice.device()));
  }
  SortResult top = topk(choice, c.n_expert_used);
  if (select_bias.defined() || c.moe_groups > 1) top.values = gather(scores, -1, top.indices);
  if (c.norm_topk_prob) top.values = top.values / sum(top.values, {-1}, true);
  if (c.moe_routed_scale != 1.0) top.values = top.values * Scalar(c.moe_routed_scale);
  return top;
}

}  // namespace

bool LlamaModel::graph_recordable(int64_t lanes) const {
  return config_.n_expert == 0 || mul_mat_id_on_device(device_, lanes * config_.n_expert_used);
}

Tensor LlamaModel::moe_ffn(const Layer& l, const Tensor& h) const {
  const LlamaConfig& c = config_;
  const Tensor x = h.reshape({-1, c.hidden_size});
  // The router in f32 whatever the compute dtype (as llama.cpp's products are): a 16-bit
  // product would pick other experts for tokens whose scores are close.
  const Tensor logits = apply_weight(l.router, x.to(DType::F32), l.router_b, DType::F32, quant_activation_);
  const SortResult top = route(c, logits, l.select_bias);
  const Tensor& weights = top.values;
  // The picked experts of every token: (tokens, k, out).
  auto experts = [&](const Weight& w, const Tensor& in, const LinearEpilogue& e) {
    if (w.quantized()) return mul_mat_id(in, w.packed, top.indices, quant_activation_, e, dtype_);
    return mul_mat_id(in, w.dense, top.indices, e);
  };
  // Each token's picked experts' bias rows (E, out) -> (tokens, k, out) (gpt-oss).
  auto picked_bias = [&](const Tensor& b) {
    return index_select(b, 0, top.indices.reshape({-1})).reshape({x.dim(0), c.n_expert_used, b.dim(1)});
  };
  Tensor mid;
  if (c.swiglu_limit > 0) {
    Tensor gate, up;
    if (l.gate_up_exps.present()) {  // [gate_e; up_e] rows: the product's halves
      const Tensor both = experts(l.gate_up_exps, x, {});
      gate = both.narrow(2, 0, c.expert_ffn);
      up = both.narrow(2, c.expert_ffn, c.expert_ffn);
    } else {
      gate = experts(l.gate_exps, x, {});
      up = experts(l.up_exps, x, {});
    }
    if (l.gate_exps_b.defined()) {
      gate = gate + picked_bias(l.gate_exps_b);
      up = up + picked_bias(l.up_exps_b);
    }
    mid = clamped_swiglu(gate, up, c.swiglu_limit, c.swiglu_alpha);
  } else if (l.gate_up_exps.present()) {
    mid = experts(l.gate_up_exps, x, {.act = c.activation, .glu = true});
  } else {
    mid = activate(experts(l.gate_exps, x, {}), c.activation) * experts(l.up_exps, x, {});
  }
  // The k outputs of each token weighted and summed as one batched product, (N, 1, k) @ (N, k, H).
  Tensor out = experts(l.down_exps, mid, {});
  if (l.down_exps_b.defined()) out = out + picked_bias(l.down_exps_b);
  Tensor y = matmul(weights.to(dtype_).unsqueeze(1), out).reshape({x.dim(0), c.hidden_size});
  if (l.down.present()) {  // the shared expert
    Tensor s;
    if (l.gate_up.present()) {
      s = apply_weight(l.gate_up, x, {}, dtype_, quant_activation_, {}, {.act = c.activation, .glu = true});
    } else {
      s = activate(apply_weight(l.gate, x, {}, dtype_, quant_activation_), c.activation) *
          apply_weight(l.up, x, {}, dtype_, quant_activation_);
    }
    const Tensor shared = apply_weight(l.down, s, {}, dtype_, quant_activation_);
    // Qwen2-MoE scales its shared expert by a sigmoid gate; DeepSeek's are added as they are.
    y = y + (l.shared_gate.defined() ? shared * sigmoid(linear(x, l.shared_gate.unsqueeze(0))) : shared);
  }
  return y.reshape(h.shape().dims());
}

}  // namespace wick::models
