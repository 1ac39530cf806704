// Indexing kernels: index_select, gather, scatter (set/add) and index_add.
//
// Every index is loaded into an int64 list and bounds-checked before anything is written
// (negative indices are errors, not Python-style wraps), so a bad index raises
// IndexOutOfRange naming the op, the value and the bound.
//
// Each kernel iterates the dims other than `dim` (collapsed where all operands are
// contiguous together) and handles `dim` itself explicitly. Work is split so that two
// threads never write the same output element: gather/index_select split over output
// positions, scatter/index_add over the non-`dim` positions (each owned by one thread;
// duplicates along `dim` are applied in order, so for scatter the last write wins).
#include <array>
#include <vector>

#include "backend/convert.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"

namespace wick {

namespace {

// Reads indices (u8/u32/i64, any strides) in row-major order and checks 0 <= i < bound.
std::vector<int64_t> load_indices(const char* op, const Tensor& index, size_t dim, int64_t bound) {
  std::vector<int64_t> v = index.to_vector<int64_t>();
  for (int64_t i : v)
    WICK_CHECK(i >= 0 && i < bound, IndexOutOfRange, op, ": index ", i, " out of range for dim ", dim, " of size ",
               bound);
  return v;
}

// The dims of `shape` other than `dim`, collapsed over N stride lists, split into an
// innermost run (length inner, strides inner_stride) and the rows above it.
template <size_t N>
struct Rest {
  std::vector<int64_t> shape;                   // collapsed outer dims (without the run)
  std::array<std::vector<int64_t>, N> strides;  // per operand, for `shape`
  int64_t inner = 1;                            // run length
  std::array<int64_t, N> inner_stride{};        // per operand
  int64_t rows = 1;

  Rest(const Shape& full, size_t dim, const std::array<const std::vector<int64_t>*, N>& all_strides) {
    std::vector<int64_t> s;
    std::array<std::vector<int64_t>, N> st;
    for (size_t d = 0; d < full.rank(); ++d) {
      if (d == dim) continue;
      s.push_back(full[d]);
      for (size_t k = 0; k < N; ++k) st[k].push_back((*all_strides[k])[d]);
    }
    std::vector<const std::vector<int64_t>*> lists;
    for (auto& l : st) lists.push_back(&l);
    CollapsedDims c = collapse_dims(Shape(s), lists);
    shape = c.shape;
    for (size_t k = 0; k < N; ++k) strides[k] = c.strides.empty() ? std::vector<int64_t>{} : c.strides[k];
    if (!shape.empty()) {
      inner = shape.back();
      shape.pop_back();
      for (size_t k = 0; k < N; ++k) {
        inner_stride[k] = strides[k].back();
        strides[k].pop_back();
      }
    }
    for (int64_t x : shape) rows *= x;
    if (Shape(s).numel() == 0) rows = 0;
  }
  // Offset of row r (row-major over `shape`) in operand k.
  int64_t offset(int64_t r, size_t k) const {
    int64_t off = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      off += (r % shape[d]) * strides[k][d];
      r /= shape[d];
    }
    return off;
  }
};

template <class T>
T add_values(T a, T b) {
  if constexpr (std::is_integral_v<T>)  // wrap modulo 2^bits without signed overflow
    return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
  else
    return T(compute_t<T>(a) + compute_t<T>(b));
}

constexpr int64_t kGrain = cpu::kElementwiseGrain;

}  // namespace

void CpuBackend::index_select(const Tensor& src, size_t dim, const Tensor& indices, const Tensor& out) {
  const std::vector<int64_t> idx = load_indices("index_select", indices, dim, src.shape()[dim]);
  const Rest<2> rest(out.shape(), dim, {&out.strides(), &src.strides()});
  const int64_t n = int64_t(idx.size()), units = n * rest.rows;
  const int64_t so = out.strides()[dim], ss = src.strides()[dim];
  dispatch(src.dtype(), [&]<class T>() {
    T* o = cpu::base_ptr<T>(out);
    const T* s = cpu::base_ptr<const T>(src);
    cpu::parallel_for(units, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, rest.inner)),
                      [&](int64_t b, int64_t e) {
                        for (int64_t u = b; u < e; ++u) {
                          const int64_t i = u / rest.rows, r = u % rest.rows;
                          T* op = o + out.offset() + i * so + rest.offset(r, 0);
                          const T* sp = s + src.offset() + idx[size_t(i)] * ss + rest.offset(r, 1);
                          const auto [to, ts] = rest.inner_stride;
                          if (to == 1 && ts == 1)
                            std::copy(sp, sp + rest.inner, op);
                          else
                            for (int64_t k = 0; k < rest.inner; ++k) op[k * to] = sp[k * ts];
                        }
                      });
  });
}

