// Op families of the CPU backend not implemented yet: they raise Unsupported through the
// Backend defaults. Each family's file removes its entries from here when it lands.
#include "backend/cpu/cpu_backend.h"

namespace wick {

void CpuBackend::unary(UnaryOp op, const UnaryParams& p, const Tensor& x, const Tensor& out) {
  Backend::unary(op, p, x, out);
}
void CpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  Backend::binary(op, a, b, out);
}
void CpuBackend::compare(CompareOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  Backend::compare(op, a, b, out);
}
void CpuBackend::where(const Tensor& c, const Tensor& t, const Tensor& f, const Tensor& out) {
  Backend::where(c, t, f, out);
}
void CpuBackend::conv(const ConvParams& p, const Tensor& x, const Tensor& w, const Tensor& out) {
  Backend::conv(p, x, w, out);
}
void CpuBackend::pool2d(const PoolParams& p, const Tensor& x, const Tensor& out) { Backend::pool2d(p, x, out); }
void CpuBackend::upsample(const UpsampleParams& p, const Tensor& x, const Tensor& out) { Backend::upsample(p, x, out); }
void CpuBackend::rope(const Tensor& x, const Tensor& c, const Tensor& s, bool il, const Tensor& out) {
  Backend::rope(x, c, s, il, out);
}
void CpuBackend::attention(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& mask, const Tensor& out) {
  Backend::attention(p, q, k, v, mask, out);
}

}  // namespace wick
