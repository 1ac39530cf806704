// The device side of backend/lines.h: the lines of x along one dim, passed by value to
// the scan and sort kernels.
#pragma once

#include "backend/cuda/offset_calc.cuh"
#include "backend/lines.h"

namespace wick::cuda {

struct DeviceLines {
  OffsetCalc<1, int64_t> other;  // line index -> offset of its first element in x's storage
  int64_t n, count, x_stride, inner;

  explicit DeviceLines(const Lines& l, const char* op)
      : other{}, n(l.n), count(l.count), x_stride(l.x_stride), inner(l.inner) {
    WICK_CHECK(l.shape.size() <= size_t(kMaxDims), Unsupported, op, ": ", l.shape.size(),
               " non-collapsible dims besides the one it runs along (at most ", kMaxDims, " on cuda)");
    other.rank = int(l.shape.size());
    for (int d = 0; d < other.rank; ++d) {
      other.sizes[d] = l.shape[size_t(d)];
      other.strides[0][d] = l.strides[size_t(d)];
    }
    other.base[0] = l.x_base;
  }

  __device__ __forceinline__ int64_t x_offset(int64_t l) const {
    int64_t off[1];
    other.get(l, off);
    return off[0];
  }
  __device__ __forceinline__ int64_t out_offset(int64_t l, int64_t i, int64_t out_n) const {
    return Lines::out_offset(l, i, out_n, inner);
  }
};

}  // namespace wick::cuda
