// BatchDecoder (wick/models/batch_decoder.h): a recorded batched decode step per lane count.
#include "wick/models/batch_decoder.h"

#include <algorithm>

#include "wick/error.h"

namespace wick::models {

namespace {

// The pool's slots or blocks (its rows but the spare one): a bound on its sequences.
int64_t pool_slots(const std::vector<KvCache::Layer>& pool) { return pool[0].k.dim(0) - 1; }

}  // namespace

BatchDecoder::BatchDecoder(const CausalLM& model, bool cuda_graphs)
    : model_(model), graphs_(cuda_graphs && model.device().is_cuda()) {}

int64_t BatchDecoder::lanes_for(int64_t n, int64_t slots) const {
  if (!graphs_) return n;  // nothing is recorded: no padding needed
  // A recording per size, so few sizes: every padding lane costs a little of each product
  // (they read the weights once for all lanes) and nearly nothing of attention.
  int64_t lanes = 1;
  if (n <= 8) {
    while (lanes < n) lanes *= 2;
  } else {
    lanes = n <= 64 ? (n + 7) / 8 * 8 : (n + 31) / 32 * 32;
  }
  return std::min(lanes, std::max(slots, n));
}

bool BatchDecoder::takes(std::span<const BatchSequence> seqs) const {
  if (!model_.batch_decode_supported() || seqs.empty()) return false;
  const KvCache* first = seqs[0].cache;
  if (!first || !first->pool()) return false;
  const std::vector<KvCache::Layer>* pool = first->pool();
  if (pool_ && pool != pool_.get()) return false;
  if (int64_t(seqs.size()) > pool_slots(*pool)) return false;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const KvCache* c = seqs[i].cache;
    if (!c || c->pool() != pool || seqs[i].tokens.size() != 1 || c->length() >= c->positions_held()) return false;
    for (size_t j = 0; j < i; ++j)
      if (seqs[j].cache == c) return false;
  }
  return true;
}

BatchDecoder::Recorded& BatchDecoder::recording(const KvCache& pooled_cache, int64_t lanes) {
  WICK_CHECK(pooled_cache.pool(), InvalidArgument,
             "batch decoder: the cache is not a slot of a pool (KvCache::pooled)");
  WICK_CHECK(!pool_ || pooled_cache.pool() == pool_.get(), InvalidArgument,
             "batch decoder: the cache belongs to another pool than the decoder's earlier steps");
  if (auto it = steps_.find(lanes); it != steps_.end()) return it->second;
  Recorded r;
  r.state = model_.begin_batch_decode(pooled_cache, lanes);
  if (graphs_ && model_.graph_recordable(lanes)) {
    // Recorded, not run: the first replay computes the first step.
    r.graph = CudaGraph::capture(model_.device(), [&] { model_.decode_batch_step(r.state); });
  }
  pool_ = pooled_cache.shared_pool();
  return steps_.emplace(lanes, std::move(r)).first->second;
}

void BatchDecoder::prepare(const KvCache& pooled_cache, int64_t max_lanes) {
  if (!graphs_ || !model_.batch_decode_supported()) return;
  WICK_CHECK(pooled_cache.pool(), InvalidArgument,
             "batch decoder: the cache is not a slot of a pool (KvCache::pooled)");
  const int64_t slots = pool_slots(*pooled_cache.pool());
  max_lanes = std::min(max_lanes, slots);
  for (int64_t n = 1; n <= max_lanes;) {
    const int64_t lanes = lanes_for(n, slots);
    recording(pooled_cache, lanes);
    n = lanes + 1;
  }
}

Tensor BatchDecoder::step(std::span<const BatchSequence> seqs) {
  WICK_CHECK(!seqs.empty() && seqs[0].cache, InvalidArgument, "batch decoder: a step needs at least one sequence");
  WICK_CHECK(takes(seqs), InvalidArgument,
             "batch decoder: the step takes 1 to P sequences of one token each, distinct caches of one pool "
             "(KvCache::pooled or paged, the pool of earlier steps) with a position left (in their blocks)");
  const auto n = int64_t(seqs.size());
  Recorded& r = recording(*seqs[0].cache, lanes_for(n, pool_slots(*seqs[0].cache->pool())));
  model_.set_batch_inputs(r.state, seqs);
  if (r.graph.defined())
    r.graph.replay();
  else
    model_.decode_batch_step(r.state);
  // A view, not a copy (a vocabulary-sized copy per token): the next replay rewrites it.
  Tensor logits = r.state.logits.narrow(0, 0, n);
  for (const BatchSequence& s : seqs) s.cache->set_length(s.cache->length() + 1);
  return logits;
}

}  // namespace wick::models
