// Element conversion between any two dtypes, shared by the CPU and CUDA backends.
// Floats to integers truncate toward zero; NaN gives 0; values outside the target's
// range saturate to its nearest limit. Integers to integers wrap modulo 2^bits, as
// C++ and PyTorch do. Narrowing to f16/bf16 rounds to nearest even, once.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "wick/half.h"

namespace wick {

template <class T>
struct is_half_type : std::bool_constant<std::is_same_v<T, f16> || std::is_same_v<T, bf16>> {};

template <class To, class From>
WICK_HD inline To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (is_half_type<From>::value) {
    return convert<To>(float(x));
  } else if constexpr (is_half_type<To>::value) {
    if constexpr (std::is_integral_v<From>)
      return To(double(x));  // exact for |x| < 2^53, then one rounding
    else
      return To(x);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (x != x) return To(0);
    // Compare in From's precision against the limits; the cast is exact at the bounds
    // for the limits used here (0 and 2^k - 1 or -2^63 which are powers of two apart).
    constexpr From lo = From(std::numeric_limits<To>::lowest());
    constexpr From hi_excl = From(std::numeric_limits<To>::max()) + From(1) == From(std::numeric_limits<To>::max())
                                 ? From(std::numeric_limits<To>::max())
                                 : From(std::numeric_limits<To>::max()) + From(1);
    if (x <= lo) return std::numeric_limits<To>::lowest();
    if (x >= hi_excl) return std::numeric_limits<To>::max();
    return To(x);
  } else {
    return To(x);  // int<->int wraps (two's complement), int->float rounds to nearest
  }
}

}  // namespace wick
