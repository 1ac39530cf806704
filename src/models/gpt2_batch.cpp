// Gpt2Model::forward_batch: several sequences with their own caches in one pass through
// blocks(), the learned position rows gathered by each token's own position and attention
// run per sequence against its own cache, rows or blocks (paged), but for the decoding
// sequences of one pool, which attend together (batch::attend_batch).
#include "batch.h"
#include "wick/models/gpt2.h"
#include "wick/nn.h"

namespace wick::models {

Tensor Gpt2Model::forward_batch(std::span<const BatchSequence> seqs) const {
  const batch::Plan p =
      batch::plan("gpt2", seqs, config_.n_positions, device_, [&](KvCache& kv, int64_t) { reserve_cache(kv); });
  const Tensor x = embedding(p.ids, wte_) + embedding(p.positions, wpe_);  // (1, N, E)
  const batch::Pooled pooled = batch::plan_pooled(seqs, p, device_);
  const Tensor y = blocks(x, [&](size_t li, const Tensor& q, const Tensor& k, const Tensor& v) {
    return batch::attend_batch(
        p, pooled, li, {}, q, k, v, [&](size_t i, const Tensor& qi, const Tensor& ki, const Tensor& vi) {
          if (!seqs[i].cache->paged()) return attend_seq(li, qi, ki, vi, seqs[i].cache, p.past[i]);
          const auto [all_k, all_v] = batch::paged_kv(p, i, *seqs[i].cache, li, ki, vi);  // written, then all of them
          return attend_seq(li, qi, all_k, all_v, nullptr, p.past[i]);
        });
  });
  batch::commit(p, seqs);
  // Only the tokens whose logits are asked for go through the final norm and the LM head.
  return head(index_select(y.reshape({p.total, config_.n_embd}), 0, p.out_rows)).to(DType::F32);
}

}  // namespace wick::models
