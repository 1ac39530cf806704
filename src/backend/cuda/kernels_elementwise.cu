// The elementwise families on CUDA: unary, binary, compare and where. The op functors
// and the enum -> functor tables are the CPU backend's (backend/elementwise_ops.h); here
// they are wrapped to load storage types, compute in dcompute_t and store, then run by
// the one elementwise launcher.
#include "backend/cuda/device_types.cuh"
#include "backend/cuda/elementwise.cuh"
#include "backend/elementwise_ops.h"

namespace wick {

using namespace cuda;

namespace {

template <class S, class Op>
struct UnaryFn {
  Op op;
  __device__ S operator()(S x) const { return from_compute<S>(op(to_compute(x))); }
};

template <class S, class Op>
struct BinaryFn {
  Op op;
  __device__ S operator()(S a, S b) const { return from_compute<S>(op(to_compute(a), to_compute(b))); }
};

template <class S, class Op>
struct CompareFn {
  Op op;
  __device__ uint8_t operator()(S a, S b) const { return uint8_t(op(to_compute(a), to_compute(b)) ? 1 : 0); }
};

template <class CS, class S>
struct WhereFn {
  __device__ S operator()(CS c, S t, S f) const { return c != CS(0) ? t : f; }
};

}  // namespace

void CudaBackend::unary(UnaryOp op, const UnaryParams& p, const Tensor& x, const Tensor& out) {
  activate();
  dispatch(x.dtype(), [&]<class T>() {
    using S = dev_t<T>;
    ew::with_unary_op<compute_t<T>>(op, p, [&]<class Op>(const Op& f) {
      if constexpr (std::is_integral_v<T> && !Op::kIntegers)
        fail(ErrorKind::DTypeMismatch, unary_op_name(op), ": expected a floating-point dtype, got ", dtype_v<T>);
      else
        launch_elementwise<S, S>(unary_op_name(op), stream_, UnaryFn<S, Op>{f}, out, x);
    });
  });
}

void CudaBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  activate();
  dispatch(out.dtype(), [&]<class T>() {
    using S = dev_t<T>;
    ew::with_binary_op<compute_t<T>>(op, [&]<class Op>(const Op& f) {
      launch_elementwise<S, S, S>(binary_op_name(op), stream_, BinaryFn<S, Op>{f}, out, a, b);
    });
  });
}

void CudaBackend::compare(CompareOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  activate();
  dispatch(a.dtype(), [&]<class T>() {
    using S = dev_t<T>;
    ew::with_compare_op<compute_t<T>>(op, [&]<class Op>(const Op& f) {
      launch_elementwise<uint8_t, S, S>(compare_op_name(op), stream_, CompareFn<S, Op>{f}, out, a, b);
    });
  });
}

void CudaBackend::where(const Tensor& cond, const Tensor& t, const Tensor& f, const Tensor& out) {
  activate();
  dispatch_index(cond.dtype(), "where", [&]<class CT>() {
    dispatch(out.dtype(), [&]<class T>() {
      using S = dev_t<T>;
      launch_elementwise<S, CT, S, S>("where", stream_, WhereFn<CT, S>{}, out, cond, t, f);
    });
  });
}

}  // namespace wick
