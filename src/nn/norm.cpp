// layer_norm and rms_norm over the last dim; weight and bias are optional 1-D tensors
// of the last dim's size and x's dtype.
#include "core/checks.h"
#include "wick/nn.h"

namespace wick {

namespace {
void check_param(const char* op, const Tensor& x, const Tensor& p, const char* what) {
  if (!p.defined()) return;
  detail::common_device(op, {&x, &p});
  WICK_CHECK(p.dtype() == x.dtype(), DTypeMismatch, op, ": ", what, " dtype ", p.dtype(), " differs from input dtype ",
             x.dtype());
  const int64_t n = x.rank() ? x.dim(-1) : 1;
  WICK_CHECK(p.rank() == 1 && p.dim(0) == n, ShapeMismatch, op, ": ", what, " must have shape [", n,
             "] (the last dim of input ", x.shape(), "), got ", p.shape());
}

void check_input(const char* op, const Tensor& x, double eps) {
  detail::check_defined(op, x);
  detail::check_float(op, x);
  WICK_CHECK(eps >= 0, InvalidArgument, op, ": eps must be non-negative, got ", eps);
}
}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  check_input("layer_norm", x, eps);
  check_param("layer_norm", x, weight, "weight");
  check_param("layer_norm", x, bias, "bias");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  detail::backend_of(x).layer_norm(x, weight, bias, eps, out);
  return out;
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  check_input("rms_norm", x, eps);
  check_param("rms_norm", x, weight, "weight");
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  detail::backend_of(x).rms_norm(x, weight, eps, out);
  return out;
}

}  // namespace wick
