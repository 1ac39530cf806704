// cat and stack: one output allocation, each input copied into a narrowed view of it.
#include "core/checks.h"
#include "wick/tensor.h"

namespace wick {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  WICK_CHECK(!tensors.empty(), InvalidArgument, "cat: expected at least one tensor");
  const Tensor& first = tensors[0];
  detail::check_defined("cat", first);
  const size_t d = normalize_dim(dim, first.rank(), "cat");
  DType dtype = first.dtype();
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    detail::common_device("cat", {&first, &t});
    WICK_CHECK(t.rank() == first.rank(), ShapeMismatch, "cat: tensor ", i, " has shape ", t.shape(),
               ", tensor 0 has shape ", first.shape(), " (ranks differ)");
    for (size_t k = 0; k < t.rank(); ++k)
      WICK_CHECK(k == d || t.shape()[k] == first.shape()[k], ShapeMismatch, "cat: tensor ", i, " has shape ", t.shape(),
                 ", tensor 0 has shape ", first.shape(), " (they must match except in dim ", dim, ")");
    dtype = promote_types(dtype, t.dtype());
    total += t.shape()[d];
  }
  Shape shape = first.shape();
  shape[d] = total;
  Tensor out = Tensor::empty(shape, dtype, first.device());
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    const int64_t n = t.shape()[d];
    if (n > 0) {
      Tensor part = out.narrow(int64_t(d), at, n);
      part.copy_(t);
    }
    at += n;
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  WICK_CHECK(!tensors.empty(), InvalidArgument, "stack: expected at least one tensor");
  detail::check_defined("stack", tensors[0]);
  const size_t d = normalize_dim(dim, tensors[0].rank() + 1, "stack");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    detail::common_device("stack", {&tensors[0], &tensors[i]});
    WICK_CHECK(tensors[i].shape() == tensors[0].shape(), ShapeMismatch, "stack: tensor ", i, " has shape ",
               tensors[i].shape(), ", tensor 0 has shape ", tensors[0].shape());
    parts.push_back(tensors[i].unsqueeze(int64_t(d)));
  }
  return cat(parts, int64_t(d));
}

}  // namespace wick
