// The Llama family's forward pass, written with wick's public ops only: one decoder whose
// variants (biases, q/k norms, Gemma's norms and softcaps, sliding windows, fused Phi-3
// projections) are switches of LlamaConfig.
//
// Grouped-query attention: forward() over several positions repeats each key/value head for
// its G query heads (a copy of the keys, as transformers' repeat_kv) so that attention can
// use the causal kernel; one position (a step) instead folds the G query heads of a group
// into G query rows of one head, (B, KV, G, D) against the cache (B, KV, N, D), so no step
// copies the cache. (The engine's decode steps attend through cache_attention instead:
// llama_batch_decode.cpp.)
#include "wick/models/llama.h"

#include <cmath>

#include "llama_config.h"
#include "wick/error.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick::models {

namespace {

// (B, KV, T, D) -> (B, KV * G, T, D), each key/value head repeated for its G query heads.
Tensor repeat_kv(const Tensor& t, int64_t G) {
  if (G == 1) return t;
  const int64_t B = t.dim(0), KV = t.dim(1), T = t.dim(2), D = t.dim(3);
  return t.unsqueeze(2).expand(Shape{B, KV, G, T, D}).reshape({B, KV * G, T, D});
}

// (1, 1, T, Tk) additive mask: query t (position past + t) sees key j when j <= past + t
// and, with a window w > 0, j > past + t - w.
Tensor additive_mask(int64_t past, int64_t T, int64_t window, DType dtype, Device device) {
  const int64_t Tk = past + T;
  std::vector<float> m(size_t(T * Tk), 0.0f);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < Tk; ++j)
      if (j > past + t || (window > 0 && j <= past + t - window)) m[size_t(t * Tk + j)] = -INFINITY;
  return Tensor::from_vector(m, Shape{1, 1, T, Tk}).to(dtype).to(device);
}

}  // namespace

Tensor apply_weight(const LlamaModel::Weight& w, const Tensor& x, const Tensor& bias, DType out_dtype,
                    QuantActivation act, const Tensor& residual, const LinearEpilogue& e) {
  if (!w.quantized()) return linear(x, w.dense, bias, residual, e);
  return quant_linear(x, w.packed, act, bias, residual, e, out_dtype);
}

// softmax(q k^T * scale [softcapped] + mask) v. Softcapping (Gemma 2) needs the scores,
// so that path spells the attention out; the mask then carries causality too.
Tensor llama_attention(const LlamaConfig& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                       bool causal, const Tensor& sinks) {
  if (c.attn_logit_softcap == 0) {
    AttentionOptions o;
    o.causal = causal;
    o.scale = c.attention_scale;
    o.sinks = sinks;
    return scaled_dot_product_attention(q, k, v, mask, o);
  }
  WICK_CHECK(!sinks.defined(), Unsupported, kLlamaOp, ": attention sinks with a logit softcap are not supported");
  WICK_CHECK(mask.defined() || !causal, Internal, kLlamaOp, ": softcapped attention takes causality as a mask");
  const double cap = c.attn_logit_softcap;
  Tensor s = affine(tanh(affine(matmul(q, k.transpose(2, 3)), c.attention_scale / cap, 0.0)), cap, 0.0);
  if (mask.defined()) s = s + mask;
  return matmul(softmax(s), v);
}

CacheAttentionOptions cache_options(const LlamaConfig& c, size_t li, const LlamaModel::Layer& layer) {
  CacheAttentionOptions o;
  o.scale = c.attention_scale;
  o.window = c.sliding_layers[li] ? c.sliding_window : 0;
  o.softcap = c.attn_logit_softcap;
  o.sinks = layer.sinks;
  return o;
}

