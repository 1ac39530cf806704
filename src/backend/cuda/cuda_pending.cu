// Op families of the CUDA backend not implemented yet: they raise Unsupported through the
// Backend defaults. Each family's file removes its entries from here when it lands.
#include "backend/cuda/cuda_backend.h"

namespace wick {

void CudaBackend::reduce(ReduceOp op, const Tensor& x, const std::vector<size_t>& dims, const Tensor& out) {
  Backend::reduce(op, x, dims, out);
}
void CudaBackend::index_select(const Tensor& s, size_t d, const Tensor& i, const Tensor& o) {
  Backend::index_select(s, d, i, o);
}
void CudaBackend::gather(const Tensor& s, size_t d, const Tensor& i, const Tensor& o) { Backend::gather(s, d, i, o); }
void CudaBackend::scatter(const Tensor& dst, size_t d, const Tensor& i, const Tensor& s, ScatterMode m) {
  Backend::scatter(dst, d, i, s, m);
}
void CudaBackend::index_add(const Tensor& dst, size_t d, const Tensor& i, const Tensor& s) {
  Backend::index_add(dst, d, i, s);
}
void CudaBackend::conv(const ConvParams& p, const Tensor& x, const Tensor& w, const Tensor& out) {
  Backend::conv(p, x, w, out);
}
void CudaBackend::pool2d(const PoolParams& p, const Tensor& x, const Tensor& out) { Backend::pool2d(p, x, out); }
void CudaBackend::upsample(const UpsampleParams& p, const Tensor& x, const Tensor& out) {
  Backend::upsample(p, x, out);
}
void CudaBackend::softmax(const Tensor& x, const Tensor& out, bool log) { Backend::softmax(x, out, log); }
void CudaBackend::layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& out) {
  Backend::layer_norm(x, w, b, eps, out);
}
void CudaBackend::rms_norm(const Tensor& x, const Tensor& w, double eps, const Tensor& out) {
  Backend::rms_norm(x, w, eps, out);
}

}  // namespace wick
