// LlamaModel::load: config, a plan of every tensor the config implies (checked against the
// file: present, right shape, float or packed), the memory check, then the conversion and
// upload of each tensor once.
#include <cmath>

#include "config_json.h"
#include "llama_config.h"
#include "llama_names.h"
#include "llama_weights.h"
#include "matrix_dtype.h"
#include "wick/build_info.h"
#include "wick/error.h"
#include "wick/experts.h"
#include "wick/gguf.h"
#include "wick/memory.h"
#include "wick/models/llama.h"
#include "wick/ops.h"

namespace wick::models {

namespace fs = std::filesystem;

namespace {

// Matrix: a weight matrix (float or packed, maybe quantized at load); Norm, Bias: vectors;
// Table: a float table in the compute dtype (GPT-2's learned positions, gpt-oss's expert
// biases); F32: a vector kept in f32 (gpt-oss's sinks and router bias).
enum class Kind { Matrix, Norm, Bias, Table, F32 };

struct Request {
  std::string name;
  Shape shape;
  Kind kind;
  LlamaModel::Weight* matrix = nullptr;  // Kind::Matrix
  Tensor* vector = nullptr;              // Kind::Norm / Kind::Bias / Kind::Table
  StoredTensor stored;
  // A stack of experts stored one tensor per expert (HF): their names, in order; stored
  // then holds the first until load() stacks them.
  std::vector<std::string> parts;
  bool f32 = false;  // a float matrix kept in f32 whatever the compute dtype (MoE routers)
};

// Rows of a matrix or a stack of matrices (the product of all but the last dim).
int64_t row_count(const Shape& s) { return s.numel() / s[s.rank() - 1]; }

// The checkpoint's own float type on an accelerator (f16 for quantized files); f32 on the CPU.
DType default_dtype(const LlamaConfig& c, const WeightSource& src, Device device) {
  if (device.is_cpu()) return DType::F32;
  if (c.torch_dtype == "bfloat16") return DType::BF16;
  if (c.torch_dtype == "float16") return DType::F16;
  if (c.torch_dtype == "float32") return DType::F32;
  const char* embd = src.gguf_names() ? "token_embd.weight" : "model.embed_tokens.weight";
  if (!src.contains(embd)) return DType::F16;  // the plan names the missing tensor later
  const StoredTensor t = src.get(embd);
  return t.dense.defined() ? t.dense.dtype() : DType::F16;
}

// What an upload can use: the driver's free memory plus what wick's allocator holds cached
// (reserved but not allocated, handed out again before the driver is asked).
size_t free_bytes(Device device) {
  if (device.is_cpu()) return 0;  // weights are mapped, not copied; no meaningful bound
  const MemoryStats m = memory_stats(device);
  const size_t cached = m.reserved_bytes > m.allocated_bytes ? m.reserved_bytes - m.allocated_bytes : 0;
  for (const DeviceInfo& d : list_devices())
    if (d.device == device.str()) return d.free_memory + cached;
  return 0;
}

}  // namespace

struct LlamaLoader {
  LlamaModel& m;
  const WeightSource& src;
  const LlamaLoadOptions& opt;
  std::vector<Request> plan;

  void matrix(std::string name, Shape shape, LlamaModel::Weight& w) {
    plan.push_back({std::move(name), std::move(shape), Kind::Matrix, &w, nullptr, {}, {}, false});
  }
  void vector(std::string name, int64_t n, Kind kind, Tensor& t) {
    plan.push_back({std::move(name), Shape{n}, kind, nullptr, &t, {}, {}, false});
  }
  void table(std::string name, Shape shape, Tensor& t) {
    plan.push_back({std::move(name), std::move(shape), Kind::Table, nullptr, &t, {}, {}, false});
  }

