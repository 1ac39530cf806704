// The Llama family of decoders (Llama 2/3/3.1/3.2, Mistral, Qwen2/2.5, Qwen3, Gemma 2, Phi-3,
// and the Mixture-of-Experts Mixtral, Qwen2-MoE, Qwen3-MoE and OLMoE)
// from Hugging Face folders (config.json + safetensors, sharded or not) or llama.cpp GGUF
// files (float or block-quantized weights), and GPT-2. One generic pre-norm decoder: RMSNorm
// (LayerNorm), rotary (learned) positions, grouped-query attention, a gated (plain) MLP; what
// differs between the architectures is data (LlamaConfig, filled from a row of the
// architecture table, src/models/llama_arch.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "wick/models/causal_lm.h"
#include "wick/nn.h"
#include "wick/quant.h"
#include "wick/tensor.h"

namespace wick::gguf {
class File;
}

namespace wick::models {

// How inverse frequencies are derived from the base (transformers' modeling_rope_utils.py).
enum class RopeScaling : uint8_t {
  None,      // "default"; also "dynamic", which equals it within the context length
  Linear,    // inv_freq / factor
  Yarn,      // NTK-by-parts interpolation with an attention factor on cos/sin
  Llama3,    // Llama 3.1's smoothed low/high-frequency rule
  LongRope,  // Phi-3 128k: per-frequency divisors, the long set once a sequence passes the original context
};

struct RopeConfig {
  double theta = 10000.0;
  int64_t dims = 0;          // rotated dimensions of a head (head_dim, less with partial rotary)
  bool interleaved = false;  // rotate pairs (2i, 2i+1), not halves (i, i + dims/2)
  RopeScaling scaling = RopeScaling::None;
  double factor = 1.0;
  int64_t original_context = 0;                          // llama3, yarn
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  double beta_fast = 32.0, beta_slow = 1.0;              // yarn
  bool yarn_truncate = true;
  double yarn_mscale_all_dim = 0;          // DeepSeek: the softmax scale grows by (0.1 ln(factor) mscale_all_dim + 1)^2
  std::optional<double> attention_factor;  // yarn, longrope: scales cos/sin; derived from factor when absent
  std::vector<double> short_factor, long_factor;  // longrope: dims/2 divisors each
  // Per-frequency divisors (GGUF rope_freqs: llama3's rule as convert_hf_to_gguf.py stores it).
  std::vector<double> freq_factors;
};

struct LlamaConfig {
  std::string arch;  // the architecture table's row: llama, mistral, qwen2, qwen3, gemma2, phi3, gpt2
  int64_t vocab_size = 0, hidden_size = 0, n_layer = 0, n_head = 0, n_kv_head = 0, head_dim = 0;
  int64_t intermediate_size = 0, context_length = 0;
  double rms_norm_eps = 1e-6;
  RopeConfig rope;
  // Gemma 3: the sliding layers rotate with their own base (rope_local_base_freq, no
  // scaling); 0: every layer rotates with `rope`.
  double rope_local_theta = 0;
  int64_t sliding_window = 0;        // keys a query sees in a sliding layer (itself included); 0: none
  std::vector<bool> sliding_layers;  // n_layer entries: whether the layer uses the window
  double attn_logit_softcap = 0;     // Gemma 2: scores = cap * tanh(scores / cap); 0: off
  double final_logit_softcap = 0;
  double attention_scale = 0;   // multiplies q.k; 1/sqrt(head_dim) unless the arch says otherwise
  bool tie_embeddings = false;  // LM head = token embedding
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  bool qk_norm = false;          // Qwen3: RMSNorm over each head of q and k before rotation
  bool gemma_norms = false;      // RMSNorm as (1 + w) in f32 (the +1 folded into w at load)
  bool sandwich_norms = false;   // Gemma 2: norms after attention and MLP too
  double embedding_scale = 1.0;  // Gemma: sqrt(hidden_size), rounded to the compute dtype
  Activation activation = Activation::Silu;
  bool fused_qkv = false, fused_gate_up = false;  // Phi-3 checkpoints store them fused
  // GPT-2: LayerNorm with a bias (epsilon rms_norm_eps) for every norm, a learned position
  // table added to the token embedding instead of rotary positions, and a plain MLP
  // down(act(up(x))) instead of the gated one.
  bool layer_norm = false, learned_positions = false, gated_mlp = true;
  // OLMoE: the q/k RMSNorm spans the whole projection (H * D, KV * D), not each head.
  bool qk_norm_full = false;
  // Mixture of experts (Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE): in the layers moe_layers marks,
  // a router (n_expert logits) picks n_expert_used experts per token, softmax-weighted (over
  // all n_expert logits; with norm_topk_prob the picked weights renormalized to sum to 1);
  // each expert is a gated MLP of expert_ffn. shared_expert_ffn > 0 (Qwen2-MoE): a dense gated
  // MLP of that width beside them, its output scaled by sigmoid(x . shared_gate). Other
  // layers keep the dense MLP of intermediate_size.
  int64_t n_expert = 0, n_expert_used = 0, expert_ffn = 0, shared_expert_ffn = 0;
  bool norm_topk_prob = false;
  std::vector<bool> moe_layers;  // n_layer entries (all false without experts)
  // gpt-oss: a sink logit per query head in attention's softmax (a key of zero value), biases
  // on the router and the experts, and experts whose gated activation is the clamped SwiGLU
  // (up + 1) * g * sigmoid(alpha g), g = min(gate, limit), up clamped to [-limit, limit]
  // (swiglu_limit > 0; 0: the config's activation, plain).
  bool attn_sinks = false, moe_bias = false;
  double swiglu_limit = 0, swiglu_alpha = 1.702;
  // DeepSeek's multi-head latent attention (kv_lora_rank > 0): q from x directly (q_lora_rank
  // 0) or through a q_lora_rank bottleneck and its RMSNorm; per token one latent of
  // kv_lora_rank (RMSNorm'd) and one rope key of qk_rope_dim shared by the heads; the latent
  // expands per head to qk_nope_dim key dims and v_dim value dims. head_dim is then
  // qk_nope_dim + qk_rope_dim and every head is its own key/value head.
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_dim = 0, qk_rope_dim = 0, v_dim = 0;
  // DeepSeek's routing: sigmoid scores (else softmax), a per-expert bias added for the choice
  // only (exp_probs_b), the experts in moe_groups groups of which the moe_topk_groups best are
  // searched (a group's score: its best expert's, or its two best summed with moe_group_top2),
  // the picked weights times moe_routed_scale. Shared experts without a gate add to the output.
  bool moe_sigmoid = false, moe_group_top2 = false, moe_select_bias = false, shared_expert_gate = true;
  int64_t moe_groups = 1, moe_topk_groups = 1;
  double moe_routed_scale = 1.0;
  // From config.json (GGUF: tokenizer.ggml.*); load() adds generation_config.json's eos ids.
  std::vector<int32_t> bos_token_ids, eos_token_ids;
  std::string torch_dtype;  // config.json's dtype ("bfloat16", ...), empty if absent

