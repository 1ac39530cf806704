// The binary, compare and where families: one strided kernel for binary and compare
// (they differ only in the output type) and one for where. Inputs arrive broadcast to
// out's shape (stride 0 where broadcast); the runs where a whole input is one value
// (stride 0) get their own loop so the compiler vectorizes row/scalar broadcasts too.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"
#include "backend/elementwise_ops.h"

namespace wick {
namespace {

// out = op(a, b); T is the input storage type, Out the output's (T, or u8 for compare).
template <class T, class Out, class Op>
void binary_kernel(const Op& op, const Tensor& a, const Tensor& b, const Tensor& out) {
  using C = compute_t<T>;
  const T* pa = cpu::base_ptr<const T>(a);
  const T* pb = cpu::base_ptr<const T>(b);
  Out* po = cpu::base_ptr<Out>(out);
  cpu::for_each_run<3>({&out.layout(), &a.layout(), &b.layout()}, [&](auto off, int64_t n, auto st) {
    Out* o = po + off[0];
    const T* x = pa + off[1];
    const T* y = pb + off[2];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = Out(op(C(x[i]), C(y[i])));
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
      const C yv = C(*y);
      for (int64_t i = 0; i < n; ++i) o[i] = Out(op(C(x[i]), yv));
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
      const C xv = C(*x);
      for (int64_t i = 0; i < n; ++i) o[i] = Out(op(xv, C(y[i])));
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * st[0]] = Out(op(C(x[i * st[1]]), C(y[i * st[2]])));
    }
  });
}

// out = cond != 0 ? t : f; Cond is the condition's storage type.
template <class Cond, class T>
void where_kernel(const Tensor& cond, const Tensor& t, const Tensor& f, const Tensor& out) {
  const Cond* pc = cpu::base_ptr<const Cond>(cond);
  const T* pt = cpu::base_ptr<const T>(t);
  const T* pf = cpu::base_ptr<const T>(f);
  T* po = cpu::base_ptr<T>(out);
  cpu::for_each_run<4>({&out.layout(), &cond.layout(), &t.layout(), &f.layout()}, [&](auto off, int64_t n, auto st) {
    T* o = po + off[0];
    const Cond* c = pc + off[1];
    const T* x = pt + off[2];
    const T* y = pf + off[3];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = c[i] != Cond(0) ? x[i] : y[i];
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * st[0]] = c[i * st[1]] != Cond(0) ? x[i * st[2]] : y[i * st[3]];
    }
  });
}

}  // namespace

void CpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch(a.dtype(), [&]<class T>() {
    ew::with_binary_op<compute_t<T>>(op, [&]<class Op>(const Op& f) {
      if constexpr (std::is_integral_v<T> && !Op::kIntegers)
        fail(ErrorKind::DTypeMismatch, binary_op_name(op), ": expected a floating-point dtype, got ", dtype_v<T>);
      else
        binary_kernel<T, T>(f, a, b, out);
    });
  });
}

void CpuBackend::compare(CompareOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch(a.dtype(), [&]<class T>() {
    ew::with_compare_op<compute_t<T>>(op, [&](const auto& f) { binary_kernel<T, uint8_t>(f, a, b, out); });
  });
}

void CpuBackend::where(const Tensor& cond, const Tensor& t, const Tensor& f, const Tensor& out) {
  dispatch_index(cond.dtype(), "where", [&]<class Cond>() {
    dispatch(t.dtype(), [&]<class T>() { where_kernel<Cond, T>(cond, t, f, out); });
  });
}

}  // namespace wick
