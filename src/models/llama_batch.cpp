// LlamaModel::forward_batch: several sequences with their own caches in one pass through
// blocks(). The stream of all their tokens is one (1, N) sequence for everything but
// attention; rotary rows are each token's own position (each sequence's rope_rows, so
// LongRope picks its factors per sequence exactly as forward() does), and attention runs per
// sequence (batch::attend_each) against its own cache with its own masks.
#include "batch.h"
#include "wick/error.h"
#include "wick/models/llama.h"

namespace wick::models {

Tensor LlamaModel::forward_batch(std::span<const BatchSequence> seqs) const {
  const batch::Plan p =
      batch::plan("llama", seqs, config_.context_length, device_, [&](KvCache& kv, int64_t) { reserve_cache(kv); });
  const size_t n = seqs.size();
  std::vector<SeqMasks> masks;
  std::vector<Tensor> cos_parts, sin_parts;
  masks.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    masks.push_back(seq_masks(p.past[i], p.count[i]));
    auto [c, s] = rope_rows(p.past[i], p.count[i]);
    cos_parts.push_back(c);
    sin_parts.push_back(s);
  }
  const Tensor cos = n == 1 ? cos_parts[0] : cat(cos_parts, 0);
  const Tensor sin = n == 1 ? sin_parts[0] : cat(sin_parts, 0);
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
