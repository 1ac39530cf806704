// The epilogue of a fused linear (nn.h LinearEpilogue), one definition for every backend:
// what one output value becomes from its product(s), in f32 (f64 for f64 outputs).
#pragma once

#include "backend/elementwise_ops.h"
#include "wick/nn.h"

namespace wick {

// C: float (f64 outputs: double).
template <class C>
WICK_HD C linear_act(Activation a, C v) {
  switch (a) {
    case Activation::Silu: return ew::Silu<C>()(v);
    case Activation::GeluTanh: return ew::Gelu<C>()(v);
    case Activation::GeluErf: return ew::GeluErf<C>()(v);
    case Activation::Relu: return ew::Relu<C>()(v);
    case Activation::None: break;
  }
  return v;
}

// p: the product (+ bias) of the output's row, or of its gate row when glu; u: the up row's
// (glu only); r: the residual (0 when there is none).
template <class C>
WICK_HD C linear_output(const LinearEpilogue& e, C p, C u, C r) {
  return (e.glu ? linear_act(e.act, p) * u : linear_act(e.act, p)) + r;
}

// The fused linear from the backend's own entries: rms_norm into a scratch when norm is
// defined, matmul, then linear_epilogue (matmul straight into out when there is nothing to
// apply). The CPU's implementation, and CUDA's for what its GEMV does not take.
void linear_by_parts(Backend& be, const LinearParams& p, const Tensor& x, const Tensor& norm, const Tensor& w,
                     const Tensor& bias, const Tensor& residual, const Tensor& out);

// The quantized linear (op_table.h quant_linear) the same way: rms_norm into a scratch,
// quant_matmul's f32 product (into out when out is f32 with nothing to apply), then
// linear_epilogue. The CPU's implementation, and CUDA's for what its fused kernel does not take.
void quant_linear_by_parts(Backend& be, const LinearParams& p, const Tensor& x, const Tensor& norm,
                           const QuantTensor& w, QuantActivation act, const Tensor& bias, const Tensor& residual,
                           const Tensor& out);

}  // namespace wick
