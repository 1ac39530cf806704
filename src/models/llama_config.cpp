// LlamaConfig from Hugging Face's config.json, and the checks every source shares.
#include "llama_config.h"

#include <algorithm>
#include <cmath>

#include "config_json.h"
#include "io/json_limits.h"
#include "wick/error.h"

namespace wick::models {

namespace {

using Json = nlohmann::json;

// The value of key if present and not null.
const Json* find(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

int64_t get_size(const Json& j, const char* key, int64_t fallback) {
  int64_t v = fallback;
  if (find(j, key)) read_config_size(j, kLlamaOp, key, v);
  return v;
}

int64_t require_size(const Json& j, const char* key) {
  WICK_CHECK(find(j, key), Format, kLlamaOp, ": config.json has no '", key, "'");
  return get_size(j, key, 0);
}

double get_number(const Json& j, const char* key, double fallback, bool positive = true) {
  const Json* v = find(j, key);
  if (!v) return fallback;
  WICK_CHECK(v->is_number() && std::isfinite(v->get<double>()) && (!positive || v->get<double>() > 0), Format, kLlamaOp,
             ": config key '", key, "' must be a ", positive ? "positive " : "", "number, got ", json::brief(*v));
  return v->get<double>();
}

bool get_bool(const Json& j, const char* key, bool fallback) {
  const Json* v = find(j, key);
  if (!v) return fallback;
  WICK_CHECK(v->is_boolean(), Format, kLlamaOp, ": config key '", key, "' must be true or false, got ",
             json::brief(*v));
  return v->get<bool>();
}

std::string get_string(const Json& j, const char* key) {
  const Json* v = find(j, key);
  if (!v) return {};
  WICK_CHECK(v->is_string(), Format, kLlamaOp, ": config key '", key, "' must be a string, got ", json::brief(*v));
  return v->get<std::string>();
}

// bos/eos: an id, a list of ids, or null.
std::vector<int32_t> get_ids(const Json& j, const char* key) {
  const Json* v = find(j, key);
  if (!v) return {};
  std::vector<int32_t> ids;
  auto take = [&](const Json& e) {
    WICK_CHECK(e.is_number_integer() && e.get<int64_t>() >= 0 && e.get<int64_t>() <= INT32_MAX, Format, kLlamaOp,
               ": config key '", key, "' must hold token ids, got ", json::brief(*v));
    ids.push_back(int32_t(e.get<int64_t>()));
  };
  if (v->is_array()) {
    for (const Json& e : *v) take(e);
  } else {
    take(*v);
  }
  return ids;
}

Activation activation_from(const std::string& name, const char* key) {
  return activation_named(name, std::string(kLlamaOp) + ": config key '" + key + "'");
}

// rope_parameters (transformers >= 5) or rope_scaling + rope_theta (earlier files).
void read_rope(const Json& j, LlamaConfig& c) {
  const Json* params = find(j, "rope_parameters");
  const char* pkey = "rope_parameters";
  if (!params) {
    params = find(j, "rope_scaling");
    pkey = "rope_scaling";
  }
  static const Json kEmpty = Json::object();
  if (params) WICK_CHECK(params->is_object(), Format, kLlamaOp, ": config key '", pkey, "' must be an object");
  // transformers 5's form per layer type (Gemma 3): {"full_attention": {...}, "sliding_attention": {...}}.
  if (params && params->contains("full_attention")) {
    if (const Json* local = find(*params, "sliding_attention")) {
      WICK_CHECK(local->is_object(), Format, kLlamaOp, ": config key '", pkey, ".sliding_attention' must be an object");
      const std::string type = get_string(*local, "rope_type");
      WICK_CHECK(type.empty() || type == "default", Unsupported, kLlamaOp, ": rope type '", type,
                 "' of the sliding layers is not supported (default)");
      c.rope_local_theta = get_number(*local, "rope_theta", 10000.0);
    }
    params = find(*params, "full_attention");
    WICK_CHECK(params && params->is_object(), Format, kLlamaOp, ": config key '", pkey,
               ".full_attention' must be an object");
  }
  const Json& p = params ? *params : kEmpty;
  RopeConfig& r = c.rope;
  r.theta = get_number(p, "rope_theta", get_number(j, "rope_theta", 10000.0));
  const double partial = get_number(p, "partial_rotary_factor", get_number(j, "partial_rotary_factor", 1.0));
  WICK_CHECK(partial <= 1.0, Format, kLlamaOp, ": partial_rotary_factor must be in (0, 1], got ", partial);
  r.dims = int64_t(double(c.head_dim) * partial);
  std::string type = get_string(p, "rope_type");
  if (type.empty()) type = get_string(p, "type");
  if (type.empty() || type == "default" || type == "dynamic") return;  // dynamic: default within the context
  // Phi-3 keeps original_max_position_embeddings beside rope_scaling; it wins there.
  r.original_context = get_size(j, "original_max_position_embeddings",
                                get_size(p, "original_max_position_embeddings", c.context_length));
  const bool longrope = type == "longrope" || type == "su";
  r.factor = get_number(p, "factor", longrope ? double(c.context_length) / double(r.original_context) : 1.0);
  if (type == "linear") {
    r.scaling = RopeScaling::Linear;
  } else if (type == "llama3") {
    r.scaling = RopeScaling::Llama3;
    r.low_freq_factor = get_number(p, "low_freq_factor", 1.0);
    r.high_freq_factor = get_number(p, "high_freq_factor", 4.0);
    WICK_CHECK(r.high_freq_factor != r.low_freq_factor, Format, kLlamaOp,
               ": llama3 rope needs high_freq_factor != low_freq_factor, both are ", r.low_freq_factor);
  } else if (type == "yarn") {
    r.scaling = RopeScaling::Yarn;
    r.beta_fast = get_number(p, "beta_fast", 32.0);
    r.beta_slow = get_number(p, "beta_slow", 1.0);
    r.yarn_truncate = get_bool(p, "truncate", true);
    if (find(p, "attention_factor")) {
      r.attention_factor = get_number(p, "attention_factor", 1.0);
    } else if (find(p, "mscale") && find(p, "mscale_all_dim")) {
      // transformers' _compute_yarn_parameters: the ratio of the two magnitude corrections.
      const double m = get_number(p, "mscale", 1.0, false), all = get_number(p, "mscale_all_dim", 1.0, false);
      r.attention_factor = yarn_mscale(r.factor, m) / yarn_mscale(r.factor, all);
    }
    if (find(p, "mscale_all_dim")) r.yarn_mscale_all_dim = get_number(p, "mscale_all_dim", 0.0, false);
  } else if (longrope) {
    r.scaling = RopeScaling::LongRope;
    if (find(p, "attention_factor")) r.attention_factor = get_number(p, "attention_factor", 1.0);
    for (auto [key, out] : {std::pair{"short_factor", &r.short_factor}, std::pair{"long_factor", &r.long_factor}}) {
      const Json* f = find(p, key);
      WICK_CHECK(f && f->is_array(), Format, kLlamaOp, ": longrope needs a list '", key, "'");
      for (const Json& e : *f) {
        WICK_CHECK(e.is_number() && e.get<double>() > 0 && std::isfinite(e.get<double>()), Format, kLlamaOp, ": '", key,
                   "' must hold positive numbers, got ", json::brief(e));
        out->push_back(e.get<double>());
      }
    }
  } else {
    fail(ErrorKind::Unsupported, kLlamaOp, ": rope type '", type,
         "' is not supported (default, linear, dynamic, llama3, yarn, longrope)");
  }
}

// DeepSeek: multi-head latent attention's sizes and the routing of its experts (dense layers
// before first_k_dense_replace, then every moe_layer_freq-th; shared experts of
// n_shared_experts x moe_intermediate_size; V2's softmax with greedy or group-limited (by each
// group's best) choice, never renormalized in transformers; V3's sigmoid with a selection bias
// and groups by their two best). The head dim is the key's, nope + rope.
void read_deepseek(const Json& j, LlamaConfig& c) {
  c.q_lora_rank = get_size(j, "q_lora_rank", 0);
  c.kv_lora_rank = require_size(j, "kv_lora_rank");
  c.qk_nope_dim = require_size(j, "qk_nope_head_dim");
  c.qk_rope_dim = require_size(j, "qk_rope_head_dim");
  c.v_dim = require_size(j, "v_head_dim");
  c.head_dim = c.qk_nope_dim + c.qk_rope_dim;
  c.n_kv_head = c.n_head;
  // The rope dims of a head come first in wick's layout of q and k (llama.cpp's puts them
  // last: a head's dims may be ordered at will, alike in q and k), rotated in pairs.
  c.rope.dims = c.qk_rope_dim;
  c.rope.interleaved = true;
  WICK_CHECK(c.v_dim <= c.head_dim, Unsupported, kLlamaOp, ": v_head_dim ", c.v_dim,
             " wider than the key's qk_nope_head_dim + qk_rope_head_dim ", c.head_dim, " is not supported");
  c.n_expert = get_size(j, "n_routed_experts", 0);
  c.moe_layers.assign(size_t(c.n_layer), false);
  if (c.n_expert == 0) return;
  c.n_expert_used = require_size(j, "num_experts_per_tok");
  c.expert_ffn = require_size(j, "moe_intermediate_size");
  c.shared_expert_ffn = c.expert_ffn * get_size(j, "n_shared_experts", 0);
  const int64_t dense = get_size(j, "first_k_dense_replace", 0), freq = get_size(j, "moe_layer_freq", 1);
  for (int64_t i = 0; i < c.n_layer; ++i) c.moe_layers[size_t(i)] = i >= dense && i % freq == 0;
  const bool v3 = c.arch == "deepseek3";
  const std::string scoring = get_string(j, "scoring_func");
  c.moe_sigmoid = scoring.empty() ? v3 : scoring == "sigmoid";
  WICK_CHECK(scoring.empty() || scoring == "sigmoid" || scoring == "softmax", Unsupported, kLlamaOp, ": scoring_func '",
             scoring, "' is not supported (softmax, sigmoid)");
  const std::string method = get_string(j, "topk_method");
  WICK_CHECK(v3 || method.empty() || method == "greedy" || method == "group_limited_greedy", Unsupported, kLlamaOp,
             ": topk_method '", method, "' is not supported for DeepSeek-V2 (greedy, group_limited_greedy)");
  const bool grouped = v3 || method == "group_limited_greedy";
  c.moe_groups = grouped ? get_size(j, "n_group", 1) : 1;
  c.moe_topk_groups = grouped ? get_size(j, "topk_group", 1) : 1;
  check_expert_groups(c, "n_group", "topk_group");
  c.moe_group_top2 = v3;
  c.moe_select_bias = v3;
  c.norm_topk_prob = v3 && get_bool(j, "norm_topk_prob", false);  // transformers' V2 never renormalizes
  c.moe_routed_scale = get_number(j, "routed_scaling_factor", 1.0);
}

// Which layers slide: layer_types when the file lists them (and the arch reads them),
// else the arch's pattern.
void read_sliding(const Json& j, const LlamaArch& arch, LlamaConfig& c) {
  const Json* window = find(j, "sliding_window");
  c.sliding_window = window && *window == 0 ? 0 : get_size(j, "sliding_window", 0);  // 0: none (Qwen2-MoE)
  if (arch.sliding == SlidingPattern::FromLayer && !get_bool(j, "use_sliding_window", false)) c.sliding_window = 0;
  c.sliding_layers.assign(size_t(c.n_layer), false);
  if (c.sliding_window == 0) return;
  const Json* types = arch.sliding == SlidingPattern::All ? nullptr : find(j, "layer_types");
  if (types) {
    WICK_CHECK(types->is_array() && int64_t(types->size()) == c.n_layer, Format, kLlamaOp,
               ": config key 'layer_types' must list num_hidden_layers ", c.n_layer, " entries, got ",
               json::brief(*types));
    for (size_t i = 0; i < types->size(); ++i) {
      const Json& t = (*types)[i];
      WICK_CHECK(t == "sliding_attention" || t == "full_attention", Unsupported, kLlamaOp, ": layer_types[", i, "] is ",
                 json::brief(t), " (sliding_attention or full_attention)");
      c.sliding_layers[i] = t == "sliding_attention";
    }
    return;
  }
  const int64_t from = arch.sliding == SlidingPattern::FromLayer ? get_size(j, "max_window_layers", 0) : 0;
  const int64_t pattern = get_size(j, "sliding_window_pattern", 6);  // Gemma 3's files before layer_types
  for (int64_t i = 0; i < c.n_layer; ++i) c.sliding_layers[size_t(i)] = layer_slides(arch.sliding, i, pattern, from);
}

// Mixture of experts: num_local_experts (Mixtral, transformers 5) or num_experts, top-k, the
// expert width (moe_intermediate_size, else intermediate_size), Qwen2-MoE's shared expert,
// and which layers route (Qwen2/3-MoE: every decoder_sparse_step-th layer not in mlp_only_layers).
void read_experts(const Json& j, const LlamaArch& arch, LlamaConfig& c) {
  const char* count_key = find(j, "num_local_experts") ? "num_local_experts" : "num_experts";
  c.n_expert = get_size(j, count_key, 0);
  c.moe_layers.assign(size_t(c.n_layer), false);
  if (c.n_expert == 0) return;
  c.n_expert_used = require_size(j, "num_experts_per_tok");
  c.expert_ffn = get_size(j, "moe_intermediate_size", c.intermediate_size);
  if (arch.shared_expert) c.shared_expert_ffn = get_size(j, "shared_expert_intermediate_size", 0);
  c.norm_topk_prob = get_bool(j, "norm_topk_prob", arch.moe_norm_topk);
  const int64_t step = get_size(j, "decoder_sparse_step", 1);
  for (int64_t i = 0; i < c.n_layer; ++i) c.moe_layers[size_t(i)] = (i + 1) % step == 0;
  if (const Json* dense = find(j, "mlp_only_layers")) {
    WICK_CHECK(dense->is_array(), Format, kLlamaOp, ": config key 'mlp_only_layers' must be a list, got ",
               json::brief(*dense));
    for (const Json& e : *dense) {
      WICK_CHECK(e.is_number_integer() && e.get<int64_t>() >= 0 && e.get<int64_t>() < c.n_layer, Format, kLlamaOp,
                 ": config key 'mlp_only_layers' must hold layer numbers below ", c.n_layer, ", got ", json::brief(e));
      c.moe_layers[size_t(e.get<int64_t>())] = false;
    }
  }
}

// GPT-2's config.json (GPT2Config's own key names, transformers' defaults): one head per
// key/value head, a fused c_attn, biases on every projection and norm, a tied head.
LlamaConfig gpt2_from_hf(const Json& j, const LlamaArch& arch) {
  LlamaConfig c;
  c.arch = std::string(arch.name);
  c.vocab_size = require_size(j, "vocab_size");
  c.hidden_size = get_size(j, "n_embd", 768);
  c.n_layer = get_size(j, "n_layer", 12);
  c.n_head = c.n_kv_head = get_size(j, "n_head", 12);
  WICK_CHECK(c.hidden_size % c.n_head == 0, Format, kLlamaOp, ": config key 'n_embd' ", c.hidden_size,
             " is not a multiple of 'n_head' ", c.n_head);
  c.head_dim = c.hidden_size / c.n_head;
  c.intermediate_size = get_size(j, "n_inner", 4 * c.hidden_size);
  c.context_length = get_size(j, "n_positions", 1024);
  c.rms_norm_eps = get_number(j, "layer_norm_epsilon", 1e-5);
  const std::string act = get_string(j, "activation_function");
  c.activation = act.empty() ? arch.activation : activation_from(act, "activation_function");
  for (const char* unsupported : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention"})
    WICK_CHECK(!get_bool(j, unsupported, false), Unsupported, kLlamaOp, ": GPT-2 with '", unsupported,
               "' is not supported");
  WICK_CHECK(get_bool(j, "scale_attn_weights", true), Unsupported, kLlamaOp,
             ": GPT-2 with 'scale_attn_weights' false is not supported");
  c.tie_embeddings = get_bool(j, "tie_word_embeddings", arch.tie_default);
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.bos_token_ids = get_ids(j, "bos_token_id");
  c.eos_token_ids = get_ids(j, "eos_token_id");
  c.torch_dtype = get_string(j, find(j, "dtype") ? "dtype" : "torch_dtype");
  c.sliding_layers.assign(size_t(c.n_layer), false);
  finish_config(c, arch, {"n_head", "n_head", "n_embd", "n_embd"});
  c.fused_qkv = true;  // c_attn
  return c;
}

}  // namespace

LlamaConfig LlamaConfig::from_hf_json_file(const std::filesystem::path& path) {
  return from_hf_json(read_config_text(path, kLlamaOp), path.string());
}

LlamaConfig LlamaConfig::from_hf_json(const std::string& text, const std::string& origin) {
  const Json j = parse_config_object(text, kLlamaOp, origin);
  std::string hf_arch;
  if (const Json* a = find(j, "architectures")) {
    WICK_CHECK(a->is_array() && !a->empty() && (*a)[0].is_string(), Format, kLlamaOp,
               ": config key 'architectures' must be a list of class names, got ", json::brief(*a));
    hf_arch = (*a)[0].get<std::string>();
  }
  const std::string model_type = get_string(j, "model_type");
  const LlamaArch* arch = find_arch_hf(hf_arch, model_type);
  WICK_CHECK(arch, Unsupported, kLlamaOp, ": unknown architecture '", hf_arch.empty() ? model_type : hf_arch, "' in '",
             origin, "' (supported: ", supported_arch_names(), ")");

  if (arch->gpt2) return gpt2_from_hf(j, *arch);
  LlamaConfig c;
  c.arch = std::string(arch->name);
  c.vocab_size = require_size(j, "vocab_size");
  c.hidden_size = require_size(j, "hidden_size");
  c.n_layer = require_size(j, "num_hidden_layers");
  c.n_head = require_size(j, "num_attention_heads");
  c.n_kv_head = get_size(j, "num_key_value_heads", c.n_head);
  c.head_dim = get_size(j, "head_dim", c.hidden_size / c.n_head);
  c.intermediate_size = require_size(j, "intermediate_size");
  c.context_length = get_size(j, "max_position_embeddings", 2048);
  c.rms_norm_eps = get_number(j, "rms_norm_eps", 1e-6);
  read_rope(j, c);
  // Gemma 3's local base: transformers 4's key, else the per-type rope_parameters' (above).
  if (arch->local_rope && c.rope_local_theta == 0) c.rope_local_theta = get_number(j, "rope_local_base_freq", 10000.0);
  if (!arch->local_rope) c.rope_local_theta = 0;
  read_sliding(j, *arch, c);
  const char* act_key = find(j, "hidden_activation") ? "hidden_activation" : "hidden_act";
  const std::string act = get_string(j, act_key);
  c.activation = act.empty() ? arch->activation : activation_from(act, act_key);
  c.tie_embeddings = get_bool(j, "tie_word_embeddings", arch->tie_default);
  const bool attention_bias = get_bool(j, "attention_bias", false);
  c.qkv_bias = arch->qkv_bias || attention_bias;
  c.o_bias = attention_bias && !arch->qkv_bias;
  c.mlp_bias = get_bool(j, "mlp_bias", false);
  if (arch->gemma) {  // Gemma 2 and 3 (softcaps null in Gemma 3's files)
    c.attn_logit_softcap = get_number(j, "attn_logit_softcapping", 0.0);
    c.final_logit_softcap = get_number(j, "final_logit_softcapping", 0.0);
    c.attention_scale = 1.0 / std::sqrt(get_number(j, "query_pre_attn_scalar", 256.0));
  }
  c.bos_token_ids = get_ids(j, "bos_token_id");
  c.eos_token_ids = get_ids(j, "eos_token_id");
  c.torch_dtype = get_string(j, find(j, "dtype") ? "dtype" : "torch_dtype");
  WICK_CHECK(!find(j, "clip_qkv"), Unsupported, kLlamaOp, ": config key 'clip_qkv' (clamped q/k/v) is not supported");
  if (arch->mla) {
    read_deepseek(j, c);
  } else {
    read_experts(j, *arch, c);
  }
  if (arch->clamped_swiglu) {
    c.swiglu_limit = get_number(j, "swiglu_limit", 7.0);
    c.swiglu_alpha = get_number(j, "swiglu_alpha", 1.702);
  }
  finish_config(c, *arch, {"num_attention_heads", "num_key_value_heads", "head_dim", "partial_rotary_factor"});
  return c;
}

NameStyle name_style(const LlamaConfig& c) {
  if (c.sandwich_norms) return NameStyle::Sandwich;
  if (c.attn_sinks) return NameStyle::GptOss;
  if (c.kv_lora_rank > 0) return NameStyle::Deepseek;
  return c.arch == "mixtral" ? NameStyle::Mixtral : NameStyle::Plain;
}

void check_expert_groups(const LlamaConfig& c, std::string_view groups_key, std::string_view used_key) {
  WICK_CHECK(c.moe_groups >= 1 && c.n_expert % c.moe_groups == 0 && c.moe_topk_groups <= c.moe_groups, Format, kLlamaOp,
             ": ", groups_key, " ", c.moe_groups, " / ", used_key, " ", c.moe_topk_groups, " do not divide ",
             c.n_expert, " experts");
}

void merge_generation_config(LlamaConfig& c, const std::string& text, const std::string& origin) {
  const Json j = parse_config_object(text, kLlamaOp, origin);
  for (const int32_t id : get_ids(j, "eos_token_id"))
    if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), id) == c.eos_token_ids.end())
      c.eos_token_ids.push_back(id);
}

