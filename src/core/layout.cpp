#include "wick/layout.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "wick/error.h"

namespace wick {

std::vector<int64_t> Layout::contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank());
  int64_t s = 1;
  for (size_t i = shape.rank(); i-- > 0;) {
    strides[i] = s;
    s = checked_mul(s, std::max<int64_t>(shape[i], 1), "layout");
  }
  return strides;
}

Layout::Layout(Shape shape, int64_t offset)
    : shape_(std::move(shape)), strides_(contiguous_strides(shape_)), offset_(offset) {}

Layout::Layout(Shape shape, std::vector<int64_t> strides, int64_t offset)
    : shape_(std::move(shape)), strides_(std::move(strides)), offset_(offset) {
  WICK_CHECK(strides_.size() == shape_.rank(), InvalidArgument, "layout: ", strides_.size(), " strides for shape ",
             shape_);
  WICK_CHECK(offset_ >= 0, InvalidArgument, "layout: negative offset ", offset_);
  for (int64_t s : strides_) WICK_CHECK(s >= 0, InvalidArgument, "layout: negative stride ", s);
}

int64_t Layout::stride(int64_t d) const { return strides_[normalize_dim(d, rank(), "stride")]; }

bool Layout::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = rank(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return numel() == 0;
    expected *= shape_[i];
  }
  return true;
}

int64_t Layout::storage_extent() const {
  if (numel() == 0) return 0;
  int64_t last = offset_;
  for (size_t i = 0; i < rank(); ++i) last += (shape_[i] - 1) * strides_[i];
  return last + 1;
}

Layout Layout::transpose(int64_t d0, int64_t d1) const {
  const size_t a = normalize_dim(d0, rank(), "transpose"), b = normalize_dim(d1, rank(), "transpose");
  Layout out = *this;
  std::swap(out.shape_.dims()[a], out.shape_.dims()[b]);
  std::swap(out.strides_[a], out.strides_[b]);
  return out;
}

Layout Layout::permute(const std::vector<int64_t>& order) const {
  WICK_CHECK(order.size() == rank(), InvalidArgument, "permute: ", order.size(), " dims given for a tensor of rank ",
             rank());
  std::vector<bool> seen(rank(), false);
  std::vector<int64_t> shape(rank()), strides(rank());
  for (size_t i = 0; i < rank(); ++i) {
    const size_t d = normalize_dim(order[i], rank(), "permute");
    WICK_CHECK(!seen[d], InvalidArgument, "permute: dim ", order[i], " repeated");
    seen[d] = true;
    shape[i] = shape_[d];
    strides[i] = strides_[d];
  }
  return Layout(Shape(std::move(shape)), std::move(strides), offset_);
}

Layout Layout::narrow(int64_t dim, int64_t start, int64_t length) const {
  const size_t d = normalize_dim(dim, rank(), "narrow");
  const int64_t size = shape_[d];
  WICK_CHECK(start >= 0 && length >= 0 && start <= size && length <= size - start, IndexOutOfRange, "narrow: range [",
             start, ", ", start, " + ", length, ") out of bounds for dim ", dim, " of size ", size, " (shape ", shape_,
             ")");
  Layout out = *this;
  out.shape_.dims()[d] = length;
  if (length > 0) out.offset_ += start * strides_[d];
  return out;
}

Layout Layout::broadcast_as(const Shape& target) const {
  WICK_CHECK(target.rank() >= rank(), ShapeMismatch, "broadcast_as: cannot broadcast shape ", shape_, " to ", target);
  const size_t lead = target.rank() - rank();
  std::vector<int64_t> strides(target.rank(), 0);
  for (size_t i = 0; i < rank(); ++i) {
    const int64_t from = shape_[i], to = target[lead + i];
    WICK_CHECK(from == to || from == 1, ShapeMismatch, "broadcast_as: cannot broadcast shape ", shape_, " to ", target,
               " (dim ", i, ": ", from, " vs ", to, ")");
    strides[lead + i] = from == to ? strides_[i] : 0;
  }
  return Layout(target, std::move(strides), offset_);
}

