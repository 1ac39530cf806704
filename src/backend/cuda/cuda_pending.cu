// Op families of the CUDA backend not implemented yet: they raise Unsupported through the
// Backend defaults. Each family's file removes its entries from here when it lands.
#include "backend/cuda/cuda_backend.h"

namespace wick {

void CudaBackend::unary(UnaryOp op, const UnaryParams& p, const Tensor& x, const Tensor& out) {
  Backend::unary(op, p, x, out);
}
void CudaBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  Backend::binary(op, a, b, out);
}
void CudaBackend::compare(CompareOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  Backend::compare(op, a, b, out);
}
void CudaBackend::where(const Tensor& c, const Tensor& t, const Tensor& f, const Tensor& out) {
  Backend::where(c, t, f, out);
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
void CudaBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& out) { Backend::matmul(a, b, out); }
void CudaBackend::conv(const ConvParams& p, const Tensor& x, const Tensor& w, const Tensor& out) {
  Backend::conv(p, x, w, out);
}
void CudaBackend::pool2d(const PoolParams& p, const Tensor& x, const Tensor& out) { Backend::pool2d(p, x, out); }
void CudaBackend::upsample(const UpsampleParams& p, const Tensor& x, const Tensor& out) {
  Backend::upsample(p, x, out);
}

void CudaBackend::rope(const Tensor& x, const Tensor& c, const Tensor& s, bool il, const Tensor& out) {
  Backend::rope(x, c, s, il, out);
}
void CudaBackend::attention(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& mask, const Tensor& out) {
  Backend::attention(p, q, k, v, mask, out);
}
void CudaBackend::rand_uniform(const Tensor& d, double lo, double hi, uint64_t seed, uint64_t off) {
  Backend::rand_uniform(d, lo, hi, seed, off);
}
void CudaBackend::rand_normal(const Tensor& d, double m, double s, uint64_t seed, uint64_t off) {
  Backend::rand_normal(d, m, s, seed, off);
}

}  // namespace wick
