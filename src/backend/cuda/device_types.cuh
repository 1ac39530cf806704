// Device-side element types. wick::f16/bf16 are bit-compatible with CUDA's __half and
// __nv_bfloat16, which have hardware conversions; kernels use these storage types and
// compute in compute_t (float for the 16-bit floats).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "wick/dtype.h"

namespace wick::cuda {

template <class T>
struct dev_type {
  using type = T;
};
template <>
struct dev_type<f16> {
  using type = __half;
};
template <>
struct dev_type<bf16> {
  using type = __nv_bfloat16;
};
template <class T>
using dev_t = typename dev_type<T>::type;

template <class T>
inline constexpr bool is_dev_half_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// The type a kernel computes in for storage type S.
template <class S>
using dcompute_t = std::conditional_t<is_dev_half_v<S>, float, S>;

// Storage -> compute and back, with the hardware conversions for the 16-bit floats.
template <class S>
__device__ __forceinline__ dcompute_t<S> to_compute(S x) {
  if constexpr (std::is_same_v<S, __half>)
    return __half2float(x);
  else if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __bfloat162float(x);
  else
    return x;
}

template <class S, class C>
__device__ __forceinline__ S from_compute(C x) {
  if constexpr (std::is_same_v<S, __half>)
    return __float2half_rn(float(x));
  else if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __float2bfloat16_rn(float(x));
  else
    return S(x);
}

// Conversion between any two storage types with the semantics of backend/convert.h:
// float -> int truncates, NaN -> 0, saturates; int -> int wraps; one rounding to 16-bit.
template <class To, class From>
__device__ __forceinline__ To dconvert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (is_dev_half_v<From>) {
    return dconvert<To>(to_compute(x));
  } else if constexpr (std::is_same_v<To, __half>) {
    if constexpr (std::is_same_v<From, float>)
      return __float2half_rn(x);
    else
      return __double2half(double(x));  // rounds once from double (ints are exact there)
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    if constexpr (std::is_same_v<From, float>)
      return __float2bfloat16_rn(x);
    else
      return __double2bfloat16(double(x));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (x != x) return To(0);
    constexpr From lo = From(std::numeric_limits<To>::lowest());
    constexpr From hi = From(std::numeric_limits<To>::max());
    if (x <= lo) return std::numeric_limits<To>::lowest();
    if (x >= hi) return std::numeric_limits<To>::max();  // hi rounds up to 2^k in From
    return To(x);
  } else {
    return To(x);
  }
}

}  // namespace wick::cuda
