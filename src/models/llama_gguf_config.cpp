// LlamaConfig from a GGUF file's metadata: llama.cpp's general.architecture and its
// <arch>.* keys, with llama.cpp's defaults where a key is optional there.
#include <cmath>
#include <limits>
#include <variant>

#include "config_json.h"
#include "llama_config.h"
#include "wick/error.h"
#include "wick/gguf.h"

namespace wick::models {

namespace {

class Keys {
 public:
  Keys(const gguf::File& f, std::string arch) : f_(f), arch_(std::move(arch)) {}
  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }
  bool has(std::string_view suffix) const { return f_.has(key(suffix)); }

  // An integer of any GGUF integer type in [lo, kMaxConfigSize].
  std::optional<int64_t> integer(std::string_view suffix, int64_t lo = 1) const { return integer_at(key(suffix), lo); }
  std::optional<int64_t> integer_at(const std::string& k, int64_t lo) const {
    if (!f_.has(k)) return std::nullopt;
    const gguf::Value& v = f_.get(k);
    std::optional<int64_t> out;
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            if (std::is_signed_v<T> || uint64_t(x) <= uint64_t(std::numeric_limits<int64_t>::max())) out = int64_t(x);
          }
        },
        v.storage());
    WICK_CHECK(out.has_value(), Format, kLlamaOp, ": GGUF key '", k, "' must be one integer, got ",
               gguf::value_type_name(v.type()), " ", v.to_string());
    WICK_CHECK(*out >= lo && *out <= kMaxConfigSize, Format, kLlamaOp, ": GGUF key '", k, "' is ", *out, ", outside [",
               lo, ", ", kMaxConfigSize, "]");
    return out;
  }
  int64_t require_integer(std::string_view suffix) const {
    const auto v = integer(suffix);
    WICK_CHECK(v, Format, kLlamaOp, ": GGUF file has no key '", key(suffix), "'");
    return *v;
  }
  std::optional<double> number(std::string_view suffix) const {
    const std::string k = key(suffix);
    if (!f_.has(k)) return std::nullopt;
    const gguf::Value& v = f_.get(k);
    WICK_CHECK(v.holds<float>() || v.holds<double>(), Format, kLlamaOp, ": GGUF key '", k, "' must be a float, got ",
               gguf::value_type_name(v.type()));
    const double d = v.holds<float>() ? double(v.get<float>()) : v.get<double>();
    WICK_CHECK(std::isfinite(d) && d >= 0, Format, kLlamaOp, ": GGUF key '", k, "' must be finite and >= 0, got ", d);
    return d;
  }
  std::string string(std::string_view suffix) const {
    const std::string k = key(suffix);
    if (!f_.has(k)) return {};
    WICK_CHECK(f_.get(k).holds<std::string>(), Format, kLlamaOp, ": GGUF key '", k, "' must be a string");
    return f_.get(k).get<std::string>();
  }

 private:
  const gguf::File& f_;
  std::string arch_;
};

