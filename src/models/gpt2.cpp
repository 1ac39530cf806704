// GPT-2 forward pass with a growing KV cache, written with wick's public ops only.
//
// GPT-2's Conv1D stores weights as (in, out): y = x @ W + b. linear() takes (out, in) and
// multiplies by its transpose, so linear(x, W.t(), b) is x @ W + b with W.t() a view: BLAS
// gets a transpose flag, no weight is copied, and the bias is added in place.
#include "wick/models/gpt2.h"

#include <algorithm>
#include <cmath>

#include "gpt2_weights.h"
#include "matrix_dtype.h"
#include "wick/io.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick::models {

using gpt2_weights::take;

Gpt2Model Gpt2Model::load(const std::filesystem::path& dir, Device device, DType dtype,
                          const std::function<void(size_t, size_t)>& on_tensor) {
  WICK_CHECK(is_float(dtype), DTypeMismatch, "gpt2: compute dtype must be f32, f16 or bf16, got ", dtype);
  Gpt2Model m;
  m.config_ = Gpt2Config::from_json_file(dir / "config.json");
  m.device_ = device;
  m.dtype_ = dtype;
  const Gpt2Config& c = m.config_;
  const int64_t E = c.n_embd, I = c.inner_size();
  const auto f = safetensors::File::open(dir / "model.safetensors");
  gpt2_weights::check_layer_count(f, c);
  const size_t total = 4 + 12 * size_t(c.n_layer) + (f.contains("lm_head.weight") ? 1 : 0);
  size_t done = 0;
  auto w = [&](const std::string& name, Shape shape) {
    Tensor t = take(f, name, shape, device, dtype);
    if (on_tensor) on_tensor(++done, total);
    return t;
  };
  // A matrix in the dtype matrix_dtype.h picks: an f32 model on the CPU keeps 16-bit ones
  // as stored (the embedding's gathered rows are promoted by the add of the position
  // embedding).
  auto mat = [&](const std::string& name, Shape shape) {
    const Tensor stored = gpt2_weights::checked(f, name, shape);
    Tensor t = stored.to(matrix_dtype(device, dtype, stored.dtype())).to(device);
    if (on_tensor) on_tensor(++done, total);
    return t;
  };
  m.wte_ = mat("wte.weight", Shape{c.vocab_size, E});
  m.wpe_ = w("wpe.weight", Shape{c.n_positions, E});
  m.ln_f_w_ = w("ln_f.weight", Shape{E});
  m.ln_f_b_ = w("ln_f.bias", Shape{E});
  // save_pretrained drops the tied lm_head.weight; older exports keep a copy of wte.
  m.lm_head_ = f.contains("lm_head.weight") ? mat("lm_head.weight", Shape{c.vocab_size, E}) : m.wte_;
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    Layer l;
    l.ln1_w = w(p + "ln_1.weight", Shape{E});
    l.ln1_b = w(p + "ln_1.bias", Shape{E});
    // Stored (in, out); linear() takes (out, in). On the CPU the transposed view (BLAS takes
    // it with a transpose flag, and the weights stay in the file mapping); on CUDA the
    // matrix is transposed once at load, because the decode step's GEMV (linear's one-kernel
    // path) reads rows of (out, in) with 16-byte loads. So are 16-bit matrices on the CPU:
    // its f16/bf16 kernels stream rows over K (cpu_gemm_half.cpp; GPT-2 f16 prefill 0.63x -> 0.89x
    // llama.cpp in one measurement, docs/perf.md).
    auto out_in = [&](Tensor t) {
      const bool half_rows = t.dtype() == DType::F16 || t.dtype() == DType::BF16;
      return device.is_cuda() || half_rows ? t.t().contiguous() : t.t();
    };
    l.attn_w = out_in(mat(p + "attn.c_attn.weight", Shape{E, 3 * E}));
    l.attn_b = w(p + "attn.c_attn.bias", Shape{3 * E});
    l.attn_proj_w = out_in(mat(p + "attn.c_proj.weight", Shape{E, E}));
    l.attn_proj_b = w(p + "attn.c_proj.bias", Shape{E});
    l.ln2_w = w(p + "ln_2.weight", Shape{E});
    l.ln2_b = w(p + "ln_2.bias", Shape{E});
    l.fc_w = out_in(mat(p + "mlp.c_fc.weight", Shape{E, I}));
    l.fc_b = w(p + "mlp.c_fc.bias", Shape{I});
    l.mlp_proj_w = out_in(mat(p + "mlp.c_proj.weight", Shape{I, E}));
    l.mlp_proj_b = w(p + "mlp.c_proj.bias", Shape{E});
    m.layers_.push_back(std::move(l));
  }
  return m;
}

