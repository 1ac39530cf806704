// KvCache bookkeeping shared by every CausalLM.
#include "wick/error.h"
#include "wick/models/causal_lm.h"
#include "wick/ops.h"

namespace wick::models {

// A paged cache's blocks; they go back to the pool with the last copy of the cache.
struct KvCache::Table {
  std::shared_ptr<KvBlocks> shared;
  std::vector<int32_t> ids;
  Table(std::shared_ptr<KvBlocks> s) : shared(std::move(s)) {}
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
  ~Table() { release(); }
  void release() {
    if (!ids.empty()) shared->pool.release(ids);
    ids.clear();
  }
};

KvCache::KvCache(int64_t capacity) : capacity_(capacity) {
  WICK_CHECK(capacity >= 0, InvalidArgument, "kv cache: capacity must be >= 0, got ", capacity);
}

void KvCache::clear() {
  length_ = 0;
  if (table_) table_->release();
}

void KvCache::truncate(int64_t n) {
  WICK_CHECK(n >= 0 && n <= length_, InvalidArgument, "kv cache: truncate to ", n, " positions, but it holds ",
             length_);
  if (table_ && n == 0) {
    clear();
    return;
  }
  if (table_ && n < length_) {
    // The dropped positions are written again later: their blocks must be this cache's alone
    // and unpublished (a speculative step's refused drafts always are). Positions of a shared
    // or published block stay as they are; the cache keeps its blocks for what comes next.
    const BlockPool& pool = block_pool();
    const int64_t N = pool.block_size();
    for (int64_t b = n / N; b <= (length_ - 1) / N; ++b) {
      const int32_t id = table_->ids[size_t(b)];
      WICK_CHECK(pool.ref_count(id) == 1 && !pool.cached(id), Unsupported, "kv cache: a paged cache cannot keep ", n,
                 " of its ", length_, " positions: block ", b, " is shared or in the prefix cache; clear() it");
    }
  }
  length_ = n;
}

int64_t KvCache::positions_held() const {
  return table_ ? int64_t(table_->ids.size()) * block_size() : layers_.empty() ? 0 : layers_[0].k.dim(2);
}

void KvCache::set_length(int64_t n) {
  const int64_t cap = positions_held();
  WICK_CHECK(n >= 0 && n <= cap, InvalidArgument, "kv cache: length ", n, " outside [0, ", cap, "]");
  length_ = n;
}

void KvCache::reserve(std::string_view model, size_t n_layers, int64_t batch, int64_t heads, int64_t capacity,
                      int64_t head_dim, DType dtype, Device device) {
  if (table_) {
    // The pool's buffers are the cache's; they must be the model's.
    const Tensor& k = (*table_->shared->layers)[0].k;
    WICK_CHECK(table_->shared->layers->size() == n_layers && batch == 1 && k.dim(1) == heads && k.dim(3) == head_dim &&
                   k.dtype() == dtype && k.device() == device,
               ShapeMismatch, model, ": the paged cache's blocks ", k.shape(), " ", k.dtype(), " on ", k.device(),
               " x ", table_->shared->layers->size(), " layers belong to another model, dtype or device");
    return;
  }
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

std::vector<KvCache> KvCache::paged(const KvCache& layout, int64_t n, int64_t capacity, int64_t num_blocks,
                                    int64_t block_size) {
  WICK_CHECK(n >= 1, InvalidArgument, "kv cache: a pool needs at least one cache, got ", n);
  WICK_CHECK(capacity >= 0, InvalidArgument, "kv cache: capacity must be >= 0, got ", capacity);
  WICK_CHECK(!layout.layers_.empty() && layout.batch_ == 1 && !layout.table_, InvalidArgument,
             "kv cache: the layout of a paged pool must be a reserved cache of batch 1");
  auto shared = std::make_shared<KvBlocks>(KvBlocks{nullptr, BlockPool(num_blocks, block_size)});
  auto layers = std::make_shared<std::vector<Layer>>(layout.layers_.size());
  for (size_t i = 0; i < layers->size(); ++i) {
    const Tensor& k = layout.layers_[i].k;
    // Block num_blocks: the spare (causal_lm.h). Zeroed: a padding lane reads it.
    const Shape shape{num_blocks + 1, k.dim(1), block_size, k.dim(3)};
    (*layers)[i] = {zeros(shape, k.dtype(), k.device()), zeros(shape, k.dtype(), k.device())};
  }
  shared->layers = layers;
  std::vector<KvCache> caches(size_t(n), KvCache{capacity});
  for (KvCache& c : caches) {
    c.batch_ = 1;
    c.pool_ = layers;
    c.table_ = std::make_shared<Table>(shared);
  }
  return caches;
}

BlockPool& KvCache::block_pool() const {
  WICK_CHECK(table_ != nullptr, InvalidArgument, "kv cache: not a paged cache (KvCache::paged)");
  return table_->shared->pool;
}

std::span<const int32_t> KvCache::blocks() const {
  WICK_CHECK(table_ != nullptr, InvalidArgument, "kv cache: not a paged cache (KvCache::paged)");
  return table_->ids;
}

int64_t KvCache::block_size() const { return block_pool().block_size(); }

bool KvCache::ensure_positions(int64_t n) {
  BlockPool& pool = block_pool();
  WICK_CHECK(n >= 0 && (capacity_ == 0 || n <= capacity_), InvalidArgument, "kv cache: ", n,
             " positions exceed the capacity ", capacity_);
  const int64_t want = (n + pool.block_size() - 1) / pool.block_size(), have = int64_t(table_->ids.size());
  if (want <= have) return true;
  std::optional<std::vector<int32_t>> more = pool.allocate(want - have);
  if (!more) return false;
  table_->ids.insert(table_->ids.end(), more->begin(), more->end());
  return true;
}

void KvCache::adopt(std::vector<int32_t> blocks, int64_t length) {
  const BlockPool& pool = block_pool();
  WICK_CHECK(table_->ids.empty() && length_ == 0, InvalidArgument, "kv cache: adopt() needs an empty paged cache");
  WICK_CHECK(length >= 0 && length <= int64_t(blocks.size()) * pool.block_size(), InvalidArgument, "kv cache: ", length,
             " positions do not fit ", blocks.size(), " blocks of ", pool.block_size());
  table_->ids = std::move(blocks);
  length_ = length;
}

}  // namespace wick::models
