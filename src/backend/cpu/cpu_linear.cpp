// The fused linear on the CPU: rms_norm of x when asked, the product through matmul (BLAS),
// then one pass over the output rows for bias, activation, gate and residual
// (linear_epilogue.h). The matmul writes straight into the output when there is nothing to apply.
#include <vector>

#include "backend/convert.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"
#include "backend/linear_epilogue.h"

namespace wick {

void CpuBackend::linear_epilogue(const LinearEpilogue& e, const Tensor& y, const Tensor& bias, const Tensor& residual,
                                 const Tensor& out) {
  const int64_t R = out.dim(0), N = out.dim(1), ld = y.dim(1);
  dispatch_float(y.dtype(), "linear_epilogue", [&]<class Y>() {
    dispatch_float(out.dtype(), "linear_epilogue", [&]<class T>() {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const Y* yp = static_cast<const Y*>(y.data());
      const T* bp = bias.defined() ? static_cast<const T*>(bias.data()) : nullptr;
      const T* rp = residual.defined() ? static_cast<const T*>(residual.data()) : nullptr;
      T* op = static_cast<T*>(out.mutable_data());
      cpu::parallel_for(
          R, std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, N)), [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r)
              for (int64_t n = 0; n < N; ++n) {
                const C p = convert<C>(yp[r * ld + n]) + (bp ? convert<C>(bp[n]) : C(0));
                const C u = e.glu ? convert<C>(yp[r * ld + N + n]) + (bp ? convert<C>(bp[N + n]) : C(0)) : C(0);
                const C res = rp ? convert<C>(rp[r * N + n]) : C(0);
                op[r * N + n] = convert<T>(linear_output(e, p, u, res));
              }
          });
    });
  });
}

void CpuBackend::linear(const LinearParams& p, const Tensor& x, const Tensor& norm, const Tensor& w, const Tensor& bias,
                        const Tensor& residual, const Tensor& out) {
  linear_by_parts(*this, p, x, norm, w, bias, residual, out);
}

void CpuBackend::quant_linear(const LinearParams& p, const Tensor& x, const Tensor& norm, const QuantTensor& w,
                              QuantActivation act, const Tensor& bias, const Tensor& residual, const Tensor& out) {
  quant_linear_by_parts(*this, p, x, norm, w, act, bias, residual, out);
}

}  // namespace wick
