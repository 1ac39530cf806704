// BatchDecoder: the steady state of a server, several sequences decoding one token each,
// as one static-shape step (CausalLM::decode_batch_step) over their pool of caches
// (KvCache::pooled). On CUDA each lane count's step is recorded into a CUDA graph the first
// time it runs and replayed after that, so a step costs one launch and one small
// host-to-device copy instead of hundreds of launches. Lane counts are rounded up to a few
// sizes (lanes_for: 1, 2, 4, 8, multiples of 8 up to 64, then of 32), the padding lanes
// computing into the pool's spare row; on the CPU a step runs as many lanes as sequences.
//
// One thread at a time (the engine's): step() replays recordings that write fixed memory.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "wick/graph.h"
#include "wick/models/causal_lm.h"

namespace wick::models {

class BatchDecoder {
 public:
  // cuda_graphs false: the steps run op by op on CUDA too (for comparison and debugging).
  explicit BatchDecoder(const CausalLM& model, bool cuda_graphs = true);

  // Whether step() takes seqs: the model has a batched step, and seqs are 1 to P sequences
  // of one token each whose caches are distinct slots of one pool (the pool of the
  // decoder's earlier steps, if any) with a position left.
  bool takes(std::span<const BatchSequence> seqs) const;
  // Each sequence's token through the model; returns its logits, (seqs.size(), vocab_size)
  // f32 on the model device, and advances each cache by one position. InvalidArgument
  // naming the reason when !takes(seqs); nothing is changed then. The logits are a view of
  // the recorded step's output, valid until the next step() (which rewrites it): use them,
  // or clone() them, before that (work queued on the device before the next step is fine).
  Tensor step(std::span<const BatchSequence> seqs);
  // Records the steps of every lane count up to max_lanes now, for the pool pooled_cache
  // belongs to (a server at start-up: no recording later, while other threads may use the
  // device). CPU: nothing to do.
  void prepare(const KvCache& pooled_cache, int64_t max_lanes);

  // The lane count a step of n sequences runs with, for a pool of `slots` slots.
  int64_t lanes_for(int64_t n, int64_t slots) const;
  size_t recorded_steps() const { return steps_.size(); }

 private:
  struct Recorded {
    BatchDecodeState state;
    CudaGraph graph;  // undefined when the step runs op by op
  };
  Recorded& recording(const KvCache& pooled_cache, int64_t lanes);
  const CausalLM& model_;
  bool graphs_;
  std::shared_ptr<const std::vector<KvCache::Layer>> pool_;
  std::map<int64_t, Recorded> steps_;
};

}  // namespace wick::models