  int64_t kv_groups() const { return n_head / n_kv_head; }

  // Hugging Face config.json. Unknown architecture -> Unsupported naming it; missing or
  // malformed keys -> Format naming the key.
  static LlamaConfig from_hf_json(const std::string& json, const std::string& origin = "<string>");
  static LlamaConfig from_hf_json_file(const std::filesystem::path& path);
  // llama.cpp's general.architecture and <arch>.* keys; Format naming the key when one is
  // missing or contradicts another (or a tensor's shape).
  static LlamaConfig from_gguf(const gguf::File& file);
};

struct RopeTables;

struct LlamaLoadOptions {
  Device device = Device::cpu();
  // f32, f16 or bf16. Default: f32 on the CPU; on CUDA the checkpoint's float type
  // (config.json's dtype, else the token embedding's; f16 for a quantized embedding).
  std::optional<DType> dtype;
  // Quantize float weight matrices at load (q8_0, q4_0, q4_K, q6_K: what wick::quantize
  // writes). A matrix whose rows are not a multiple of the type's block falls back to q8_0,
  // or stays float if not a multiple of 32 either. Already-quantized GGUF tensors stay as stored.
  std::optional<GgmlType> quantize;
  // How quantized matrices multiply activations (wick/quant.h): exact f32 (default), or
  // rounded to q8_0 per 32 values as ggml does (on CUDA a dp4a kernel, much faster to decode).
  QuantActivation quant_activation = QuantActivation::F32;
  std::function<void(size_t done, size_t total)> on_tensor;  // progress, after each weight
};

class LlamaModel final : public CausalLM {
 public:
  // path: a folder (config.json + model.safetensors or an index and its shards) or a .gguf
  // file. Before anything is uploaded to a device the weights' bytes are compared with the
  // device's free memory (OutOfMemory naming both).
  static LlamaModel load(const std::filesystem::path& path, const LlamaLoadOptions& options = {});

  int64_t vocab_size() const override { return config_.vocab_size; }
  int64_t context_length() const override { return config_.context_length; }
  Device device() const override { return device_; }
  DType dtype() const override { return dtype_; }
  Tensor forward(const Tensor& ids, KvCache* cache = nullptr, bool last_only = false) const override;
  Tensor forward_batch(std::span<const BatchSequence> seqs) const override;  // llama_batch.cpp
  // llama_batch_decode.cpp
  bool batch_decode_supported() const override { return true; }
  bool graph_recordable(int64_t lanes) const override;  // llama_moe.cpp
  void decode_batch_step(BatchDecodeState& s) const override;
  void reserve_cache(KvCache& cache) const override;
  int64_t exact_span(int64_t past) const override;

  const LlamaConfig& config() const { return config_; }
  // Bytes of the weights as held on the device (packed bytes for quantized ones).
  size_t weight_bytes() const { return weight_bytes_; }