void read_rope(const Keys& k, const gguf::File& f, LlamaConfig& c) {
  RopeConfig& r = c.rope;
  r.theta = k.number("rope.freq_base").value_or(10000.0);
  r.dims = k.integer("rope.dimension_count").value_or(c.head_dim);
  const std::string type = k.string("rope.scaling.type");
  // Per-frequency divisors stored as a 1-D tensor (rope_freqs, rope_factors_long/short).
  auto factors = [&](const char* name) {
    WICK_CHECK(f.contains(name), Format, kLlamaOp, ": the GGUF file has no tensor '", name, "'");
    const Tensor t = gguf::plain_tensor(f.tensor(name)).to(DType::F64);
    WICK_CHECK(t.rank() == 1, Format, kLlamaOp, ": tensor '", name, "' must be 1-D, got ", t.shape());
    std::vector<double> v = t.to_vector<double>();
    for (const double d : v)
      WICK_CHECK(std::isfinite(d) && d > 0, Format, kLlamaOp, ": tensor '", name, "' holds ", d, " (must be > 0)");
    return v;
  };
  if (type == "longrope" || f.contains("rope_factors_long.weight")) {
    r.scaling = RopeScaling::LongRope;
    r.original_context = k.integer("rope.scaling.original_context_length").value_or(c.context_length);
    r.factor = double(c.context_length) / double(r.original_context);
    if (k.has("rope.scaling.attn_factor")) r.attention_factor = k.number("rope.scaling.attn_factor");
    r.long_factor = factors("rope_factors_long.weight");
    r.short_factor = factors("rope_factors_short.weight");
    return;
  }
  if (type == "linear" || (type.empty() && k.has("rope.scale_linear"))) {
    r.scaling = RopeScaling::Linear;
    r.factor = k.number(type.empty() ? "rope.scale_linear" : "rope.scaling.factor").value_or(1.0);
  } else if (type == "yarn") {
    r.scaling = RopeScaling::Yarn;
    r.factor = k.number("rope.scaling.factor").value_or(1.0);
    r.original_context = k.integer("rope.scaling.original_context_length").value_or(c.context_length);
    r.beta_fast = k.number("rope.scaling.yarn_beta_fast").value_or(32.0);
    r.beta_slow = k.number("rope.scaling.yarn_beta_slow").value_or(1.0);
    if (k.has("rope.scaling.attn_factor")) r.attention_factor = k.number("rope.scaling.attn_factor");
  } else {
    WICK_CHECK(type.empty() || type == "none", Unsupported, kLlamaOp, ": GGUF key '", k.key("rope.scaling.type"),
               "' is '", type, "' (none, linear, yarn, longrope)");
  }
  WICK_CHECK(r.factor > 0, Format, kLlamaOp, ": GGUF rope scaling factor must be > 0");
  if (f.contains("rope_freqs.weight")) r.freq_factors = factors("rope_freqs.weight");  // llama3's rule
}

// DeepSeek's multi-head latent attention: the GGUF's head_count_kv is 1 and its key/value
// lengths are the latent's; the per-head sizes have keys of their own.
void read_mla(const Keys& k, LlamaConfig& c) {
  c.q_lora_rank = k.integer("attention.q_lora_rank").value_or(0);
  c.kv_lora_rank = k.require_integer("attention.kv_lora_rank");
  c.qk_rope_dim = k.require_integer("rope.dimension_count");
  c.head_dim = k.require_integer("attention.key_length_mla");
  c.v_dim = k.require_integer("attention.value_length_mla");
  WICK_CHECK(c.head_dim > c.qk_rope_dim && c.v_dim <= c.head_dim, Format, kLlamaOp, ": GGUF keys '",
             k.key("attention.key_length_mla"), "' ", c.head_dim, ", '", k.key("rope.dimension_count"), "' ",
             c.qk_rope_dim, " and '", k.key("attention.value_length_mla"), "' ", c.v_dim, " do not fit together");
  c.qk_nope_dim = c.head_dim - c.qk_rope_dim;
  c.n_kv_head = c.n_head;
}

// Mixture of experts: <arch>.expert_count and expert_used_count; a layer routes when it has
// a router (ffn_gate_inp), as llama.cpp's loaders for the MoE archs expect in every layer.
void read_experts(const Keys& k, const gguf::File& f, const LlamaArch& arch, LlamaConfig& c) {
  c.n_expert = k.integer("expert_count", 0).value_or(0);
  c.moe_layers.assign(size_t(c.n_layer), false);
  if (c.n_expert == 0) return;
  c.n_expert_used = k.require_integer("expert_used_count");
  c.expert_ffn = k.integer("expert_feed_forward_length").value_or(c.intermediate_size);
  if (arch.shared_expert)
    c.shared_expert_ffn = k.integer("expert_shared_feed_forward_length").value_or(c.intermediate_size);
  c.norm_topk_prob = arch.moe_norm_topk;
  if (const std::string key = k.key("expert_weights_norm"); f.has(key)) {
    WICK_CHECK(f.get(key).holds<bool>(), Format, kLlamaOp, ": GGUF key '", key, "' must be a bool");
    c.norm_topk_prob = f.get(key).get<bool>();
  }
  for (int64_t i = 0; i < c.n_layer; ++i)
    c.moe_layers[size_t(i)] = f.contains("blk." + std::to_string(i) + ".ffn_gate_inp.weight");
  if (arch.mla) {  // DeepSeek's routing (LlamaConfig::moe_*), from llama.cpp's keys
    c.shared_expert_ffn = c.expert_ffn * k.integer("expert_shared_count", 0).value_or(0);
    c.moe_sigmoid = k.integer("expert_gating_func", 0).value_or(1) == 2;
    c.moe_groups = k.integer("expert_group_count").value_or(1);
    c.moe_topk_groups = k.integer("expert_group_used_count").value_or(1);
    // transformers ranks V2's groups by their best score and V3's by their two best summed
    // (llama.cpp by the two best for both): the file does not say which, the gating does.
    c.moe_group_top2 = c.moe_sigmoid;
    c.moe_routed_scale = k.number("expert_weights_scale").value_or(1.0);
    c.moe_select_bias = f.contains("blk." + std::to_string(c.n_layer - 1) + ".exp_probs_b.bias");
    check_expert_groups(c, k.key("expert_group_count"), k.key("expert_group_used_count"));
  }
}

}  // namespace

