// Reductions: the front end normalizes dims, computes the keepdim output shape, makes
// one backend call, then views the reduced dims away unless keepdim.
#include <algorithm>

#include "core/checks.h"
#include "wick/ops.h"

namespace wick {

namespace {

// Sorted, unique dims in [0, rank); empty means all dims.
std::vector<size_t> reduced_dims(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  std::vector<size_t> out;
  if (dims.empty()) {
    for (size_t d = 0; d < x.rank(); ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) {
    const size_t nd = normalize_dim(d, x.rank(), op);
    WICK_CHECK(std::find(out.begin(), out.end(), nd) == out.end(), InvalidArgument, op, ": dim ", d,
               " appears more than once in the reduction dims of a tensor of shape ", x.shape());
    out.push_back(nd);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Tensor run_reduction(ReduceOp op, const Tensor& x_in, const std::vector<int64_t>& dims_in, bool keepdim) {
  const char* name = reduce_op_name(op);
  detail::check_defined(name, x_in);
  // A rank-0 tensor reduces as shape [1] (dim 0 or -1 are accepted, as PyTorch).
  const bool scalar = x_in.rank() == 0;
  const Tensor x = scalar ? x_in.reshape({1}) : x_in;
  const std::vector<size_t> dims = reduced_dims(x, dims_in, name);
  if (op == ReduceOp::Mean) detail::check_float(name, x);
  const bool arg = op == ReduceOp::ArgMin || op == ReduceOp::ArgMax;
  if (op == ReduceOp::Min || op == ReduceOp::Max || arg) {
    for (size_t d : dims)
      WICK_CHECK(x.shape()[d] != 0, InvalidArgument, name, ": cannot reduce over dim ", d, " of size 0 (shape ",
                 x.shape(), "): the result has no identity");
  }
  Shape kept = x.shape();
  std::vector<int64_t> final_dims;
  for (size_t d = 0; d < x.rank(); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (reduced) kept[d] = 1;
    if (!reduced) final_dims.push_back(x.shape()[d]);
  }
  Tensor out = Tensor::empty(kept, arg ? DType::I64 : x.dtype(), x.device());
  detail::backend_of(x).reduce(op, x, dims, out);
  if (scalar) return out.reshape(std::vector<int64_t>{});
  return keepdim ? out : out.view(final_dims);
}

Tensor arg_reduce(ReduceOp op, const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  const char* name = reduce_op_name(op);
  detail::check_defined(name, x);
  if (dim) return run_reduction(op, x, {*dim}, keepdim);
  // Over the flattened tensor; keepdim keeps x's rank with every dim 1 (PyTorch 2.x).
  WICK_CHECK(x.numel() != 0, InvalidArgument, name, ": cannot reduce an empty tensor (shape ", x.shape(), ")");
  Tensor flat = run_reduction(op, x.reshape({-1}), {0}, false);
  return keepdim ? flat.reshape(std::vector<int64_t>(x.rank(), 1)) : flat;
}

}  // namespace

Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return run_reduction(ReduceOp::Sum, x, dims, keepdim);
}
Tensor mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return run_reduction(ReduceOp::Mean, x, dims, keepdim);
}
Tensor prod(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return run_reduction(ReduceOp::Prod, x, dims, keepdim);
}
Tensor min(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return run_reduction(ReduceOp::Min, x, dims, keepdim);
}
Tensor max(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return run_reduction(ReduceOp::Max, x, dims, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(ReduceOp::ArgMin, x, dim, keepdim);
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(ReduceOp::ArgMax, x, dim, keepdim);
}

}  // namespace wick
