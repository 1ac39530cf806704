// Reduction functors shared by the CPU and CUDA backends, marked host+device (WICK_HD) as
// the elementwise functors of elementwise_ops.h are. Each is a template over the compute
// type C (compute_t<T>: float for f16/bf16, the dtype itself otherwise); the kernels bring
// elements from their storage type to C before step() and finalize()'s result back
// (CPU: C(x) and T(v); CUDA: to_compute/from_compute through red::DeviceOp in
// cuda/reduce.cuh). An op has
//   acc_t                 the accumulator (f32 for the 16-bit floats, u64 for integer sums
//                         and products: wrapping, well defined)
//   kIndexResult          finalize() gives the int64 index (arg ops), not a value in C
//   kInterleave           elements may be folded into several interleaved accumulators
//                         (the CPU's vectorized path): only where the result does not
//                         depend on which index produced it
//   init()                the identity
//   step(acc, x, i)       fold in element x (in C) whose reduction index is i; the kernels
//                         call it with increasing i for any one accumulator
//   merge(a, b)           combine two partial accumulators; symmetric, so the kernels may
//                         merge chunks, lanes, warps and blocks in any order (the CUDA
//                         kernels merge in tree order)
//   finalize(acc, count)  the result, in C (or the index)
// The arg ops break ties by the smaller index, so the result is the FIRST extreme (and
// the first NaN), as PyTorch.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "backend/backend.h"
#include "wick/dtype.h"

namespace wick::reduce {

// NaN test that works for integers (always false) and on the device.
template <class V>
WICK_HD constexpr bool is_nan(V v) {
  return v != v;
}

// Sums and products accumulate in C (f32 for the 16-bit floats), integers in uint64.
template <class C>
using sum_acc_t = std::conditional_t<std::is_integral_v<C>, uint64_t, C>;

template <class C>
struct Sum {
  using acc_t = sum_acc_t<C>;
  static constexpr bool kIndexResult = false;
  static constexpr bool kInterleave = true;
  WICK_HD acc_t init() const { return acc_t(0); }
  WICK_HD acc_t step(acc_t a, C x, int64_t) const { return a + acc_t(x); }
  WICK_HD acc_t merge(acc_t a, acc_t b) const { return a + b; }
  WICK_HD C finalize(acc_t a, int64_t) const { return C(a); }
};

// Float dtypes only (with_reduce_op rejects integers): the sum divided by the reduced
// count (0/0 = NaN for an empty reduction, as PyTorch).
template <class C>
struct Mean : Sum<C> {
  using acc_t = sum_acc_t<C>;
  WICK_HD C finalize(acc_t a, int64_t count) const { return C(a / acc_t(count)); }
};

template <class C>
struct Prod {
  using acc_t = sum_acc_t<C>;
  static constexpr bool kIndexResult = false;
  static constexpr bool kInterleave = true;
  WICK_HD acc_t init() const { return acc_t(1); }
  WICK_HD acc_t step(acc_t a, C x, int64_t) const { return a * acc_t(x); }
  WICK_HD acc_t merge(acc_t a, acc_t b) const { return a * b; }
  WICK_HD C finalize(acc_t a, int64_t) const { return C(a); }
};

// Min/max propagate NaN: once a NaN is merged in the result stays NaN.
template <class C, bool kMax>
struct MinMax {
  using acc_t = C;
  static constexpr bool kIndexResult = false;
  static constexpr bool kInterleave = true;
  WICK_HD acc_t init() const {
    if constexpr (std::numeric_limits<C>::has_infinity)
      return kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
    else
      return kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
  }
  WICK_HD acc_t merge(acc_t a, acc_t b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return (kMax ? b > a : b < a) ? b : a;
  }
  WICK_HD acc_t step(acc_t a, C x, int64_t) const { return merge(a, x); }
  WICK_HD C finalize(acc_t a, int64_t) const { return a; }
};

template <class C>
struct ArgAcc {
  C v;
  int64_t i;  // -1: nothing seen yet
};

template <class C, bool kMax>
struct ArgMinMax {
  using acc_t = ArgAcc<C>;
  static constexpr bool kIndexResult = true;
  static constexpr bool kInterleave = false;  // ties must resolve to the first index
  WICK_HD acc_t init() const { return {C(0), -1}; }
  // Symmetric: NaN beats numbers, the more extreme value beats the other, and equal
  // candidates (including two NaNs) resolve to the smaller index.
  WICK_HD acc_t merge(acc_t a, acc_t b) const {
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
  // step() sees increasing i for any one accumulator, so a tie keeps the accumulator (the
  // earlier index): merge(a, {x, i}) without the index comparisons.
  WICK_HD acc_t step(acc_t a, C x, int64_t i) const {
    if (a.i < 0 || (!is_nan(a.v) && (is_nan(x) || (kMax ? x > a.v : x < a.v)))) return acc_t{x, i};
    return a;
  }
  WICK_HD int64_t finalize(acc_t a, int64_t) const { return a.i; }
};

// The stored result type of op Op over storage type S: the index, or S itself.
template <class Op, class S>
using out_t = std::conditional_t<Op::kIndexResult, int64_t, S>;

// The enum -> functor table, shared by every backend: fn is called with the functor of
// op for compute type C, and the caller's kernel runs it.
template <class C, class F>
decltype(auto) with_reduce_op(ReduceOp op, F&& fn) {
  switch (op) {
    case ReduceOp::Sum: return fn(Sum<C>{});
    case ReduceOp::Mean: {
      // The front end checks too; this keeps a direct backend call from summing integers.
      if constexpr (std::is_integral_v<C>)
        fail(ErrorKind::DTypeMismatch, "mean: expected a floating-point tensor, got ", dtype_v<C>);
      else
        return fn(Mean<C>{});
    }
    case ReduceOp::Prod: return fn(Prod<C>{});
    case ReduceOp::Min: return fn(MinMax<C, false>{});
    case ReduceOp::Max: return fn(MinMax<C, true>{});
    case ReduceOp::ArgMin: return fn(ArgMinMax<C, false>{});
    case ReduceOp::ArgMax: return fn(ArgMinMax<C, true>{});
  }
  fail(ErrorKind::Internal, "reduce: invalid op id ", int(op));
}

}  // namespace wick::reduce