LlamaConfig LlamaConfig::from_gguf(const gguf::File& f) {
  WICK_CHECK(f.has("general.architecture") && f.get("general.architecture").holds<std::string>(), Format, kLlamaOp,
             ": GGUF file has no string key 'general.architecture'");
  const std::string name = f.get("general.architecture").get<std::string>();
  const LlamaArch* arch = find_arch_gguf(name);
  WICK_CHECK(arch, Unsupported, kLlamaOp, ": unknown GGUF architecture '", name,
             "' (supported: ", supported_arch_names(), ")");
  const Keys k(f, name);
  LlamaConfig c;
  c.arch = std::string(arch->name);
  c.context_length = k.require_integer("context_length");
  c.hidden_size = k.require_integer("embedding_length");
  c.n_layer = k.require_integer("block_count");
  c.intermediate_size = k.require_integer("feed_forward_length");
  c.n_head = k.require_integer("attention.head_count");
  c.n_kv_head = k.integer("attention.head_count_kv").value_or(c.n_head);
  WICK_CHECK(c.hidden_size % c.n_head == 0 || k.has("attention.key_length"), Format, kLlamaOp, ": GGUF key '",
             k.key("embedding_length"), "' ", c.hidden_size, " is not a multiple of '", k.key("attention.head_count"),
             "' ", c.n_head, " and no key_length is given");
  if (arch->mla) {
    read_mla(k, c);
  } else {
    c.head_dim = k.integer("attention.key_length").value_or(c.hidden_size / c.n_head);
    const int64_t value_dim = k.integer("attention.value_length").value_or(c.head_dim);
    WICK_CHECK(value_dim == c.head_dim, Format, kLlamaOp, ": GGUF keys '", k.key("attention.key_length"), "' ",
               c.head_dim, " and '", k.key("attention.value_length"), "' ", value_dim, " differ");
  }
  // GPT-2's norms are LayerNorms, whose epsilon has a key of its own.
  const char* eps_key = arch->gpt2 ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon";
  const auto eps = k.number(eps_key);
  WICK_CHECK(eps && *eps > 0, Format, kLlamaOp, ": GGUF file has no positive key '", k.key(eps_key), "'");
  c.rms_norm_eps = *eps;
  // The vocabulary: the key, else the embedding's rows (checked against its shape at load).
  if (k.has("vocab_size")) {
    c.vocab_size = *k.integer("vocab_size");
  } else {
    WICK_CHECK(f.contains("token_embd.weight") && f.tensor("token_embd.weight").shape.rank() == 2, Format, kLlamaOp,
               ": GGUF file has no key '", k.key("vocab_size"), "' and no 2-D tensor 'token_embd.weight'");
    c.vocab_size = f.tensor("token_embd.weight").shape[0];
  }
  read_rope(k, f, c);
  c.rope.interleaved = arch->gguf_interleaved_rope || arch->mla;
  if (arch->mla) {
    c.rope.dims = c.qk_rope_dim;
    // convert_hf_to_gguf.py keeps mscale_all_dim as yarn_log_multiplier (0.1 mscale_all_dim)
    // and drops mscale, which DeepSeek's configs set equal to it: the rotary factor is 1.
    if (c.rope.scaling == RopeScaling::Yarn) {
      c.rope.attention_factor = 1.0;
      c.rope.yarn_mscale_all_dim = k.number("rope.scaling.yarn_log_multiplier").value_or(0.0) / 0.1;
    }
  }
  c.rope.yarn_truncate = arch->gguf_yarn_truncate;
  if (arch->clamped_swiglu) c.swiglu_limit = 7.0;  // llama.cpp's constant for gpt-oss (no key)
  c.activation = arch->activation;
  c.sliding_window = k.integer("attention.sliding_window", 0).value_or(0);
  c.sliding_layers.assign(size_t(c.n_layer), false);
  // llama.cpp: Gemma 2 alternates (even layers slide) and defaults to 4096; Qwen2/3 GGUFs
  // carry no window; llama (also Mistral) has none in llama.cpp's graph.
  if (arch->sliding == SlidingPattern::Alternate && c.sliding_window == 0 && !k.has("attention.sliding_window"))
    c.sliding_window = 4096;
  if (arch->sliding == SlidingPattern::FromLayer || name == "llama") c.sliding_window = 0;
  // llama.cpp: Gemma 3 slides in five layers of six (attention.sliding_window_pattern when
  // the file has it), rotating them with base 10000 (rope.freq_base_swa when the file has it),
  // and softcaps only the final logits, when the file says so.
  const int64_t pattern = k.integer("attention.sliding_window_pattern").value_or(6);
  for (int64_t i = 0; i < c.n_layer; ++i) c.sliding_layers[size_t(i)] = layer_slides(arch->sliding, i, pattern, 0);
  if (arch->local_rope) {
    c.rope_local_theta = k.number("rope.freq_base_swa").value_or(10000.0);
    c.final_logit_softcap = k.number("final_logit_softcapping").value_or(0.0);
  }
  if (arch->softcaps) {
    c.attn_logit_softcap = k.number("attn_logit_softcapping").value_or(50.0);
    c.final_logit_softcap = k.number("final_logit_softcapping").value_or(30.0);
  }
  if (arch->gemma) {
    // convert_hf_to_gguf.py drops query_pre_attn_scalar; llama.cpp derives it from the
    // model size (the 27B models, Gemma 2's 46 layers and Gemma 3's 62: hidden / heads;
    // else the head dim). attention.scale overrides.
    const bool big = (arch->softcaps && c.n_layer == 46) || (arch->local_rope && c.n_layer == 62);
    const double scalar = big ? double(c.hidden_size / c.n_head) : double(c.head_dim);
    c.attention_scale = k.number("attention.scale").value_or(1.0 / std::sqrt(scalar));
  } else if (const auto s = k.number("attention.scale"); s && *s > 0) {
    c.attention_scale = *s;
  }
  // Optional tensors decide biases and tying, as llama.cpp's TENSOR_NOT_REQUIRED does.
  c.qkv_bias = f.contains("blk.0.attn_q.bias") || f.contains("blk.0.attn_qkv.bias");
  c.o_bias = f.contains("blk.0.attn_output.bias");
  c.mlp_bias = f.contains("blk.0.ffn_up.bias");
  c.tie_embeddings = !f.contains("output.weight");
  for (auto [key, ids] : {std::pair{"tokenizer.ggml.bos_token_id", &c.bos_token_ids},
                          std::pair{"tokenizer.ggml.eos_token_id", &c.eos_token_ids}})
    if (const auto id = k.integer_at(key, 0)) ids->push_back(int32_t(*id));
  finish_config(c, *arch,
                {k.key("attention.head_count"), k.key("attention.head_count_kv"), k.key("attention.key_length"),
                 k.key("rope.dimension_count")});
  read_experts(k, f, *arch, c);
  // Phi-3 GGUFs may hold q/k/v separately (create_tensor_qkv accepts both).
  c.fused_qkv = f.contains("blk.0.attn_qkv.weight");
  c.fused_gate_up = arch->fused && !f.contains("blk.0.ffn_gate.weight");
  return c;
}

}  // namespace wick::models
