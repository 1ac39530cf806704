// Row-vector addressing shared by the pooling and resampling kernels: each thread writes
// V = 16 / sizeof(D) consecutive outputs of ONE output row with one 16-byte store. The
// index math (vector -> plane, row, column) runs once per vector with host-computed
// FastDiv32 magic numbers instead of three hardware divisions per element, which is what
// kept the one-thread-per-element kernels issue-bound (bf16 as slow as f32).
#pragma once

#include <cstdint>

#include "backend/cuda/offset_calc.cuh"
#include "wick/tensor.h"

namespace wick::cuda {

// Outputs per thread: one 16-byte vector of D.
template <class D>
inline constexpr int kRowVec = int(16 / sizeof(D));

// V elements of D that load and store as one 16-byte access.
template <class D>
struct alignas(16) RowVec {
  D v[kRowVec<D>];
};

// Output geometry of the row-vector kernels: wo % V == 0 and every index below 2^31.
struct RowVecGeom {
  uint32_t vecs;          // output vectors in all (numel / V)
  uint32_t row_vecs;      // vectors per output row (wo / V)
  uint32_t ho;            // output rows per plane
  FastDiv32 by_row_vecs;  // vector index -> output row (over all planes)
  FastDiv32 by_ho;        // output row -> plane

  RowVecGeom(int64_t numel, int64_t ho_, int64_t wo, int v)
      : vecs(uint32_t(numel / v)),
        row_vecs(uint32_t(wo / v)),
        ho(uint32_t(ho_)),
        by_row_vecs(uint32_t(wo / v)),
        by_ho(uint32_t(ho_)) {}

  unsigned blocks(int threads) const { return unsigned((uint64_t(vecs) + threads - 1) / threads); }
};

// Where vector `vi` lies: its plane, its row inside the plane and its first column.
struct RowVecPos {
  uint32_t plane, oh, ow0;
};

template <int V>
__device__ __forceinline__ RowVecPos row_vec_pos(const RowVecGeom& g, uint32_t vi) {
  const uint32_t row = g.by_row_vecs.div(vi);  // over all planes
  const uint32_t plane = g.by_ho.div(row);
  return {plane, row - plane * g.ho, (vi - row * g.row_vecs) * uint32_t(V)};
}

// 16-byte alignment of a tensor's first element (storage + offset).
template <class D>
bool aligned16(const Tensor& t) {
  return (reinterpret_cast<uintptr_t>(t.storage_data()) + uintptr_t(t.offset()) * sizeof(D)) % 16 == 0;
}

// True when a row-vector kernel may write `out`: whole vectors per row, a 16-byte aligned
// first element (storage + offset) and 32-bit indices (`max_index`: the largest element
// count or index the kernel forms, padding included).
template <class D>
bool row_vec_fits(const Tensor& out, int64_t max_index) {
  return out.dim(3) % kRowVec<D> == 0 && aligned16<D>(out) && max_index < (int64_t(1) << 31);
}

}  // namespace wick::cuda