  void make_plan() {
    const LlamaConfig& c = m.config_;
    const bool g = src.gguf_names();
    const int64_t E = c.hidden_size, H = c.n_head, KV = c.n_kv_head, D = c.head_dim, I = c.intermediate_size;
    matrix(std::string(global_name(Global::Embedding, g)), Shape{c.vocab_size, E}, m.embedding_);
    if (c.learned_positions) table("position_embd.weight", Shape{c.context_length, E}, m.position_embedding_);
    vector(std::string(global_name(Global::FinalNorm, g)), E, Kind::Norm, m.final_norm_);
    // A LayerNorm's bias beside its weight ("attn_norm.weight" -> "attn_norm.bias").
    auto norm_bias = [&](const std::string& weight, Tensor& b) {
      if (c.layer_norm) vector(weight.substr(0, weight.size() - 6) + "bias", E, Kind::Bias, b);
    };
    norm_bias(std::string(global_name(Global::FinalNorm, g)), m.final_norm_b_);
    if (!c.tie_embeddings) matrix(std::string(global_name(Global::LmHead, g)), Shape{c.vocab_size, E}, m.lm_head_);
    m.layers_.resize(size_t(c.n_layer));
    for (int64_t i = 0; i < c.n_layer; ++i) {
      LlamaModel::Layer& l = m.layers_[size_t(i)];
      const std::string prefix = layer_prefix(i, g);
      auto name = [&](Part p, const char* suffix) {
        return prefix + std::string(part_name(p, name_style(c), g)) + suffix;
      };
      auto linear = [&](Part p, Shape shape, LlamaModel::Weight& w, Tensor& b, bool bias) {
        const int64_t out = shape[0];
        matrix(name(p, ".weight"), std::move(shape), w);
        if (bias) vector(name(p, ".bias"), out, Kind::Bias, b);
      };
      // A stack of n_expert matrices: one GGUF tensor, or one HF tensor per expert.
      auto experts = [&](Part p, int64_t out, int64_t in, LlamaModel::Weight& w) {
        const Shape shape{c.n_expert, out, in};
        if (g) return matrix(name(p, ".weight"), shape, w);
        Request r{name(p, ".weight"), shape, Kind::Matrix, &w, nullptr, {}, {}, false};
        for (int64_t e = 0; e < c.n_expert; ++e)
          r.parts.push_back(prefix + expert_part_name(p, e, name_style(c), false) + ".weight");
        plan.push_back(std::move(r));
      };
      vector(name(Part::AttnNorm, ".weight"), E, Kind::Norm, l.attn_norm);
      norm_bias(name(Part::AttnNorm, ".weight"), l.attn_norm_b);
      if (c.kv_lora_rank > 0) {
        plan_mla(l, name, g, prefix);
      } else if (c.fused_qkv) {
        linear(Part::Qkv, Shape{(H + 2 * KV) * D, E}, l.qkv, l.qkv_b, c.qkv_bias);
      } else {
        linear(Part::Q, Shape{H * D, E}, l.q, l.q_b, c.qkv_bias);
        linear(Part::K, Shape{KV * D, E}, l.k, l.k_b, c.qkv_bias);
        linear(Part::V, Shape{KV * D, E}, l.v, l.v_b, c.qkv_bias);
      }
      linear(Part::O, Shape{E, H * (c.kv_lora_rank > 0 ? c.v_dim : D)}, l.o, l.o_b, c.o_bias);
      if (c.attn_sinks) vector(name(Part::Sinks, ".weight"), H, Kind::F32, l.sinks);
      if (c.qk_norm) {
        vector(name(Part::QNorm, ".weight"), c.qk_norm_full ? H * D : D, Kind::Norm, l.q_norm);
        vector(name(Part::KNorm, ".weight"), c.qk_norm_full ? KV * D : D, Kind::Norm, l.k_norm);
      }
      vector(name(Part::FfnNorm, ".weight"), E, Kind::Norm, l.ffn_norm);
      norm_bias(name(Part::FfnNorm, ".weight"), l.ffn_norm_b);
      if (c.sandwich_norms) {
        vector(name(Part::PostAttnNorm, ".weight"), E, Kind::Norm, l.post_attn_norm);
        vector(name(Part::PostFfwNorm, ".weight"), E, Kind::Norm, l.post_ffw_norm);
      }
      if (c.moe_layers[size_t(i)]) {
        const int64_t F = c.expert_ffn, S = c.shared_expert_ffn;
        matrix(name(Part::Router, ".weight"), Shape{c.n_expert, E}, l.router);
        plan.back().f32 = true;  // routing decisions in f32 (llama_moe.cpp)
        experts(Part::GateExps, F, E, l.gate_exps);
        experts(Part::UpExps, F, E, l.up_exps);
        experts(Part::DownExps, E, F, l.down_exps);
        if (c.moe_bias) {
          vector(name(Part::Router, ".bias"), c.n_expert, Kind::F32, l.router_b);
          table(name(Part::GateExps, ".bias"), Shape{c.n_expert, F}, l.gate_exps_b);
          table(name(Part::UpExps, ".bias"), Shape{c.n_expert, F}, l.up_exps_b);
          table(name(Part::DownExps, ".bias"), Shape{c.n_expert, E}, l.down_exps_b);
        }
        if (c.moe_select_bias)  // HF: a buffer of the gate without a suffix; GGUF: exp_probs_b.bias
          vector(name(Part::SelectBias, g ? ".bias" : ""), c.n_expert, Kind::F32, l.select_bias);
        if (S > 0) {  // the shared expert in the dense MLP's place
          matrix(name(Part::SharedGate, ".weight"), Shape{S, E}, l.gate);
          matrix(name(Part::SharedUp, ".weight"), Shape{S, E}, l.up);
          matrix(name(Part::SharedDown, ".weight"), Shape{E, S}, l.down);
          if (c.shared_expert_gate) vector(name(Part::SharedExpertGate, ".weight"), E, Kind::Bias, l.shared_gate);
        }
        continue;
      }
      if (!c.gated_mlp) {
        linear(Part::Up, Shape{I, E}, l.up, l.up_b, c.mlp_bias);
      } else if (c.fused_gate_up) {
        linear(Part::GateUp, Shape{2 * I, E}, l.gate_up, l.gate_b, false);
      } else {
        linear(Part::Gate, Shape{I, E}, l.gate, l.gate_b, c.mlp_bias);
        linear(Part::Up, Shape{I, E}, l.up, l.up_b, c.mlp_bias);
      }
      linear(Part::Down, Shape{E, I}, l.down, l.down_b, c.mlp_bias);
    }
  }