Tensor LlamaModel::embed(const Tensor& ids, const Tensor& positions) const {
  Tensor x;
  if (!embedding_.quantized()) {
    x = embedding(ids, embedding_.dense).to(dtype_);  // a 16-bit table of an f32 model (llama_load.cpp)
  } else {
    // Gather the packed rows of the ids (device ops, so a CUDA graph can record it) and
    // dequantize just those: the table is never expanded.
    const QuantTensor& w = embedding_.packed;
    const int64_t row_bytes = int64_t(ggml_row_bytes(w.type, w.shape[1], kLlamaOp));
    const Tensor rows = Tensor::from_buffer(w.bytes.view(DType::U8, Shape{w.shape[0], row_bytes}));
    const Tensor picked = embedding(ids.reshape({-1}), rows);
    const QuantTensor q{w.name, w.type, Shape{picked.dim(0), w.shape[1]}, picked.storage()};
    std::vector<int64_t> shape = ids.shape().dims();
    shape.push_back(w.shape[1]);
    x = dequantize(q, dtype_).reshape(shape);
  }
  // GPT-2: each token's learned position row added (positions broadcast over the batch).
  if (config_.learned_positions) return x + embedding(positions.reshape({-1}), position_embedding_);
  // Gemma: the scale in the compute dtype, as transformers rounds it (sqrt(3072) -> 55.5 in bf16).
  return config_.embedding_scale != 1.0 ? x * Scalar(config_.embedding_scale) : x;
}

Tensor LlamaModel::norm(const Tensor& x, const Tensor& w, const Tensor& b) const {
  const LlamaConfig& c = config_;
  if (c.layer_norm) return layer_norm(x, w, b, c.rms_norm_eps);
  return c.gemma_norms ? rms_norm(x.to(DType::F32), w, c.rms_norm_eps).to(dtype_) : rms_norm(x, w, c.rms_norm_eps);
}

Tensor LlamaModel::head(const Tensor& y) const {
  Tensor logits;
  if (lm_head_.quantized() && norm_fuses()) {  // the final norm inside the head's kernel
    logits = rms_norm_quant_linear(y, final_norm_, config_.rms_norm_eps, lm_head_.packed, quant_activation_, {}, {}, {},
                                   DType::F32);
  } else {
    logits = apply_weight(lm_head_, norm(y, final_norm_, final_norm_b_), {}, DType::F32, quant_activation_);
  }
  if (config_.final_logit_softcap > 0) {
    const double cap = config_.final_logit_softcap;
    logits = affine(tanh(affine(logits, 1.0 / cap, 0.0)), cap, 0.0);
  }
  return logits;
}

