// linear_by_parts and quant_linear_by_parts (linear_epilogue.h): the fused linears as
// rms_norm, product and epilogue.
#include "backend/linear_epilogue.h"

namespace wick {

namespace {
bool nothing_to_apply(const LinearEpilogue& e, const Tensor& bias, const Tensor& residual) {
  return !e.glu && e.act == Activation::None && !bias.defined() && !residual.defined();
}

// x, or rms_norm(x, norm) in a scratch of x's dtype when norm is defined.
Tensor normalized(Backend& be, const LinearParams& p, const Tensor& x, const Tensor& norm) {
  if (!norm.defined()) return x;
  Tensor h = Tensor::empty(x.shape(), x.dtype(), x.device());
  be.rms_norm(x, norm, p.norm_eps, h);
  return h;
}
}  // namespace

void linear_by_parts(Backend& be, const LinearParams& p, const Tensor& x, const Tensor& norm, const Tensor& w,
                     const Tensor& bias, const Tensor& residual, const Tensor& out) {
  const Tensor h = normalized(be, p, x, norm);
  const LinearEpilogue& e = p.e;
  if (nothing_to_apply(e, bias, residual)) return be.matmul(h, w.t(), out);
  const Tensor product = Tensor::empty(Shape{x.dim(0), w.dim(0)}, x.dtype(), x.device());
  be.matmul(h, w.t(), product);
  be.linear_epilogue(e, product, bias, residual, out);
}

void quant_linear_by_parts(Backend& be, const LinearParams& p, const Tensor& x, const Tensor& norm,
                           const QuantTensor& w, QuantActivation act, const Tensor& bias, const Tensor& residual,
                           const Tensor& out) {
  const Tensor h = normalized(be, p, x, norm);
  if (nothing_to_apply(p.e, bias, residual) && out.dtype() == DType::F32) return be.quant_matmul(h, w, act, out);
  const Tensor product = Tensor::empty(Shape{x.dim(0), w.shape[0]}, DType::F32, x.device());
  be.quant_matmul(h, w, act, product);
  be.linear_epilogue(p.e, product, bias, residual, out);
}

}  // namespace wick