void CpuBackend::gather(const Tensor& src, size_t dim, const Tensor& index, const Tensor& out) {
  const std::vector<int64_t> idx = load_indices("gather", index, dim, src.shape()[dim]);
  // The loaded indices are contiguous in index's shape.
  const std::vector<int64_t> istrides = Layout::contiguous_strides(index.shape());
  const Rest<3> rest(index.shape(), dim, {&out.strides(), &istrides, &src.strides()});
  const int64_t n = index.shape()[dim];
  const int64_t so = out.strides()[dim], si = istrides[dim], ss = src.strides()[dim];
  dispatch(src.dtype(), [&]<class T>() {
    T* o = cpu::base_ptr<T>(out);
    const T* s = cpu::base_ptr<const T>(src);
    cpu::parallel_for(rest.rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, rest.inner * n)),
                      [&](int64_t b, int64_t e) {
                        for (int64_t r = b; r < e; ++r) {
                          T* op = o + out.offset() + rest.offset(r, 0);
                          const int64_t* ip = idx.data() + rest.offset(r, 1);
                          const T* sp = s + src.offset() + rest.offset(r, 2);
                          const auto [to, ti, ts] = rest.inner_stride;
                          for (int64_t j = 0; j < n; ++j)
                            for (int64_t k = 0; k < rest.inner; ++k)
                              op[j * so + k * to] = sp[ip[j * si + k * ti] * ss + k * ts];
                        }
                      });
  });
}

void CpuBackend::scatter(const Tensor& dst, size_t dim, const Tensor& index, const Tensor& src, ScatterMode mode) {
  const char* op_name = mode == ScatterMode::Add ? "scatter_add" : "scatter";
  const std::vector<int64_t> idx = load_indices(op_name, index, dim, dst.shape()[dim]);
  const std::vector<int64_t> istrides = Layout::contiguous_strides(index.shape());
  const Rest<3> rest(index.shape(), dim, {&dst.strides(), &istrides, &src.strides()});
  const int64_t n = index.shape()[dim];
  const int64_t sd = dst.strides()[dim], si = istrides[dim], ss = src.strides()[dim];
  dispatch(dst.dtype(), [&]<class T>() {
    T* d = cpu::base_ptr<T>(dst);
    const T* s = cpu::base_ptr<const T>(src);
    // One thread per set of rows: a destination element is only reachable from one row.
    cpu::parallel_for(rest.rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, rest.inner * n)),
                      [&](int64_t b, int64_t e) {
                        for (int64_t r = b; r < e; ++r) {
                          T* dp = d + dst.offset() + rest.offset(r, 0);
                          const int64_t* ip = idx.data() + rest.offset(r, 1);
                          const T* sp = s + src.offset() + rest.offset(r, 2);
                          const auto [td, ti, ts] = rest.inner_stride;
                          for (int64_t j = 0; j < n; ++j)
                            for (int64_t k = 0; k < rest.inner; ++k) {
                              T& target = dp[ip[j * si + k * ti] * sd + k * td];
                              const T v = sp[j * ss + k * ts];
                              target = mode == ScatterMode::Add ? add_values(target, v) : v;
                            }
                        }
                      });
  });
}

void CpuBackend::index_add(const Tensor& dst, size_t dim, const Tensor& indices, const Tensor& src) {
  const std::vector<int64_t> idx = load_indices("index_add", indices, dim, dst.shape()[dim]);
  const Rest<2> rest(src.shape(), dim, {&dst.strides(), &src.strides()});
  const int64_t n = int64_t(idx.size());
  const int64_t sd = dst.strides()[dim], ss = src.strides()[dim];
  // Units: rows x chunks of the inner run; each unit applies every index in order, so
  // duplicate indices accumulate without races.
  constexpr int64_t kChunk = 1024;
  const int64_t chunks = (rest.inner + kChunk - 1) / kChunk, units = rest.rows * chunks;
  dispatch(dst.dtype(), [&]<class T>() {
    T* d = cpu::base_ptr<T>(dst);
    const T* s = cpu::base_ptr<const T>(src);
    cpu::parallel_for(
        units, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, kChunk * n)), [&](int64_t b, int64_t e) {
          for (int64_t u = b; u < e; ++u) {
            const int64_t r = u / chunks, k0 = (u % chunks) * kChunk, k1 = std::min(rest.inner, k0 + kChunk);
            const auto [td, ts] = rest.inner_stride;
            T* dp = d + dst.offset() + rest.offset(r, 0);
            const T* sp = s + src.offset() + rest.offset(r, 1);
            for (int64_t i = 0; i < n; ++i) {
              T* drow = dp + idx[size_t(i)] * sd;
              const T* srow = sp + i * ss;
              for (int64_t k = k0; k < k1; ++k) drow[k * td] = add_values(drow[k * td], srow[k * ts]);
            }
          }
        });
  });
}

}  // namespace wick
