// Static-shape decoding for the Llama family (CausalLM::decode_step): token ids and the
// position live on the device, cos/sin are gathered from the tables by position, and the
// masks over the whole cache capacity are updated by index_copy_ at the position, so a
// CUDA graph can record one step and replay it.
//
// Sliding layers use a second mask with `pad` = min(window, capacity) leading entries:
// entry pad + j masks key j. A step at position p unmasks key p (entry pad + p) and masks
// key p - window (entry p: inside the pad while p < window, where it changes nothing).
#include <cmath>

#include "llama_config.h"
#include "wick/error.h"
#include "wick/models/llama.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick::models {

namespace {

// DecodeState::extra: the rope tables the step gathers from (held by the state, so that a
// recorded graph's addresses stay valid whatever later calls grow), and the window mask.
enum Extra : size_t { kCos, kSin, kCosLong, kSinLong, kWindow, kExtras };

bool any_sliding(const LlamaConfig& c) {
  for (const bool s : c.sliding_layers)
    if (s) return true;
  return false;
}

}  // namespace

DecodeState LlamaModel::begin_decode(const KvCache& cache, const Tensor& ids) const {
  WICK_CHECK(ids.defined() && ids.rank() == 2 && ids.dim(1) == 1, ShapeMismatch, kLlamaOp,
             ": decode ids must have shape (batch, 1), got ", ids.defined() ? ids.shape().to_string() : "undefined");
  WICK_CHECK(cache.layers().size() == layers_.size() && cache.length() > 0 && cache.batch() == ids.dim(0),
             InvalidArgument, kLlamaOp,
             ": begin_decode needs a cache filled by forward() with the same batch (cache: ", cache.length(),
             " positions of batch ", cache.batch(), "; ids ", ids.shape(), ")");
  const Tensor& k0 = cache.layers()[0].k;
  WICK_CHECK(k0.device() == device_ && k0.dtype() == dtype_ && k0.dim(1) == config_.n_kv_head, InvalidArgument,
             kLlamaOp, ": the cache belongs to another model, device or dtype");
  const int64_t N = k0.dim(2), L = cache.length();
  WICK_CHECK(L < N, InvalidArgument, kLlamaOp, ": the cache is full (", L, " of ", N, " positions)");
  DecodeState s;
  s.ids = ids.to(DType::I64).to(device_).contiguous().clone();
  s.position = Tensor::from_vector(std::vector<int64_t>{L}, Shape{1}).to(device_);
  s.mask = full(Shape{1, 1, 1, N}, -INFINITY, dtype_, device_);
  s.mask.narrow(3, 0, L).zero_();
  const RopeTables::Rows rope = rope_->at_least(N);
  s.extra.assign(kExtras, Tensor());
  s.extra[kCos] = rope.cos;
  s.extra[kSin] = rope.sin;
  s.extra[kCosLong] = rope.cos_long;
  s.extra[kSinLong] = rope.sin_long;
  if (config_.sliding_window > 0 && any_sliding(config_)) {
    const int64_t W = config_.sliding_window, pad = std::min(W, N);
    Tensor& window = s.extra[kWindow] = full(Shape{1, 1, 1, pad + N}, -INFINITY, dtype_, device_);
    const int64_t first = std::max<int64_t>(0, L - W);  // the keys the last cached query saw
    window.narrow(3, pad + first, L - first).zero_();
  }
  return s;
}

void LlamaModel::decode_step(DecodeState& s, KvCache& cache) const {
  const LlamaConfig& c = config_;
  const int64_t B = s.ids.dim(0), N = s.mask.dim(3), KV = c.n_kv_head, G = c.kv_groups(), D = c.head_dim;
  const Tensor zero = zeros(Shape{1, 1, 1, 1}, dtype_, device_);
  index_copy_(s.mask, 3, s.position, zero);  // a query sees itself
  WICK_CHECK(s.extra.size() == kExtras, InvalidArgument, kLlamaOp,
             ": the decode state does not come from begin_decode");
  Tensor window;
  if (const Tensor& w = s.extra[kWindow]; w.defined()) {
    const int64_t pad = w.dim(3) - N;
    index_copy_(w, 3, s.position + Scalar(pad), zero);
    index_copy_(w, 3, s.position, full(Shape{1, 1, 1, 1}, -INFINITY, dtype_, device_));
    window = w.narrow(3, pad, N);
  }
  const Tensor x = embed(s.ids);  // (B, 1, E)
  Tensor cos = embedding(s.position, s.extra[kCos]), sin = embedding(s.position, s.extra[kSin]);
  if (s.extra[kCosLong].defined()) {  // longrope: the long set once the sequence passes the original context
    const Tensor is_long = ge(s.position, full(Shape{1}, config_.rope.original_context, DType::I64, device_));
    cos = where(is_long, embedding(s.position, s.extra[kCosLong]), cos);
    sin = where(is_long, embedding(s.position, s.extra[kSinLong]), sin);
  }
  const Tensor y = blocks(x, cos, sin, [&](size_t li, const Tensor& q, const Tensor& k, const Tensor& v) {
    KvCache::Layer& l = cache.layers()[li];
    index_copy_(l.k, 2, s.position, k);
    index_copy_(l.v, 2, s.position, v);
    // The G query heads of a group as G rows against its one cached head.
    const Tensor qg = q.reshape({B, KV, G, D});
    const Tensor& mask = c.sliding_layers[li] && window.defined() ? window : s.mask;
    return llama_attention(c, qg, l.k, l.v, mask, false).reshape({B, KV * G, 1, D});
  });
  s.logits = head(y);
  s.ids.copy_(argmax(s.logits, -1).reshape({B, 1}));
  s.position.copy_(s.position + Scalar(int64_t(1)));
}

}  // namespace wick::models
