// One rank's share of a tensor-parallel GPT-2 (Megatron-style sharding, see
// docs/tensor_parallel.md) and its forward pass. Internal: Gpt2TensorParallel runs one of
// these per GPU with an NCCL all_reduce; the tests also run them on the CPU with a
// host-side all_reduce, which checks the sharding arithmetic without a GPU.
#pragma once

#include <functional>
#include <vector>

#include "wick/io.h"
#include "wick/models/gpt2.h"
#include "wick/tensor.h"

namespace wick::models {

// Sums t over all ranks in place; every rank calls it the same number of times, in order.
using AllReduceSum = std::function<void(Tensor&)>;

// Throws InvalidArgument unless the head count and the MLP width divide by world.
void check_tensor_parallel_sizes(const Gpt2Config& c, int world);

struct Gpt2Shard {
  struct Layer {
    // Column-parallel (c_attn, c_fc): this rank's output columns and their bias.
    // Row-parallel (attn c_proj, mlp c_proj): this rank's input rows; the bias is defined
    // on rank 0 only so that the all_reduce adds it once.
    Tensor ln1_w, ln1_b, attn_w, attn_b, attn_proj_w, attn_proj_b, ln2_w, ln2_b, fc_w, fc_b, mlp_proj_w, mlp_proj_b;
  };

  Gpt2Config config;
  int rank = 0, world = 1;
  Device device;
  DType dtype = DType::F32;
  // Replicated on every rank: embeddings, layer norms, LM head.
  Tensor wte, wpe, ln_f_w, ln_f_b, lm_head;
  std::vector<Layer> layers;

  // Slices rank's shard out of the (memory-mapped) checkpoint f, then converts and uploads
  // only that slice. Sizes must pass check_tensor_parallel_sizes.
  static Gpt2Shard load(const safetensors::File& f, const Gpt2Config& c, int rank, int world, Device device,
                        DType dtype);

  // This rank's keys and values, one (B, H/N, n_positions, head_dim) buffer per layer.
  struct KvBuffers {
    std::vector<Tensor> k, v;
  };
  KvBuffers empty_cache(int64_t batch) const;

  // ids (B, T) -> logits (B, T or 1, vocab) on rank 0; an undefined Tensor on the other
  // ranks (the final norm and the LM head run on rank 0 alone). With a cache, ids are the
  // positions after `past` cached ones and their keys and values are written into it. ids
  // and the cache must already be validated (shape, length, buffers): an error on one rank
  // would leave the others waiting in a collective.
  Tensor forward(const Tensor& ids, bool last_only, const AllReduceSum& all_reduce, KvBuffers* cache = nullptr,
                 int64_t past = 0) const;
};

}  // namespace wick::models
