// Scans (cumsum, cumprod), sort / argsort and topk along one dim: the front end checks
// the arguments, applies PyTorch's dtype rule, allocates the contiguous outputs and makes
// one backend call. A rank-0 input runs as shape [1] (dim 0 or -1, as PyTorch) and its
// results are viewed back to rank 0.
#include "core/checks.h"
#include "wick/ops.h"

namespace wick {

namespace {

// x as a tensor of rank >= 1, and dim normalized against it.
struct AlongDim {
  Tensor x;
  size_t dim;
  bool scalar;
  AlongDim(const Tensor& in, int64_t d, const char* op) {
    detail::check_defined(op, in);
    scalar = in.rank() == 0;
    x = scalar ? in.reshape({1}) : in;
    dim = normalize_dim(d, x.rank(), op);
  }
  Tensor result(const Tensor& t) const { return scalar ? t.reshape(std::vector<int64_t>{}) : t; }
};

Tensor cumulative(CumulativeOp op, const Tensor& x_in, int64_t dim) {
  const AlongDim a(x_in, dim, cumulative_op_name(op));
  // PyTorch: integers accumulate into i64; the backend then runs with one dtype in and out.
  const Tensor x = is_integer(a.x.dtype()) ? a.x.to(DType::I64) : a.x;
  Tensor out = detail::new_tensor(x.shape(), x.dtype(), x.device());
  if (out.numel() != 0) detail::backend_of(x).cumulative(op, x, a.dim, out);
  return a.result(out);
}

SortResult run_sort(const Tensor& x_in, int64_t dim, bool descending, bool with_values, const char* op) {
  const AlongDim a(x_in, dim, op);
  const Tensor& x = a.x;
  SortResult r;
  if (with_values) r.values = detail::new_tensor(x.shape(), x.dtype(), x.device());
  r.indices = detail::new_tensor(x.shape(), DType::I64, x.device());
  if (x.numel() != 0) detail::backend_of(x).sort(x, a.dim, descending, r.values, r.indices);
  if (with_values) r.values = a.result(r.values);
  r.indices = a.result(r.indices);
  return r;
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim) { return cumulative(CumulativeOp::Sum, x, dim); }
Tensor cumprod(const Tensor& x, int64_t dim) { return cumulative(CumulativeOp::Prod, x, dim); }

SortResult sort(const Tensor& x, int64_t dim, bool descending) { return run_sort(x, dim, descending, true, "sort"); }
Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  return run_sort(x, dim, descending, false, "argsort").indices;
}

SortResult topk(const Tensor& x_in, int64_t k, int64_t dim, bool largest) {
  const AlongDim a(x_in, dim, "topk");
  const Tensor& x = a.x;
  const int64_t n = x.shape()[a.dim];
  WICK_CHECK(k >= 0 && k <= n, InvalidArgument, "topk: k = ", k, " out of range for dim ", dim, " of size ", n,
             " (shape ", x_in.shape(), ")");
  // A rank-0 result has its one element whatever k (0 or 1): PyTorch gives the input and
  // index 0 for both.
  const int64_t kept = a.scalar ? 1 : k;
  Shape shape = x.shape();
  shape[a.dim] = kept;
  SortResult r{detail::new_tensor(shape, x.dtype(), x.device()), detail::new_tensor(shape, DType::I64, x.device())};
  if (r.values.numel() != 0) detail::backend_of(x).topk(x, a.dim, kept, largest, r.values, r.indices);
  return {a.result(r.values), a.result(r.indices)};
}

}  // namespace wick