Tensor Gpt2Model::forward(const Tensor& ids, KvCache* cache, bool last_only) const {
  WICK_CHECK(!cache || !cache->paged(), Unsupported,
             "gpt2: a paged cache (KvCache::paged) takes forward_batch, not forward");
  WICK_CHECK(ids.defined() && ids.rank() == 2, ShapeMismatch, "gpt2: ids must have shape (batch, seq), got ",
             ids.defined() ? ids.shape().to_string() : "undefined");
  const int64_t B = ids.dim(0), T = ids.dim(1), H = config_.n_head, Dh = config_.head_dim();
  WICK_CHECK(T > 0, InvalidArgument, "gpt2: ids must hold at least one position, got shape ", ids.shape());
  const int64_t past = cache ? cache->length() : 0;
  WICK_CHECK(past + T <= config_.n_positions, InvalidArgument, "gpt2: ", past, " cached + ", T,
             " new positions exceed n_positions ", config_.n_positions);
  if (cache) {
    const int64_t capacity = cache->resolved_capacity(config_.n_positions);
    WICK_CHECK(past + T <= capacity, InvalidArgument, "gpt2: ", past, " cached + ", T,
               " new positions exceed the cache capacity ", capacity);
    cache->reserve("gpt2", size_t(config_.n_layer), B, H, capacity, Dh, dtype_, device_);
  }

  const Tensor x = embedding(ids.to(device_), wte_) + wpe_.narrow(0, past, T);  // (B, T, E)
  Tensor y = blocks(x, [&](size_t li, const Tensor& q, const Tensor& k, const Tensor& v) {
    return attend_seq(li, q, k, v, cache, past);
  });
  if (cache) cache->set_length(past + T);
  if (last_only) y = y.narrow(1, T - 1, 1);
  return head(y);
}

Tensor Gpt2Model::attend_seq(size_t li, const Tensor& q, Tensor k, Tensor v, KvCache* cache, int64_t past) {
  const int64_t T = q.dim(2);
  if (cache) {
    // Write the new positions into the preallocated buffers; attend over all of them.
    KvCache::Layer& c = cache->layers()[li];
    c.k.narrow(2, past, T).copy_(k);
    c.v.narrow(2, past, T).copy_(v);
    k = c.k.narrow(2, 0, past + T);
    v = c.v.narrow(2, 0, past + T);
  }
  AttentionOptions opt;
  opt.causal = true;  // queries aligned to the end of the keys: correct with a cache too
  return scaled_dot_product_attention(q, k, v, {}, opt);
}

Tensor Gpt2Model::head(const Tensor& y) const {
  return linear(layer_norm(y, ln_f_w_, ln_f_b_, config_.layer_norm_epsilon), lm_head_);  // y @ wte^T when tied
}

void Gpt2Model::reserve_cache(KvCache& cache) const {
  cache.reserve("gpt2", size_t(config_.n_layer), 1, config_.n_head, cache.resolved_capacity(config_.n_positions),
                config_.head_dim(), dtype_, device_);
}

Tensor Gpt2Model::blocks(Tensor x, const std::function<Tensor(size_t, const Tensor&, Tensor, Tensor)>& attend) const {
  const int64_t B = x.dim(0), T = x.dim(1), E = config_.n_embd, H = config_.n_head, Dh = config_.head_dim();
  auto heads = [&](const Tensor& t) { return t.reshape({B, T, H, Dh}).permute({0, 2, 1, 3}); };
  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    const Tensor h = layer_norm(x, l.ln1_w, l.ln1_b, config_.layer_norm_epsilon);
    const Tensor qkv = linear(h, l.attn_w, l.attn_b);  // (B, T, 3E)
    const Tensor ctx =
        attend(li, heads(qkv.narrow(2, 0, E)), heads(qkv.narrow(2, E, E)), heads(qkv.narrow(2, 2 * E, E)))
            .permute({0, 2, 1, 3})
            .reshape({B, T, E});
    x = linear(ctx, l.attn_proj_w, l.attn_proj_b, x, {});  // + x in the epilogue
    const Tensor h2 = layer_norm(x, l.ln2_w, l.ln2_b, config_.layer_norm_epsilon);
    const Tensor mid = linear(h2, l.fc_w, l.fc_b, {}, {.act = config_.activation});
    x = linear(mid, l.mlp_proj_w, l.mlp_proj_b, x, {});
  }
  return x;
}

}  // namespace wick::models
