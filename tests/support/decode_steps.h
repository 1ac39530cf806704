// One sequence decoded as the engine decodes it (serve::Engine, and so Generator, `wick
// generate` and `wick serve`): a paged KV cache, the prompt through forward_batch, then one
// recorded batched step (BatchDecoder: a CUDA graph on CUDA) per token. The model tests
// check these steps' logits against their oracles position by position.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "wick/models/batch_decoder.h"
#include "wick/models/causal_lm.h"

namespace wick::test {

class DecodeSteps {
 public:
  // capacity: positions the sequence may reach; block_size: the paged cache's blocks.
  DecodeSteps(const models::CausalLM& m, int64_t capacity, int64_t block_size = 4, bool cuda_graphs = true)
      : m_(m), decoder_(m, cuda_graphs) {
    models::KvCache layout(1);
    m.reserve_cache(layout);
    const int64_t blocks = (capacity + block_size - 1) / block_size;
    caches_ = models::KvCache::paged(layout, 1, capacity, blocks, block_size);
  }
  // tokens after what the cache holds through forward_batch: the last one's logits (1, vocab)
  // f32; undefined, nothing changed, past the capacity.
  Tensor prefill(std::span<const int32_t> tokens) {
    if (!room(int64_t(tokens.size()))) return {};
    const std::vector<models::BatchSequence> b{{tokens, &cache()}};
    return m_.forward_batch(b);
  }
  // One token through the recorded step: its logits (1, vocab) f32; undefined, nothing
  // changed, past the capacity.
  Tensor step(int32_t token) {
    if (!room(1)) return {};
    const int32_t t[] = {token};
    return decoder_.step(std::vector<models::BatchSequence>{{std::span<const int32_t>(t), &cache()}});
  }
  models::KvCache& cache() { return caches_[0]; }
  const models::BatchDecoder& decoder() const { return decoder_; }

 private:
  bool room(int64_t n) {  // blocks for n more positions, if the capacity has them
    const int64_t end = cache().length() + n;
    return end <= cache().resolved_capacity(m_.context_length()) && cache().ensure_positions(end);
  }
  const models::CausalLM& m_;
  models::BatchDecoder decoder_;
  std::vector<models::KvCache> caches_;
};

}  // namespace wick::test
