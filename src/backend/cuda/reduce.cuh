// Shared machinery of the CUDA reductions: device op functors over the storage types of
// device_types.cuh, and warp/block merging of accumulators.
//
// An op is a struct with
//   acc_t                       the accumulator (f32 for the 16-bit floats, u64 for integer
//                               sums and products: wrapping, stored in the input dtype)
//   init()                      the identity
//   combine(acc, x, i)          fold in element x whose reduction index is i (the kernels
//                               call it with increasing i for any one accumulator)
//   merge(a, b)                 combine two partial accumulators
//   finalize(acc, count) -> out the stored value
// merge must not depend on the order of its arguments (the kernels merge lanes, warps and
// blocks in whatever order the tree gives): arg ops break ties by the smaller index, so
// the result is the FIRST extreme (and the first NaN), as PyTorch.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/cuda/device_types.cuh"

namespace wick::cuda::red {

template <class V>
__device__ __forceinline__ bool is_nan(V v) {
  return v != v;  // always false for integers
}

template <class S>
using sum_acc_t = std::conditional_t<std::is_integral_v<S>, uint64_t, dcompute_t<S>>;

template <class S>
struct Sum {
  using acc_t = sum_acc_t<S>;
  using out_t = S;
  __device__ __forceinline__ acc_t init() const { return acc_t(0); }
  __device__ __forceinline__ acc_t combine(acc_t a, S x, int64_t) const { return a + acc_t(to_compute(x)); }
  __device__ __forceinline__ acc_t merge(acc_t a, acc_t b) const { return a + b; }
  __device__ __forceinline__ S finalize(acc_t a, int64_t) const { return from_compute<S>(a); }
};

// Float dtypes only (the front end checks); 0/0 = NaN for an empty reduction, as PyTorch.
template <class S>
struct Mean : Sum<S> {
  using acc_t = sum_acc_t<S>;
  __device__ __forceinline__ S finalize(acc_t a, int64_t n) const { return from_compute<S>(a / acc_t(n)); }
};

template <class S>
struct Prod {
  using acc_t = sum_acc_t<S>;
  using out_t = S;
  __device__ __forceinline__ acc_t init() const { return acc_t(1); }
  __device__ __forceinline__ acc_t combine(acc_t a, S x, int64_t) const { return a * acc_t(to_compute(x)); }
  __device__ __forceinline__ acc_t merge(acc_t a, acc_t b) const { return a * b; }
  __device__ __forceinline__ S finalize(acc_t a, int64_t) const { return from_compute<S>(a); }
};

// Min/max propagate NaN: once a NaN is merged in the result stays NaN.
template <class S, bool kMax>
struct MinMax {
  using acc_t = dcompute_t<S>;
  using out_t = S;
  __device__ __forceinline__ acc_t init() const {
    if constexpr (std::numeric_limits<acc_t>::has_infinity)
      return kMax ? -std::numeric_limits<acc_t>::infinity() : std::numeric_limits<acc_t>::infinity();
    else
      return kMax ? std::numeric_limits<acc_t>::lowest() : std::numeric_limits<acc_t>::max();
  }
  __device__ __forceinline__ acc_t merge(acc_t a, acc_t b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return (kMax ? b > a : b < a) ? b : a;
  }
  __device__ __forceinline__ acc_t combine(acc_t a, S x, int64_t) const { return merge(a, acc_t(to_compute(x))); }
  __device__ __forceinline__ S finalize(acc_t a, int64_t) const { return from_compute<S>(a); }
};

template <class V>
struct ArgAcc {
  V v;
  int64_t i;  // -1: nothing seen yet
};

template <class S, bool kMax>
struct ArgMinMax {
  using C = dcompute_t<S>;
  using acc_t = ArgAcc<C>;
  using out_t = int64_t;
  __device__ __forceinline__ acc_t init() const { return {C(0), -1}; }
  // Symmetric: NaN beats numbers, the more extreme value beats the other, and equal
  // candidates (including two NaNs) resolve to the smaller index.
  __device__ __forceinline__ acc_t merge(acc_t a, acc_t b) const {
    if (b.i < 0) return a;
    if (a.i < 0) return b;
    const bool an = is_nan(a.v), bn = is_nan(b.v);
    if (an || bn) {
      if (an && bn) return a.i < b.i ? a : b;
      return an ? a : b;
    }
    if (a.v == b.v) return a.i < b.i ? a : b;
    return (kMax ? b.v > a.v : b.v < a.v) ? b : a;
  }
  // The kernels fold elements into any one accumulator in increasing index order, so a
  // tie keeps the accumulator (the earlier index) and no index comparison is needed.
  __device__ __forceinline__ acc_t combine(acc_t a, S x, int64_t i) const {
    const C v = to_compute(x);
    if (a.i < 0 || (!is_nan(a.v) && (is_nan(v) || (kMax ? v > a.v : v < a.v)))) return acc_t{v, i};
    return a;
  }
  __device__ __forceinline__ int64_t finalize(acc_t a, int64_t) const { return a.i; }
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
