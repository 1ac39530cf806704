// KvCache bookkeeping shared by every CausalLM.
#include "wick/error.h"
#include "wick/models/causal_lm.h"
#include "wick/ops.h"

namespace wick::models {

KvCache::KvCache(int64_t capacity) : capacity_(capacity) {
  WICK_CHECK(capacity >= 0, InvalidArgument, "kv cache: capacity must be >= 0, got ", capacity);
}

void KvCache::truncate(int64_t n) {
  WICK_CHECK(n >= 0 && n <= length_, InvalidArgument, "kv cache: truncate to ", n, " positions, but it holds ",
             length_);
  length_ = n;
}

void KvCache::set_length(int64_t n) {
  const int64_t cap = layers_.empty() ? 0 : layers_[0].k.dim(2);
  WICK_CHECK(n >= 0 && n <= cap, InvalidArgument, "kv cache: length ", n, " outside [0, ", cap, "]");
  length_ = n;
}

void KvCache::reserve(std::string_view model, size_t n_layers, int64_t batch, int64_t heads, int64_t capacity,
                      int64_t head_dim, DType dtype, Device device) {
  const Shape want{batch, heads, capacity, head_dim};
  const bool fits = layers_.size() == n_layers && !layers_.empty() && layers_[0].k.shape() == want &&
                    layers_[0].k.dtype() == dtype && layers_[0].k.device() == device;
  if (fits) return;
  WICK_CHECK(length_ == 0, ShapeMismatch, model, ": the cache holds ", length_, " positions of batch ", batch_,
             " from another model, dtype, device or batch size (wanted ", want, " ", dtype, " on ", device,
             "); clear() it first");
  layers_.assign(n_layers, {});
  pool_.reset();  // the new buffers are this cache's own
  pool_slot_ = -1;
  for (auto& l : layers_) {
    // Zeroed, not empty: decode steps attend over the whole capacity with the unwritten
    // positions masked by -inf, and a NaN left in them by earlier tensors would still
    // poison the sums (NaN * 0 is NaN).
    l.k = zeros(want, dtype, device);
    l.v = zeros(want, dtype, device);
  }
  batch_ = batch;
}

std::vector<KvCache> KvCache::pooled(const KvCache& layout, int64_t n) {
  WICK_CHECK(n >= 1, InvalidArgument, "kv cache: a pool needs at least one cache, got ", n);
  WICK_CHECK(!layout.layers_.empty() && layout.batch_ == 1, InvalidArgument,
             "kv cache: the layout of a pool must be a reserved cache of batch 1");
  auto pool = std::make_shared<std::vector<Layer>>(layout.layers_.size());
  for (size_t i = 0; i < pool->size(); ++i) {
    const Tensor& k = layout.layers_[i].k;
    const Shape shape{n + 1, k.dim(1), k.dim(2), k.dim(3)};  // row n: the spare row (causal_lm.h)
    (*pool)[i] = {zeros(shape, k.dtype(), k.device()), zeros(shape, k.dtype(), k.device())};
  }
  std::vector<KvCache> caches(size_t(n), KvCache(layout.capacity_));
  for (int64_t s = 0; s < n; ++s) {
    KvCache& c = caches[size_t(s)];
    c.batch_ = 1;
    c.pool_ = pool;
    c.pool_slot_ = s;
    c.layers_.reserve(pool->size());
    for (const Layer& l : *pool) c.layers_.push_back({l.k.narrow(0, s, 1), l.v.narrow(0, s, 1)});
  }
  return caches;
}

}  // namespace wick::models
