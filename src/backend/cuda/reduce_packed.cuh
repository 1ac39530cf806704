// Packed fast paths of the 16-bit (f16/bf16) min/max and argmin/argmax row reductions and
// of the 16-bit min/max column reductions (at the end of this file).
//
// The generic row path converts every element to f32 and folds it alone: per 16-byte
// vector 8 conversions and 8 compare/selects (argmax: also index bookkeeping), which
// leaves those kernels instruction-bound. Here a vector is folded as four packed pairs
// with the NaN-propagating HMNMX2 (__hmax2_nan / __hmin2_nan, sm_80+): three packed ops
// give the vector's extreme pair.
//  - min/max keep one packed pair per accumulator slot (one more op per vector) and merge
//    its two lanes into the f32 accumulator once per row segment.
//  - argmin/argmax reduce the pair to the vector's extreme (one scalar op, one
//    conversion) and fold that into one accumulator of the op's own type with
//    op.step, using the VECTOR index as the index. Folding a vector's first extreme
//    element is exactly folding its elements one by one (same value, NaN wins, ties keep
//    the earlier one), and the vector index orders like the element indices it stands
//    for. The winning vector stays in registers (four selects per vector: no dependent
//    reload), and once per row segment its vector index becomes the index of its first
//    element equal to the extreme (or of its first NaN).
// A folder is driven by the row kernel: fold(u, v, j) for vector j into slot u (j
// increasing, apart from repeats of a vector already folded, which kRepeatSafe allows),
// then finish(op, vidx0, acc) merges what it holds into the kernel's accumulators
// (vidx0: the reduction index of vector 0's first element).
//
// NaN and ties behave as in the element path: max/min return NaN (canonical) if any
// element is NaN; argmax/argmin return the first NaN, else the first extreme (ties by ==,
// so -0.0 and +0.0 tie). One difference in sign only: when the extreme is a zero of both
// signs, packed max returns +0.0 and min -0.0 (IEEE 754-2019 maximum/minimum), where the
// element path returns whichever zero its merge order met first.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/elementwise.cuh"
#include "backend/cuda/reduce.cuh"

namespace wick::cuda::red {

template <class S>
using pair_t = std::conditional_t<std::is_same_v<S, __half>, __half2, __nv_bfloat162>;

// The extreme of two 16-bit values or (lane-wise) two packed pairs; a NaN in either input
// gives the canonical NaN.
template <bool kMax, class T>
__device__ __forceinline__ T extreme_nan(T a, T b) {
  if constexpr (std::is_same_v<T, __half2> || std::is_same_v<T, __nv_bfloat162>)
    return kMax ? __hmax2_nan(a, b) : __hmin2_nan(a, b);
  else
    return kMax ? __hmax_nan(a, b) : __hmin_nan(a, b);
}

// The extreme pair of a 16-byte vector: lane 0 over its even elements, lane 1 the odd.
template <bool kMax, class S>
__device__ __forceinline__ pair_t<S> vector_extreme2(const Vec<S, 8>& v) {
  const pair_t<S>* w = reinterpret_cast<const pair_t<S>*>(v.v);  // Vec is 16-byte aligned
  return extreme_nan<kMax>(extreme_nan<kMax>(w[0], w[1]), extreme_nan<kMax>(w[2], w[3]));
}

// The identity pair of a packed min (+inf, +inf) or max (-inf, -inf).
template <bool kMax, class S>
__device__ __forceinline__ pair_t<S> identity_pair() {
  const S id = from_compute<S>(kMax ? -INFINITY : INFINITY);
  return pair_t<S>(id, id);
}

template <class S, bool kMax, int K>
struct PackedMinMaxFolder {
  static constexpr bool kRepeatSafe = true;  // max(a, a) = a
  pair_t<S> best[K];

  template <class Op>
  __device__ __forceinline__ explicit PackedMinMaxFolder(const Op&) {
#pragma unroll
    for (int u = 0; u < K; ++u) best[u] = identity_pair<kMax, S>();
  }
  __device__ __forceinline__ void fold(int u, const Vec<S, 8>& v, int64_t) {
    best[u] = extreme_nan<kMax>(best[u], vector_extreme2<kMax>(v));
  }
  template <class Op, class A>
  __device__ __forceinline__ void finish(const Op& op, int64_t, A (&acc)[K]) const {
#pragma unroll
    for (int u = 0; u < K; ++u) {
      acc[u] = op.merge(acc[u], to_compute(best[u].x));
      acc[u] = op.merge(acc[u], to_compute(best[u].y));
    }
  }
};

// One tracker for all slots: the kernel calls fold() in increasing j overall (slot by
// slot within a round of loads, rounds in order; only repeats of a vector already folded
// come out of order), which op.step needs, and a single (value, index) keeps the
// kernel within its register budget.
template <class Op, class S, bool kMax, int K>
struct PackedArgFolder {
  using A = typename Op::acc_t;
  // A vector folded again (any index) is never strictly better than best, which already
  // holds it: no change, and `won` is only ever rewritten with the same vector.
  static constexpr bool kRepeatSafe = true;
  Op op;
  A best;     // .i: index of the VECTOR holding the first extreme so far (-1: none yet)
  uint4 won;  // that vector, kept so finish() needs no dependent reload