  // DeepSeek's multi-head latent attention: q (or its bottleneck), the latent and rope key, and
  // the latent's expansion, which GGUF stores split per head (attn_k_b (H, latent, nope):
  // transposed; attn_v_b (H, v, latent)): those go into l.k and l.v until join_kv_b() rebuilds
  // kv_b's rows [k_h; v_h] per head.
  template <class Name>
  void plan_mla(LlamaModel::Layer& l, const Name& name, bool g, const std::string& prefix) {
    const LlamaConfig& c = m.config_;
    const int64_t E = c.hidden_size, H = c.n_head, C = c.kv_lora_rank, N = c.qk_nope_dim, R = c.qk_rope_dim,
                  V = c.v_dim, Q = c.q_lora_rank;
    if (Q > 0) {
      matrix(name(Part::QA, ".weight"), Shape{Q, E}, l.mla_q_a);
      vector(name(Part::QANorm, ".weight"), Q, Kind::Norm, l.mla_q_a_norm);
      matrix(name(Part::QB, ".weight"), Shape{H * (N + R), Q}, l.mla_q_b);
    } else {
      matrix(name(Part::Q, ".weight"), Shape{H * (N + R), E}, l.q);
    }
    matrix(name(Part::KvA, ".weight"), Shape{C + R, E}, l.mla_kv_a);
    vector(name(Part::KvANorm, ".weight"), C, Kind::Norm, l.mla_kv_a_norm);
    if (!g || src.contains(name(Part::KvB, ".weight"))) {
      matrix(name(Part::KvB, ".weight"), Shape{H * (N + V), C}, l.mla_kv_b);
    } else {
      matrix(prefix + std::string(part_name(Part::KB, NameStyle::Deepseek, true)) + ".weight", Shape{H, C, N}, l.k);
      matrix(prefix + std::string(part_name(Part::VB, NameStyle::Deepseek, true)) + ".weight", Shape{H, V, C}, l.v);
    }
  }
  // kv_b (H (N + V), C) from GGUF's split halves: per head k_h = k_b[h]^T (N, C), then v_h (V, C).
  void join_kv_b() {
    for (LlamaModel::Layer& l : m.layers_) {
      if (!l.k.present() || l.mla_kv_b.present() || m.config_.kv_lora_rank == 0) continue;
      auto dense = [&](const LlamaModel::Weight& w) {
        return w.quantized() ? dequantize(w.packed, m.dtype_) : w.dense;
      };
      const Tensor k = dense(l.k).transpose(1, 2), v = dense(l.v);  // (H, N, C), (H, V, C)
      l.mla_kv_b.dense = cat({k, v.to(k.dtype())}, 1).reshape({-1, m.config_.kv_lora_rank}).contiguous();
      l.k = {};
      l.v = {};
    }
  }

