// Strided addressing for kernels: N operands of one shape, dims collapsed on the host
// (backend/layout collapse_dims), sizes and strides passed BY VALUE in the kernel's
// parameters (no host-to-device copy per launch). Index type I is uint32_t when every
// offset fits (division by multiply-high with host-computed magic numbers), int64_t
// otherwise.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include "wick/error.h"
#include "wick/layout.h"

namespace wick::cuda {

inline constexpr int kMaxDims = 12;

// Unsigned 32-bit division by a divisor fixed on the host, valid for dividends below
// 2^31 (every 32-bit index here is): n / d = (umulhi(n, magic) + n) >> shift. A hardware
// 32-bit division is a ~20-instruction sequence; this is two.
struct FastDiv32 {
  uint32_t magic = 1, shift = 0;

  FastDiv32() = default;
  explicit FastDiv32(uint32_t d) {
    while (shift < 32 && (uint64_t(1) << shift) < d) ++shift;
    magic = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, magic) + n) >> shift; }
};

template <int N, class I>
struct OffsetCalc {
  int rank;
  I sizes[kMaxDims];
  I strides[N][kMaxDims];
  I base[N];
  FastDiv32 divs[kMaxDims];  // by sizes[d]; used only when I is uint32_t (set by set_divisors)

  // Fills divs from sizes; every host builder of a uint32_t calc calls it.
  void set_divisors() {
    for (int d = 0; d < rank; ++d) divs[d] = FastDiv32(uint32_t(sizes[d]));
  }

  // Element offsets (from each operand's storage start) of linear index i, which must be
  // below the product of the sizes (every caller's is): what is left of i at the outermost
  // dim is then its index there, without a division (for rank 1, none at all: a 64-bit
  // division is a ~70-instruction call, once per row of the row kernels).
  __device__ __forceinline__ void get(I i, I (&out)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) out[k] = base[k];
    for (int d = rank - 1; d >= 1; --d) {
      I q;
      if constexpr (std::is_same_v<I, uint32_t>)
        q = divs[d].div(i);
      else
        q = i / sizes[d];
      const I idx = i - q * sizes[d];
      i = q;
#pragma unroll
      for (int k = 0; k < N; ++k) out[k] += idx * strides[k][d];
    }
    if (rank > 0) {
#pragma unroll
      for (int k = 0; k < N; ++k) out[k] += i * strides[k][0];
    }
  }
};

// Collapsed geometry of N same-shaped layouts, built on the host.
template <int N>
struct Geometry {
  CollapsedDims dims;
  std::array<int64_t, N> base{};
  int64_t numel = 0;
  bool contiguous = false;  // one run of stride 1 in every operand
  bool fits_32bit = false;  // all indices and offsets below 2^31

  explicit Geometry(const std::array<const Layout*, N>& layouts, const char* op) {
    std::vector<const std::vector<int64_t>*> lists;
    for (const Layout* l : layouts) lists.push_back(&l->strides());
    dims = collapse_dims(layouts[0]->shape(), lists);
    numel = layouts[0]->numel();
    WICK_CHECK(int(dims.shape.size()) <= kMaxDims, Unsupported, op, ": ", dims.shape.size(),
               " non-collapsible dims (at most ", kMaxDims, " on cuda)");
    contiguous = true;
    int64_t max_offset = numel;
    for (int k = 0; k < N; ++k) {
      base[k] = layouts[k]->offset();
      int64_t extent = base[k];
      for (size_t d = 0; d < dims.shape.size(); ++d) extent += (dims.shape[d] - 1) * dims.strides[k][d];
      max_offset = std::max(max_offset, extent + 1);
      if (!(dims.shape.size() <= 1 && (dims.shape.empty() || dims.strides[k][0] == 1))) contiguous = false;
    }
    fits_32bit = max_offset < (int64_t(1) << 31);
  }

  template <class I>
  OffsetCalc<N, I> calc() const {
    OffsetCalc<N, I> c{};
    c.rank = int(dims.shape.size());
    for (int d = 0; d < c.rank; ++d) {
      c.sizes[d] = I(dims.shape[d]);
      for (int k = 0; k < N; ++k) c.strides[k][d] = I(dims.strides[k][d]);
    }
    for (int k = 0; k < N; ++k) c.base[k] = I(base[k]);
    if constexpr (std::is_same_v<I, uint32_t>) c.set_divisors();
    return c;
  }
};

}  // namespace wick::cuda
