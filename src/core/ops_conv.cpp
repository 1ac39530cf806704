// conv1d, conv2d, conv_transpose1d, conv_transpose2d: PyTorch semantics and output sizes.
//
// 1-D convolutions are run as 2-D ones over (N, C, 1, L) views with the H parameters at
// identity (stride 1, padding 0, dilation 1, kernel 1), so every backend implements only
// the 2-D kernel; the output view drops the H dim again. Messages still speak 1-D.
#include <sstream>
#include <string>

#include "core/checks.h"
#include "wick/ops.h"

namespace wick {
namespace {

// "5x7" for 2-D, "5" for 1-D: the spatial part of a shape as the user wrote it.
std::string spatial_str(std::array<int64_t, 2> v, bool is_1d) {
  std::ostringstream os;
  if (is_1d)
    os << v[1];
  else
    os << v[0] << "x" << v[1];
  return os.str();
}

Tensor conv_impl(const char* op, bool is_1d, bool transposed, const Tensor& x_in, const Tensor& w_in,
                 const Tensor& bias_in, ConvParams p) {
  const Device device = bias_in.defined() ? detail::common_device(op, {&x_in, &w_in, &bias_in})
                                          : detail::common_device(op, {&x_in, &w_in});
  const size_t want_rank = is_1d ? 3 : 4;
  const char* layout_name = is_1d ? "(N, C, L)" : "(N, C, H, W)";
  WICK_CHECK(x_in.rank() == want_rank, ShapeMismatch, op, ": expected input of rank ", want_rank, " ", layout_name,
             ", got shape ", x_in.shape());
  WICK_CHECK(w_in.rank() == want_rank, ShapeMismatch, op, ": expected weight of rank ", want_rank, ", got shape ",
             w_in.shape());
  detail::check_float(op, x_in);
  WICK_CHECK(x_in.dtype() == w_in.dtype(), DTypeMismatch, op, ": input is ", x_in.dtype(), " but weight is ",
             w_in.dtype());
  if (bias_in.defined())
    WICK_CHECK(bias_in.dtype() == x_in.dtype(), DTypeMismatch, op, ": input is ", x_in.dtype(), " but bias is ",
               bias_in.dtype());

  // Everything below works on 4-D views.
  const Tensor x = is_1d ? x_in.unsqueeze(2) : x_in;
  const Tensor w = is_1d ? w_in.unsqueeze(2) : w_in;
  const int64_t n = x.dim(0), c_in = x.dim(1), g = p.groups;
  const std::array<int64_t, 2> in{x.dim(2), x.dim(3)}, k{w.dim(2), w.dim(3)};

  WICK_CHECK(g > 0, InvalidArgument, op, ": groups must be positive, got ", g);
  for (int d = 0; d < 2; ++d) {
    WICK_CHECK(p.stride[d] > 0, InvalidArgument, op, ": stride must be positive, got ", spatial_str(p.stride, is_1d));
    WICK_CHECK(p.dilation[d] > 0, InvalidArgument, op, ": dilation must be positive, got ",
               spatial_str(p.dilation, is_1d));
    WICK_CHECK(p.padding[d] >= 0, InvalidArgument, op, ": padding must be non-negative, got ",
               spatial_str(p.padding, is_1d));
    WICK_CHECK(p.output_padding[d] >= 0, InvalidArgument, op, ": output_padding must be non-negative, got ",
               spatial_str(p.output_padding, is_1d));
    WICK_CHECK(k[d] > 0, ShapeMismatch, op, ": kernel size must be positive, got weight shape ", w_in.shape());
  }
  WICK_CHECK(c_in % g == 0, ShapeMismatch, op, ": input channels ", c_in, " are not divisible by groups ", g);

  int64_t c_out;
  if (!transposed) {
    c_out = w.dim(0);
    WICK_CHECK(w.dim(1) * g == c_in, ShapeMismatch, op, ": weight ", w_in.shape(), " expects ", w.dim(1) * g,
               " input channels (", w.dim(1), " per group x ", g, " groups), but input ", x_in.shape(), " has ", c_in);
    WICK_CHECK(c_out % g == 0, ShapeMismatch, op, ": output channels ", c_out,
               " (weight dim 0) are not divisible by groups ", g);
    WICK_CHECK(p.output_padding == (std::array<int64_t, 2>{0, 0}), InvalidArgument, op,
               ": output_padding applies only to transposed convolutions");
  } else {
    WICK_CHECK(w.dim(0) == c_in, ShapeMismatch, op, ": weight ", w_in.shape(), " (C_in, C_out/groups, K...) expects ",
               w.dim(0), " input channels, but input ", x_in.shape(), " has ", c_in);
    c_out = w.dim(1) * g;
    for (int d = 0; d < 2; ++d)
      WICK_CHECK(p.output_padding[d] < p.stride[d] || p.output_padding[d] < p.dilation[d], InvalidArgument, op,
                 ": output_padding ", spatial_str(p.output_padding, is_1d), " must be smaller than either stride ",
                 spatial_str(p.stride, is_1d), " or dilation ", spatial_str(p.dilation, is_1d));
  }
  if (bias_in.defined())
    WICK_CHECK(bias_in.rank() == 1 && bias_in.dim(0) == c_out, ShapeMismatch, op, ": bias must have shape (", c_out,
               "), got ", bias_in.shape());

  std::array<int64_t, 2> out{};
  for (int d = 0; d < 2; ++d) {
    const int64_t span = p.dilation[d] * (k[d] - 1) + 1;  // the dilated kernel's extent
    out[d] = transposed ? (in[d] - 1) * p.stride[d] - 2 * p.padding[d] + span + p.output_padding[d]
                        : (in[d] + 2 * p.padding[d] - span) / p.stride[d] + 1;
    // (in + 2p - span) may be negative with |.| < stride: C++ division truncates to 0,
    // so test the numerator too.
    const bool empty = transposed ? out[d] <= 0 : (in[d] + 2 * p.padding[d] - span < 0 || out[d] <= 0);
    WICK_CHECK(!empty, ShapeMismatch, op, ": input ", spatial_str(in, is_1d), " with kernel ", spatial_str(k, is_1d),
               ", stride ", spatial_str(p.stride, is_1d), ", padding ", spatial_str(p.padding, is_1d), ", dilation ",
               spatial_str(p.dilation, is_1d), " gives an empty output");
  }

  p.transposed = transposed;
  p.spatial_dims = 2;  // see the file comment: 1-D runs as 2-D with H = 1
  p.bias = bias_in.defined() ? bias_in.contiguous() : Tensor{};
  Tensor result = Tensor::empty(Shape{n, c_out, out[0], out[1]}, x.dtype(), device);
  if (result.numel() > 0) backend_for(device).conv(p, x.contiguous(), w.contiguous(), result);
  return is_1d ? result.squeeze(2) : result;
}

ConvParams params_1d(const Conv1dOptions& o) {
  ConvParams p;
  p.spatial_dims = 1;
  p.stride = {1, o.stride};
  p.padding = {0, o.padding};
  p.dilation = {1, o.dilation};
  p.output_padding = {0, o.output_padding};
  p.groups = o.groups;
  return p;
}

ConvParams params_2d(const Conv2dOptions& o) {
  ConvParams p;
  p.stride = o.stride;
  p.padding = o.padding;
  p.dilation = o.dilation;
  p.output_padding = o.output_padding;
  p.groups = o.groups;
  return p;
}

}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv1dOptions& opt) {
  return conv_impl("conv1d", true, false, x, weight, bias, params_1d(opt));
}
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& opt) {
  return conv_impl("conv2d", false, false, x, weight, bias, params_2d(opt));
}
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv1dOptions& opt) {
  return conv_impl("conv_transpose1d", true, true, x, weight, bias, params_1d(opt));
}
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& opt) {
  return conv_impl("conv_transpose2d", false, true, x, weight, bias, params_2d(opt));
}

}  // namespace wick