Tensor LlamaModel::blocks(Tensor x, const Rotary& rot, const Attend& attend) const {
  const LlamaConfig& c = config_;
  const int64_t B = x.dim(0), T = x.dim(1), H = c.n_head, KV = c.n_kv_head, D = c.head_dim;
  const int64_t R = c.rope.dims;
  // (B, heads, T, D) rotated over its first R dims; the rest (partial rotary) passes through.
  // Learned positions (GPT-2, no cos/sin): as it is. cos/sin: the layer's pair.
  Tensor cos, sin;
  auto rotate = [&](const Tensor& t) {
    if (!cos.defined()) return t;
    if (R == D) return rope(t, cos, sin, c.rope.interleaved);
    return cat({rope(t.narrow(3, 0, R), cos, sin, c.rope.interleaved), t.narrow(3, R, D - R)}, 3);
  };
  auto lin = [&](const Weight& w, const Tensor& x, const Tensor& b, const Tensor& residual = {},
                 const LinearEpilogue& e = {}) {
    return apply_weight(w, x, b, dtype_, quant_activation_, residual, e);
  };
  // Without sandwich norms the residual adds go into the epilogues of o and down.
  const bool fused_residual = !c.sandwich_norms;
  // norm then linear; one op for RMSNorms in the compute dtype (Gemma's, computed in f32,
  // and LayerNorms are not), so a decode step normalizes inside the GEMV or the quantized
  // matrix-vector kernel.
  auto norm_lin = [&](const Tensor& t, const Tensor& g, const Tensor& gb, const Weight& w, const Tensor& b,
                      const LinearEpilogue& e) {
    if (!norm_fuses()) return lin(w, norm(t, g, gb), b, {}, e);
    if (w.quantized())
      return rms_norm_quant_linear(t, g, c.rms_norm_eps, w.packed, quant_activation_, b, {}, e, dtype_);
    return rms_norm_linear(t, g, c.rms_norm_eps, w.dense, b, {}, e);
  };
  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    const bool local = rot.cos_local.defined() && c.sliding_layers[li];
    cos = local ? rot.cos_local : rot.cos;
    sin = local ? rot.sin_local : rot.sin;
    Tensor q, k, v;
    if (c.kv_lora_rank > 0) {
      std::tie(q, k, v) = mla_heads(l, x, rotate);
    } else if (l.qkv.present()) {  // the checkpoint's (Phi-3) or fused at load (llama_load.cpp)
      const Tensor qkv = norm_lin(x, l.attn_norm, l.attn_norm_b, l.qkv, l.qkv_b, {});
      v = qkv.narrow(2, (H + KV) * D, KV * D);
      if (!c.qk_norm && R == D) {
        // q and k rotated by one kernel: their heads are adjacent in the product.
        const Tensor qk = rotate(qkv.narrow(2, 0, (H + KV) * D).reshape({B, T, H + KV, D}).permute({0, 2, 1, 3}));
        q = qk.narrow(1, 0, H);
        k = qk.narrow(1, H, KV);
      } else {
        q = qkv.narrow(2, 0, H * D);
        k = qkv.narrow(2, H * D, KV * D);
      }
    } else {
      const Tensor h = norm(x, l.attn_norm, l.attn_norm_b);
      q = lin(l.q, h, l.q_b);
      k = lin(l.k, h, l.k_b);
      v = lin(l.v, h, l.v_b);
    }
    if (q.rank() == 3) {     // not yet split into rotated heads
      if (c.qk_norm_full) {  // OLMoE: over the whole projection
        q = norm(q, l.q_norm, {});
        k = norm(k, l.k_norm, {});
      }
      q = q.reshape({B, T, H, D});
      k = k.reshape({B, T, KV, D});
      if (c.qk_norm && !c.qk_norm_full) {
        q = norm(q, l.q_norm, {});
        k = norm(k, l.k_norm, {});
      }
      q = rotate(q.permute({0, 2, 1, 3}));
      k = rotate(k.permute({0, 2, 1, 3}));
    }
    if (v.rank() == 3) v = v.reshape({B, T, KV, D}).permute({0, 2, 1, 3});
    // MLA's values are v_dim wide, padded to the key's width for attention (mla_heads).
    const int64_t VD = c.kv_lora_rank > 0 ? c.v_dim : D;
    const Tensor ctx = attend(li, q, k, v).narrow(3, 0, VD).permute({0, 2, 1, 3}).reshape({B, T, H * VD});
    if (fused_residual) {
      x = lin(l.o, ctx, l.o_b, x);
    } else {
      x = x + norm(lin(l.o, ctx, l.o_b), l.post_attn_norm, {});
    }
    if (c.moe_layers[li]) {
      const Tensor y = moe_ffn(l, norm(x, l.ffn_norm, l.ffn_norm_b));
      x = x + (fused_residual ? y : norm(y, l.post_ffw_norm, {}));
      continue;
    }
    Tensor mid;
    if (!c.gated_mlp) {  // GPT-2: act(up) in the epilogue
      mid = norm_lin(x, l.ffn_norm, l.ffn_norm_b, l.up, l.up_b, {.act = c.activation});
    } else if (l.gate_up.present()) {  // [gate; up]: act(gate) * up in the epilogue
      mid = norm_lin(x, l.ffn_norm, l.ffn_norm_b, l.gate_up, l.gate_up_b, {.act = c.activation, .glu = true});
    } else {
      const Tensor h2 = norm(x, l.ffn_norm, l.ffn_norm_b);
      mid = activate(lin(l.gate, h2, l.gate_b), c.activation) * lin(l.up, h2, l.up_b);
    }
    if (fused_residual) {
      x = lin(l.down, mid, l.down_b, x);
    } else {
      x = x + norm(lin(l.down, mid, l.down_b), l.post_ffw_norm, {});
    }
  }
  return x;
}

