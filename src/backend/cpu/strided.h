// The one strided iteration of the CPU backend. Given N operands of the same shape (any
// strides and offsets), their dims are collapsed where all are contiguous together, and
// fn is called once per run of the innermost dim:
//
//   fn(std::array<int64_t, N> offsets, int64_t count, std::array<int64_t, N> strides)
//
// offsets are element offsets of the run's first element in each operand's storage;
// strides the innermost strides (all 1 on contiguous data, which kernels specialize so
// the compiler vectorizes). The element range is split across threads.
#pragma once

#include <array>
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "wick/layout.h"

namespace wick::cpu {

template <size_t N, class F>
void for_each_run(const std::array<const Layout*, N>& layouts, F&& fn, int64_t grain = kElementwiseGrain) {
  const Shape& shape = layouts[0]->shape();
  const int64_t numel = shape.numel();
  if (numel == 0) return;
  std::vector<const std::vector<int64_t>*> stride_lists;
  for (const Layout* l : layouts) stride_lists.push_back(&l->strides());
  const CollapsedDims c = collapse_dims(shape, stride_lists);
  const size_t rank = c.shape.size();
  std::array<int64_t, N> base{};
  for (size_t k = 0; k < N; ++k) base[k] = layouts[k]->offset();
  if (rank == 0) {  // a single element
    std::array<int64_t, N> ones;
    ones.fill(1);
    fn(base, int64_t(1), ones);
    return;
  }
  const int64_t inner = c.shape[rank - 1];
  std::array<int64_t, N> inner_strides{};
  for (size_t k = 0; k < N; ++k) inner_strides[k] = c.strides[k][rank - 1];

  parallel_for(numel, grain, [&](int64_t begin, int64_t end) {
    // Multi-index of `begin` and the operands' offsets there.
    std::vector<int64_t> idx(rank);
    int64_t rem = begin;
    for (size_t d = rank; d-- > 0;) {
      idx[d] = rem % c.shape[d];
      rem /= c.shape[d];
    }
    std::array<int64_t, N> off = base;
    for (size_t k = 0; k < N; ++k)
      for (size_t d = 0; d < rank; ++d) off[k] += idx[d] * c.strides[k][d];
    int64_t pos = begin;
    while (pos < end) {
      const int64_t count = std::min(inner - idx[rank - 1], end - pos);
      fn(off, count, inner_strides);
      pos += count;
      // Advance: the inner index by count, carrying into the outer dims.
      for (size_t k = 0; k < N; ++k) off[k] += count * inner_strides[k];
      idx[rank - 1] += count;
      for (size_t d = rank - 1; d > 0 && idx[d] == c.shape[d]; --d) {
        for (size_t k = 0; k < N; ++k) off[k] += c.strides[k][d - 1] - c.shape[d] * c.strides[k][d];
        idx[d] = 0;
        ++idx[d - 1];
      }
    }
  });
}

// Typed pointer to element 0 of a tensor's storage (layout offsets count from here).
template <class T, class TensorT>
T* base_ptr(const TensorT& t) {
  return static_cast<T*>(const_cast<void*>(t.storage_data()));
}

}  // namespace wick::cpu
