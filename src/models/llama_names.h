// Tensor names of the Llama family: one row per tensor with its Hugging Face and GGUF
// (llama.cpp) names. The loader reads either spelling through part_name(); the converter
// (llama_convert.cpp) maps HF names to GGUF ones through gguf_name_of(), from the same rows.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace wick::models {

// The per-layer tensors.
enum class Part { AttnNorm, Q, K, V, Qkv, O, QNorm, KNorm, FfnNorm, PostAttnNorm, PostFfwNorm, Gate, Up, GateUp, Down };

// A layer tensor's name within its layer ("self_attn.q_proj" / "attn_q"). sandwich: Gemma 2,
// whose HF post_attention_layernorm follows attention instead of preceding the MLP.
std::string_view part_name(Part p, bool sandwich, bool gguf);

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
std::optional<GgufName> gguf_name_of(std::string_view hf_name, bool sandwich);

}  // namespace wick::models
