// The rows of the Llama family's tensor names (llama_names.h).
#include "llama_names.h"

#include <charconv>

namespace wick::models {

namespace {

struct PartRow {
  Part part;
  std::string_view hf, gguf;
};

// Gemma 2 (sandwich) names its norms differently, Mixtral its MoE block; their rows come
// first for their style.
constexpr PartRow kSandwichRows[] = {
    {Part::FfnNorm, "pre_feedforward_layernorm", "ffn_norm"},
    {Part::PostAttnNorm, "post_attention_layernorm", "post_attention_norm"},
    {Part::PostFfwNorm, "post_feedforward_layernorm", "post_ffw_norm"},
};
constexpr PartRow kMixtralRows[] = {
    {Part::Router, "block_sparse_moe.gate", "ffn_gate_inp"},
    {Part::GateExps, "block_sparse_moe.experts.*.w1", "ffn_gate_exps"},
    {Part::UpExps, "block_sparse_moe.experts.*.w3", "ffn_up_exps"},
    {Part::DownExps, "block_sparse_moe.experts.*.w2", "ffn_down_exps"},
};

constexpr PartRow kGptOssRows[] = {
    {Part::FfnNorm, "post_attention_layernorm", "post_attention_norm"},
    {Part::Router, "mlp.router", "ffn_gate_inp"},
    {Part::Sinks, "self_attn.sinks", "attn_sinks"},
};

// DeepSeek: MLA's tensors, shared_experts (plural), the selection bias (HF: a buffer of the
// gate, no .weight suffix; GGUF: exp_probs_b.bias; the loader spells the suffixes).
constexpr PartRow kDeepseekRows[] = {
    {Part::QA, "self_attn.q_a_proj", "attn_q_a"},
    {Part::QANorm, "self_attn.q_a_layernorm", "attn_q_a_norm"},
    {Part::QB, "self_attn.q_b_proj", "attn_q_b"},
    {Part::KvA, "self_attn.kv_a_proj_with_mqa", "attn_kv_a_mqa"},
    {Part::KvANorm, "self_attn.kv_a_layernorm", "attn_kv_a_norm"},
    {Part::KvB, "self_attn.kv_b_proj", "attn_kv_b"},
    {Part::KB, "", "attn_k_b"},
    {Part::VB, "", "attn_v_b"},
    {Part::SelectBias, "mlp.gate.e_score_correction_bias", "exp_probs_b"},
    {Part::SharedGate, "mlp.shared_experts.gate_proj", "ffn_gate_shexp"},
    {Part::SharedUp, "mlp.shared_experts.up_proj", "ffn_up_shexp"},
    {Part::SharedDown, "mlp.shared_experts.down_proj", "ffn_down_shexp"},
};

constexpr PartRow kRows[] = {
    {Part::AttnNorm, "input_layernorm", "attn_norm"},
    {Part::Q, "self_attn.q_proj", "attn_q"},
    {Part::K, "self_attn.k_proj", "attn_k"},
    {Part::V, "self_attn.v_proj", "attn_v"},
    {Part::Qkv, "self_attn.qkv_proj", "attn_qkv"},
    {Part::O, "self_attn.o_proj", "attn_output"},
    {Part::QNorm, "self_attn.q_norm", "attn_q_norm"},
    {Part::KNorm, "self_attn.k_norm", "attn_k_norm"},
    {Part::FfnNorm, "post_attention_layernorm", "ffn_norm"},
    {Part::Gate, "mlp.gate_proj", "ffn_gate"},
    {Part::Up, "mlp.up_proj", "ffn_up"},
    {Part::GateUp, "mlp.gate_up_proj", "ffn_up"},  // Phi-3: llama.cpp keeps it fused under ffn_up
    {Part::Down, "mlp.down_proj", "ffn_down"},
    {Part::Router, "mlp.gate", "ffn_gate_inp"},
    {Part::GateExps, "mlp.experts.*.gate_proj", "ffn_gate_exps"},
    {Part::UpExps, "mlp.experts.*.up_proj", "ffn_up_exps"},
    {Part::DownExps, "mlp.experts.*.down_proj", "ffn_down_exps"},
    {Part::SharedGate, "mlp.shared_expert.gate_proj", "ffn_gate_shexp"},
    {Part::SharedUp, "mlp.shared_expert.up_proj", "ffn_up_shexp"},
    {Part::SharedDown, "mlp.shared_expert.down_proj", "ffn_down_shexp"},
    {Part::SharedExpertGate, "mlp.shared_expert_gate", "ffn_gate_inp_shexp"},
};

struct GlobalRow {
  Global global;
  std::string_view hf, gguf;
};
constexpr GlobalRow kGlobals[] = {
    {Global::Embedding, "model.embed_tokens.weight", "token_embd.weight"},
    {Global::FinalNorm, "model.norm.weight", "output_norm.weight"},
    {Global::LmHead, "lm_head.weight", "output.weight"},
};

template <class F>
const PartRow* find_row(NameStyle style, F&& match) {
  if (style == NameStyle::Sandwich)
    for (const PartRow& r : kSandwichRows)
      if (match(r)) return &r;
  if (style == NameStyle::Mixtral)
    for (const PartRow& r : kMixtralRows)
      if (match(r)) return &r;
  if (style == NameStyle::GptOss)
    for (const PartRow& r : kGptOssRows)
      if (match(r)) return &r;
  if (style == NameStyle::Deepseek)
    for (const PartRow& r : kDeepseekRows)
      if (match(r)) return &r;
  for (const PartRow& r : kRows)
    if (match(r)) return &r;
  return nullptr;
}

}  // namespace

std::string_view part_name(Part p, NameStyle style, bool gguf) {
  const PartRow* r = find_row(style, [&](const PartRow& row) { return row.part == p; });
  if (!r) return {};  // the post-norms outside Gemma 2: never planned
  return gguf ? r->gguf : r->hf;
}

std::string expert_part_name(Part p, int64_t e, NameStyle style, bool gguf) {
  std::string name(part_name(p, style, gguf));
  if (const size_t star = name.find('*'); star != std::string::npos) name.replace(star, 1, std::to_string(e));
  return name;
}

std::string_view global_name(Global g, bool gguf) {
  for (const GlobalRow& r : kGlobals)
    if (r.global == g) return gguf ? r.gguf : r.hf;
  return {};
}

std::string layer_prefix(int64_t layer, bool gguf) {
  return (gguf ? "blk." : "model.layers.") + std::to_string(layer) + ".";
}

std::optional<GgufName> gguf_name_of(std::string_view hf, NameStyle style) {
  for (const GlobalRow& r : kGlobals)
    if (r.hf == hf) return GgufName{std::string(r.gguf), std::nullopt};
  constexpr std::string_view kLayers = "model.layers.";
  if (!hf.starts_with(kLayers)) return std::nullopt;
  hf.remove_prefix(kLayers.size());
  int64_t layer = 0;
  const auto [stop, ec] = std::from_chars(hf.data(), hf.data() + hf.size(), layer);
  if (ec != std::errc() || stop == hf.data() || stop == hf.data() + hf.size() || *stop != '.') return std::nullopt;
  hf.remove_prefix(size_t(stop - hf.data()) + 1);
  const size_t dot = hf.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view part = hf.substr(0, dot), suffix = hf.substr(dot);  // ".weight" / ".bias"
  if (suffix != ".weight" && suffix != ".bias") return std::nullopt;
  const PartRow* r = find_row(style, [&](const PartRow& row) { return row.hf == part; });
  if (!r) return std::nullopt;
  return GgufName{layer_prefix(layer, true) + std::string(r->gguf) + std::string(suffix), r->part};
}

}  // namespace wick::models
