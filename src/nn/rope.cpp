// Rotary position embedding (RoPE) of x (B, H, T, D) with cos/sin tables (T, D/2).
#include "core/checks.h"
#include "wick/nn.h"

namespace wick {

Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved) {
  constexpr std::string_view op = "rope";
  const Device dev = detail::common_device(op, {&x, &cos, &sin});
  detail::check_float(op, x);
  detail::check_same_dtype(op, x, cos);
  detail::check_same_dtype(op, x, sin);
  WICK_CHECK(x.rank() == 4, ShapeMismatch, op, ": expected x of rank 4 (batch, heads, seq, head_dim), got ", x.shape());
  const int64_t T = x.dim(2), D = x.dim(3);
  WICK_CHECK(D % 2 == 0, ShapeMismatch, op, ": head_dim must be even, got ", D);
  WICK_CHECK(cos.shape() == Shape({T, D / 2}) && sin.shape() == Shape({T, D / 2}), ShapeMismatch, op,
             ": cos/sin must have shape [", T, ", ", D / 2, "], got ", cos.shape(), " and ", sin.shape());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), dev);
  backend_for(dev).rope(x, cos, sin, interleaved, out);
  return out;
}

}  // namespace wick
