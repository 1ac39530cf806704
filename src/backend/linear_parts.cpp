// linear_by_parts (linear_epilogue.h): the fused linear as rms_norm, matmul and epilogue.
#include "backend/linear_epilogue.h"

namespace wick {

void linear_by_parts(Backend& be, const LinearParams& p, const Tensor& x, const Tensor& norm, const Tensor& w,
                     const Tensor& bias, const Tensor& residual, const Tensor& out) {
  Tensor h = x;
  if (norm.defined()) {
    h = Tensor::empty(x.shape(), x.dtype(), x.device());
    be.rms_norm(x, norm, p.norm_eps, h);
  }
  const LinearEpilogue& e = p.e;
  if (!e.glu && e.act == LinearEpilogue::Act::None && !bias.defined() && !residual.defined())
    return be.matmul(h, w.t(), out);
  const Tensor product = Tensor::empty(Shape{x.dim(0), w.dim(0)}, x.dtype(), x.device());
  be.matmul(h, w.t(), product);
  be.linear_epilogue(e, product, bias, residual, out);
}

}  // namespace wick
