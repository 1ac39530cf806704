// Shape: a list of dimension sizes, with checked element counts and dim normalization.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace wick {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) { validate(); }
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) { validate(); }

  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t i) const { return dims_[i]; }
  int64_t& operator[](size_t i) { return dims_[i]; }
  // The size of dim d, where negative d counts from the end.
  int64_t dim(int64_t d) const;
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& dims() { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }

  // The number of elements; throws if the product does not fit in int64.
  int64_t numel() const;
  bool empty_tensor() const { return numel() == 0; }
  bool operator==(const Shape& o) const = default;

  std::string to_string() const;

 private:
  void validate() const;
  std::vector<int64_t> dims_;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

// Maps dim (negative counts from the end) into [0, rank); throws naming op otherwise.
size_t normalize_dim(int64_t dim, size_t rank, std::string_view op);

// The shape two operands broadcast to, numpy style (trailing dims aligned; sizes must
// be equal or 1). The error names op and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);

// a * b, throwing naming op if the product overflows int64 (sizes are non-negative).
int64_t checked_mul(int64_t a, int64_t b, std::string_view op);

}  // namespace wick
