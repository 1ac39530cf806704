// copy (any strides, same dtype), cast (dtype conversion) and fill on CUDA: all through
// the one elementwise launcher.
#include <cstring>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/elementwise.cuh"

namespace wick {

using namespace cuda;

namespace {
struct Identity {
  template <class W>
  __device__ W operator()(W x) const {
    return x;
  }
};
template <class To>
struct ConvertTo {
  template <class From>
  __device__ To operator()(From x) const {
    return dconvert<To>(x);
  }
};
template <class D>
struct Constant {
  D v;
  __device__ D operator()() const { return v; }
};
}  // namespace

void CudaBackend::copy(const Tensor& src, const Tensor& dst) {
  activate();
  if (src.is_contiguous() && dst.is_contiguous() && src.numel() > 0) {
    WICK_CUDA_CHECK(
        cudaMemcpyAsync(const_cast<void*>(dst.data()), src.data(), src.nbytes(), cudaMemcpyDeviceToDevice, stream_));
    return;
  }
  // Bytes are bytes: dispatch on the element size only.
  auto run = [&]<class W>() { launch_elementwise<W, W>("copy", stream_, Identity{}, dst, src); };
  switch (src.element_size()) {
    case 1: run.template operator()<uint8_t>(); break;
    case 2: run.template operator()<uint16_t>(); break;
    case 4: run.template operator()<uint32_t>(); break;
    default: run.template operator()<uint64_t>(); break;
  }
}

void CudaBackend::cast(const Tensor& src, const Tensor& dst) {
  activate();
  dispatch(src.dtype(), [&]<class From>() {
    dispatch(dst.dtype(), [&]<class To>() {
      using F = dev_t<From>;
      using T = dev_t<To>;
      launch_elementwise<T, F>("to_dtype", stream_, ConvertTo<T>{}, dst, src);
    });
  });
}

void CudaBackend::fill(const Tensor& dst, Scalar value) {
  activate();
  dispatch(dst.dtype(), [&]<class T>() {
    using D = dev_t<T>;
    const T host_value = value.to<T>();
    D v;
    static_assert(sizeof(D) == sizeof(T));
    std::memcpy(&v, &host_value, sizeof(T));
    launch_elementwise<D>("fill", stream_, Constant<D>{v}, dst);
  });
}

}  // namespace wick
