// LlamaModel::forward_batch: several sequences with their own caches in one pass through
// blocks(). The stream of all their tokens is one (1, N) sequence for everything but
// attention; rotary rows are each token's own position (each sequence's rope_rows, so
// LongRope picks its factors per sequence exactly as forward() does). Attention runs per
// sequence (batch::attend_each) against its own cache with its own masks, except for the
// decoding sequences (one new token each) whose caches are rows of one pool
// (KvCache::pooled, as the server's slots are): those attend in one cache_attention call.
#include <algorithm>
#include <cmath>

#include "batch.h"
#include "llama_config.h"
#include "wick/error.h"
#include "wick/models/llama.h"
#include "wick/nn.h"

namespace wick::models {

namespace {

// The decoding sequences of a batch that share a pool, attended in one cache_attention call
// over their slots or block tables, each to its own length (no value is read back on the
// host).
struct PooledDecode {
  const std::vector<KvCache::Layer>* pool = nullptr;
  std::vector<size_t> seqs;  // indices into the batch
  Tensor token;              // (n) i64: stream index of seqs[j]'s token
  Tensor blocks;             // (n) i64: pool row of seqs[j]; paged: (n, M) its block table
  Tensor position;           // (n) i64: the position its token takes
  Tensor length;             // (n) i64: position + 1, the keys it attends
};

PooledDecode plan_pooled(std::span<const BatchSequence> seqs, const batch::Plan& p, Device device) {
  PooledDecode d;
  bool paged = false;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const KvCache& kv = *seqs[i].cache;
    if (p.count[i] != 1 || !kv.pool()) continue;
    if (!d.pool) d.pool = kv.pool(), paged = kv.paged();
    if (kv.pool() == d.pool) d.seqs.push_back(i);
  }
  // One sequence of slots gains nothing over its own call; one of blocks would have to
  // gather them.
  if (d.seqs.empty() || (d.seqs.size() < 2 && !paged)) return {};
  const auto n = int64_t(d.seqs.size());
  // One host-to-device copy for the four index rows of the step, then views of it.
  std::vector<int64_t> all(size_t(4 * n));
  size_t M = 1;
  for (const size_t i : d.seqs)
    if (paged) M = std::max(M, seqs[i].cache->blocks().size());
  std::vector<int64_t> table(paged ? size_t(n) * M : 0, int64_t((*d.pool)[0].k.dim(0) - 1));  // spare-padded
  for (int64_t j = 0; j < n; ++j) {
    const size_t i = d.seqs[size_t(j)];
    all[size_t(j)] = p.offset[i];
    all[size_t(n + j)] = seqs[i].cache->pool_slot();
    all[size_t(2 * n + j)] = p.past[i];
    all[size_t(3 * n + j)] = p.past[i] + 1;
    if (paged) std::copy(seqs[i].cache->blocks().begin(), seqs[i].cache->blocks().end(), table.begin() + long(j * M));
  }
  const Tensor up = Tensor::from_vector(all, Shape{4, n}).to(device);
  d.token = up.select(0, 0);
  d.blocks = paged ? Tensor::from_vector(table, Shape{n, int64_t(M)}).to(device) : up.select(0, 1);
  d.position = up.select(0, 2);
  d.length = up.select(0, 3);
  return d;
}

// Layer li's attention of the pooled sequences: q (1, H, N, D), k and v (1, KV, N, D) over the
// stream. Writes their new keys and values into the pool, returns (1, H, n, D) in d.seqs order.
Tensor attend_pooled(const LlamaConfig& c, size_t li, const PooledDecode& d, const Tensor& q, const Tensor& k,
                     const Tensor& v) {
  // (1, heads, N, D) -> (n, heads, D): the pooled sequences' tokens as rows.
  auto rows = [&](const Tensor& t) { return index_select(t, 2, d.token).squeeze(0).transpose(0, 1); };
  return llama_pooled_attention(c, li, (*d.pool)[li], rows(q), rows(k), rows(v), d.blocks, d.position, d.length);
}

}  // namespace

