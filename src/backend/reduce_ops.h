// Reduction functors shared by the CPU and CUDA backends. Each describes one reduction
// as an accumulator type, an identity (init), a step that folds in element x at index i,
// a merge of two partial results (b always covers later indices than a), and a
// finalize that turns the accumulator into the stored value. Kernels may split a
// reduction into ordered chunks and merge them; ops with kInterleave may also fold
// elements into several interleaved accumulators (the vectorized fast path), which is
// only valid when the result does not depend on which index produced it.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "wick/dtype.h"

namespace wick::reduce {

// NaN test that works for integers (always false) and on the device.
template <class V>
WICK_HD constexpr bool is_nan(V v) {
  return v != v;
}

// Sums and products accumulate f16/bf16/f32 in float, f64 in double, and integers in
// uint64 (wrapping, well defined) before being stored in the input dtype.
template <class T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t, compute_t<T>>;

template <class T>
struct Sum {
  using acc_t = sum_acc_t<T>;
  static constexpr bool kInterleave = true;
  WICK_HD acc_t init() const { return acc_t(0); }
  WICK_HD acc_t step(acc_t a, T x, int64_t) const { return a + acc_t(x); }
  WICK_HD acc_t merge(acc_t a, acc_t b) const { return a + b; }
  WICK_HD T finalize(acc_t a, int64_t) const { return T(a); }
};

// Float dtypes only (the front end checks): the sum divided by the reduced count
// (NaN for an empty reduction, as PyTorch).
template <class T>
struct Mean : Sum<T> {
  WICK_HD T finalize(typename Sum<T>::acc_t a, int64_t count) const { return T(a / typename Sum<T>::acc_t(count)); }
};

template <class T>
struct Prod {
  using acc_t = sum_acc_t<T>;
  static constexpr bool kInterleave = true;
  WICK_HD acc_t init() const { return acc_t(1); }
  WICK_HD acc_t step(acc_t a, T x, int64_t) const { return a * acc_t(x); }
  WICK_HD acc_t merge(acc_t a, acc_t b) const { return a * b; }
  WICK_HD T finalize(acc_t a, int64_t) const { return T(a); }
};

// Min/max propagate NaN: once the accumulator is NaN it stays NaN.
template <class T, bool kMax>
struct MinMax {
  using acc_t = compute_t<T>;
  static constexpr bool kInterleave = true;
  WICK_HD acc_t init() const {
    if constexpr (std::numeric_limits<acc_t>::has_infinity)
      return kMax ? -std::numeric_limits<acc_t>::infinity() : std::numeric_limits<acc_t>::infinity();
    else
      return kMax ? std::numeric_limits<acc_t>::lowest() : std::numeric_limits<acc_t>::max();
  }
  WICK_HD acc_t merge(acc_t a, acc_t b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return (kMax ? b > a : b < a) ? b : a;
  }
  WICK_HD acc_t step(acc_t a, T x, int64_t) const { return merge(a, acc_t(x)); }
  WICK_HD T finalize(acc_t a, int64_t) const { return T(a); }
};

// The value and index of the first extreme element; the first NaN wins (PyTorch).
template <class V>
struct ArgAcc {
  V v;
  int64_t i;  // -1: nothing seen yet
};

template <class T, bool kMax>
struct ArgMinMax {
  using acc_t = ArgAcc<compute_t<T>>;
  static constexpr bool kInterleave = false;  // ties must resolve to the first index
  WICK_HD acc_t init() const { return {compute_t<T>(0), -1}; }
  WICK_HD acc_t merge(acc_t a, acc_t b) const {
    if (b.i < 0) return a;
    if (a.i < 0 || is_nan(a.v)) return a.i < 0 ? b : a;
    if (is_nan(b.v)) return b;
    return (kMax ? b.v > a.v : b.v < a.v) ? b : a;
  }
  WICK_HD acc_t step(acc_t a, T x, int64_t i) const { return merge(a, acc_t{compute_t<T>(x), i}); }
  WICK_HD int64_t finalize(acc_t a, int64_t) const { return a.i; }
};

}  // namespace wick::reduce