  // Every planned tensor present with the implied shape, before anything is converted.
  size_t check_plan() {
    size_t bytes = 0;
    for (Request& r : plan) {
      if (!r.parts.empty()) {
        check_parts(r);
      } else {
        r.stored = src.get(r.name);
        // A vector stored as a (1, n) matrix (Qwen2-MoE's shared_expert_gate in HF).
        if (r.kind != Kind::Matrix && r.stored.dense.defined() && r.stored.shape() == Shape{1, r.shape[0]})
          r.stored.dense = r.stored.dense.reshape({r.shape[0]});
        WICK_CHECK(r.stored.shape() == r.shape, ShapeMismatch, kLlamaOp, ": tensor '", src.stored_name(r.name),
                   "' has shape ", r.stored.shape(), ", config implies ", r.shape);
      }
      bytes += planned_bytes(r);
    }
    return bytes;
  }

  // Each expert of a stack present with the expert's shape, all float of one dtype.
  void check_parts(Request& r) {
    const Shape one{r.shape[1], r.shape[2]};
    for (const std::string& part : r.parts) {
      const StoredTensor t = src.get(part);
      WICK_CHECK(t.shape() == one, ShapeMismatch, kLlamaOp, ": tensor '", part, "' has shape ", t.shape(),
                 ", config implies ", one);
      WICK_CHECK(t.dense.defined() && (!r.stored.dense.defined() || t.dense.dtype() == r.stored.dense.dtype()), Format,
                 kLlamaOp, ": the experts of '", r.name, "' must share one float dtype ('", part, "')");
      if (!r.stored.dense.defined()) r.stored = t;
    }
  }

  size_t planned_bytes(const Request& r) const {
    if (r.kind != Kind::Matrix) return size_t(r.shape.numel()) * dtype_size(vector_dtype(r.kind));
    if (!r.stored.dense.defined()) return r.stored.packed.bytes.nbytes();
    const int64_t k = r.shape[r.shape.rank() - 1];
    if (const auto q = quant_type_for(opt.quantize, k))
      return ggml_row_bytes(*q, k, kLlamaOp) * size_t(row_count(r.shape));
    return size_t(r.shape.numel()) * dtype_size(r.f32 ? DType::F32 : matrix_dtype(r.stored.dense.dtype()));
  }

  // A float matrix's dtype once loaded (matrix_dtype.h).
  DType matrix_dtype(DType stored) const { return models::matrix_dtype(m.device_, m.dtype_, stored); }

  DType vector_dtype(Kind kind) const {
    return kind == Kind::F32 || (kind == Kind::Norm && m.config_.gemma_norms) ? DType::F32 : m.dtype_;
  }

