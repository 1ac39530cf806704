// Tensor names of the Llama family: one row per tensor with its Hugging Face and GGUF
// (llama.cpp) names. The loader reads either spelling through part_name(); the converter
// (llama_convert.cpp) maps HF names to GGUF ones through gguf_name_of(), from the same rows.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace wick::models {

// The per-layer tensors. A MoE layer has a router, stacked experts (in HF one tensor per
// expert, "mlp.experts.*.gate_proj" with * the expert's number; in GGUF one 3-D tensor) and,
// in Qwen2-MoE, a shared expert and its sigmoid gate.
enum class Part {
  AttnNorm,
  Q,
  K,
  V,
  Qkv,
  O,
  QNorm,
  KNorm,
  FfnNorm,
  PostAttnNorm,
  PostFfwNorm,
  Gate,
  Up,
  GateUp,
  Down,
  Router,
  GateExps,
  UpExps,
  DownExps,
  SharedGate,
  SharedUp,
  SharedDown,
  SharedExpertGate,
  Sinks,  // gpt-oss: one logit per query head
  // DeepSeek's multi-head latent attention: q's bottleneck (q_a, its norm, q_b), the latent and
  // rope key (kv_a) and its norm, the latent's expansion kv_b (GGUF: split into k_b, v_b), and
  // the router's selection bias.
  QA,
  QANorm,
  QB,
  KvA,
  KvANorm,
  KvB,
  KB,
  VB,
  SelectBias
};

// Where an architecture's HF names differ from the common ones: Gemma 2, whose HF
// post_attention_layernorm follows attention instead of preceding the MLP; Mixtral, whose
// MoE block is "block_sparse_moe" with experts w1 / w3 / w2.
// gpt-oss: its GGUF names the norm before the MLP post_attention_norm, its HF router is
// mlp.router (its HF folders are read under GGUF names: GptOssFolder, llama_weights.h).
enum class NameStyle : uint8_t { Plain, Sandwich, Mixtral, GptOss, Deepseek };

// A layer tensor's name within its layer ("self_attn.q_proj" / "attn_q").
std::string_view part_name(Part p, NameStyle style, bool gguf);
// Expert e's HF name of an expert part ("mlp.experts.3.gate_proj"); the GGUF name when gguf.
std::string expert_part_name(Part p, int64_t e, NameStyle style, bool gguf);

// The whole-model tensors.
enum class Global { Embedding, FinalNorm, LmHead };
std::string_view global_name(Global g, bool gguf);

// The prefix of layer i's tensors ("model.layers.3." / "blk.3.").
std::string layer_prefix(int64_t layer, bool gguf);

// The GGUF name of an HF tensor name ("model.layers.0.mlp.up_proj.weight" ->
// "blk.0.ffn_up.weight"), and its Part (none for the whole-model tensors); nullopt when no
// row names it.
struct GgufName {
  std::string name;
  std::optional<Part> part;
};
std::optional<GgufName> gguf_name_of(std::string_view hf_name, NameStyle style);

}  // namespace wick::models
