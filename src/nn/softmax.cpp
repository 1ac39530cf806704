// softmax / log_softmax over the last dim (numerically stable: the row max is
// subtracted before exponentiating). A rank-0 input is one row of one element.
#include "core/checks.h"
#include "wick/nn.h"

namespace wick {

namespace {
Tensor softmax_impl(const Tensor& x, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  detail::check_defined(op, x);
  detail::check_float(op, x);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  detail::backend_of(x).softmax(x, out, log);
  return out;
}
}  // namespace

Tensor softmax(const Tensor& x) { return softmax_impl(x, false); }
Tensor log_softmax(const Tensor& x) { return softmax_impl(x, true); }

}  // namespace wick
