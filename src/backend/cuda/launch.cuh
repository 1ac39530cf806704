// Launch configuration and the post-launch check shared by every kernel family.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"

namespace wick::cuda {

inline constexpr int kThreads = 256;

// Blocks for n items at `per_thread` items per thread, capped for grid-stride loops.
inline unsigned grid_for(int64_t n, int per_thread = 1) {
  const int64_t blocks = (n + int64_t(kThreads) * per_thread - 1) / (int64_t(kThreads) * per_thread);
  return unsigned(std::clamp<int64_t>(blocks, 1, int64_t(1) << 30));
}

// The current device's multiprocessor count (asked once per device, then cached).
int current_sm_count();

// A grid-stride loop's block cap: blocks_per_sm resident blocks on every multiprocessor of
// the current device, so the grid fills the GPU and the loops stride over the rest.
inline unsigned resident_blocks(int blocks_per_sm = 16) { return unsigned(current_sm_count() * blocks_per_sm); }

// Checks the launch itself (bad configuration); builds a message only on failure.
inline void check_launch(const char* op) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) [[unlikely]]
    fail(ErrorKind::Device, op, ": kernel launch failed: ", cudaGetErrorString(err));
}

inline CudaBackend& backend_of(const Device& d) { return cuda_backend_impl(d.index); }

// Typed device pointer to element 0 of a tensor's storage.
template <class T, class TensorT>
T* dptr(const TensorT& t) {
  return static_cast<T*>(const_cast<void*>(t.storage_data()));
}

}  // namespace wick::cuda
