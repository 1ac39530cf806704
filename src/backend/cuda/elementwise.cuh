// The one elementwise launcher of the CUDA backend: out = f(in...) for any number of
// inputs, any strides, offsets and broadcasts. Contiguous operands take a vectorized
// path (16-byte loads and stores when aligned); the rest use OffsetCalc with 32-bit
// index math when the tensor allows and 64-bit when it needs it.
#pragma once

#include <array>
#include <utility>

#include "backend/cuda/launch.cuh"
#include "backend/cuda/offset_calc.cuh"
#include "wick/tensor.h"

namespace wick::cuda {

template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

template <int V, class F, class Out, class... In>
__device__ __forceinline__ void apply_vec(const F& f, Vec<Out, V>& r, const Vec<In, V>&... a) {
#pragma unroll
  for (int j = 0; j < V; ++j) r.v[j] = f(a.v[j]...);
}

template <int V, class F, class Out, class... In>
__global__ void ew_contiguous_kernel(int64_t n, F f, Out* __restrict__ out, const In* __restrict__... in) {
  const int64_t nvec = n / V;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < nvec; i += stride) {
    Vec<Out, V> r;
    apply_vec<V>(f, r, reinterpret_cast<const Vec<In, V>*>(in)[i]...);
    reinterpret_cast<Vec<Out, V>*>(out)[i] = r;
  }
  for (int64_t i = nvec * V + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = f(in[i]...);
}

template <class I, class F, class Out, class... In, size_t... Ks>
__device__ __forceinline__ void ew_one(const F& f, const I (&off)[1 + sizeof...(In)], Out* out,
                                       std::index_sequence<Ks...>, const In*... in) {
  out[off[0]] = f(in[off[Ks + 1]]...);
}

template <class I, class F, class Out, class... In>
__global__ void ew_strided_kernel(I n, OffsetCalc<1 + sizeof...(In), I> oc, F f, Out* __restrict__ out,
                                  const In* __restrict__... in) {
  const I stride = I(gridDim.x) * blockDim.x;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    I off[1 + sizeof...(In)];
    oc.get(i, off);
    ew_one<I>(f, off, out, std::index_sequence_for<In...>{}, in...);
  }
}

template <class T>
bool aligned_to(const T* p, int64_t offset, size_t bytes) {
  return (reinterpret_cast<uintptr_t>(p + offset) % bytes) == 0;
}

template <class Out, class... In, class F, size_t... Ks>
void launch_elementwise_impl(const char* op, cudaStream_t stream, const F& f, const Tensor& out,
                             const std::array<const Tensor*, sizeof...(In)>& ins, std::index_sequence<Ks...>) {
  constexpr int N = 1 + sizeof...(In);
  const Geometry<N> g({&out.layout(), &ins[Ks]->layout()...}, op);
  if (g.numel == 0) return;
  Out* o = dptr<Out>(out);
  const unsigned max_blocks = 132u * 16u;  // enough to fill any current GPU; loops stride the rest
  if (g.contiguous) {
    constexpr size_t widest = std::max({sizeof(Out), sizeof(In)...});
    constexpr int V = int(16 / widest) > 0 ? int(16 / widest) : 1;
    const bool aligned = aligned_to(o, g.base[0], sizeof(Out) * V) &&
                         (aligned_to(dptr<const In>(*ins[Ks]), ins[Ks]->offset(), sizeof(In) * V) && ...);
    if (aligned) {
      ew_contiguous_kernel<V><<<std::min(grid_for(g.numel, V * 4), max_blocks), kThreads, 0, stream>>>(
          g.numel, f, o + g.base[0], (dptr<const In>(*ins[Ks]) + ins[Ks]->offset())...);
    } else {
      ew_contiguous_kernel<1><<<std::min(grid_for(g.numel, 4), max_blocks), kThreads, 0, stream>>>(
          g.numel, f, o + g.base[0], (dptr<const In>(*ins[Ks]) + ins[Ks]->offset())...);
    }
  } else if (g.fits_32bit) {
    ew_strided_kernel<uint32_t><<<std::min(grid_for(g.numel, 4), max_blocks), kThreads, 0, stream>>>(
        uint32_t(g.numel), g.template calc<uint32_t>(), f, o, dptr<const In>(*ins[Ks])...);
  } else {
    ew_strided_kernel<int64_t><<<std::min(grid_for(g.numel, 4), max_blocks), kThreads, 0, stream>>>(
        g.numel, g.template calc<int64_t>(), f, o, dptr<const In>(*ins[Ks])...);
  }
  check_launch(op);
}

// out (storage type Out) = f(ins (storage types In...)) elementwise, all of one shape.
// f is a functor struct with a __device__ operator() (nvcc does not allow extended
// device lambdas inside the generic lambdas that dtype dispatch uses).
template <class Out, class... In, class F, class... Ts>
void launch_elementwise(const char* op, cudaStream_t stream, const F& f, const Tensor& out, const Ts&... ins) {
  static_assert(sizeof...(In) == sizeof...(Ts), "one storage type per input tensor");
  launch_elementwise_impl<Out, In...>(op, stream, f, out, std::array<const Tensor*, sizeof...(In)>{&ins...},
                                      std::index_sequence_for<In...>{});
}

}  // namespace wick::cuda
