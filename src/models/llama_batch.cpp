// LlamaModel::forward_batch: several sequences with their own caches in one pass through
// blocks(). The stream of all their tokens is one (1, N) sequence for everything but
// attention; rotary rows are each token's own position (each sequence's rope_rows, so
// LongRope picks its factors per sequence exactly as forward() does). Attention runs per
// sequence against its own cache with its own masks, except for the decoding sequences (a
// new token each, or a speculative step's token and drafts) whose caches share one pool
// (KvCache::pooled slots, KvCache::paged blocks as the server's are): those attend in one
// cache_attention call, a row per token (batch::attend_batch).
#include <algorithm>
#include <cmath>

#include "batch.h"
#include "llama_config.h"
#include "wick/error.h"
#include "wick/models/llama.h"
#include "wick/nn.h"

namespace wick::models {

Tensor LlamaModel::forward_batch(std::span<const BatchSequence> seqs) const {
  const batch::Plan p =
      batch::plan("llama", seqs, config_.context_length, device_, [&](KvCache& kv, int64_t) { reserve_cache(kv); });
  const size_t n = seqs.size();
  const batch::Pooled pooled = batch::plan_pooled(seqs, p, device_);
  std::vector<SeqMasks> masks(n);  // the sequences that attend on their own
  for (const size_t i : pooled.others) masks[i] = seq_masks(p.past[i], p.count[i]);
  int64_t longest = 0;
  for (size_t i = 0; i < n; ++i) longest = std::max(longest, p.past[i] + p.count[i]);
  Rotary rot;
  if (config_.learned_positions) {
    // GPT-2: no rotary rows; embed() adds each token's position row.
  } else if (config_.rope.scaling != RopeScaling::LongRope) {
    // One gather of every token's row by its position (one kernel, not one per sequence).
    const RopeTables::Rows r = rope_->at_least(longest);
    const Tensor pos = p.positions.reshape({p.total});
    rot.cos = index_select(r.cos, 0, pos);
    rot.sin = index_select(r.sin, 0, pos);
    if (r.cos_local.defined()) {
      rot.cos_local = index_select(r.cos_local, 0, pos);
      rot.sin_local = index_select(r.sin_local, 0, pos);
    }
  } else {
    // LongRope picks the factor set per sequence (by its length): each sequence's rows.
    std::vector<Tensor> cos_parts, sin_parts;
    for (size_t i = 0; i < n; ++i) {
      const Rotary r = rope_rows(p.past[i], p.count[i]);
      cos_parts.push_back(r.cos);
      sin_parts.push_back(r.sin);
    }
    rot.cos = n == 1 ? cos_parts[0] : cat(cos_parts, 0);
    rot.sin = n == 1 ? sin_parts[0] : cat(sin_parts, 0);
  }
  // A sequence attending on its own: through its cache's rows, or over its keys written
  // through its block table (and gathered from its blocks when earlier positions exist).
  auto attend_one = [&](size_t li, size_t i, const Tensor& q, const Tensor& k, const Tensor& v) {
    if (!seqs[i].cache->paged()) return attend_seq(li, q, k, v, seqs[i].cache, masks[i]);
    const auto [all_k, all_v] = batch::paged_kv(p, i, *seqs[i].cache, li, k, v);
    return attend_seq(li, q, all_k, all_v, nullptr, masks[i]);
  };
  const Tensor y =
      blocks(embed(p.ids, p.positions), rot, [&](size_t li, const Tensor& q, const Tensor& k, const Tensor& v) {
        return batch::attend_batch(p, pooled, li, cache_options(config_, li, layers_[li]), q, k, v,
                                   [&](size_t i, const Tensor& qi, const Tensor& ki, const Tensor& vi) {
                                     return attend_one(li, i, qi, ki, vi);
                                   });
      });
  batch::commit(p, seqs);
  // Only the tokens whose logits are asked for go through the final norm and the LM head.
  return head(index_select(y.reshape({p.total, config_.hidden_size}), 0, p.out_rows)).to(DType::F32);
}

}  // namespace wick::models
