// max_pool2d, avg_pool2d: PyTorch semantics (floor output sizes; ceil_mode and
// dilation are not offered). Max pools any dtype, avg only floats.
#include "core/checks.h"
#include "wick/ops.h"

namespace wick {
namespace {

Tensor pool_impl(const char* op, PoolKind kind, const Tensor& x_in, const Pool2dOptions& opt) {
  const Device device = detail::common_device(op, {&x_in});
  WICK_CHECK(x_in.rank() == 4, ShapeMismatch, op, ": expected input of rank 4 (N, C, H, W), got shape ", x_in.shape());
  if (kind == PoolKind::Avg) detail::check_float(op, x_in);
  PoolParams p;
  p.kind = kind;
  p.kernel = opt.kernel;
  p.padding = opt.padding;
  p.count_include_pad = opt.count_include_pad;
  const std::array<int64_t, 2> in{x_in.dim(2), x_in.dim(3)};
  std::array<int64_t, 2> out{};
  for (int d = 0; d < 2; ++d) p.stride[d] = opt.stride[d] == 0 ? opt.kernel[d] : opt.stride[d];
  for (int d = 0; d < 2; ++d) {
    WICK_CHECK(p.kernel[d] > 0, InvalidArgument, op, ": kernel size must be positive, got ", p.kernel[0], "x",
               p.kernel[1]);
    WICK_CHECK(p.stride[d] > 0, InvalidArgument, op, ": stride must be positive (or 0 for the kernel size), got ",
               opt.stride[0], "x", opt.stride[1]);
    // PyTorch's rule: a window may not hang more than half outside the input.
    WICK_CHECK(p.padding[d] >= 0 && p.padding[d] <= p.kernel[d] / 2, InvalidArgument, op, ": padding ", p.padding[0],
               "x", p.padding[1], " must be between 0 and half the kernel size ", p.kernel[0], "x", p.kernel[1]);
    const int64_t span = in[d] + 2 * p.padding[d] - p.kernel[d];
    out[d] = span < 0 ? 0 : span / p.stride[d] + 1;
    WICK_CHECK(out[d] > 0, ShapeMismatch, op, ": input ", in[0], "x", in[1], " with kernel ", p.kernel[0], "x",
               p.kernel[1], ", stride ", p.stride[0], "x", p.stride[1], ", padding ", p.padding[0], "x", p.padding[1],
               " gives an empty output");
  }
  Tensor result = Tensor::empty(Shape{x_in.dim(0), x_in.dim(1), out[0], out[1]}, x_in.dtype(), device);
  if (result.numel() > 0) backend_for(device).pool2d(p, x_in.contiguous(), result);
  return result;
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& opt) { return pool_impl("max_pool2d", PoolKind::Max, x, opt); }
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& opt) { return pool_impl("avg_pool2d", PoolKind::Avg, x, opt); }

}  // namespace wick