std::tuple<Tensor, Tensor, Tensor> LlamaModel::mla_heads(const Layer& l, const Tensor& x,
                                                         const std::function<Tensor(const Tensor&)>& rotate) const {
  const LlamaConfig& c = config_;
  const int64_t B = x.dim(0), T = x.dim(1), H = c.n_head, N = c.qk_nope_dim, R = c.qk_rope_dim, V = c.v_dim,
                C = c.kv_lora_rank, D = N + R;
  auto lin = [&](const Weight& w, const Tensor& t) { return apply_weight(w, t, {}, dtype_, quant_activation_); };
  const Tensor h = norm(x, l.attn_norm, {});
  const Tensor qf =
      (c.q_lora_rank > 0 ? lin(l.mla_q_b, rms_norm(lin(l.mla_q_a, h), l.mla_q_a_norm, c.rms_norm_eps)) : lin(l.q, h))
          .reshape({B, T, H, D});
  const Tensor kva = lin(l.mla_kv_a, h);  // (B, T, C + R): the latent, then the rope key shared by the heads
  const Tensor kv =
      lin(l.mla_kv_b, rms_norm(kva.narrow(2, 0, C), l.mla_kv_a_norm, c.rms_norm_eps)).reshape({B, T, H, N + V});
  const Tensor k_pe = kva.narrow(2, C, R).reshape({B, T, 1, R}).expand(Shape{B, T, H, R});
  // Each head's rope dims first (checkpoints put them last; any order of a head's dims gives
  // the same scores when q and k share it), so the partial rotary of `rotate` applies.
  const Tensor q = rotate(cat({qf.narrow(3, N, R), qf.narrow(3, 0, N)}, 3).permute({0, 2, 1, 3}));
  const Tensor k = rotate(cat({k_pe, kv.narrow(3, 0, N)}, 3).permute({0, 2, 1, 3}));
  // Values padded with zeros to the key's width: the attention ops take one head dim, and the
  // padded dims of the output (weighted sums of zeros) are cut off again in blocks().
  Tensor v = kv.narrow(3, N, V);
  if (V < D) v = cat({v, zeros(Shape{B, T, H, D - V}, v.dtype(), v.device())}, 3);
  return {q, k, v.permute({0, 2, 1, 3})};
}

LlamaModel::Rotary LlamaModel::rope_rows(int64_t past, int64_t T) const {
  if (!rope_) return {};  // learned positions (GPT-2): no rotary rows
  const RopeTables::Rows r = rope_->at_least(past + T);
  const bool long_rows = r.cos_long.defined() && past + T > config_.rope.original_context;
  const Tensor& c = long_rows ? r.cos_long : r.cos;
  const Tensor& s = long_rows ? r.sin_long : r.sin;
  Rotary rot{c.narrow(0, past, T), s.narrow(0, past, T), {}, {}};
  if (r.cos_local.defined()) {
    rot.cos_local = r.cos_local.narrow(0, past, T);
    rot.sin_local = r.sin_local.narrow(0, past, T);
  }
  return rot;
}

LlamaModel::SeqMasks LlamaModel::seq_masks(int64_t past, int64_t T) const {
  const LlamaConfig& c = config_;
  SeqMasks m{past, T, false, {}, {}};
  const int64_t Tk = past + T;
  // A window only matters once some query has more keys before it than it spans.
  for (size_t i = 0; i < layers_.size(); ++i) m.windowed = m.windowed || (c.sliding_layers[i] && Tk > c.sliding_window);
  if (m.windowed) m.window = additive_mask(past, T, c.sliding_window, dtype_, device_);
  if (c.attn_logit_softcap > 0) m.causal = additive_mask(past, T, 0, dtype_, device_);
  return m;
}