  void load(Request& r) {
    const Device dev = m.device_;
    if (r.kind != Kind::Matrix) {
      Tensor t = r.stored.dense.defined() ? r.stored.dense : dequantize(r.stored.packed);
      t = t.to(DType::F32);
      // HF Gemma stores w of (1 + w); GGUF stores 1 + w (convert_hf_to_gguf.py adds it).
      if (r.kind == Kind::Norm && m.config_.gemma_norms && !src.gguf_names()) t = t + Scalar(1.0);
      *r.vector = t.to(vector_dtype(r.kind)).to(dev);
      return;
    }
    LlamaModel::Weight& w = *r.matrix;
    if (!r.parts.empty()) {  // one copy of the experts, stacked (E, out, in)
      std::vector<Tensor> each;
      for (const std::string& part : r.parts) each.push_back(src.get(part).dense.unsqueeze(0));
      r.stored.dense = cat(each, 0);
    }
    if (!r.stored.dense.defined()) {
      w.packed = r.stored.packed.to(dev);  // the mapping itself on the CPU
    } else if (r.f32) {
      w.dense = r.stored.dense.to(DType::F32).to(dev);
    } else if (const auto q = quant_type_for(opt.quantize, r.shape[r.shape.rank() - 1])) {
      w.packed = quantize(r.stored.dense.contiguous(), *q, r.name).to(dev);  // GPT-2's are transposed views
    } else {
      w.dense = r.stored.dense.to(matrix_dtype(r.stored.dense.dtype())).to(dev);  // zero-copy on the CPU
    }
  }

