// forward_batch's shared bookkeeping (batch.h) and CausalLM's defaults for models without a
// batched forward of their own.
#include "batch.h"

#include <algorithm>

#include "wick/error.h"
#include "wick/nn.h"

namespace wick::models {

namespace batch {

namespace {

Paged paged_rows(const KvCache& kv, int64_t past, int64_t count, Device device) {
  const std::span<const int32_t> blocks = kv.blocks();
  const int64_t N = kv.block_size(), end = past + count;
  const std::vector<int64_t> table(blocks.begin(), blocks.end());
  std::vector<int64_t> pos(static_cast<size_t>(count));
  for (int64_t t = 0; t < count; ++t) pos[size_t(t)] = past + t;
  Paged g;
  const Tensor row = Tensor::from_vector(table, Shape{1, int64_t(table.size())}).to(device);
  g.table = row.expand(Shape{count, int64_t(table.size())});
  g.positions = Tensor::from_vector(pos).to(device);
  g.used = row.reshape({-1}).narrow(0, 0, (end + N - 1) / N);
  return g;
}

}  // namespace

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
    WICK_CHECK(s.logits >= 1 && s.logits <= T, InvalidArgument, model, ": batch sequence ", i, " asks for ", s.logits,
               " logits rows of its ", T, " tokens");
    WICK_CHECK(T <= capacity - past, InvalidArgument, model, ": batch sequence ", i, ": ", past, " cached + ", T,
               " new positions exceed the cache capacity ", capacity, " (context ", context, ")");
    if (s.cache->paged()) {
      const int64_t held = s.cache->positions_held();
      WICK_CHECK(past + T <= held, InvalidArgument, model, ": batch sequence ", i, ": its paged cache has blocks for ",
                 held, " positions, the batch needs ", past + T, " (KvCache::ensure_positions first)");
    }
    p.past[i] = past;
    p.count[i] = T;
    p.offset[i] = p.total;
    p.total += T;
  }
  std::vector<int64_t> ids, positions, out_rows;
  ids.reserve(size_t(p.total));
  positions.reserve(size_t(p.total));
  for (size_t i = 0; i < n; ++i) {
    for (size_t t = 0; t < seqs[i].tokens.size(); ++t) {
      ids.push_back(seqs[i].tokens[t]);
      positions.push_back(p.past[i] + int64_t(t));
    }
    for (int64_t r = p.count[i] - seqs[i].logits; r < p.count[i]; ++r) out_rows.push_back(p.offset[i] + r);
  }
  // The buffers only after every check: a rejected batch leaves the caches as they were.
  for (size_t i = 0; i < n; ++i) reserve(*seqs[i].cache, seqs[i].cache->resolved_capacity(context));
  p.ids = Tensor::from_vector(ids, Shape{1, p.total}).to(device);
  p.positions = Tensor::from_vector(positions, Shape{1, p.total}).to(device);
  p.out_rows = Tensor::from_vector(out_rows, Shape{int64_t(out_rows.size())}).to(device);
  // Decoding sequences (a token, or a few with a speculative draft) of a paged pool attend
  // through plan_pooled's tables; the rest get theirs now, once for every layer.
  p.paged.resize(n);
  for (size_t i = 0; i < n; ++i)
    if (seqs[i].cache->paged() && p.count[i] > kMaxPooledTokens)
      p.paged[i] = paged_rows(*seqs[i].cache, p.past[i], p.count[i], device);
  return p;
}

