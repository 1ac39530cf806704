// The accelerator half of the quant family: QuantTensor::to, and dequantize / quant_matmul
// for QuantTensors whose bytes live on a CUDA device (the kernels are in
// backend/cuda/kernels_quant.cu; without a CUDA build no QuantTensor can live there).
#include <algorithm>

#include "io/quant/dequantize_row.h"
#include "wick/ops.h"
#include "wick/quant.h"

#if defined(WICK_HAVE_CUDA)
#include "backend/cuda/quant_cuda.h"
#endif

namespace wick {

QuantTensor QuantTensor::to(Device device) const {
  WICK_CHECK(bytes.defined() || shape.numel() == 0, InvalidArgument, "QuantTensor::to: tensor '", name,
             "' has no bytes");
  if (!bytes.defined() || device == bytes.device()) return *this;
  QuantTensor out = *this;
  // Tensor::to copies a (contiguous u8) tensor between devices; its storage is exactly
  // the new bytes.
  const Buffer flat = bytes.view(DType::U8, Shape{int64_t(bytes.nbytes())});
  out.bytes = Tensor::from_buffer(flat).to(device).storage();
  return out;
}

namespace quant {

#if defined(WICK_HAVE_CUDA)

Tensor dequantize_device(const QuantTensor& q, size_t row_bytes, DType dtype) {
  Tensor out = Tensor::empty(q.shape, dtype, q.device());
  cuda::quant_dequantize(q.type, q.bytes.data(), row_bytes, q.rows(), q.row_elems(), out);
  return out;
}

namespace {
// Rows of W per band of the large-M path: about 64 MiB of f32 scratch at a time.
constexpr int64_t kBandElems = int64_t(16) << 20;
}  // namespace

Tensor quant_matmul_device(const Tensor& x, const QuantTensor& w, size_t row_bytes, QuantActivation act) {
  const int64_t M = x.dim(0), K = x.dim(1), N = w.shape[0];
  const Device dev = x.device();
  if (M == 0 || N == 0 || K == 0) return zeros(Shape{M, N}, DType::F32, dev);
  Tensor xf = x.to(DType::F32).contiguous();
  if (reinterpret_cast<uintptr_t>(xf.data()) % 16 != 0) xf = xf.clone();  // the kernels load x 16 bytes at a time
  bool q8 = act == QuantActivation::Q8;
  auto round_x = [&] {  // x rounded to q8_0 and back: what every other route multiplies
    Tensor xr = Tensor::empty(xf.shape(), DType::F32, dev);
    cuda::quant_round_q8(xf, xr);
    xf = xr;
    q8 = false;
  };
  const auto* wp = static_cast<const uint8_t*>(w.bytes.data());
  if (M <= cuda::kQuantMatvecMaxM && K % 8 == 0) {
    if (q8 && !cuda::quant_matvec_q8_supported(w.type)) round_x();
    Tensor y = Tensor::empty(Shape{M, N}, DType::F32, dev);
    cuda::quant_matvec(w.type, wp, row_bytes, N, K, xf, y, q8);
    return y;
  }
  if (q8) round_x();
  // Large M (or K not a multiple of 8): dequantize a band of W rows to f32 and let cuBLAS
  // multiply it, band by band, so the whole weight is never expanded at once.
  const int64_t band = std::clamp<int64_t>(kBandElems / K, 1, N);
  if (band == N) {
    Tensor wf = Tensor::empty(Shape{N, K}, DType::F32, dev);
    cuda::quant_dequantize(w.type, wp, row_bytes, N, K, wf);
    return matmul(xf, wf.t());
  }
  Tensor y = Tensor::empty(Shape{M, N}, DType::F32, dev);
  Tensor scratch = Tensor::empty(Shape{band, K}, DType::F32, dev);
  for (int64_t n0 = 0; n0 < N; n0 += band) {
    const int64_t nb = std::min(band, N - n0);
    Tensor wb = scratch.narrow(0, 0, nb);
    cuda::quant_dequantize(w.type, wp + size_t(n0) * row_bytes, row_bytes, nb, K, wb);
    y.narrow(1, n0, nb).copy_(matmul(xf, wb.t()));
  }
  return y;
}

#else

Tensor dequantize_device(const QuantTensor& q, size_t, DType) {
  fail(ErrorKind::Unsupported, "dequantize: tensor '", q.name, "' is on ", q.device(),
       ", but wick was built without CUDA");
}
Tensor quant_matmul_device(const Tensor& x, const QuantTensor& w, size_t, QuantActivation) {
  fail(ErrorKind::Unsupported, "quant_matmul: x on ", x.device(), " and W '", w.name, "' on ", w.device(),
       ", but wick was built without CUDA");
}

#endif

}  // namespace quant
}  // namespace wick
