// LlamaModel::forward_batch: several sequences with their own caches in one pass through
// blocks(). The stream of all their tokens is one (1, N) sequence for everything but
// attention; rotary rows are each token's own position (each sequence's rope_rows, so
// LongRope picks its factors per sequence exactly as forward() does), and attention runs per
// sequence (batch::attend_each) against its own cache with its own masks.
#include <algorithm>

#include "batch.h"
#include "llama_config.h"
#include "wick/error.h"
#include "wick/models/llama.h"

namespace wick::models {

Tensor LlamaModel::forward_batch(std::span<const BatchSequence> seqs) const {
  const batch::Plan p =
      batch::plan("llama", seqs, config_.context_length, device_, [&](KvCache& kv, int64_t) { reserve_cache(kv); });
  const size_t n = seqs.size();
  std::vector<SeqMasks> masks;
  masks.reserve(n);
  int64_t longest = 0;
  for (size_t i = 0; i < n; ++i) {
    masks.push_back(seq_masks(p.past[i], p.count[i]));
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
  const Tensor y = blocks(embed(p.ids), cos, sin, [&](size_t li, const Tensor& q, const Tensor& k, const Tensor& v) {
    return batch::attend_each(p, q, k, v, [&](size_t i, const Tensor& qi, const Tensor& ki, const Tensor& vi) {
      return attend_seq(li, qi, ki, vi, seqs[i].cache, masks[i]);
    });
  });
  batch::commit(p, seqs);
  // Only the last token of each sequence goes through the final norm and the LM head.
  const Tensor last = index_select(y.reshape({p.total, config_.hidden_size}), 0, p.last);
  return head(last).to(DType::F32);
}

}  // namespace wick::models
