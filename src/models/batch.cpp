// forward_batch's shared bookkeeping (batch.h) and CausalLM's defaults for models without a
// batched forward of their own.
#include "batch.h"

#include <algorithm>

#include "wick/error.h"
#include "wick/nn.h"

namespace wick::models {

namespace batch {

Plan plan(std::string_view model, std::span<const BatchSequence> seqs, int64_t context, Device device,
          const std::function<void(KvCache&, int64_t capacity)>& reserve) {
  WICK_CHECK(!seqs.empty(), InvalidArgument, model, ": forward_batch needs at least one sequence");
  Plan p;
  const size_t n = seqs.size();
  p.past.resize(n);
  p.count.resize(n);
  p.offset.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const BatchSequence& s = seqs[i];
    WICK_CHECK(s.cache != nullptr, InvalidArgument, model, ": batch sequence ", i, " has no cache");
    WICK_CHECK(!s.tokens.empty(), InvalidArgument, model, ": batch sequence ", i, " has no tokens");
    for (size_t j = 0; j < i; ++j)
      WICK_CHECK(seqs[j].cache != s.cache, InvalidArgument, model, ": batch sequences ", j, " and ", i,
                 " share a cache");
    WICK_CHECK(s.cache->length() == 0 || s.cache->batch() == 1, InvalidArgument, model, ": batch sequence ", i,
               "'s cache holds a batch of ", s.cache->batch(), ", not 1");
    const int64_t past = s.cache->length(), T = int64_t(s.tokens.size());
    const int64_t capacity = s.cache->resolved_capacity(context);
    WICK_CHECK(T <= capacity - past, InvalidArgument, model, ": batch sequence ", i, ": ", past, " cached + ", T,
               " new positions exceed the cache capacity ", capacity, " (context ", context, ")");
    if (s.cache->paged()) {
      const int64_t held = int64_t(s.cache->blocks().size()) * s.cache->block_size();
      WICK_CHECK(past + T <= held, InvalidArgument, model, ": batch sequence ", i, ": its paged cache has blocks for ",
                 held, " positions, the batch needs ", past + T, " (KvCache::ensure_positions first)");
    }
    p.past[i] = past;
    p.count[i] = T;
    p.offset[i] = p.total;
    p.total += T;
  }
  std::vector<int64_t> ids, positions, last;
  ids.reserve(size_t(p.total));
  positions.reserve(size_t(p.total));
  for (size_t i = 0; i < n; ++i) {
    for (size_t t = 0; t < seqs[i].tokens.size(); ++t) {
      ids.push_back(seqs[i].tokens[t]);
      positions.push_back(p.past[i] + int64_t(t));
    }
    last.push_back(p.offset[i] + p.count[i] - 1);
  }
  // The buffers only after every check: a rejected batch leaves the caches as they were.
  for (size_t i = 0; i < n; ++i) reserve(*seqs[i].cache, seqs[i].cache->resolved_capacity(context));
  p.ids = Tensor::from_vector(ids, Shape{1, p.total}).to(device);
  p.positions = Tensor::from_vector(positions, Shape{1, p.total}).to(device);
  p.last = Tensor::from_vector(last, Shape{int64_t(n)}).to(device);
  p.paged.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const KvCache& kv = *seqs[i].cache;
    if (!kv.paged()) continue;
    const std::span<const int32_t> blocks = kv.blocks();
    const int64_t N = kv.block_size(), end = p.past[i] + p.count[i];
    const std::vector<int64_t> table(blocks.begin(), blocks.end());
    std::vector<int64_t> pos(size_t(p.count[i]));
    for (int64_t t = 0; t < p.count[i]; ++t) pos[size_t(t)] = p.past[i] + t;
    Paged& g = p.paged[i];
    const Tensor row = Tensor::from_vector(table, Shape{1, int64_t(table.size())}).to(device);
    g.table = row.expand(Shape{p.count[i], int64_t(table.size())});
    g.positions = Tensor::from_vector(pos).to(device);
    g.used = row.reshape({-1}).narrow(0, 0, (end + N - 1) / N);
  }
  return p;
}

std::pair<Tensor, Tensor> paged_kv(const Plan& p, size_t i, const KvCache& cache, size_t li, const Tensor& k,
                                   const Tensor& v) {
  const Paged& g = p.paged[i];
  const KvCache::Layer& l = (*cache.shared_pool())[li];
  auto rows = [](const Tensor& t) { return t.squeeze(0).transpose(0, 1); };  // (1, KV, T, D) -> (T, KV, D)
  cache_write_(l.k, l.v, g.table, g.positions, rows(k), rows(v));
  if (p.past[i] == 0) return {k, v};
  const int64_t KV = k.dim(1), D = k.dim(3), end = p.past[i] + p.count[i];
  auto gather = [&](const Tensor& blocks) {  // (used, KV, N, D) -> (1, KV, end, D)
    const Tensor g_ = index_select(blocks, 0, g.used).permute({1, 0, 2, 3});
    return g_.reshape({1, KV, g_.dim(1) * g_.dim(2), D}).narrow(2, 0, end);
  };
  return {gather(l.k), gather(l.v)};
}

void commit(const Plan& p, std::span<const BatchSequence> seqs) {
  for (size_t i = 0; i < seqs.size(); ++i) seqs[i].cache->set_length(p.past[i] + p.count[i]);
}

}  // namespace batch

Tensor CausalLM::forward_batch(std::span<const BatchSequence> seqs) const {
  WICK_CHECK(!seqs.empty(), InvalidArgument, "forward_batch needs at least one sequence");
  std::vector<Tensor> rows;
  rows.reserve(seqs.size());
  for (const BatchSequence& s : seqs) {
    WICK_CHECK(s.cache != nullptr, InvalidArgument, "forward_batch: a sequence has no cache");
    const std::vector<int64_t> ids(s.tokens.begin(), s.tokens.end());
    const Tensor logits = forward(Tensor::from_vector(ids, Shape{1, int64_t(ids.size())}), s.cache, true);
    rows.push_back(logits.reshape({1, vocab_size()}).to(DType::F32));
  }
  return rows.size() == 1 ? rows[0] : cat(rows, 0);
}

void CausalLM::reserve_cache(KvCache&) const {}

BatchDecodeState CausalLM::begin_batch_decode(const KvCache&, int64_t) const {
  fail(ErrorKind::Unsupported, "begin_batch_decode: this model has no batched decode step (batch_decode_supported() ",
       "is false); use forward_batch");
}

void CausalLM::set_batch_inputs(BatchDecodeState&, std::span<const BatchSequence>) const {
  fail(ErrorKind::Unsupported, "set_batch_inputs: this model has no batched decode step; use forward_batch");
}

void CausalLM::decode_batch_step(BatchDecodeState&) const {
  fail(ErrorKind::Unsupported, "decode_batch_step: this model has no batched decode step; use forward_batch");
}

}  // namespace wick::models
