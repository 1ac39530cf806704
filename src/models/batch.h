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
  Tensor last;       // (n) i64 on the model device: each sequence's last token in the stream
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

// Advances every cache past its sequence's tokens (after the forward pass wrote them).
void commit(const Plan& p, std::span<const BatchSequence> seqs);

}  // namespace wick::models::batch
