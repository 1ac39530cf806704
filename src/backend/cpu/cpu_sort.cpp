// sort (stable, values optional: argsort) and topk along one dim: one generic kernel per
// op over the dtype. Each line is copied as (value, index) pairs in the compute type
// (exact: f16/bf16 widen to float) into a buffer reused across the lines of one thread,
// ordered there, and written out; the values written are the input's own elements
// (NaN payloads and the sign of zero kept). Lines are split across the pool.
//
// Order: PyTorch's, NaN greater than every number (last ascending, first descending);
// -0 and +0 are equal. sort is stable (ties keep their index order, both directions).
// topk ranks by value and then by the smaller index, a total order, so nth_element (the
// k best in front, O(n)) and a sort of those k give the one answer: O(n + k log k).
#include <algorithm>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"
#include "backend/lines.h"

namespace wick {

namespace {

// a before b in ascending order, NaN last (for integers the NaN tests fold away).
template <class C>
bool ascending(C a, C b) {
  return !(a != a) && (b != b || a < b);
}

template <class T>
using Entry = std::pair<compute_t<T>, int64_t>;

// Calls fn(row, p) for every line of x, row holding the line's (value, index) pairs and
// p the line's first element; fn writes the line's outputs.
template <class T, class F>
void for_each_line(const Tensor& x, const Lines& lines, F&& fn) {
  const T* x0 = cpu::base_ptr<const T>(x);
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(lines.n, 1));
  cpu::parallel_for(lines.count, grain, [&](int64_t begin, int64_t end) {
    std::vector<Entry<T>> row(size_t(lines.n));
    for (int64_t l = begin; l < end; ++l) {
      const T* p = x0 + lines.x_offset(l);
      for (int64_t i = 0; i < lines.n; ++i) row[size_t(i)] = {compute_t<T>(p[i * lines.x_stride]), i};
      fn(l, row, p);
    }
  });
}

// The first out_n entries of row as line l of the outputs (values may be undefined).
template <class T>
void write_line(const Lines& lines, int64_t l, const std::vector<Entry<T>>& row, int64_t out_n, const T* p, T* values,
                int64_t* indices) {
  for (int64_t i = 0; i < out_n; ++i) {
    const int64_t o = lines.out_offset(l, i, out_n), j = row[size_t(i)].second;
    indices[o] = j;
    if (values) values[o] = p[j * lines.x_stride];
  }
}

template <class T>
T* values_ptr(const Tensor& values) {
  return values.defined() ? cpu::base_ptr<T>(values) + values.offset() : nullptr;
}

}  // namespace

void CpuBackend::sort(const Tensor& x, size_t dim, bool descending, const Tensor& values, const Tensor& indices) {
  if (x.numel() == 0) return;
  const Lines lines(x, dim);
  dispatch(x.dtype(), [&]<class T>() {
    T* vals = values_ptr<T>(values);
    int64_t* idx = cpu::base_ptr<int64_t>(indices) + indices.offset();
    for_each_line<T>(x, lines, [&](int64_t l, std::vector<Entry<T>>& row, const T* p) {
      if (descending)
        std::stable_sort(row.begin(), row.end(),
                         [](const Entry<T>& a, const Entry<T>& b) { return ascending(b.first, a.first); });
      else
        std::stable_sort(row.begin(), row.end(),
                         [](const Entry<T>& a, const Entry<T>& b) { return ascending(a.first, b.first); });
      write_line(lines, l, row, lines.n, p, vals, idx);
    });
  });
}

void CpuBackend::topk(const Tensor& x, size_t dim, int64_t k, bool largest, const Tensor& values,
                      const Tensor& indices) {
  if (x.numel() == 0 || k == 0) return;
  const Lines lines(x, dim);
  dispatch(x.dtype(), [&]<class T>() {
    T* vals = values_ptr<T>(values);
    int64_t* idx = cpu::base_ptr<int64_t>(indices) + indices.offset();
    // a ranks above b: a better value, or an equal one (neither better) at a smaller index.
    auto above = [largest](const Entry<T>& a, const Entry<T>& b) {
      const bool a_better = largest ? ascending(b.first, a.first) : ascending(a.first, b.first);
      const bool b_better = largest ? ascending(a.first, b.first) : ascending(b.first, a.first);
      return a_better || (!b_better && a.second < b.second);
    };
    for_each_line<T>(x, lines, [&](int64_t l, std::vector<Entry<T>>& row, const T* p) {
      const auto kth = row.begin() + k;
      if (k < lines.n) std::nth_element(row.begin(), kth, row.end(), above);
      std::sort(row.begin(), kth, above);
      write_line(lines, l, row, k, p, vals, idx);
    });
  });
}

}  // namespace wick
