// The geometry of the ops that work along one dim on independent lines (cumsum/cumprod,
// sort, topk), shared by the CPU and CUDA backends.
//
// x (any strides and offset) is `count` lines of n elements: line l is row-major over x's
// other dims (collapsed), starts at x_offset(l) in x's storage and steps x_stride along
// dim. The outputs are contiguous with x's shape except that dim has out_n elements (n,
// or k for topk), so element i of line l sits at out_offset(l, i, out_n).
#pragma once

#include <cstdint>
#include <vector>

#include "wick/half.h"  // WICK_HD
#include "wick/tensor.h"

namespace wick {

struct Lines {
  int64_t n = 0;                        // elements per line: x.shape[dim]
  int64_t count = 0;                    // number of lines
  int64_t x_stride = 0;                 // x's stride along dim
  int64_t inner = 1;                    // product of the dims after dim: the outputs' stride along dim
  int64_t x_base = 0;                   // x.offset()
  std::vector<int64_t> shape, strides;  // x's other dims, collapsed (line order)

  Lines(const Tensor& x, size_t dim) : n(x.shape()[dim]), x_stride(x.strides()[dim]), x_base(x.offset()) {
    std::vector<int64_t> s, st;
    count = 1;
    for (size_t d = 0; d < x.rank(); ++d) {
      if (d == dim) continue;
      s.push_back(x.shape()[d]);
      st.push_back(x.strides()[d]);
      count *= x.shape()[d];
      if (d > dim) inner *= x.shape()[d];
    }
    const CollapsedDims c = collapse_dims(Shape(s), {&st});
    shape = c.shape;
    strides = c.strides.empty() ? std::vector<int64_t>{} : c.strides[0];
  }

  int64_t x_offset(int64_t l) const {
    int64_t off = x_base;
    for (size_t d = shape.size(); d-- > 0;) {
      off += (l % shape[d]) * strides[d];
      l /= shape[d];
    }
    return off;
  }

  // The lines of x in order are (outer, inner) pairs; the output keeps that order with dim
  // of out_n elements between them.
  static WICK_HD int64_t out_offset(int64_t l, int64_t i, int64_t out_n, int64_t inner) {
    return (l / inner) * out_n * inner + i * inner + l % inner;
  }
  int64_t out_offset(int64_t l, int64_t i, int64_t out_n) const { return out_offset(l, i, out_n, inner); }
};

}  // namespace wick