void finish_config(LlamaConfig& c, const LlamaArch& arch, const ConfigKeys& keys) {
  WICK_CHECK(c.n_kv_head <= c.n_head && c.n_head % c.n_kv_head == 0, Format, kLlamaOp, ": ", keys.n_head, " ", c.n_head,
             " is not a multiple of ", keys.n_kv_head, " ", c.n_kv_head);
  WICK_CHECK(c.head_dim > 0 && c.head_dim % 2 == 0, Format, kLlamaOp, ": ", keys.head_dim, " ", c.head_dim,
             " must be positive and even (rotary pairs)");
  // Every projection's width ((heads + 2 kv heads) x head_dim) stays an int32 size, so no
  // shape the loader forms from them can overflow.
  WICK_CHECK(c.head_dim <= kMaxConfigSize / (c.n_head + 2 * c.n_kv_head), Format, kLlamaOp, ": ", keys.n_head, " ",
             c.n_head, ", ", keys.n_kv_head, " ", c.n_kv_head, " and ", keys.head_dim, " ", c.head_dim,
             " give projections wider than ", kMaxConfigSize);
  if (c.rope.dims == 0) c.rope.dims = c.head_dim;
  WICK_CHECK(c.rope.dims > 0 && c.rope.dims <= c.head_dim && c.rope.dims % 2 == 0, Format, kLlamaOp, ": ",
             keys.rope_dims, " gives ", c.rope.dims, " rotary dims, which must be even and at most the head dim ",
             c.head_dim);
  for (const auto* f : {&c.rope.freq_factors, &c.rope.short_factor, &c.rope.long_factor})
    WICK_CHECK(f->empty() || int64_t(f->size()) == c.rope.dims / 2, Format, kLlamaOp, ": a rope factor list holds ",
               f->size(), " factors, the ", c.rope.dims, " rotary dims need ", c.rope.dims / 2);
  WICK_CHECK(c.rope.scaling != RopeScaling::LongRope ||
                 (!c.rope.short_factor.empty() && !c.rope.long_factor.empty() && c.rope.original_context > 1),
             Format, kLlamaOp, ": longrope needs short and long factors and an original context above 1");
  if (c.sliding_layers.size() != size_t(c.n_layer)) c.sliding_layers.assign(size_t(c.n_layer), false);
  if (c.sliding_window == 0) c.sliding_layers.assign(size_t(c.n_layer), false);
  c.gemma_norms = arch.gemma;
  c.sandwich_norms = arch.sandwich_norms;
  c.qk_norm = arch.qk_norm;
  c.qk_norm_full = arch.qk_norm_full;
  c.attn_sinks = arch.attn_sinks;
  c.moe_bias = arch.moe_bias;
  if (c.moe_layers.size() != size_t(c.n_layer)) c.moe_layers.assign(size_t(c.n_layer), false);
  if (c.n_expert > 0) {
    WICK_CHECK(c.n_expert_used >= 1 && c.n_expert_used <= c.n_expert, Format, kLlamaOp, ": ", c.n_expert_used,
               " experts per token, but the model has ", c.n_expert);
    WICK_CHECK(c.expert_ffn > 0, Format, kLlamaOp, ": the experts' feed-forward width must be positive");
  }
  c.fused_qkv = c.fused_gate_up = arch.fused;
  c.layer_norm = c.learned_positions = arch.gpt2;
  c.gated_mlp = !arch.gpt2;
  c.embedding_scale = arch.gemma ? std::sqrt(double(c.hidden_size)) : 1.0;
  if (c.attention_scale == 0) c.attention_scale = 1.0 / std::sqrt(double(c.head_dim));
  // DeepSeek's attention: the softmax scale times yarn's magnitude correction squared.
  if (arch.mla && c.rope.scaling == RopeScaling::Yarn && c.rope.yarn_mscale_all_dim > 0) {
    const double m = yarn_mscale(c.rope.factor, c.rope.yarn_mscale_all_dim);
    c.attention_scale *= m * m;
  }
  c.shared_expert_gate = !arch.mla;
}

}  // namespace wick::models