Tensor LlamaModel::attend_seq(size_t li, const Tensor& q, Tensor k, Tensor v, KvCache* cache, const SeqMasks& m) const {
  const LlamaConfig& c = config_;
  const int64_t B = q.dim(0), past = m.past, T = m.T, Tk = past + T;
  if (cache) {
    KvCache::Layer& l = cache->layers()[li];
    l.k.narrow(2, past, T).copy_(k);
    l.v.narrow(2, past, T).copy_(v);
    k = l.k.narrow(2, 0, Tk);
    v = l.v.narrow(2, 0, Tk);
  }
  const bool sliding = m.windowed && c.sliding_layers[li];
  const Tensor& sinks = layers_[li].sinks;
  if (T == 1 && !sinks.defined()) {
    // One query sees every cached key (but those the window drops): the grouped form, so a
    // step does not copy the cache. (Sinks are per query head, so their heads stay apart.)
    const int64_t G = c.kv_groups();
    const Tensor qg = q.reshape({B, c.n_kv_head, G, c.head_dim});
    return llama_attention(c, qg, k, v, sliding ? m.window : Tensor(), false).reshape({B, c.n_head, 1, c.head_dim});
  }
  k = repeat_kv(k, c.kv_groups());
  v = repeat_kv(v, c.kv_groups());
  const Tensor& mask = sliding ? m.window : m.causal;
  return llama_attention(c, q, k, v, mask, !mask.defined(), sinks);
}

int64_t LlamaModel::exact_span(int64_t past) const {
  const RopeConfig& r = config_.rope;
  if (r.scaling == RopeScaling::LongRope && past < r.original_context) return r.original_context - past;
  return CausalLM::exact_span(past);
}

void LlamaModel::reserve_cache(KvCache& cache) const {
  const LlamaConfig& c = config_;
  cache.reserve(kLlamaOp, layers_.size(), 1, c.n_kv_head, cache.resolved_capacity(c.context_length), c.head_dim, dtype_,
                device_);
}

Tensor LlamaModel::forward(const Tensor& ids, KvCache* cache, bool last_only) const {
  WICK_CHECK(!cache || !cache->paged(), Unsupported, kLlamaOp,
             ": a paged cache (KvCache::paged) takes forward_batch, not forward");
  WICK_CHECK(ids.defined() && ids.rank() == 2, ShapeMismatch, kLlamaOp, ": ids must have shape (batch, seq), got ",
             ids.defined() ? ids.shape().to_string() : "undefined");
  const LlamaConfig& c = config_;
  const int64_t B = ids.dim(0), T = ids.dim(1);
  WICK_CHECK(T > 0, InvalidArgument, kLlamaOp, ": ids must hold at least one position, got shape ", ids.shape());
  const int64_t past = cache ? cache->length() : 0;
  WICK_CHECK(past + T <= c.context_length, InvalidArgument, kLlamaOp, ": ", past, " cached + ", T,
             " new positions exceed the context length ", c.context_length);
  if (cache) {
    const int64_t capacity = cache->resolved_capacity(c.context_length);
    WICK_CHECK(past + T <= capacity, InvalidArgument, kLlamaOp, ": ", past, " cached + ", T,
               " new positions exceed the cache capacity ", capacity);
    cache->reserve(kLlamaOp, layers_.size(), B, c.n_kv_head, capacity, c.head_dim, dtype_, device_);
  }
  const SeqMasks masks = seq_masks(past, T);
  const Tensor positions = c.learned_positions ? arange(past, past + T, 1, DType::I64, device_) : Tensor();
  const Tensor x = embed(ids.to(device_), positions);
  Tensor y = blocks(x, rope_rows(past, T), [&](size_t li, const Tensor& q, const Tensor& k, const Tensor& v) {
    return attend_seq(li, q, k, v, cache, masks);
  });
  const int64_t Tk = past + T;
  if (cache) cache->set_length(Tk);
  if (last_only) y = y.narrow(1, T - 1, 1);
  return head(y);
}

}  // namespace wick::models