  __device__ __forceinline__ explicit PackedArgFolder(const Op& o) : op(o), best(o.init()), won{} {}
  __device__ __forceinline__ void fold(int, const Vec<S, 8>& v, int64_t j) {
    const pair_t<S> m = vector_extreme2<kMax>(v);
    best = op.step(best, extreme_nan<kMax>(m.x, m.y), j);
    const bool took = best.i == j;  // j grows with every call: equal only when just taken
    const uint4 w = *reinterpret_cast<const uint4*>(&v);
    won = uint4{took ? w.x : won.x, took ? w.y : won.y, took ? w.z : won.z, took ? w.w : won.w};
  }
  // vidx0: reduction index of the first element of vector 0.
  __device__ __forceinline__ void finish(const Op&, int64_t vidx0, A (&acc)[K]) const {
    if (best.i < 0) return;
    const Vec<S, 8> v = *reinterpret_cast<const Vec<S, 8>*>(&won);
    const bool nan = is_nan(best.v);
    int e = 7;  // the vector holds the extreme, so some element matches
#pragma unroll
    for (int k = 6; k >= 0; --k) {
      const auto c = to_compute(v.v[k]);
      if (nan ? is_nan(c) : c == best.v) e = k;
    }
    acc[0] = op.merge(acc[0], A{best.v, vidx0 + best.i * 8 + e});
  }
};

// The packed folder for row reductions of op Op with K accumulator slots, or void where
// the op or storage type has none (the row kernel then folds element by element).
template <class Op, int K>
struct PackedRowFolder {
  using type = void;
};
template <class S, bool kMax, int K>
requires is_dev_half_v<S>
struct PackedRowFolder<DeviceOp<reduce::MinMax<float, kMax>, S>, K> {
  using type = PackedMinMaxFolder<S, kMax, K>;
};
template <class S, bool kMax, int K>
requires is_dev_half_v<S>
struct PackedRowFolder<DeviceOp<reduce::ArgMinMax<float, kMax>, S>, K> {
  using type = PackedArgFolder<DeviceOp<reduce::ArgMinMax<float, kMax>, S>, S, kMax, K>;
};
// The specializations match the shared functors by their compute type (float for both
// 16-bit floats); a change there would silently drop the packed path, hence the check.
static_assert(!std::is_void_v<PackedRowFolder<DeviceOp<reduce::ArgMinMax<float, true>, __nv_bfloat16>, 4>::type>);

// Column reductions: a thread serves 8 adjacent outputs, loading them as one 16-byte vector
// per reduction index. 16-bit min/max keep those outputs as four packed pairs (four HMNMX2
// per vector instead of eight conversions and NaN-aware compare/selects, which left bf16
// max over the first dim at 81% of the copy bandwidth) and merge them into the kernel's
// f32 accumulators at the end; same NaN and zero-sign rules as the row folder above.
template <class S, bool kMax>
struct PackedColumnMinMax {
  pair_t<S> best[4];

  __device__ __forceinline__ PackedColumnMinMax() {
#pragma unroll
    for (int q = 0; q < 4; ++q) best[q] = identity_pair<kMax, S>();
  }
  __device__ __forceinline__ void fold(const Vec<S, 8>& v) {
    const pair_t<S>* w = reinterpret_cast<const pair_t<S>*>(v.v);
#pragma unroll
    for (int q = 0; q < 4; ++q) best[q] = extreme_nan<kMax>(best[q], w[q]);
  }
  template <class Op, class A>
  __device__ __forceinline__ void finish(const Op& op, A (&acc)[8]) const {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      acc[2 * q] = op.merge(acc[2 * q], to_compute(best[q].x));
      acc[2 * q + 1] = op.merge(acc[2 * q + 1], to_compute(best[q].y));
    }
  }
};

// The packed folder for column reductions of op Op with OV outputs per thread, or void.
template <class Op, int OV>
struct PackedColumnFolder {
  using type = void;
};
template <class S, bool kMax>
requires is_dev_half_v<S>
struct PackedColumnFolder<DeviceOp<reduce::MinMax<float, kMax>, S>, 8> {
  using type = PackedColumnMinMax<S, kMax>;
};

}  // namespace wick::cuda::red
