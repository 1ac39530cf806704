// Aliasing checks for in-place ops (see overlap.h).
#include "core/overlap.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "wick/error.h"

namespace wick::detail {

namespace {

struct Dim {
  int64_t stride, size;
};

// The dims that take more than one index: only they can make two indices meet.
std::vector<Dim> moving_dims(const Layout& l) {
  std::vector<Dim> dims;
  for (size_t i = 0; i < l.rank(); ++i)
    if (l.shape()[i] > 1) dims.push_back({l.strides()[i], l.shape()[i]});
  return dims;
}

// Beyond this many elements a layout that fails the nesting test is not enumerated.
constexpr int64_t kEnumerateUpTo = int64_t(1) << 20;

// Every element offset of the dims, sorted, checked for a repeat.
bool offsets_repeat(const std::vector<Dim>& dims, int64_t numel) {
  std::vector<int64_t> offsets;
  offsets.reserve(size_t(numel));
  std::vector<int64_t> index(dims.size(), 0);
  int64_t off = 0;
  for (int64_t n = 0; n < numel; ++n) {
    offsets.push_back(off);
    for (size_t d = dims.size(); d-- > 0;) {  // odometer step, last dim fastest
      off += dims[d].stride;
      if (++index[d] < dims[d].size) break;
      off -= dims[d].stride * dims[d].size;
      index[d] = 0;
    }
  }
  std::sort(offsets.begin(), offsets.end());
  return std::adjacent_find(offsets.begin(), offsets.end()) != offsets.end();
}

// Start and one-past-end byte addresses of t's elements (t not empty).
std::pair<uintptr_t, uintptr_t> byte_range(const Tensor& t) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(t.storage_data());
  const uintptr_t es = t.element_size();
  return {base + uintptr_t(t.offset()) * es, base + uintptr_t(t.layout().storage_extent()) * es};
}

bool same_elements_in_order(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (size_t i = 0; i < a.rank(); ++i)  // a size-1 dim may carry any stride
    if (a.shape()[i] > 1 && a.strides()[i] != b.strides()[i]) return false;
  return true;
}

int64_t stride_gcd(const Tensor& a, const Tensor& b) {
  int64_t g = 0;
  for (const Tensor* t : {&a, &b})
    for (const Dim& d : moving_dims(t->layout())) g = std::gcd(g, d.stride);
  return g;
}

}  // namespace

bool has_internal_overlap(const Layout& layout) {
  if (layout.numel() <= 1) return false;  // an empty tensor writes nothing
  std::vector<Dim> dims = moving_dims(layout);
  if (std::any_of(dims.begin(), dims.end(), [](const Dim& d) { return d.stride == 0; })) return true;
  // Sorted by stride, each stride beyond the span of the smaller ones: offsets are digits
  // of a mixed-radix number, all distinct. Every view of a non-overlapping tensor nests.
  std::sort(dims.begin(), dims.end(), [](const Dim& x, const Dim& y) { return x.stride < y.stride; });
  int64_t span = 0;
  bool nested = true;
  for (const Dim& d : dims) {
    if (d.stride <= span) {
      nested = false;
      break;
    }
    span += d.stride * (d.size - 1);
  }
  if (nested) return false;
  const int64_t numel = layout.numel();
  return numel > kEnumerateUpTo || offsets_repeat(dims, numel);
}

Overlap memory_overlap(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return Overlap::None;
  const auto [a_lo, a_hi] = byte_range(a);
  const auto [b_lo, b_hi] = byte_range(b);
  if (a_hi <= b_lo || b_hi <= a_lo) return Overlap::None;
  const uintptr_t es = a.element_size();
  const uintptr_t gap = a_lo > b_lo ? a_lo - b_lo : b_lo - a_lo;  // bytes between the first elements
  if (b.element_size() != es || gap % es != 0) return Overlap::Partial;
  if (gap == 0 && same_elements_in_order(a, b)) return Overlap::Same;
  // Every element offset of a is its first offset plus a multiple of g, likewise for b:
  // first offsets that differ by a non-multiple of g leave no element in common.
  const int64_t g = stride_gcd(a, b);
  if (g > 1 && int64_t(gap / es) % g != 0) return Overlap::None;
  return Overlap::Partial;
}

void check_no_internal_overlap(std::string_view op, const Tensor& dst) {
  WICK_CHECK(!has_internal_overlap(dst.layout()), InvalidArgument, op, ": the destination (", dst.layout().to_string(),
             ") maps several indices to one element (an expand()ed or broadcast view); write into a clone() instead");
}

Tensor unaliased_input(const Tensor& dst, const Tensor& in) {
  return memory_overlap(dst, in) == Overlap::None ? in : in.clone();
}

}  // namespace wick::detail
