// Views: each builds a new Layout over the same storage (reshape copies only when the
// strides cannot express the new shape).
#include <algorithm>

#include "core/checks.h"
#include "wick/tensor.h"

namespace wick {

Tensor Tensor::reshape(std::vector<int64_t> dims) const {
  detail::check_defined("reshape", *this);
  const Shape shape = infer_shape(dims, numel(), "reshape");
  if (auto l = layout_.reshape_view(shape)) return Tensor(storage_, std::move(*l));
  const Tensor copy = clone();
  return Tensor(copy.storage_, Layout(shape, copy.offset()));
}

Tensor Tensor::view(std::vector<int64_t> shape) const {
  detail::check_defined("view", *this);
  Shape target = infer_shape(shape, numel(), "view");
  auto l = layout_.reshape_view(target);
  WICK_CHECK(l.has_value(), InvalidArgument, "view: the strides of ", layout_.to_string(), " cannot express shape ",
             target, " without a copy; use reshape()");
  return Tensor(storage_, std::move(*l));
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  detail::check_defined("transpose", *this);
  return Tensor(storage_, layout_.transpose(d0, d1));
}

Tensor Tensor::t() const {
  WICK_CHECK(rank() >= 2, InvalidArgument, "t: expected rank >= 2, got shape ", shape());
  return transpose(-2, -1);
}

Tensor Tensor::permute(std::vector<int64_t> order) const {
  detail::check_defined("permute", *this);
  return Tensor(storage_, layout_.permute(order));
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  detail::check_defined("narrow", *this);
  return Tensor(storage_, layout_.narrow(dim, start, length));
}

Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  detail::check_defined("slice", *this);
  WICK_CHECK(step > 0, InvalidArgument, "slice: step must be positive, got ", step);
  const size_t d = normalize_dim(dim, rank(), "slice");
  const int64_t size = shape()[d];
  auto clampi = [&](int64_t i) { return std::clamp(i < 0 ? i + size : i, int64_t(0), size); };
  const int64_t b = clampi(start), e = std::max(clampi(end), b);
  const int64_t len = (e - b + step - 1) / step;
  Layout l = layout_.narrow(int64_t(d), b, e - b);
  auto shape = l.shape().dims();
  auto strides = l.strides();
  shape[d] = len;
  strides[d] *= step;
  return Tensor(storage_, Layout(Shape(std::move(shape)), std::move(strides), l.offset()));
}

Tensor Tensor::select(int64_t dim, int64_t index) const {
  detail::check_defined("select", *this);
  const size_t d = normalize_dim(dim, rank(), "select");
  const int64_t size = shape()[d];
  WICK_CHECK(index >= -size && index < size, IndexOutOfRange, "select: index ", index, " out of range for dim ", dim,
             " of size ", size);
  return Tensor(storage_, layout_.narrow(int64_t(d), index < 0 ? index + size : index, 1).squeeze(int64_t(d)));
}

Tensor Tensor::broadcast_as(Shape shape) const {
  detail::check_defined("broadcast_as", *this);
  if (shape == this->shape()) return *this;
  return Tensor(storage_, layout_.broadcast_as(shape));
}

Tensor Tensor::squeeze() const {
  detail::check_defined("squeeze", *this);
  return Tensor(storage_, layout_.squeeze_all());
}
Tensor Tensor::squeeze(int64_t dim) const {
  detail::check_defined("squeeze", *this);
  return Tensor(storage_, layout_.squeeze(dim));
}
Tensor Tensor::unsqueeze(int64_t dim) const {
  detail::check_defined("unsqueeze", *this);
  return Tensor(storage_, layout_.unsqueeze(dim));
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  detail::check_defined("flatten", *this);
  if (rank() == 0) return reshape(Shape{1});
  const size_t s = normalize_dim(start_dim, rank(), "flatten"), e = normalize_dim(end_dim, rank(), "flatten");
  WICK_CHECK(s <= e, InvalidArgument, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  std::vector<int64_t> dims;
  for (size_t i = 0; i < s; ++i) dims.push_back(shape()[i]);
  int64_t n = 1;
  for (size_t i = s; i <= e; ++i) n *= shape()[i];
  dims.push_back(n);
  for (size_t i = e + 1; i < rank(); ++i) dims.push_back(shape()[i]);
  return reshape(std::move(dims));
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  detail::check_defined("split", *this);
  WICK_CHECK(split_size > 0, InvalidArgument, "split: split_size must be positive, got ", split_size);
  const size_t d = normalize_dim(dim, rank(), "split");
  const int64_t size = shape()[d];
  std::vector<Tensor> parts;
  for (int64_t start = 0; start < size; start += split_size)
    parts.push_back(narrow(int64_t(d), start, std::min(split_size, size - start)));
  if (parts.empty()) parts.push_back(*this);  // PyTorch returns the empty tensor itself
  return parts;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  detail::check_defined("chunk", *this);
  WICK_CHECK(chunks > 0, InvalidArgument, "chunk: chunks must be positive, got ", chunks);
  const int64_t size = shape()[normalize_dim(dim, rank(), "chunk")];
  return split(std::max<int64_t>(1, (size + chunks - 1) / chunks), dim);
}

}  // namespace wick
