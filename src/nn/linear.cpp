// linear(x, weight, bias[, residual, epilogue]) = epilogue(x @ weight^T + bias), weight (out,
// in) as PyTorch's Linear; one backend call (`linear`: on CUDA one kernel for the few rows of
// a decode step, the GEMM and one epilogue pass otherwise). weight may be any view: the
// backends hand weight.t() to BLAS with a transpose flag rather than copying it.
// rms_norm_linear normalizes x first, in the same kernel. linear_epilogue applies the same epilogue to a product made
// elsewhere. quant_linear / rms_norm_quant_linear are the same ops for a packed (ggml block) weight.
#include "core/checks.h"
#include "core/quant_checks.h"
#include "wick/nn.h"
#include "wick/ops.h"
#include "wick/quant.h"

namespace wick {

namespace {

// The rows x's last dim is multiplied by, and the output's last dim: 2N rows give N with glu.
int64_t out_features(const char* op, int64_t rows, const LinearEpilogue& e) {
  WICK_CHECK(!e.glu || rows % 2 == 0, ShapeMismatch, op, ": a gated (glu) epilogue needs an even number of ",
             "product columns ([gate; up]), got ", rows);
  return e.glu ? rows / 2 : rows;
}

// bias (rows) and residual (..., N) as the backend takes them: contiguous, 2-D residual.
void check_extras(const char* op, const Tensor& bias, const Tensor& residual, int64_t rows, const Shape& out_shape,
                  DType dtype, Device dev) {
  if (bias.defined()) {
    WICK_CHECK(bias.device() == dev, DeviceMismatch, op, ": bias is on ", bias.device(), ", input on ", dev);
    WICK_CHECK(bias.dtype() == dtype, DTypeMismatch, op, ": bias dtype ", bias.dtype(), " differs from ", dtype);
    WICK_CHECK(bias.rank() == 1 && bias.dim(0) == rows, ShapeMismatch, op, ": bias must have shape [", rows, "], got ",
               bias.shape());
  }
  if (residual.defined()) {
    WICK_CHECK(residual.device() == dev, DeviceMismatch, op, ": residual is on ", residual.device(), ", input on ",
               dev);
    WICK_CHECK(residual.dtype() == dtype, DTypeMismatch, op, ": residual dtype ", residual.dtype(), " differs from ",
               dtype);
    WICK_CHECK(residual.shape() == out_shape, ShapeMismatch, op, ": residual must have the output's shape ", out_shape,
               ", got ", residual.shape());
  }
}

// The rms_norm weight of a fused linear: undefined, or (k) of x's dtype on its device.
void check_norm(const char* op, const Tensor& norm, double eps, const Tensor& x, int64_t k, Device dev) {
  if (!norm.defined()) return;
  WICK_CHECK(norm.device() == dev, DeviceMismatch, op, ": norm weight is on ", norm.device(), ", input on ", dev);
  WICK_CHECK(norm.dtype() == x.dtype(), DTypeMismatch, op, ": norm weight dtype ", norm.dtype(), " differs from ",
             x.dtype());
  WICK_CHECK(norm.rank() == 1 && norm.dim(0) == k, ShapeMismatch, op, ": norm weight must have shape [", k, "], got ",
             norm.shape());
  WICK_CHECK(eps >= 0, InvalidArgument, op, ": eps must be non-negative, got ", eps);
}

// An f32 input with an f16/bf16 weight: an f32 model over 16-bit weights (the product is
// f32, from the exact values of the weight), as llama.cpp runs 16-bit files on the CPU.
bool mixed_weight(const Tensor& x, const Tensor& weight) {
  return x.dtype() == DType::F32 && (weight.dtype() == DType::F16 || weight.dtype() == DType::BF16);
}

Tensor rows_of(const Tensor& t, int64_t cols) { return t.defined() ? t.contiguous().reshape({-1, cols}) : t; }

// linear or rms_norm_linear (norm defined).
Tensor fused_linear(const char* op, const Tensor& x, const Tensor& norm, double eps, const Tensor& weight,
                    const Tensor& bias, const Tensor& residual, const LinearEpilogue& epilogue) {
  const Device dev = detail::common_device(op, {&x, &weight});
  detail::check_float(op, x);
  if (!mixed_weight(x, weight)) detail::check_same_dtype(op, x, weight);
  WICK_CHECK(weight.rank() == 2, ShapeMismatch, op, ": weight must be 2-D (out, in), got shape ", weight.shape());
  WICK_CHECK(x.rank() >= 1 && x.dim(-1) == weight.dim(1), ShapeMismatch, op, ": input of shape ", x.shape(),
             " does not match weight of shape ", weight.shape(), " (in features ", weight.dim(1), ")");
  const int64_t rows = weight.dim(0), n = out_features(op, rows, epilogue), k = weight.dim(1);
  check_norm(op, norm, eps, x, k, dev);
  std::vector<int64_t> dims = x.shape().dims();
  dims.back() = n;
  const Shape out_shape(dims);
  check_extras(op, bias, residual, rows, out_shape, x.dtype(), dev);
  Tensor out = Tensor::empty(out_shape, x.dtype(), dev);
  if (out.numel() == 0) return out;
  const int64_t R = out.numel() / n;  // x's rows (a -1 would not resolve for K == 0)
  // The CPU multiplies f32 rows by a 16-bit weight in place; elsewhere the weight is widened.
  const Tensor w = mixed_weight(x, weight) && !dev.is_cpu() ? weight.to(x.dtype()) : weight;
  detail::backend_of(x).linear({epilogue, eps}, x.reshape({R, k}), norm.defined() ? norm.contiguous() : norm, w,
                               bias.defined() ? bias.contiguous() : bias, rows_of(residual, n), out.reshape({-1, n}));
  return out;
}

// quant_linear or rms_norm_quant_linear (norm defined).
Tensor fused_quant_linear(const char* op, const Tensor& x, const Tensor& norm, double eps, const QuantTensor& w,
                          QuantActivation act, const Tensor& bias, const Tensor& residual, const LinearEpilogue& e,
                          std::optional<DType> out_dtype) {
  detail::check_defined(op, x);
  WICK_CHECK(x.rank() >= 1, ShapeMismatch, op, ": input must have at least one dim");
  WICK_CHECK(x.dtype() == DType::F32 || x.dtype() == DType::F16 || x.dtype() == DType::BF16, DTypeMismatch, op,
             ": input must be f32, f16 or bf16, got ", x.dtype());
  const int64_t k = x.dim(-1);
  int64_t R = 1;  // x's rows (numel / k would not resolve for k == 0)
  for (size_t i = 0; i + 1 < x.rank(); ++i) R *= x.dim(i);
  const Tensor x2 = x.contiguous().reshape({R, k});
  detail::check_quant_product(op, x2, w, act);
  const Device dev = x.device();
  const int64_t rows = w.shape[0], n = out_features(op, rows, e);
  check_norm(op, norm, eps, x, k, dev);
  const DType dt = out_dtype.value_or(x.dtype());
  WICK_CHECK(dt == DType::F32 || dt == DType::F16 || dt == DType::BF16, DTypeMismatch, op,
             ": output dtype must be f32, f16 or bf16, got ", dt);
  std::vector<int64_t> dims = x.shape().dims();
  dims.back() = n;
  const Shape out_shape(dims);
  check_extras(op, bias, residual, rows, out_shape, dt, dev);
  Tensor out = Tensor::empty(out_shape, dt, dev);
  if (out.numel() == 0) return out;
  if (k == 0)  // an empty sum: the epilogue of zeros
    return linear_epilogue(zeros(Shape{R, rows}, DType::F32, dev), bias, residual, e, dt).reshape(out_shape);
  detail::backend_of(x).quant_linear({e, eps}, x2, norm.defined() ? norm.contiguous() : norm, w, act,
                                     bias.defined() ? bias.contiguous() : bias, rows_of(residual, n),
                                     out.reshape({-1, n}));
  return out;
}

}  // namespace

Tensor quant_linear(const Tensor& x, const QuantTensor& weight, QuantActivation act, const Tensor& bias,
                    const Tensor& residual, const LinearEpilogue& epilogue, std::optional<DType> out_dtype) {
  return fused_quant_linear("quant_linear", x, {}, 0.0, weight, act, bias, residual, epilogue, out_dtype);
}

Tensor rms_norm_quant_linear(const Tensor& x, const Tensor& norm_weight, double eps, const QuantTensor& weight,
                             QuantActivation act, const Tensor& bias, const Tensor& residual,
                             const LinearEpilogue& epilogue, std::optional<DType> out_dtype) {
  detail::check_defined("rms_norm_quant_linear", norm_weight, "norm weight");
  return fused_quant_linear("rms_norm_quant_linear", x, norm_weight, eps, weight, act, bias, residual, epilogue,
                            out_dtype);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) { return linear(x, weight, bias, {}, {}); }

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual,
              const LinearEpilogue& epilogue) {
  return fused_linear("linear", x, {}, 0.0, weight, bias, residual, epilogue);
}

