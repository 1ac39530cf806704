// Indexing ops. All are functional: index_select/gather/embedding write a fresh output,
// scatter/scatter_add/index_add copy dst and modify the copy, so a bad index (raised by
// the backend, which checks every index before writing) leaves every input unchanged.
#include <algorithm>
#include <vector>

#include "core/checks.h"
#include "wick/ops.h"

namespace wick {

namespace {

void check_index_dtype(const char* op, const Tensor& index) {
  WICK_CHECK(is_integer(index.dtype()), DTypeMismatch, op, ": indices must be u8, u32 or i64, got ", index.dtype());
}

// index has src's rank and, outside dim, is no larger than `bound` (src or dst).
void check_index_fits(const char* op, const Tensor& index, const Tensor& bound, size_t dim, const char* what) {
  WICK_CHECK(index.rank() == bound.rank(), ShapeMismatch, op, ": index of shape ", index.shape(),
             " must have the rank of ", what, " ", bound.shape());
  for (size_t d = 0; d < index.rank(); ++d)
    WICK_CHECK(d == dim || index.shape()[d] <= bound.shape()[d], ShapeMismatch, op, ": index of shape ", index.shape(),
               " is larger than ", what, " ", bound.shape(), " in dim ", d);
}

// Reads indices on the host and checks each is in [0, bound) and none repeats, naming op.
// A single index cannot repeat; when it lives on an accelerator it is left to the
// device's own bounds check (reported at the next synchronization), because reading it
// here would wait for the device, which a CUDA graph capture forbids (the GPT-2 decode
// step captures index_copy_ at a device-held position).
void check_distinct_indices(const char* op, const Tensor& indices, size_t dim, int64_t bound) {
  if (indices.numel() <= 1 && !indices.device().is_cpu()) return;
  std::vector<int64_t> v = indices.to_vector<int64_t>();
  for (int64_t i : v)
    WICK_CHECK(i >= 0 && i < bound, IndexOutOfRange, op, ": index ", i, " out of range for dim ", dim, " of size ",
               bound);
  std::sort(v.begin(), v.end());
  const auto repeated = std::adjacent_find(v.begin(), v.end());
  WICK_CHECK(repeated == v.end(), InvalidArgument, op, ": index ", *repeated,
             " appears more than once; the indices must be distinct (which write lands would be unspecified)");
}

}  // namespace

Tensor index_select(const Tensor& src, int64_t dim, const Tensor& indices) {
  const Device dev = detail::common_device("index_select", {&src, &indices});
  check_index_dtype("index_select", indices);
  WICK_CHECK(indices.rank() <= 1, ShapeMismatch, "index_select: indices must be 1-D, got shape ", indices.shape());
  WICK_CHECK(src.rank() >= 1, InvalidArgument, "index_select: src must have rank >= 1, got a scalar");
  const size_t d = normalize_dim(dim, src.rank(), "index_select");
  Shape shape = src.shape();
  shape[d] = indices.numel();
  Tensor out = Tensor::empty(shape, src.dtype(), dev);
  backend_for(dev).index_select(src, d, indices.reshape({-1}), out);
  return out;
}

Tensor gather(const Tensor& src, int64_t dim, const Tensor& index) {
  const Device dev = detail::common_device("gather", {&src, &index});
  check_index_dtype("gather", index);
  WICK_CHECK(src.rank() >= 1, InvalidArgument, "gather: src must have rank >= 1, got a scalar");
  const size_t d = normalize_dim(dim, src.rank(), "gather");
  check_index_fits("gather", index, src, d, "src");
  Tensor out = Tensor::empty(index.shape(), src.dtype(), dev);
  backend_for(dev).gather(src, d, index, out);
  return out;
}

namespace {

Tensor scatter_impl(const char* op, const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src,
                    ScatterMode mode) {
  const Device dev = detail::common_device(op, {&dst, &index, &src});
  check_index_dtype(op, index);
  detail::check_same_dtype(op, dst, src);
  WICK_CHECK(dst.rank() >= 1, InvalidArgument, op, ": dst must have rank >= 1, got a scalar");
  const size_t d = normalize_dim(dim, dst.rank(), op);
  check_index_fits(op, index, dst, d, "dst");
  WICK_CHECK(src.rank() == index.rank(), ShapeMismatch, op, ": src of shape ", src.shape(),
             " must have the rank of index ", index.shape());
  for (size_t k = 0; k < index.rank(); ++k)
    WICK_CHECK(index.shape()[k] <= src.shape()[k], ShapeMismatch, op, ": index of shape ", index.shape(),
               " is larger than src ", src.shape(), " in dim ", k);
  Tensor out = dst.clone();
  backend_for(dev).scatter(out, d, index, src, mode);
  return out;
}

}  // namespace

// Duplicate indices along dim: the last write (in index order) wins.
Tensor scatter(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter", dst, dim, index, src, ScatterMode::Set);
}
Tensor scatter_add(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter_add", dst, dim, index, src, ScatterMode::Add);
}

Tensor index_add(const Tensor& dst, int64_t dim, const Tensor& indices, const Tensor& src) {
  const Device dev = detail::common_device("index_add", {&dst, &indices, &src});
  check_index_dtype("index_add", indices);
  detail::check_same_dtype("index_add", dst, src);
  WICK_CHECK(indices.rank() <= 1, ShapeMismatch, "index_add: indices must be 1-D, got shape ", indices.shape());
  WICK_CHECK(dst.rank() >= 1, InvalidArgument, "index_add: dst must have rank >= 1, got a scalar");
  const size_t d = normalize_dim(dim, dst.rank(), "index_add");
  Shape expected = dst.shape();
  expected[d] = indices.numel();
  WICK_CHECK(src.shape() == expected, ShapeMismatch, "index_add: src has shape ", src.shape(), ", expected ", expected,
             " (dst ", dst.shape(), " with dim ", d, " of size ", indices.numel(), ")");
  Tensor out = dst.clone();
  backend_for(dev).index_add(out, d, indices.reshape({-1}), src);
  return out;
}

void index_copy_(const Tensor& dst, int64_t dim, const Tensor& indices, const Tensor& src) {
  const Device dev = detail::common_device("index_copy_", {&dst, &indices, &src});
  check_index_dtype("index_copy_", indices);
  detail::check_same_dtype("index_copy_", dst, src);
  detail::check_writable("index_copy_", dst);
  WICK_CHECK(indices.rank() <= 1, ShapeMismatch, "index_copy_: indices must be 1-D, got shape ", indices.shape());
  WICK_CHECK(dst.rank() >= 1, InvalidArgument, "index_copy_: dst must have rank >= 1, got a scalar");
  const size_t d = normalize_dim(dim, dst.rank(), "index_copy_");
  Shape expected = dst.shape();
  expected[d] = indices.numel();
  WICK_CHECK(src.shape() == expected, ShapeMismatch, "index_copy_: src has shape ", src.shape(), ", expected ",
             expected, " (dst ", dst.shape(), " with dim ", d, " of size ", indices.numel(), ")");
  check_distinct_indices("index_copy_", indices, d, dst.shape()[d]);
  // Inputs that share memory with dst are read from copies: the slices are written in
  // index order, not in the order they are read.
  const Tensor source = detail::unaliased_input(dst, src);
  const Tensor positions = detail::unaliased_input(dst, indices);
  // scatter with the indices broadcast over src's other dims (a stride-0 view, no copy).
  std::vector<int64_t> along(dst.rank(), 1);
  along[d] = indices.numel();
  const Tensor index = positions.reshape(Shape(along)).broadcast_as(source.shape());
  backend_for(dev).scatter(dst, d, index, source, ScatterMode::Set);
}

Tensor embedding(const Tensor& ids, const Tensor& weight) {
  const Device dev = detail::common_device("embedding", {&ids, &weight});
  check_index_dtype("embedding", ids);
  WICK_CHECK(weight.rank() == 2, ShapeMismatch, "embedding: weight must be 2-D (num_embeddings, dim), got shape ",
             weight.shape());
  std::vector<int64_t> shape = ids.shape().dims();
  shape.push_back(weight.shape()[1]);
  Tensor out = Tensor::empty(Shape{ids.numel(), weight.shape()[1]}, weight.dtype(), dev);
  try {
    backend_for(dev).index_select(weight, 0, ids.reshape({-1}), out);
  } catch (const Error& e) {  // name this op, not the kernel it uses
    std::string msg = e.what();
    if (msg.rfind("index_select", 0) == 0) msg = "embedding" + msg.substr(12);
    throw Error(e.kind(), msg);
  }
  return out.view(shape);
}

}  // namespace wick
