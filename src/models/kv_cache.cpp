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
  for (auto& l : layers_) {
    // Zeroed, not empty: decode steps attend over the whole capacity with the unwritten
    // positions masked by -inf, and a NaN left in them by earlier tensors would still
    // poison the sums (NaN * 0 is NaN).
    l.k = zeros(want, dtype, device);
    l.v = zeros(want, dtype, device);
  }
  batch_ = batch;
}

}  // namespace wick::models