Tensor rms_norm_linear(const Tensor& x, const Tensor& norm_weight, double eps, const Tensor& weight, const Tensor& bias,
                       const Tensor& residual, const LinearEpilogue& epilogue) {
  detail::check_defined("rms_norm_linear", norm_weight, "norm weight");
  return fused_linear("rms_norm_linear", x, norm_weight, eps, weight, bias, residual, epilogue);
}

Tensor linear_epilogue(const Tensor& y, const Tensor& bias, const Tensor& residual, const LinearEpilogue& epilogue,
                       DType out_dtype) {
  detail::check_defined("linear_epilogue", y);
  detail::check_float("linear_epilogue", y);
  WICK_CHECK(is_float(out_dtype), DTypeMismatch, "linear_epilogue: output dtype must be a float dtype, got ",
             out_dtype);
  WICK_CHECK(y.rank() >= 1, ShapeMismatch, "linear_epilogue: the product must have at least one dim");
  const int64_t rows = y.dim(-1), n = out_features("linear_epilogue", rows, epilogue);
  std::vector<int64_t> dims = y.shape().dims();
  dims.back() = n;
  const Shape out_shape(dims);
  check_extras("linear_epilogue", bias, residual, rows, out_shape, out_dtype, y.device());
  Tensor out = Tensor::empty(out_shape, out_dtype, y.device());
  if (out.numel() == 0) return out;
  detail::backend_of(y).linear_epilogue(epilogue, rows_of(y, rows), bias.defined() ? bias.contiguous() : bias,
                                        rows_of(residual, n), out.reshape({-1, n}));
  return out;
}

}  // namespace wick
