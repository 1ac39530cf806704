// BERT encoder forward pass, written with wick's public ops only.
#include "wick/models/bert.h"

#include <limits>

#include "layer_count.h"
#include "wick/io.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick::models {

namespace {
// Hugging Face names either "bert.embeddings..." (BertForX checkpoints) or "embeddings...".
Tensor take(const safetensors::File& f, const std::string& name, Device device, DType dtype) {
  const std::string prefixed = "bert." + name;
  const std::string& key = f.contains(name) ? name : prefixed;
  WICK_CHECK(f.contains(key), Format, "bert: checkpoint has no tensor '", name, "'");
  return f.tensor(key).to(dtype).to(device);
}
}  // namespace

BertModel BertModel::load(const std::filesystem::path& dir, Device device, DType dtype) {
  WICK_CHECK(is_float(dtype), DTypeMismatch, "bert: compute dtype must be f32, f16 or bf16, got ", dtype);
  BertModel m;
  m.config_ = BertConfig::from_json_file(dir / "config.json");
  m.device_ = device;
  m.dtype_ = dtype;
  const auto f = safetensors::File::open(dir / "model.safetensors");
  check_layer_count(f, "bert", "num_hidden_layers", m.config_.num_layers, {"encoder.layer.", "bert.encoder.layer."});
  auto w = [&](const std::string& name) { return take(f, name, device, dtype); };
  m.word_emb_ = w("embeddings.word_embeddings.weight");
  m.pos_emb_ = w("embeddings.position_embeddings.weight");
  m.type_emb_ = w("embeddings.token_type_embeddings.weight");
  m.emb_ln_w_ = w("embeddings.LayerNorm.weight");
  m.emb_ln_b_ = w("embeddings.LayerNorm.bias");
  for (int64_t i = 0; i < m.config_.num_layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    Layer l;
    // q, k and v as one product (rows [q; k; v]): x is read once and the GEMM is 3x wider.
    const std::string self = p + "attention.self.";
    l.qkv_w = cat({w(self + "query.weight"), w(self + "key.weight"), w(self + "value.weight")}, 0);
    l.qkv_b = cat({w(self + "query.bias"), w(self + "key.bias"), w(self + "value.bias")}, 0);
    l.o_w = w(p + "attention.output.dense.weight");
    l.o_b = w(p + "attention.output.dense.bias");
    l.ln1_w = w(p + "attention.output.LayerNorm.weight");
    l.ln1_b = w(p + "attention.output.LayerNorm.bias");
    l.ff1_w = w(p + "intermediate.dense.weight");
    l.ff1_b = w(p + "intermediate.dense.bias");
    l.ff2_w = w(p + "output.dense.weight");
    l.ff2_b = w(p + "output.dense.bias");
    l.ln2_w = w(p + "output.LayerNorm.weight");
    l.ln2_b = w(p + "output.LayerNorm.bias");
    m.layers_.push_back(std::move(l));
  }
  return m;
}

Tensor BertModel::forward(const Tensor& ids, const Tensor& attention_mask) const {
  WICK_CHECK(ids.defined() && ids.rank() == 2, ShapeMismatch, "bert: ids must have shape (batch, seq), got ",
             ids.defined() ? ids.shape().to_string() : "undefined");
  const int64_t B = ids.dim(0), T = ids.dim(1), H = config_.hidden_size, nh = config_.num_heads, dh = H / nh;
  WICK_CHECK(T <= config_.max_position_embeddings, InvalidArgument, "bert: sequence length ", T,
             " exceeds max_position_embeddings ", config_.max_position_embeddings);
  const Tensor dev_ids = ids.to(device_);
  // Embeddings: word + position + token type 0.
  Tensor x = embedding(dev_ids, word_emb_) + pos_emb_.narrow(0, 0, T) + type_emb_.narrow(0, 0, 1);
  x = layer_norm(x, emb_ln_w_, emb_ln_b_, config_.layer_norm_eps);

  // Additive mask (B, 1, 1, T): 0 for real tokens, the dtype's lowest value for padding.
  Tensor mask;
  if (attention_mask.defined()) {
    WICK_CHECK(attention_mask.shape() == ids.shape(), ShapeMismatch, "bert: attention_mask ", attention_mask.shape(),
               " does not match ids ", ids.shape());
    const double lowest = dtype_ == DType::F16 ? -65504.0 : -3.0e38;
    Tensor keep = attention_mask.to(device_).to(dtype_);
    mask = affine(keep, -lowest, lowest).reshape({B, 1, 1, T});  // keep*(-lowest) + lowest
  }
  auto heads = [&](const Tensor& t) { return t.reshape({B, T, nh, dh}).permute({0, 2, 1, 3}); };
  for (const Layer& l : layers_) {
    const Tensor qkv = linear(x, l.qkv_w, l.qkv_b);  // (B, T, 3H): views of it, no copies
    const Tensor q = heads(qkv.narrow(2, 0, H)), k = heads(qkv.narrow(2, H, H)), v = heads(qkv.narrow(2, 2 * H, H));
    const Tensor ctx = scaled_dot_product_attention(q, k, v, mask).permute({0, 2, 1, 3}).reshape({B, T, H});
    // The residual adds and the activation are the linears' epilogues, not passes of their own.
    x = layer_norm(linear(ctx, l.o_w, l.o_b, x, {}), l.ln1_w, l.ln1_b, config_.layer_norm_eps);
    const Tensor inner = linear(x, l.ff1_w, l.ff1_b, {}, {.act = config_.activation});
    x = layer_norm(linear(inner, l.ff2_w, l.ff2_b, x, {}), l.ln2_w, l.ln2_b, config_.layer_norm_eps);
  }
  return x;
}

Tensor mean_pool_normalize(const Tensor& hidden, const Tensor& mask) {
  const Tensor h = hidden.to(DType::F32);
  const Tensor m = mask.to(h.device()).to(DType::F32).unsqueeze(-1);    // (B, T, 1)
  const Tensor summed = sum(h * m, {1});                                // (B, H)
  const Tensor count = clamp(sum(m, {1}), Scalar(1e-9), std::nullopt);  // (B, 1)
  const Tensor mean_vec = summed / count;
  const Tensor norm = clamp(sqrt(sum(sqr(mean_vec), {1}, true)), Scalar(1e-12), std::nullopt);
  return mean_vec / norm;
}

}  // namespace wick::models
