// linear(x, weight, bias) = x @ weight^T + bias, weight (out, in) as PyTorch's Linear.
// weight.t() is a view: the matmul backend passes it to BLAS with a transpose flag.
//
// The bias is added in place on the fresh matmul result (one elementwise pass, no
// second allocation); an elementwise op reading and writing the same positions is safe.
#include "core/checks.h"
#include "wick/nn.h"
#include "wick/ops.h"

namespace wick {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const Device dev = detail::common_device("linear", {&x, &weight});
  WICK_CHECK(weight.rank() == 2, ShapeMismatch, "linear: weight must be 2-D (out, in), got shape ", weight.shape());
  WICK_CHECK(x.rank() >= 1 && x.dim(-1) == weight.dim(1), ShapeMismatch, "linear: input of shape ", x.shape(),
             " does not match weight of shape ", weight.shape(), " (in features ", weight.dim(1), ")");
  Tensor y = matmul(x, weight.t());
  if (!bias.defined()) return y;
  detail::common_device("linear", {&x, &bias});
  detail::check_same_dtype("linear", x, bias);
  const int64_t out_features = weight.dim(0);
  WICK_CHECK(bias.rank() == 1 && bias.dim(0) == out_features, ShapeMismatch, "linear: bias must have shape [",
             out_features, "], got ", bias.shape());
  backend_for(dev).binary(BinaryOp::Add, y, bias.broadcast_as(y.shape()), y);
  return y;
}

}  // namespace wick
