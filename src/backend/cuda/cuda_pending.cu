// Op families of the CUDA backend not implemented yet: they raise Unsupported through the
// Backend defaults. Each family's file removes its entries from here when it lands.
#include "backend/cuda/cuda_backend.h"

namespace wick {

void CudaBackend::reduce(ReduceOp op, const Tensor& x, const std::vector<size_t>& dims, const Tensor& out) {
  Backend::reduce(op, x, dims, out);
}
void CudaBackend::softmax(const Tensor& x, const Tensor& out, bool log) { Backend::softmax(x, out, log); }
void CudaBackend::layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& out) {
  Backend::layer_norm(x, w, b, eps, out);
}
void CudaBackend::rms_norm(const Tensor& x, const Tensor& w, double eps, const Tensor& out) {
  Backend::rms_norm(x, w, eps, out);
}

}  // namespace wick