  // q, k, v as one (H + 2 KV) D x E matrix and gate, up as one [gate; up]: a decode step
  // then reads x once per group and launches one kernel for each (linear's GEMV; the gate
  // goes into its epilogue). Packed matrices are joined row-wise when they share a type
  // (Q4_K_M files mix q4_K and q6_K: those stay apart). Only on CUDA: on the CPU the weights
  // stay zero-copy views of the file mapping, and BLAS gains little from the joined calls.
  static bool join(std::initializer_list<LlamaModel::Weight*> parts, std::initializer_list<Tensor*> biases,
                   LlamaModel::Weight& into, Tensor& into_bias) {
    const LlamaModel::Weight& first = **parts.begin();
    for (const LlamaModel::Weight* p : parts)
      if (!p->present() || p->quantized() != first.quantized() ||
          (p->quantized() && (p->packed.type != first.packed.type || p->packed.shape[1] != first.packed.shape[1])))
        return false;
    if (!first.quantized()) {
      std::vector<Tensor> ts;
      for (const LlamaModel::Weight* p : parts) ts.push_back(p->dense);
      into.dense = cat(ts, 0);
    } else {
      std::vector<Tensor> bytes;
      int64_t rows = 0;
      for (const LlamaModel::Weight* p : parts) {
        bytes.push_back(Tensor::from_buffer(p->packed.bytes.view(DType::U8, Shape{int64_t(p->packed.bytes.nbytes())})));
        rows += p->packed.shape[0];
      }
      const Tensor joined = cat(bytes, 0);
      into.packed =
          QuantTensor{first.packed.name, first.packed.type, Shape{rows, first.packed.shape[1]}, joined.storage()};
    }
    if ((*biases.begin())->defined()) {
      std::vector<Tensor> bs;
      for (Tensor* b : biases) bs.push_back(*b);
      into_bias = cat(bs, 0);
    }
    for (LlamaModel::Weight* p : parts) *p = {};
    for (Tensor* b : biases) *b = {};
    return true;
  }
  // The experts' gate and up stacks (E, F, K) as one (E, 2F, K) of [gate_e; up_e] per expert,
  // so that a MoE layer multiplies both in one mul_mat_id with a glu epilogue. Packed stacks
  // are joined expert by expert (bytes (E, F * row) side by side) when they share a type.
  static void join_experts(LlamaModel::Weight& gate, LlamaModel::Weight& up, LlamaModel::Weight& into) {
    if (!gate.present() || gate.quantized() != up.quantized()) return;
    if (!gate.quantized()) {
      into.dense = cat({gate.dense, up.dense}, 1);
    } else {
      if (gate.packed.type != up.packed.type || gate.packed.shape != up.packed.shape) return;
      into.packed = wick::join_experts(gate.packed, up.packed);
    }
    gate = {};
    up = {};
  }
  void fuse_projections() {
    for (LlamaModel::Layer& l : m.layers_) {
      if (!l.qkv.present()) join({&l.q, &l.k, &l.v}, {&l.q_b, &l.k_b, &l.v_b}, l.qkv, l.qkv_b);
      if (!l.gate_up.present()) join({&l.gate, &l.up}, {&l.gate_b, &l.up_b}, l.gate_up, l.gate_up_b);
      join_experts(l.gate_exps, l.up_exps, l.gate_up_exps);
    }
  }
  void run() {
    const int64_t layers = src.layer_count();
    WICK_CHECK(layers == m.config_.n_layer, Format, kLlamaOp, ": the config has ", m.config_.n_layer,
               " layers but the checkpoint holds ", layers);
    make_plan();
    const size_t bytes = check_plan();
    const size_t rope_bytes = m.config_.learned_positions ? 0 : RopeTables::initial_bytes(m.config_, m.dtype_);
    check_fits(bytes + rope_bytes, free_bytes(m.device_), m.device_);
    for (size_t i = 0; i < plan.size(); ++i) {
      load(plan[i]);
      plan[i].stored = {};  // drop the view: the mapping stays alive only where it is used
      if (opt.on_tensor) opt.on_tensor(i + 1, plan.size());
    }
    if (m.config_.tie_embeddings) m.lm_head_ = m.embedding_;
    join_kv_b();
    if (m.device_.is_cuda()) fuse_projections();
    m.weight_bytes_ = bytes;
    if (!m.config_.learned_positions) m.rope_ = std::make_shared<RopeTables>(m.config_, m.dtype_, m.device_);
  }
};

LlamaModel LlamaModel::load(const fs::path& path, const LlamaLoadOptions& opt) {
  if (opt.dtype)
    WICK_CHECK(*opt.dtype == DType::F32 || *opt.dtype == DType::F16 || *opt.dtype == DType::BF16, DTypeMismatch,
               kLlamaOp, ": compute dtype must be f32, f16 or bf16, got ", *opt.dtype);
  if (opt.quantize) {
    const GgmlType q = *opt.quantize;
    WICK_CHECK(q == GgmlType::Q8_0 || q == GgmlType::Q4_0 || q == GgmlType::Q4_K || q == GgmlType::Q6_K,
               InvalidArgument, kLlamaOp, ": cannot quantize to ", ggml_type_name(q), " (q8_0, q4_0, q4_K, q6_K)");
  }
  LlamaModel m;
  std::unique_ptr<WeightSource> src;
  if (fs::is_directory(path)) {
    m.config_ = LlamaConfig::from_hf_json_file(path / "config.json");
    if (const fs::path g = path / "generation_config.json"; fs::exists(g))
      merge_generation_config(m.config_, read_config_text(g, kLlamaOp), g.string());
    if (m.config_.attn_sinks) {
      src = std::make_unique<GptOssFolder>(path);
    } else if (m.config_.arch == "gpt2") {
      src = std::make_unique<Gpt2Folder>(path);
      // As GPT-2 checkpoints are read: a stored lm_head.weight is the head, else wte is.
      if (src->contains("output.weight")) m.config_.tie_embeddings = false;
    } else {
      src = std::make_unique<SafetensorsFolder>(path);
    }
  } else {
    WICK_CHECK(fs::exists(path), Io, kLlamaOp, ": '", path.string(), "' does not exist");
    auto file = std::make_shared<const gguf::File>(gguf::File::open(path));
    m.config_ = LlamaConfig::from_gguf(*file);
    src = std::make_unique<GgufSource>(file);
  }
  m.device_ = opt.device;
  m.quant_activation_ = opt.quant_activation;
  m.dtype_ = opt.dtype.value_or(default_dtype(m.config_, *src, opt.device));
  LlamaLoader{m, *src, opt, {}}.run();
  return m;
}

}  // namespace wick::models
