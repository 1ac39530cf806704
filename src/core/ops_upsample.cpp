// upsample_nearest1d/2d and upsample_bilinear2d to explicit output sizes, as PyTorch's
// F.interpolate(size=...) (no scale factors). 1-D runs as 2-D over an (N, C, 1, L) view
// with H kept at 1, so backends implement only the 2-D kernel. Nearest takes any dtype
// (it only copies); bilinear takes floats.
#include "core/checks.h"
#include "wick/ops.h"

namespace wick {
namespace {

Tensor upsample_impl(const char* op, bool is_1d, const Tensor& x_in, int64_t out_h, int64_t out_w, UpsampleParams p) {
  const Device device = detail::common_device(op, {&x_in});
  const size_t want_rank = is_1d ? 3 : 4;
  WICK_CHECK(x_in.rank() == want_rank, ShapeMismatch, op, ": expected input of rank ", want_rank,
             is_1d ? " (N, C, L)" : " (N, C, H, W)", ", got shape ", x_in.shape());
  if (p.mode == UpsampleMode::Bilinear) detail::check_float(op, x_in);
  const Tensor x = is_1d ? x_in.unsqueeze(2) : x_in;
  WICK_CHECK(x.dim(2) > 0 && x.dim(3) > 0, ShapeMismatch, op, ": input spatial sizes must be positive, got shape ",
             x_in.shape());
  WICK_CHECK(out_h > 0 && out_w > 0, InvalidArgument, op, ": output size must be positive, got ",
             is_1d ? detail::cat(out_w) : detail::cat(out_h, "x", out_w));
  Tensor result = Tensor::empty(Shape{x.dim(0), x.dim(1), out_h, out_w}, x.dtype(), device);
  if (result.numel() > 0) backend_for(device).upsample(p, x.contiguous(), result);
  return is_1d ? result.squeeze(2) : result;
}

}  // namespace

Tensor upsample_nearest1d(const Tensor& x, int64_t out_len) {
  return upsample_impl("upsample_nearest1d", true, x, 1, out_len, {UpsampleMode::Nearest, false});
}
Tensor upsample_nearest2d(const Tensor& x, int64_t out_h, int64_t out_w) {
  return upsample_impl("upsample_nearest2d", false, x, out_h, out_w, {UpsampleMode::Nearest, false});
}
Tensor upsample_bilinear2d(const Tensor& x, int64_t out_h, int64_t out_w, bool align_corners) {
  return upsample_impl("upsample_bilinear2d", false, x, out_h, out_w, {UpsampleMode::Bilinear, align_corners});
}

}  // namespace wick
