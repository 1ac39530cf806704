// Op families of the CPU backend not implemented yet: they raise Unsupported through the
// Backend defaults. Each family's file removes its entries from here when it lands.
#include "backend/cpu/cpu_backend.h"

namespace wick {

void CpuBackend::reduce(ReduceOp op, const Tensor& x, const std::vector<size_t>& dims, const Tensor& out) {
  Backend::reduce(op, x, dims, out);
}
void CpuBackend::index_select(const Tensor& s, size_t d, const Tensor& i, const Tensor& o) {
  Backend::index_select(s, d, i, o);
}
void CpuBackend::gather(const Tensor& s, size_t d, const Tensor& i, const Tensor& o) { Backend::gather(s, d, i, o); }
void CpuBackend::scatter(const Tensor& dst, size_t d, const Tensor& i, const Tensor& s, ScatterMode m) {
  Backend::scatter(dst, d, i, s, m);
}
void CpuBackend::index_add(const Tensor& dst, size_t d, const Tensor& i, const Tensor& s) {
  Backend::index_add(dst, d, i, s);
}
void CpuBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out) { Backend::matmul(a, b, out); }
void CpuBackend::softmax(const Tensor& x, const Tensor& out, bool log) { Backend::softmax(x, out, log); }
void CpuBackend::layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& out) {
  Backend::layer_norm(x, w, b, eps, out);
}
void CpuBackend::rms_norm(const Tensor& x, const Tensor& w, double eps, const Tensor& out) {
  Backend::rms_norm(x, w, eps, out);
}

}  // namespace wick
