// Layout: how a tensor's elements sit in its storage: shape, strides (in elements)
// and a start offset (in elements). Views (transpose, narrow, broadcast, ...) only
// build a new Layout over the same storage, as candle does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wick/shape.h"

namespace wick {

class Layout {
 public:
  Layout() = default;
  // A row-major contiguous layout of shape starting at offset.
  explicit Layout(Shape shape, int64_t offset = 0);
  Layout(Shape shape, std::vector<int64_t> strides, int64_t offset);

  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  size_t rank() const { return shape_.rank(); }
  int64_t numel() const { return shape_.numel(); }
  int64_t dim(int64_t d) const { return shape_.dim(d); }
  int64_t stride(int64_t d) const;

  // Row-major contiguous (size-1 dims may carry any stride).
  bool is_contiguous() const;
  // One past the largest element index this layout can touch (0 for empty tensors).
  int64_t storage_extent() const;

  // Views. Each checks its arguments and throws wick::Error naming the op.
  Layout transpose(int64_t d0, int64_t d1) const;
  Layout permute(const std::vector<int64_t>& order) const;
  Layout narrow(int64_t dim, int64_t start, int64_t length) const;
  Layout broadcast_as(const Shape& target) const;
  Layout squeeze(int64_t dim) const;
  Layout squeeze_all() const;
  Layout unsqueeze(int64_t dim) const;
  // The strided view with `shape` when the strides allow one, nullopt otherwise
  // (PyTorch's computeStride rule). The element count must match.
  std::optional<Layout> reshape_view(const Shape& shape) const;

  bool operator==(const Layout& o) const = default;
  std::string to_string() const;

  static std::vector<int64_t> contiguous_strides(const Shape& shape);

 private:
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
};

// Resolves one -1 entry of a requested shape from the element count.
Shape infer_shape(const std::vector<int64_t>& requested, int64_t numel, std::string_view op);

// Dims merged where they are contiguous with each other in every one of the given
// stride lists (and size-1 dims dropped), so kernels loop over as few dims as
// possible. All layouts must have the same shape.
struct CollapsedDims {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;  // one list per input layout
};
CollapsedDims collapse_dims(const Shape& shape, const std::vector<const std::vector<int64_t>*>& strides);

}  // namespace wick
