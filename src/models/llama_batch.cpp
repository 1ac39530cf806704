// LlamaModel::forward_batch: several sequences with their own caches in one pass through
// blocks(). The stream of all their tokens is one (1, N) sequence for everything but
// attention; rotary rows are each token's own position (each sequence's rope_rows, so
// LongRope picks its factors per sequence exactly as forward() does). Attention runs per
// sequence (batch::attend_each) against its own cache with its own masks, except for the
// decoding sequences (one new token each) whose caches are rows of one pool
// (KvCache::pooled, as the server's slots are): those attend in one call over the pool.
#include <algorithm>
#include <cmath>

#include "batch.h"
#include "llama_config.h"
#include "wick/error.h"
#include "wick/models/llama.h"
#include "wick/nn.h"

namespace wick::models {

namespace {

// The decoding sequences of a batch that share a pool, attended as one grouped-query call
// over rows [0, rows) of the pool: slot r's query is gathered into row r and masked to its
// own keys. Rows of slots without such a sequence take token 0's query and see key 0 only
// (no row is all -inf, so no NaN is computed); their outputs are dropped.
struct PooledDecode {
  const std::vector<KvCache::Layer>* pool = nullptr;
  std::vector<size_t> seqs;    // indices into the batch, in slot order
  int64_t rows = 0, keys = 0;  // pool rows and key positions attended
  Tensor slot_token;           // (rows) i64: stream index of slot r's token (0 where none)
  Tensor seq_token;            // (n) i64: stream index of seqs[j]'s token
  Tensor seq_slot;             // (n) i64: pool row of seqs[j]
  Tensor cache_rows;           // (KV * n) i64: rows of the (P * KV * capacity, D) pool, head-major
  Tensor mask, window_mask;    // (rows, 1, 1, keys) additive; window_mask only for sliding layers
};

Tensor i64_tensor(const std::vector<int64_t>& v, Device device) { return Tensor::from_vector(v).to(device); }

// The masks of the pooled rows: key j of row r is seen when j < length[r] and, with a
// window w > 0, j >= length[r] - w (the new token is at length[r] - 1).
Tensor pooled_mask(const std::vector<int64_t>& length, int64_t keys, int64_t window, DType dtype, Device device) {
  const auto rows = int64_t(length.size());
  std::vector<float> m(size_t(rows * keys), -INFINITY);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t end = std::max<int64_t>(length[size_t(r)], 1);
    const int64_t begin = window > 0 ? std::max<int64_t>(end - window, 0) : 0;
    std::fill(m.begin() + r * keys + begin, m.begin() + r * keys + end, 0.0f);
  }
  return Tensor::from_vector(m, Shape{rows, 1, 1, keys}).to(dtype).to(device);
}

PooledDecode plan_pooled(const LlamaConfig& c, std::span<const BatchSequence> seqs, const batch::Plan& p, DType dtype,
                         Device device) {
  PooledDecode d;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const KvCache& kv = *seqs[i].cache;
    if (p.count[i] != 1 || !kv.pool()) continue;
    if (!d.pool) d.pool = kv.pool();
    if (kv.pool() == d.pool) d.seqs.push_back(i);
  }
  if (d.seqs.size() < 2) return {};  // one sequence gains nothing over its own call
  std::sort(d.seqs.begin(), d.seqs.end(),
            [&](size_t a, size_t b) { return seqs[a].cache->pool_slot() < seqs[b].cache->pool_slot(); });
  d.rows = seqs[d.seqs.back()].cache->pool_slot() + 1;
  const int64_t KV = c.n_kv_head, capacity = (*d.pool)[0].k.dim(2);
  std::vector<int64_t> slot_token(size_t(d.rows), 0), length(size_t(d.rows), 0), seq_token, seq_slot;
  std::vector<int64_t> cache_rows(KV * d.seqs.size());
  for (size_t j = 0; j < d.seqs.size(); ++j) {
    const size_t i = d.seqs[j];
    const int64_t slot = seqs[i].cache->pool_slot();
    slot_token[size_t(slot)] = p.offset[i];
    length[size_t(slot)] = p.past[i] + 1;
    d.keys = std::max(d.keys, p.past[i] + 1);
    seq_token.push_back(p.offset[i]);
    seq_slot.push_back(slot);
    for (int64_t h = 0; h < KV; ++h) cache_rows[size_t(h) * d.seqs.size() + j] = (slot * KV + h) * capacity + p.past[i];
  }
  // One host-to-device copy for the four index vectors of the step, then views of it.
  std::vector<int64_t> all = slot_token;
  for (const auto* v : {&seq_token, &seq_slot, &cache_rows}) all.insert(all.end(), v->begin(), v->end());
  const Tensor up = i64_tensor(all, device);
  int64_t at = 0;
  for (auto [t, len] : {std::pair{&d.slot_token, slot_token.size()}, std::pair{&d.seq_token, seq_token.size()},
                        std::pair{&d.seq_slot, seq_slot.size()}, std::pair{&d.cache_rows, cache_rows.size()}}) {
    *t = up.narrow(0, at, int64_t(len));
    at += int64_t(len);
  }
  d.mask = pooled_mask(length, d.keys, 0, dtype, device);
  const bool sliding = std::any_of(c.sliding_layers.begin(), c.sliding_layers.end(), [](bool b) { return b; });
  if (sliding && d.keys > c.sliding_window)
    d.window_mask = pooled_mask(length, d.keys, c.sliding_window, dtype, device);
  return d;
}

