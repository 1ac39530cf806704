#include "wick/shape.h"

#include <sstream>

#include "wick/error.h"

namespace wick {

void Shape::validate() const {
  for (int64_t d : dims_)
    WICK_CHECK(d >= 0, InvalidArgument, "shape: dimension sizes must be non-negative, got ", to_string());
}

int64_t Shape::dim(int64_t d) const { return dims_[normalize_dim(d, rank(), "shape")]; }

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) n = checked_mul(n, d, "shape");
  return n;
}

std::string Shape::to_string() const {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < dims_.size(); ++i) os << (i ? ", " : "") << dims_[i];
  os << ']';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.to_string(); }

size_t normalize_dim(int64_t dim, size_t rank, std::string_view op) {
  const int64_t r = int64_t(rank);
  const int64_t d = dim < 0 ? dim + r : dim;
  WICK_CHECK(d >= 0 && d < r, IndexOutOfRange, op, ": dim ", dim, " out of range for a tensor of rank ", rank,
             " (expected ", -r, " <= dim < ", r, ")");
  return size_t(d);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  const size_t rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.rank() ? 1 : a[i - (rank - a.rank())];
    const int64_t db = i < rank - b.rank() ? 1 : b[i - (rank - b.rank())];
    WICK_CHECK(da == db || da == 1 || db == 1, ShapeMismatch, op, ": shapes ", a, " and ", b,
               " cannot be broadcast together (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return Shape(std::move(out));
}

int64_t checked_mul(int64_t a, int64_t b, std::string_view op) {
  int64_t r;
  WICK_CHECK(!__builtin_mul_overflow(a, b, &r), InvalidArgument, op, ": size ", a, " x ", b,
             " overflows a 64-bit element count");
  return r;
}

}  // namespace wick