Layout Layout::squeeze(int64_t dim) const {
  const size_t d = normalize_dim(dim, rank(), "squeeze");
  if (shape_[d] != 1) return *this;  // PyTorch: squeezing a non-1 dim is a no-op
  auto shape = shape_.dims();
  auto strides = strides_;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return Layout(Shape(std::move(shape)), std::move(strides), offset_);
}

Layout Layout::squeeze_all() const {
  std::vector<int64_t> shape, strides;
  for (size_t i = 0; i < rank(); ++i)
    if (shape_[i] != 1) {
      shape.push_back(shape_[i]);
      strides.push_back(strides_[i]);
    }
  return Layout(Shape(std::move(shape)), std::move(strides), offset_);
}

Layout Layout::unsqueeze(int64_t dim) const {
  const size_t d = normalize_dim(dim, rank() + 1, "unsqueeze");
  auto shape = shape_.dims();
  auto strides = strides_;
  const int64_t stride = d < rank() ? strides_[d] * shape_[d] : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return Layout(Shape(std::move(shape)), std::move(strides), offset_);
}

std::optional<Layout> Layout::reshape_view(const Shape& target) const {
  WICK_CHECK(target.numel() == numel(), ShapeMismatch, "reshape: cannot reshape ", shape_, " (", numel(),
             " elements) to ", target, " (", target.numel(), " elements)");
  if (is_contiguous()) return Layout(target, offset_);
  if (numel() == 0) return Layout(target, offset_);
  // Walk chunks of old dims that are contiguous with each other; each chunk must map
  // onto a run of new dims with the same element count (PyTorch computeStride).
  std::vector<int64_t> new_strides(target.rank());
  int64_t view_d = int64_t(target.rank()) - 1;
  int64_t chunk_base_stride = strides_.empty() ? 1 : strides_.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(rank()) - 1; d >= 0; --d) {
    tensor_numel *= shape_[d];
    if (d == 0 || (shape_[d - 1] != 1 && strides_[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || target[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= target[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides_[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return Layout(target, std::move(new_strides), offset_);
}

std::string Layout::to_string() const {
  std::ostringstream os;
  os << "shape=" << shape_ << " strides=[";
  for (size_t i = 0; i < strides_.size(); ++i) os << (i ? ", " : "") << strides_[i];
  os << "] offset=" << offset_;
  return os.str();
}

Shape infer_shape(const std::vector<int64_t>& requested, int64_t numel, std::string_view op) {
  std::vector<int64_t> dims = requested;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      WICK_CHECK(infer_at < 0, InvalidArgument, op, ": only one dimension can be -1");
      infer_at = int(i);
    } else {
      WICK_CHECK(dims[i] >= 0, InvalidArgument, op, ": invalid size ", dims[i]);
      known = checked_mul(known, dims[i], op);
    }
  }
  if (infer_at >= 0) {
    WICK_CHECK(known != 0 && numel % known == 0, ShapeMismatch, op, ": cannot infer the -1 dimension for ", numel,
               " elements when the other dimensions hold ", known);
    dims[infer_at] = numel / known;
  }
  Shape s(std::move(dims));
  WICK_CHECK(s.numel() == numel, ShapeMismatch, op, ": shape ", s, " has ", s.numel(), " elements, the tensor has ",
             numel);
  return s;
}

CollapsedDims collapse_dims(const Shape& shape, const std::vector<const std::vector<int64_t>*>& strides) {
  CollapsedDims out;
  out.strides.resize(strides.size());
  for (size_t d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !out.shape.empty();
    for (size_t k = 0; merge && k < strides.size(); ++k) merge = out.strides[k].back() == (*strides[k])[d] * shape[d];
    if (merge) {
      out.shape.back() *= shape[d];
      for (size_t k = 0; k < strides.size(); ++k) out.strides[k].back() = (*strides[k])[d];
    } else {
      out.shape.push_back(shape[d]);
      for (size_t k = 0; k < strides.size(); ++k) out.strides[k].push_back((*strides[k])[d]);
    }
  }
  return out;
}

}  // namespace wick
