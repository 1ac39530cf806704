// The rows of the Llama family's tensor names (llama_names.h).
#include "llama_names.h"

#include <charconv>

namespace wick::models {

namespace {

struct PartRow {
  Part part;
  std::string_view hf, gguf;
};

// Gemma 2 (sandwich) names its norms differently; its rows come first when sandwich is set.
constexpr PartRow kSandwichRows[] = {
    {Part::FfnNorm, "pre_feedforward_layernorm", "ffn_norm"},
    {Part::PostAttnNorm, "post_attention_layernorm", "post_attention_norm"},
    {Part::PostFfwNorm, "post_feedforward_layernorm", "post_ffw_norm"},
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
const PartRow* find_row(bool sandwich, F&& match) {
  if (sandwich)
    for (const PartRow& r : kSandwichRows)
      if (match(r)) return &r;
  for (const PartRow& r : kRows)
    if (match(r)) return &r;
  return nullptr;
}

}  // namespace

std::string_view part_name(Part p, bool sandwich, bool gguf) {
  const PartRow* r = find_row(sandwich, [&](const PartRow& row) { return row.part == p; });
  if (!r) return {};  // the post-norms outside Gemma 2: never planned
  return gguf ? r->gguf : r->hf;
}

std::string_view global_name(Global g, bool gguf) {
  for (const GlobalRow& r : kGlobals)
    if (r.global == g) return gguf ? r.gguf : r.hf;
  return {};
}

std::string layer_prefix(int64_t layer, bool gguf) {
  return (gguf ? "blk." : "model.layers.") + std::to_string(layer) + ".";
}

std::optional<GgufName> gguf_name_of(std::string_view hf, bool sandwich) {
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
  const PartRow* r = find_row(sandwich, [&](const PartRow& row) { return row.hf == part; });
  if (!r) return std::nullopt;
  return GgufName{layer_prefix(layer, true) + std::string(r->gguf) + std::string(suffix), r->part};
}

}  // namespace wick::models
