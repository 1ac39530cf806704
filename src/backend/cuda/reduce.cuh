// The CUDA side of the reductions: the shared op functors (backend/reduce_ops.h, over the
// compute type) seen through a device storage type, and warp/block merging of their
// accumulators.
//
// DeviceOp<Op, S> is what the kernels of kernels_reduce.cu run, as the elementwise
// kernels run UnaryFn over the elementwise functors: step() takes an element in storage
// type S (f16/bf16 as __half/__nv_bfloat16) and converts it with to_compute, finalize()
// stores with from_compute. Its merge is the shared symmetric one, which the tree merges
// below need (lanes, warps and blocks meet in whatever order the tree gives).
#pragma once

#include <cstdint>
#include <cstring>

#include "backend/cuda/device_types.cuh"
#include "backend/reduce_ops.h"

namespace wick::cuda::red {

using reduce::is_nan;

template <class Op, class S>
struct DeviceOp {
  using acc_t = typename Op::acc_t;
  using out_t = reduce::out_t<Op, S>;
  Op op;
  __device__ __forceinline__ acc_t init() const { return op.init(); }
  __device__ __forceinline__ acc_t step(acc_t a, S x, int64_t i) const { return op.step(a, to_compute(x), i); }
  __device__ __forceinline__ acc_t merge(acc_t a, acc_t b) const { return op.merge(a, b); }
  __device__ __forceinline__ out_t finalize(acc_t a, int64_t n) const { return from_compute<out_t>(op.finalize(a, n)); }
};

// __shfl_down_sync of any trivially copyable accumulator, one 32-bit word at a time.
template <class A>
__device__ __forceinline__ A shfl_down(const A& a, int delta) {
  constexpr int kWords = int((sizeof(A) + 3) / 4);  // u8 min/max accumulators are 1 byte
  unsigned w[kWords] = {};
  memcpy(w, &a, sizeof(A));
#pragma unroll
  for (int k = 0; k < kWords; ++k) w[k] = __shfl_down_sync(0xffffffffu, w[k], delta);
  A r;
  memcpy(&r, w, sizeof(A));
  return r;
}

// Merges the accumulators of a full warp; lane 0 holds the result.
template <class Op, class A>
__device__ __forceinline__ A warp_merge(const Op& op, A a) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) a = op.merge(a, shfl_down(a, d));
  return a;
}

// Merges the accumulators of a whole block (blockDim.x a multiple of 32, at most 1024);
// thread 0 holds the result. Every thread of the block must call it. Ends with a barrier
// so the shared buffer may be reused by the next call.
template <class Op, class A>
__device__ __forceinline__ A block_merge(const Op& op, A a) {
  __shared__ alignas(16) unsigned char raw[32 * sizeof(A)];
  A* shared = reinterpret_cast<A*>(raw);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  a = warp_merge(op, a);
  if (lane == 0) shared[warp] = a;
  __syncthreads();
  if (warp == 0) {
    a = lane < warps ? shared[lane] : op.init();
    a = warp_merge(op, a);
  }
  __syncthreads();
  return a;
}

}  // namespace wick::cuda::red
