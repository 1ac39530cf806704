// Gpt2Model::forward_batch: several sequences with their own caches in one pass through
// blocks(), the learned position rows gathered by each token's own position and attention
// run per sequence against its own cache, rows or blocks (paged), but for the decoding
// sequences of one pool, which attend together (batch::attend_batch); and its batched decode
// step with static shapes (CausalLM::decode_batch_step: the inputs as batch_decode.cpp lays
// them out, the position rows gathered on the device, attention through the pool), which
// BatchDecoder records as a CUDA graph.
#include "batch.h"
#include "wick/error.h"
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

CausalLM::KvShape Gpt2Model::kv_shape() const { return {layers_.size(), config_.n_head, config_.head_dim()}; }

void Gpt2Model::decode_batch_step(BatchDecodeState& s) const {
  WICK_CHECK(s.pool && s.inputs.defined(), InvalidArgument,
             "gpt2: the batched decode state does not come from begin_batch_decode");
  const batch::DecodeInputs in = batch::decode_inputs(s);
  const Tensor x = embedding(in.ids, wte_) + embedding(in.positions, wpe_);  // (1, L, E)
  const std::vector<KvCache::Layer>& pool = *s.pool;
  const Tensor y = blocks(x, [&](size_t li, const Tensor& q, Tensor k, Tensor v) {
    // q, k and v (1, H, L, D): the lanes as rows.
    auto rows = [](const Tensor& t) { return t.squeeze(0).transpose(0, 1); };
    return batch::pooled_attention(pool[li], rows(q), rows(k), rows(v), in.blocks, in.positions, in.lengths, {});
  });
  s.logits = head(y.reshape({s.lanes, config_.n_embd})).to(DType::F32);
}

}  // namespace wick::models