Tensor LlamaModel::forward_batch(std::span<const BatchSequence> seqs) const {
  const batch::Plan p =
      batch::plan("llama", seqs, config_.context_length, device_, [&](KvCache& kv, int64_t) { reserve_cache(kv); });
  const size_t n = seqs.size();
  const PooledDecode pooled = plan_pooled(seqs, p, device_);
  std::vector<bool> is_pooled(n, false);
  for (const size_t i : pooled.seqs) is_pooled[i] = true;
  std::vector<SeqMasks> masks(n);  // the sequences that attend on their own
  int64_t longest = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!is_pooled[i]) masks[i] = seq_masks(p.past[i], p.count[i]);
    longest = std::max(longest, p.past[i] + p.count[i]);
  }
  Tensor cos, sin;
  if (config_.rope.scaling != RopeScaling::LongRope) {
    // One gather of every token's row by its position (one kernel, not one per sequence).
    const RopeTables::Rows r = rope_->at_least(longest);
    const Tensor pos = p.positions.reshape({p.total});
    cos = index_select(r.cos, 0, pos);
    sin = index_select(r.sin, 0, pos);
  } else {
    // LongRope picks the factor set per sequence (by its length): each sequence's rows.
    std::vector<Tensor> cos_parts, sin_parts;
    for (size_t i = 0; i < n; ++i) {
      auto [c, s] = rope_rows(p.past[i], p.count[i]);
      cos_parts.push_back(c);
      sin_parts.push_back(s);
    }
    cos = n == 1 ? cos_parts[0] : cat(cos_parts, 0);
    sin = n == 1 ? sin_parts[0] : cat(sin_parts, 0);
  }
  Tensor y;
  // A sequence attending on its own: through its cache's rows, or over its keys written to
  // and gathered from its blocks.
  auto attend_one = [&](size_t li, size_t i, const Tensor& q, const Tensor& k, const Tensor& v) {
    if (!seqs[i].cache->paged()) return attend_seq(li, q, k, v, seqs[i].cache, masks[i]);
    const auto [all_k, all_v] = batch::paged_kv(p, i, *seqs[i].cache, li, k, v);
    return attend_seq(li, q, all_k, all_v, nullptr, masks[i]);
  };
  if (!pooled.pool) {
    y = blocks(embed(p.ids), cos, sin, [&](size_t li, const Tensor& q, const Tensor& k, const Tensor& v) {
      return batch::attend_each(p, q, k, v, [&](size_t i, const Tensor& qi, const Tensor& ki, const Tensor& vi) {
        return attend_one(li, i, qi, ki, vi);
      });
    });
  } else {
    // The pooled sequences' contexts first, then each other sequence's, put back in stream
    // order by one gather (none when that already is the order).
    std::vector<size_t> others;
    std::vector<int64_t> order;  // stream index of each row of the concatenation
    for (const size_t i : pooled.seqs) order.push_back(p.offset[i]);
    for (size_t i = 0; i < n; ++i)
      if (!is_pooled[i]) {
        others.push_back(i);
        for (int64_t t = 0; t < p.count[i]; ++t) order.push_back(p.offset[i] + t);
      }
    std::vector<int64_t> to_stream(order.size());
    for (size_t r = 0; r < order.size(); ++r) to_stream[size_t(order[r])] = int64_t(r);
    const bool in_order = std::is_sorted(order.begin(), order.end());
    const Tensor gather = in_order ? Tensor() : Tensor::from_vector(to_stream).to(device_);
    y = blocks(embed(p.ids), cos, sin, [&](size_t li, const Tensor& q, const Tensor& k, const Tensor& v) {
      std::vector<Tensor> parts{attend_pooled(config_, li, pooled, q, k, v)};
      for (const size_t i : others)
        parts.push_back(attend_one(li, i, q.narrow(2, p.offset[i], p.count[i]), k.narrow(2, p.offset[i], p.count[i]),
                                   v.narrow(2, p.offset[i], p.count[i])));
      const Tensor all = parts.size() == 1 ? parts[0] : cat(parts, 2);
      return in_order ? all : index_select(all, 2, gather);
    });
  }
  batch::commit(p, seqs);
  // Only the last token of each sequence goes through the final norm and the LM head.
  const Tensor last = index_select(y.reshape({p.total, config_.hidden_size}), 0, p.last);
  return head(last).to(DType::F32);
}

}  // namespace wick::models
