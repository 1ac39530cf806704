// What every model's forward_batch shares (causal_lm.h): checking the sequences and their
// caches, laying their tokens out as one (1, N) stream, and splitting attention back into
// the sequences along the token axis.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "wick/models/causal_lm.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick::models::batch {

// A paged sequence's addressing in one forward (KvCache::paged), made once by plan() for
// every layer.
struct Paged {
  Tensor table;      // (count, M) i64: its block table, one (broadcast) row per new token
  Tensor positions;  // (count) i64: the new tokens' positions
  Tensor used;       // (blocks) i64: the blocks holding positions [0, past + count), in order
};

// The layout of a batch: sequence i's tokens are [offset[i], offset[i] + count[i]) of the
// stream and take positions [past[i], past[i] + count[i]) of its cache.
struct Plan {
  std::vector<Paged> paged;  // per sequence; empty tensors for a cache of its own
  std::vector<int64_t> past, count, offset;
  int64_t total = 0;
  Tensor ids;        // (1, total) i64 on the model device: every sequence's tokens in order
  Tensor positions;  // (1, total) i64 on the model device: each token's own position
  Tensor out_rows;   // (sum of logits) i64 on the model device: the stream rows whose logits come back
};

// Checks seqs (non-empty, tokens non-empty, distinct caches of batch 1 or empty ones, every
// sequence within the context and its cache's capacity; InvalidArgument naming the model
// and the sequence otherwise), has reserve() make each cache's buffers for capacity
// positions, and lays the tokens out.
Plan plan(std::string_view model, std::span<const BatchSequence> seqs, int64_t context, Device device,
          const std::function<void(KvCache&, int64_t capacity)>& reserve);

// Attention of a batch: q, k, v are (1, heads, total, D) over the stream; attend(i, q, k, v)
// gets sequence i's slices and returns its context (1, H, count[i], D). The result is the
// contexts in stream order, (1, H, total, D).
template <class F>
Tensor attend_each(const Plan& p, const Tensor& q, const Tensor& k, const Tensor& v, const F& attend) {
  if (p.count.size() == 1) return attend(size_t(0), q, k, v);
  std::vector<Tensor> parts;
  parts.reserve(p.count.size());
  for (size_t i = 0; i < p.count.size(); ++i)
    parts.push_back(attend(i, q.narrow(2, p.offset[i], p.count[i]), k.narrow(2, p.offset[i], p.count[i]),
                           v.narrow(2, p.offset[i], p.count[i])));
  return cat(parts, 2);
}

// Layer li of paged sequence i: writes its new keys and values k, v (1, KV, count, D) into its
// blocks and returns all of its keys and values (1, KV, past + count, D): k and v themselves
// when nothing precedes them, else gathered from the blocks (a copy, the price of a prefix
// reused from the pool or of a later prefill chunk). Plain attention over them is the
// sequence's attention.
std::pair<Tensor, Tensor> paged_kv(const Plan& p, size_t i, const KvCache& cache, size_t li, const Tensor& k,
                                   const Tensor& v);

// The decoding sequences of a batch (a new token each, or up to kMaxPooledTokens: a
// speculative step's token and drafts) whose caches share one pool (KvCache::pooled slots or
// KvCache::paged blocks), attended together in one cache_attention call, a row per token,
// each to its own length (no value is read back on the host); the other sequences attend on
// their own. Made once per forward by plan_pooled. One sequence of a slot pool gains
// nothing over its own call and stays alone; a paged one always joins (alone it would have
// to gather its blocks).
constexpr int64_t kMaxPooledTokens = 65;
struct Pooled {
  const std::vector<KvCache::Layer>* pool = nullptr;  // null: nothing pooled
  std::vector<size_t> seqs;                           // indices into the batch
  std::vector<size_t> others;                         // the sequences attending on their own
  Tensor token;                                       // (n) i64: stream index of row j's token (rows: seqs' tokens)
  Tensor blocks;                                      // (n) i64: its sequence's slot; paged: (n, M) its block table
  Tensor position;                                    // (n) i64: the position its token takes
  Tensor length;                                      // (n) i64: position + 1, the keys it attends
  Tensor gather;  // stream order of [pooled rows; others' rows]; undefined when already in order
};
Pooled plan_pooled(std::span<const BatchSequence> seqs, const Plan& p, Device device);

// Rows attending through a pool: q (n, H, D), k and v (n, KV, D) are written at their
// positions through blocks (cache_write_), then each row attends its keys up to its length
// with opt. Returns (1, H, n, D), the rows as a stream.
Tensor pooled_attention(const KvCache::Layer& pool, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& blocks, const Tensor& positions, const Tensor& lengths,
                        const CacheAttentionOptions& opt);

// One layer's attention over the stream q, k, v (1, heads, total, D): d's pooled rows through
// pooled_attention with opt and layer li of d's pool, every other sequence i by attend_one(i,
// q_i, k_i, v_i) on its slices. Returns the contexts (1, H, total, D) in stream order.
template <class F>
Tensor attend_batch(const Plan& p, const Pooled& d, size_t li, const CacheAttentionOptions& opt, const Tensor& q,
                    const Tensor& k, const Tensor& v, const F& attend_one) {
  if (!d.pool) return attend_each(p, q, k, v, attend_one);
  // (1, heads, N, D) -> (n, heads, D): the pooled sequences' tokens as rows.
  auto rows = [&](const Tensor& t) { return index_select(t, 2, d.token).squeeze(0).transpose(0, 1); };
  std::vector<Tensor> parts{
      pooled_attention((*d.pool)[li], rows(q), rows(k), rows(v), d.blocks, d.position, d.length, opt)};
  for (const size_t i : d.others)
    parts.push_back(attend_one(i, q.narrow(2, p.offset[i], p.count[i]), k.narrow(2, p.offset[i], p.count[i]),
                               v.narrow(2, p.offset[i], p.count[i])));
  const Tensor all = parts.size() == 1 ? parts[0] : cat(parts, 2);
  return d.gather.defined() ? index_select(all, 2, d.gather) : all;
}

// A batched decode step's inputs (BatchDecodeState::inputs, written by set_batch_inputs) as
// the step reads them: ids (1, lanes), the stream; positions and lengths (lanes); blocks
// (lanes) slots, or (lanes, M) block tables of a paged pool.
struct DecodeInputs {
  Tensor ids, positions, blocks, lengths;
};
DecodeInputs decode_inputs(const BatchDecodeState& s);

// Advances every cache past its sequence's tokens (after the forward pass wrote them).
void commit(const Plan& p, std::span<const BatchSequence> seqs);

}  // namespace wick::models::batch
