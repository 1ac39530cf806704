// The fused linear on the CPU.
//
// f32 and f64 without a norm or glu (BERT's and GPT-2's linears): out is filled with the
// bias (and the residual when there is no activation), BLAS adds x @ w^T onto it (beta = 1,
// where beta = 0 would have zeroed out in a pass of its own), and an activation is applied
// in place, the residual added after it. So the product is never a separate tensor and
// out is passed over once besides the GEMM. Otherwise (rms_norm first, glu, f16/bf16):
// linear_by_parts, the product then linear_epilogue.
//
// Epilogue loops take the activation as a functor type chosen once per call (a switch per
// element neither inlines nor vectorizes: it was a sixth of all-MiniLM's CPU time).
#include <vector>

#include "backend/convert.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_matmul.h"
#include "backend/cpu/thread_pool.h"
#include "backend/linear_epilogue.h"

namespace wick {

namespace {

struct NoAct {
  template <class C>
  C operator()(C x) const {
    return x;
  }
};

// f(act) with the activation as a functor of the compute type C.
template <class C, class F>
void with_act(Activation a, F&& f) {
  switch (a) {
    case Activation::Silu: return f(ew::Silu<C>());
    case Activation::GeluTanh: return f(ew::Gelu<C>());
    case Activation::GeluErf: return f(ew::GeluErf<C>());
    case Activation::Relu: return f(ew::Relu<C>());
    case Activation::None: break;
  }
  f(NoAct());
}

// Rows [0, R) in parallel, a grain of about kElementwiseGrain elements of N columns.
template <class F>
void for_rows(int64_t R, int64_t N, F&& f) {
  cpu::parallel_for(R, std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, N)), f);
}

// C: float (double for f64 outputs), as linear_output computes.
template <class T>
using EpilogueCompute = std::conditional_t<std::is_same_v<T, double>, double, float>;

// f32/f64 without norm or glu: see the file comment.
template <class T>
void linear_bias_first(const LinearEpilogue& e, const Tensor& x, const Tensor& w, const Tensor& bias,
                       const Tensor& residual, const Tensor& out) {
  const int64_t R = out.dim(0), N = out.dim(1);
  const T* bp = bias.defined() ? static_cast<const T*>(bias.data()) : nullptr;
  const T* rp = residual.defined() ? static_cast<const T*>(residual.data()) : nullptr;
  T* op = static_cast<T*>(out.mutable_data());
  const bool act = e.act != Activation::None;
  const T* first_rp = act ? nullptr : rp;  // with an activation the residual comes after it
  if (bp || first_rp) {
    for_rows(R, N, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        T* o = op + r * N;
        if (bp && first_rp) {
          for (int64_t n = 0; n < N; ++n) o[n] = bp[n] + first_rp[r * N + n];
        } else if (bp) {
          for (int64_t n = 0; n < N; ++n) o[n] = bp[n];
        } else {
          for (int64_t n = 0; n < N; ++n) o[n] = first_rp[r * N + n];
        }
      }
    });
  }
  cpu::matmul_into(x, w.t(), out, bp || first_rp);
  if (!act) return;
  with_act<T>(e.act, [&](const auto& f) {
    for_rows(R, N, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        T* o = op + r * N;
        if (rp) {
          for (int64_t n = 0; n < N; ++n) o[n] = f(o[n]) + rp[r * N + n];
        } else {
          for (int64_t n = 0; n < N; ++n) o[n] = f(o[n]);
        }
      }
    });
  });
}

}  // namespace

void CpuBackend::linear_epilogue(const LinearEpilogue& e, const Tensor& y, const Tensor& bias, const Tensor& residual,
                                 const Tensor& out) {
  const int64_t R = out.dim(0), N = out.dim(1), ld = y.dim(1);
  dispatch_float(y.dtype(), "linear_epilogue", [&]<class Y>() {
    dispatch_float(out.dtype(), "linear_epilogue", [&]<class T>() {
      using C = EpilogueCompute<T>;
      const Y* yp = static_cast<const Y*>(y.data());
      const T* bp = bias.defined() ? static_cast<const T*>(bias.data()) : nullptr;
      const T* rp = residual.defined() ? static_cast<const T*>(residual.data()) : nullptr;
      T* op = static_cast<T*>(out.mutable_data());
      with_act<C>(e.act, [&](const auto& f) {
        for_rows(R, N, [&](int64_t r0, int64_t r1) {
          // One row at a time through C scratch rows, each step a loop GCC vectorizes;
          // the operations are linear_output's, in its order.
          std::vector<C> prod(static_cast<size_t>(N)), up(static_cast<size_t>(e.glu ? N : 0));
          for (int64_t r = r0; r < r1; ++r) {
            const Y* yr = yp + r * ld;
            for (int64_t n = 0; n < N; ++n) prod[size_t(n)] = convert<C>(yr[n]);
            if (bp)
              for (int64_t n = 0; n < N; ++n) prod[size_t(n)] += convert<C>(bp[n]);
            for (int64_t n = 0; n < N; ++n) prod[size_t(n)] = f(prod[size_t(n)]);
            if (e.glu) {
              for (int64_t n = 0; n < N; ++n) up[size_t(n)] = convert<C>(yr[N + n]);
              if (bp)
                for (int64_t n = 0; n < N; ++n) up[size_t(n)] += convert<C>(bp[N + n]);
              for (int64_t n = 0; n < N; ++n) prod[size_t(n)] *= up[size_t(n)];
            }
            if (rp)
              for (int64_t n = 0; n < N; ++n) prod[size_t(n)] += convert<C>(rp[r * N + n]);
            T* o = op + r * N;
            for (int64_t n = 0; n < N; ++n) o[n] = convert<T>(prod[size_t(n)]);
          }
        });
      });
    });
  });
}

void CpuBackend::linear(const LinearParams& p, const Tensor& x, const Tensor& norm, const Tensor& w, const Tensor& bias,
                        const Tensor& residual, const Tensor& out) {
  const DType dt = out.dtype();
  if (norm.defined() || p.e.glu || (dt != DType::F32 && dt != DType::F64))
    return linear_by_parts(*this, p, x, norm, w, bias, residual, out);
  if (dt == DType::F32)
    linear_bias_first<float>(p.e, x, w, bias, residual, out);
  else
    linear_bias_first<double>(p.e, x, w, bias, residual, out);
}

void CpuBackend::quant_linear(const LinearParams& p, const Tensor& x, const Tensor& norm, const QuantTensor& w,
                              QuantActivation act, const Tensor& bias, const Tensor& residual, const Tensor& out) {
  quant_linear_by_parts(*this, p, x, norm, w, act, bias, residual, out);
}

}  // namespace wick
