// copy (strided -> strided, same dtype), cast (dtype conversion) and fill.
#include <cstring>

#include "backend/convert.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"

namespace wick {

namespace {
// A transposing copy (after collapsing, two dims where dst is contiguous along the inner
// one and src along the outer one, e.g. contiguous() of a transpose): row-by-row copying
// would stride through src a cache line per element, so copy 32x32 tiles instead, which
// reads and writes whole cache lines. Returns false when the layouts are not of that form.
bool copy_transposed_tiles(const Tensor& src, const Tensor& dst) {
  const CollapsedDims c = collapse_dims(dst.shape(), {&dst.strides(), &src.strides()});
  if (c.shape.size() != 2) return false;
  const int64_t rows = c.shape[0], cols = c.shape[1];
  const int64_t ds0 = c.strides[0][0], ds1 = c.strides[0][1], ss0 = c.strides[1][0], ss1 = c.strides[1][1];
  if (ds1 != 1 || ss0 != 1 || rows < 64 || cols < 64) return false;
  constexpr int64_t kTile = 32;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  dispatch(src.dtype(), [&]<class T>() {
    const T* s = cpu::base_ptr<const T>(src) + src.offset();
    T* d = cpu::base_ptr<T>(dst) + dst.offset();
    cpu::parallel_for(row_tiles, 4, [&](int64_t tb, int64_t te) {
      for (int64_t rt = tb; rt < te; ++rt) {
        const int64_t r0 = rt * kTile, r1 = std::min(rows, r0 + kTile);
        for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
          const int64_t c1 = std::min(cols, c0 + kTile);
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t k = c0; k < c1; ++k) d[r * ds0 + k] = s[r + k * ss1];
        }
      }
    });
  });
  return true;
}
}  // namespace

void CpuBackend::copy(const Tensor& src, const Tensor& dst) {
  if (copy_transposed_tiles(src, dst)) return;
  const size_t esize = src.element_size();
  const char* s = static_cast<const char*>(src.storage_data());
  char* d = static_cast<char*>(const_cast<void*>(dst.storage_data()));
  cpu::for_each_run<2>({&dst.layout(), &src.layout()}, [&](auto off, int64_t n, auto st) {
    if (st[0] == 1 && st[1] == 1) {
      std::memcpy(d + off[0] * esize, s + off[1] * esize, size_t(n) * esize);
      return;
    }
    dispatch(src.dtype(), [&]<class T>() {
      T* dp = reinterpret_cast<T*>(d) + off[0];
      const T* sp = reinterpret_cast<const T*>(s) + off[1];
      for (int64_t i = 0; i < n; ++i) dp[i * st[0]] = sp[i * st[1]];
    });
  });
}

void CpuBackend::cast(const Tensor& src, const Tensor& dst) {
  dispatch(src.dtype(), [&]<class From>() {
    dispatch(dst.dtype(), [&]<class To>() {
      const From* s = cpu::base_ptr<const From>(src);
      To* d = cpu::base_ptr<To>(dst);
      cpu::for_each_run<2>({&dst.layout(), &src.layout()}, [&](auto off, int64_t n, auto st) {
        To* dp = d + off[0];
        const From* sp = s + off[1];
        if (st[0] == 1 && st[1] == 1) {
          for (int64_t i = 0; i < n; ++i) dp[i] = convert<To>(sp[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) dp[i * st[0]] = convert<To>(sp[i * st[1]]);
        }
      });
    });
  });
}

void CpuBackend::fill(const Tensor& dst, Scalar value) {
  dispatch(dst.dtype(), [&]<class T>() {
    const T v = value.to<T>();
    T* d = cpu::base_ptr<T>(dst);
    cpu::for_each_run<1>({&dst.layout()}, [&](auto off, int64_t n, auto st) {
      T* p = d + off[0];
      if (st[0] == 1) {
        std::fill(p, p + n, v);
      } else {
        for (int64_t i = 0; i < n; ++i) p[i * st[0]] = v;
      }
    });
  });
}

}  // namespace wick