// Layer li's attention of the pooled sequences: q (1, H, N, D), k and v (1, KV, N, D) over the
// stream. Writes their new keys and values into the pool, returns (1, H, n, D) in d.seqs order.
Tensor attend_pooled(const LlamaConfig& c, size_t li, const PooledDecode& d, const Tensor& q, const Tensor& k,
                     const Tensor& v) {
  const int64_t H = c.n_head, KV = c.n_kv_head, G = c.kv_groups(), D = c.head_dim;
  const auto n = int64_t(d.seqs.size());
  const KvCache::Layer& pool = (*d.pool)[li];
  const int64_t flat = pool.k.dim(0) * KV * pool.k.dim(2);
  // The new keys and values, rows (head, sequence), into their positions of the pool.
  index_copy_(pool.k.reshape({flat, D}), 0, d.cache_rows, index_select(k, 2, d.seq_token).reshape({KV * n, D}));
  index_copy_(pool.v.reshape({flat, D}), 0, d.cache_rows, index_select(v, 2, d.seq_token).reshape({KV * n, D}));
  // (1, H, rows, D) -> (rows, KV, G, D), a view: G query heads per key head, one row per slot.
  const Tensor qg = index_select(q, 2, d.slot_token).reshape({KV, G, d.rows, D}).permute({2, 0, 1, 3});
  const Tensor& mask = d.window_mask.defined() && c.sliding_layers[li] ? d.window_mask : d.mask;
  const Tensor ctx = llama_attention(c, qg, pool.k.narrow(0, 0, d.rows).narrow(2, 0, d.keys),
                                     pool.v.narrow(0, 0, d.rows).narrow(2, 0, d.keys), mask, false);
  return index_select(ctx.reshape({d.rows, H, D}), 0, d.seq_slot).unsqueeze(0).transpose(1, 2);
}

}  // namespace

Tensor LlamaModel::forward_batch(std::span<const BatchSequence> seqs) const {
  const batch::Plan p =
      batch::plan("llama", seqs, config_.context_length, device_, [&](KvCache& kv, int64_t) { reserve_cache(kv); });
  const size_t n = seqs.size();
  const PooledDecode pooled = plan_pooled(config_, seqs, p, dtype_, device_);
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
  if (!pooled.pool) {
    y = blocks(embed(p.ids), cos, sin, [&](size_t li, const Tensor& q, const Tensor& k, const Tensor& v) {
      return batch::attend_each(p, q, k, v, [&](size_t i, const Tensor& qi, const Tensor& ki, const Tensor& vi) {
        return attend_seq(li, qi, ki, vi, seqs[i].cache, masks[i]);
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
    const Tensor gather = in_order ? Tensor() : i64_tensor(to_stream, device_);
    y = blocks(embed(p.ids), cos, sin, [&](size_t li, const Tensor& q, const Tensor& k, const Tensor& v) {
      std::vector<Tensor> parts{attend_pooled(config_, li, pooled, q, k, v)};
      for (const size_t i : others)
        parts.push_back(attend_seq(li, q.narrow(2, p.offset[i], p.count[i]), k.narrow(2, p.offset[i], p.count[i]),
                                   v.narrow(2, p.offset[i], p.count[i]), seqs[i].cache, masks[i]));
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
