// Tensor-parallel GPT-2 over the GPUs of one process (Megatron-style, docs/tensor_parallel.md).
//
// Rank r of N holds heads [r*H/N, (r+1)*H/N) of every attention block (c_attn's q, k, v
// columns, c_proj's matching input rows) and 1/N of every MLP's hidden units (c_fc's
// columns, c_proj's rows). Each block ends in one all_reduce(Sum) over NCCL. Embeddings,
// layer norms and the LM head are replicated. forward() matches the single-device model (LlamaModel) on one
// device up to summation order. A Gpt2TpCache (each rank's heads' keys and values on that
// rank's device) makes step-by-step generation cost O(T) per token, as KvCache does.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "wick/models/gpt2.h"
#include "wick/tensor.h"

namespace wick::models {

// Keys and values of every layer for the positions seen so far, split like the heads: rank
// r's buffers (B, H/N, n_positions, head_dim) live on devices()[r]. Allocated on first use,
// then written in place.
class Gpt2TpCache {
 public:
  int64_t length() const { return length_; }  // positions cached
  int64_t batch() const { return batch_; }
  // Forgets the cached positions (keeps the buffers for reuse with the same batch size).
  void clear() { length_ = 0; }

 private:
  friend class Gpt2TensorParallel;
  std::vector<std::vector<Tensor>> k_, v_;  // [rank][layer]
  int64_t length_ = 0, batch_ = 0;
};

class Gpt2TensorParallel {
 public:
  // Loads a GPT-2 folder (config.json + model.safetensors), slicing
  // each rank's shard from the memory-mapped file and uploading only that to devices[rank].
  // devices: distinct CUDA devices, one rank each (a single one is fine). Throws
  // InvalidArgument for an empty list, a non-CUDA or repeated device, or an n_head / MLP
  // width not divisible by devices.size() (all checked before NCCL is touched),
  // DTypeMismatch for a non-float dtype, and Device / Unsupported from NCCL.
  static Gpt2TensorParallel load(const std::filesystem::path& dir, const std::vector<Device>& devices,
                                 DType dtype = DType::F32);

  // ids (B, T) integer token ids (any device) -> logits (B, T, vocab_size), or (B, 1,
  // vocab_size) with last_only, in the model dtype on devices()[0]. Runs each rank on its own
  // thread (NCCL blocks a rank's host thread) and rethrows a rank's error here as
  // wick::Error. Not for concurrent calls on one model: the ranks share communicators.
  Tensor forward(const Tensor& ids, bool last_only = false);
  // The same with a cache: ids are the positions after the cached ones, and the cache is
  // extended by T (as a single-device forward with a KvCache).
  Tensor forward(const Tensor& ids, Gpt2TpCache& cache, bool last_only = false);

  const Gpt2Config& config() const;
  const std::vector<Device>& devices() const;
  int world_size() const { return int(devices().size()); }
  DType dtype() const;

  Gpt2TensorParallel(Gpt2TensorParallel&&) noexcept;
  Gpt2TensorParallel& operator=(Gpt2TensorParallel&&) noexcept;
  ~Gpt2TensorParallel();

 private:
  struct State;  // shards and communicators (src/models/gpt2_tp.cpp)
  explicit Gpt2TensorParallel(std::unique_ptr<State> state);
  Tensor run(const Tensor& ids, Gpt2TpCache* cache, bool last_only);
  std::unique_ptr<State> state_;
};

}  // namespace wick::models