  // A weight matrix (out, in): float in the compute dtype, or packed ggml blocks that
  // linear layers multiply through quant_matmul.
  struct Weight {
    Tensor dense;
    QuantTensor packed;
    bool quantized() const { return !dense.defined(); }
    bool present() const { return dense.defined() || packed.bytes.defined(); }
  };
  struct Layer {
    Tensor attn_norm, ffn_norm, post_attn_norm, post_ffw_norm, q_norm, k_norm;
    Tensor attn_norm_b, ffn_norm_b;  // LayerNorm biases (GPT-2)
    Weight q, k, v, qkv, o, gate, up, gate_up, down;
    Tensor q_b, k_b, v_b, qkv_b, o_b, gate_b, up_b, gate_up_b, down_b;
    // A MoE layer: the router (n_expert, hidden) and the stacked experts (n_expert, out, in);
    // gate/up/down above then hold the shared expert (if any), scaled by sigmoid(x . shared_gate).
    Weight router, gate_exps, up_exps, gate_up_exps, down_exps;
    Tensor shared_gate;  // (hidden)
    // gpt-oss: the sink logits (n_head, f32), the router's bias (n_expert, f32) and the
    // experts' biases (n_expert, out) in the compute dtype.
    Tensor sinks, router_b, gate_exps_b, up_exps_b, down_exps_b;
    // DeepSeek: MLA's projections (q_a, q_b or q; kv_a; kv_b (H (nope + v), kv_lora)) and norms,
    // and the router's selection bias (n_expert, f32).
    Weight mla_q_a, mla_q_b, mla_kv_a, mla_kv_b;
    Tensor mla_q_a_norm, mla_kv_a_norm, select_bias;
  };

 protected:
  KvShape kv_shape() const override;                                  // llama_batch_decode.cpp
  std::vector<Tensor> batch_decode_tables(int64_t n) const override;  // the rotary tables

 private:
  friend struct LlamaLoader;
  using Attend = std::function<Tensor(size_t layer, const Tensor& q, const Tensor& k, const Tensor& v)>;
  // The rotary rows of the tokens: cos/sin (T, dims/2), and the local pair of the sliding
  // layers (Gemma 3) when the config has one. All undefined with learned positions (GPT-2).
  struct Rotary {
    Tensor cos, sin, cos_local, sin_local;
  };
  // The token embeddings of ids (B, T) at positions (T) (learned positions added).
  Tensor embed(const Tensor& ids, const Tensor& positions) const;
  Tensor norm(const Tensor& x, const Tensor& w, const Tensor& b) const;  // the config's norm
  // Whether norm() is an RMSNorm in the compute dtype, which the next product can take in its
  // kernel (rms_norm_linear / rms_norm_quant_linear); Gemma's f32 norms and LayerNorms are not.
  bool norm_fuses() const { return !config_.gemma_norms && !config_.layer_norm; }
  Tensor head(const Tensor& y) const;
  // DeepSeek's multi-head latent attention: q, k, v as (B, H, T, qk_nope + qk_rope) heads,
  // rotated, the values zero-padded to that width.
  std::tuple<Tensor, Tensor, Tensor> mla_heads(const Layer& l, const Tensor& x,
                                               const std::function<Tensor(const Tensor&)>& rotate) const;
  // The decoder blocks over x (B, T, E) with the rotary rows of the positions; attend gets
  // q (B, H, T, D) and k, v (B, KV, T, D) after rotation and returns (B, H, T, D).
  Tensor blocks(Tensor x, const Rotary& rot, const Attend& attend) const;
  // A MoE layer's feed-forward output for h (B, T, hidden), normalized already (llama_moe.cpp).
  Tensor moe_ffn(const Layer& l, const Tensor& h) const;
  // The masks of one sequence's attention: T queries at positions [past, past + T).
  struct SeqMasks {
    int64_t past = 0, T = 0;
    bool windowed = false;  // some query has more keys before it than a sliding layer's window
    Tensor window, causal;  // additive masks where needed (sliding layers; softcapped scores)
  };
  SeqMasks seq_masks(int64_t past, int64_t T) const;
  // Layer li's attention of one sequence: q (B, H, T, D), k and v (B, KV, T, D) written into
  // the cache (if any) at m.past, then attended against every cached position.
  Tensor attend_seq(size_t li, const Tensor& q, Tensor k, Tensor v, KvCache* cache, const SeqMasks& m) const;

  LlamaConfig config_;
  Device device_;
  DType dtype_ = DType::F32;
  QuantActivation quant_activation_ = QuantActivation::F32;
  Weight embedding_, lm_head_;
  Tensor final_norm_, final_norm_b_;
  Tensor position_embedding_;  // (context, hidden): learned positions (GPT-2)
  // cos/sin tables (rows, dims/2) on the device, grown on demand up to the context length
  // (llama_rope.cpp): a config may claim a context of billions of positions.
  std::shared_ptr<RopeTables> rope_;
  // The cos/sin rows of positions [past, past + T) for a sequence of past + T positions.
  Rotary rope_rows(int64_t past, int64_t T) const;
  std::vector<Layer> layers_;
  size_t weight_bytes_ = 0;
};

}  // namespace wick::models
