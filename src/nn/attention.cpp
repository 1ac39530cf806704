// scaled_dot_product_attention: softmax(q k^T * scale + mask [+ causal]) v, one backend
// call. The T x T score matrix is never materialized (the CPU kernel keeps one row; the
// CUDA kernel tiles keys flash-attention style).
#include <cmath>

#include "core/checks.h"
#include "nn/attention_sinks.h"
#include "wick/nn.h"

namespace wick {

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                    const AttentionOptions& opt) {
  constexpr std::string_view op = "scaled_dot_product_attention";
  const Device dev = detail::common_device(op, {&q, &k, &v});
  detail::check_float(op, q);
  detail::check_same_dtype(op, q, k);
  detail::check_same_dtype(op, q, v);
  WICK_CHECK(q.rank() == 4 && k.rank() == 4 && v.rank() == 4, ShapeMismatch, op,
             ": expected q, k, v of rank 4 (batch, heads, seq, head_dim), got ", q.shape(), ", ", k.shape(), ", ",
             v.shape());
  const int64_t B = q.dim(0), H = q.dim(1), Tq = q.dim(2), D = q.dim(3), Tk = k.dim(2);
  WICK_CHECK(k.dim(0) == B && k.dim(1) == H && k.dim(3) == D, ShapeMismatch, op, ": k ", k.shape(),
             " does not match q ", q.shape());
  WICK_CHECK(v.dim(0) == B && v.dim(1) == H && v.dim(2) == Tk && v.dim(3) == D, ShapeMismatch, op, ": v ", v.shape(),
             " does not match k ", k.shape());
  Tensor m;
  if (mask.defined()) {
    detail::common_device(op, {&q, &mask});
    detail::check_float(op, mask);
    m = mask.broadcast_as(Shape{B, H, Tq, Tk});
  }
  AttentionParams p;
  p.causal = opt.causal;
  p.scale = opt.scale.value_or(D > 0 ? 1.0 / std::sqrt(double(D)) : 1.0);
  p.sinks = detail::attention_sinks(op, opt.sinks, H, dev);
  Tensor out = Tensor::empty(Shape{B, H, Tq, D}, q.dtype(), dev);
  backend_for(dev).attention(p, q, k, v, m, out);
  return out;
}

}  // namespace wick
