// The unary elementwise family: one strided kernel over (dtype, functor). The enum ->
// functor table lives in backend/elementwise_ops.h, shared with the CUDA backend. The
// contiguous loop vectorizes the f32 exp/tanh/erf of backend/math.h because the CPU
// kernels compile with -fno-trapping-math (src/CMakeLists.txt).
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"
#include "backend/elementwise_ops.h"

namespace wick {
namespace {

// out = op(x) over any strides; T is the storage type, Op works in compute_t<T>.
template <class T, class Op>
void unary_kernel(const Op& op, const Tensor& x, const Tensor& out) {
  using C = compute_t<T>;
  const T* src = cpu::base_ptr<const T>(x);
  T* dst = cpu::base_ptr<T>(out);
  cpu::for_each_run<2>({&out.layout(), &x.layout()}, [&](auto off, int64_t n, auto st) {
    T* o = dst + off[0];
    const T* s = src + off[1];
    if (st[0] == 1 && st[1] == 1) {  // the vectorizable path
      for (int64_t i = 0; i < n; ++i) o[i] = T(op(C(s[i])));
    } else if (st[1] == 0) {  // one input value broadcast along the run
      const T v = T(op(C(*s)));
      for (int64_t i = 0; i < n; ++i) o[i * st[0]] = v;
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * st[0]] = T(op(C(s[i * st[1]])));
    }
  });
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const UnaryParams& p, const Tensor& x, const Tensor& out) {
  dispatch(x.dtype(), [&]<class T>() {
    ew::with_unary_op<compute_t<T>>(op, p, [&]<class Op>(const Op& f) {
      if constexpr (std::is_integral_v<T> && !Op::kIntegers)
        fail(ErrorKind::DTypeMismatch, unary_op_name(op), ": expected a floating-point dtype, got ", dtype_v<T>);
      else
        unary_kernel<T>(f, x, out);
    });
  });
}

}  // namespace wick