Pooled plan_pooled(std::span<const BatchSequence> seqs, const Plan& p, Device device) {
  Pooled d;
  bool paged = false;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const KvCache& kv = *seqs[i].cache;
    if (p.count[i] > kMaxPooledTokens || !kv.pool()) continue;
    if (!d.pool) d.pool = kv.pool(), paged = kv.paged();
    if (kv.pool() == d.pool) d.seqs.push_back(i);
  }
  if (d.seqs.empty() || (d.seqs.size() < 2 && !paged)) {
    d = {};
    for (size_t i = 0; i < seqs.size(); ++i) d.others.push_back(i);
    return d;
  }
  // A row per token: a sequence's tokens (a speculative step's token and drafts) are rows of
  // its table, each attending the keys up to its own position (written first, all of them).
  int64_t n = 0;
  for (const size_t i : d.seqs) n += p.count[i];
  // One host-to-device copy for the four index rows of the step, then views of it.
  std::vector<int64_t> all(size_t(4 * n));
  size_t M = 1;
  for (const size_t i : d.seqs)
    if (paged) M = std::max(M, seqs[i].cache->blocks().size());
  std::vector<int64_t> table(paged ? size_t(n) * M : 0, int64_t((*d.pool)[0].k.dim(0) - 1));  // spare-padded
  int64_t j = 0;
  for (const size_t i : d.seqs)
    for (int64_t t = 0; t < p.count[i]; ++t, ++j) {
      all[size_t(j)] = p.offset[i] + t;
      all[size_t(n + j)] = seqs[i].cache->pool_slot();
      all[size_t(2 * n + j)] = p.past[i] + t;
      all[size_t(3 * n + j)] = p.past[i] + t + 1;
      if (paged) std::copy(seqs[i].cache->blocks().begin(), seqs[i].cache->blocks().end(), table.begin() + long(j * M));
    }
  const Tensor up = Tensor::from_vector(all, Shape{4, n}).to(device);
  d.token = up.select(0, 0);
  d.blocks = paged ? Tensor::from_vector(table, Shape{n, int64_t(M)}).to(device) : up.select(0, 1);
  d.position = up.select(0, 2);
  d.length = up.select(0, 3);
  // The pooled rows' contexts come first, then each other sequence's: one gather puts them
  // back in stream order (none when that already is the order).
  std::vector<bool> is_pooled(seqs.size(), false);
  for (const size_t i : d.seqs) is_pooled[i] = true;
  std::vector<int64_t> order;  // stream index of each row of the concatenation
  for (const size_t i : d.seqs)
    for (int64_t t = 0; t < p.count[i]; ++t) order.push_back(p.offset[i] + t);
  for (size_t i = 0; i < seqs.size(); ++i)
    if (!is_pooled[i]) {
      d.others.push_back(i);
      for (int64_t t = 0; t < p.count[i]; ++t) order.push_back(p.offset[i] + t);
    }
  if (!std::is_sorted(order.begin(), order.end())) {
    std::vector<int64_t> to_stream(order.size());
    for (size_t r = 0; r < order.size(); ++r) to_stream[size_t(order[r])] = int64_t(r);
    d.gather = Tensor::from_vector(to_stream).to(device);
  }
  return d;
}

Tensor pooled_attention(const KvCache::Layer& pool, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& blocks, const Tensor& positions, const Tensor& lengths,
                        const CacheAttentionOptions& opt) {
  cache_write_(pool.k, pool.v, blocks, positions, k, v);
  return cache_attention(q, pool.k, pool.v, blocks, lengths, opt).transpose(0, 1).unsqueeze(0);
}

std::pair<Tensor, Tensor> paged_kv(const Plan& p, size_t i, const KvCache& cache, size_t li, const Tensor& k,
                                   const Tensor& v) {
  // A decoding sequence left out of plan_pooled (a second pool in one batch) makes its rows here.
  const Paged g = p.paged[i].table.defined() ? p.paged[i] : paged_rows(cache, p.past[i], p.count[i], k.device());
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
    WICK_CHECK(s.logits >= 1 && s.logits <= int64_t(s.tokens.size()), InvalidArgument, "forward_batch: a sequence ",
               "asks for ", s.logits, " logits rows of its ", s.tokens.size(), " tokens");
    const std::vector<int64_t> ids(s.tokens.begin(), s.tokens.end());
    const int64_t T = int64_t(ids.size());
    const Tensor logits = forward(Tensor::from_vector(ids, Shape{1, T}), s.cache, s.logits == 1);
    rows.push_back(
        logits.narrow(1, logits.dim(1) - s.logits, s.logits).reshape({s.logits, vocab_size()}).to(DType::F32));
  }
  return rows.size() == 1 ? rows[0] : cat(rows, 0);
}

void CausalLM::reserve_cache(KvCache&) const {}

int64_t CausalLM::exact_span(int64_t) const { return std::numeric_limits<int64_t>::max(); }

}  // namespace wick::models
