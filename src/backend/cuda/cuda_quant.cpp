// The CUDA backend's quant entries: dequantize and quant_matmul on the kernels of
// kernels_quant.cu; quantize through the CPU encoders (a host round trip: the encoders
// are ggml's reference scalar algorithms, run once per weight at load time).
#include <algorithm>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/quant_cuda.h"
#include "backend/env_knob.h"
#include "backend/linear_epilogue.h"

namespace wick {

namespace {
// Rows of W per band of the large-M path: about 64 MiB of f32 scratch at a time.
constexpr int64_t kBandElems = int64_t(16) << 20;
// Up to this many rows of x take the matrix-vector kernel, once per kQuantMatvecMaxM rows;
// more go through dequantized 16-bit bands and cuBLAS. Each pass reads W once, but decodes
// every block again and is bound by that arithmetic, not by the bytes; the bands cost about
// the same at any row count. A 1B-shaped Q4_K_M batched step (2026-12-04, tok/s at 16 / 32
// / 64 sequences): passes 4,236 / 4,559 / 4,688, bands 3,123 / 5,958 / 10,754, hence two
// passes at most. WICK_CUDA_QUANT_MATVEC_ROWS (a multiple of 8 from 8 to 64) moves the
// bound: the measurement knob of docs/perf.md.
int64_t matvec_rows_max() {
  constexpr int64_t kStep = cuda::kQuantMatvecMaxM;
  static const int64_t rows = env_knob("WICK_CUDA_QUANT_MATVEC_ROWS", 2 * kStep, kStep, 8 * kStep, kStep);
  return rows;
}
}  // namespace

void CudaBackend::dequantize(const QuantTensor& q, const Tensor& out) {
  const size_t row_bytes = ggml_row_bytes(q.type, q.row_elems(), "dequantize");
  cuda::quant_dequantize(q.type, q.bytes.data(), row_bytes, q.rows(), q.row_elems(), out);
}

void CudaBackend::quantize(const Tensor& src, const QuantTensor& out) {
  QuantTensor host = out;
  host.bytes = Buffer::allocate(Device::cpu(), DType::U8, Shape{int64_t(out.bytes.nbytes())});
  backend_for(Device::cpu()).quantize(src.to(Device::cpu()), host);
  copy_from_host(out.bytes.mutable_data(), host.bytes.data(), host.bytes.nbytes());
}

void CudaBackend::quant_matmul(const Tensor& x, const QuantTensor& w, QuantActivation act, const Tensor& y) {
  const int64_t M = x.dim(0), K = x.dim(1), N = w.shape[0];
  const size_t row_bytes = ggml_row_bytes(w.type, K, "quant_matmul");
  const Device dev = x.device();
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
  if (M <= matvec_rows_max() && K % 8 == 0) {
    if (q8 && !cuda::quant_matvec_q8_supported(w.type)) round_x();
    // Row blocks of x start 16-byte aligned (K % 8 == 0 keeps every f32 row a multiple of 32 bytes).
    for (int64_t m0 = 0; m0 < M; m0 += cuda::kQuantMatvecMaxM) {
      const int64_t mb = std::min(cuda::kQuantMatvecMaxM, M - m0);
      cuda::quant_matvec(w.type, wp, row_bytes, N, K, xf.narrow(0, m0, mb), y.narrow(0, m0, mb), q8);
    }
    return;
  }
  if (q8) round_x();
  // Large M (or K not a multiple of 8): dequantize a band of W rows and let cuBLAS multiply
  // it, band by band, so the whole weight is never expanded at once (a band is at most
  // kBandElems values, reused for every band). A model computing in f16/bf16 gets the band in
  // its dtype and a tensor-core GEMM with f32 accumulation (about 6x the f32 GEMM's rate on
  // an H200 prefill: x, q8-rounded or not, and the band are then rounded to that dtype); the
  // product is written in f32 either way (not rounded to 16 bits as well).
  const DType dt = x.dtype() == DType::F16 || x.dtype() == DType::BF16 ? x.dtype() : DType::F32;
  const Tensor xg = dt == DType::F32 ? xf : xf.to(dt);
  const int64_t band = std::clamp<int64_t>(kBandElems / K, 1, N);
  Tensor scratch = Tensor::empty(Shape{band, K}, dt, dev);
  const bool direct = band == N;  // the GEMM can write y itself
  Tensor product = direct ? y : Tensor::empty(Shape{M, band}, DType::F32, dev);
  for (int64_t n0 = 0; n0 < N; n0 += band) {
    const int64_t nb = std::min(band, N - n0);
    Tensor wb = scratch.narrow(0, 0, nb);
    cuda::quant_dequantize(w.type, wp + size_t(n0) * row_bytes, row_bytes, nb, K, wb);
    if (direct) {
      matmul(xg, wb.t(), y);
    } else {
      Tensor part = nb == band ? product : product.narrow(1, 0, nb).contiguous();  // matmul writes a contiguous out
      matmul(xg, wb.t(), part);
      cast(part, y.narrow(1, n0, nb));
    }
  }
}

// The fused quantized linear: for up to matvec_rows_max() rows, one matrix-vector kernel
// per 8 rows that stages x in its own dtype (normalizing it on the way) and writes the
// epilogue's value; a glu epilogue's gate and up rows fall in different row groups of the
// kernel, so it writes the f32 product and one epilogue pass follows. Anything the kernel
// does not take (larger M, K % 32 with q8, an x too large to stage) goes by parts.
void CudaBackend::quant_linear(const LinearParams& p, const Tensor& x, const Tensor& norm, const QuantTensor& w,
                               QuantActivation act, const Tensor& bias, const Tensor& residual, const Tensor& out) {
  const int64_t M = x.dim(0), K = x.dim(1), N = w.shape[0];
  const bool q8 = act == QuantActivation::Q8, glu = p.e.glu;
  const Tensor target = glu ? Tensor::empty(Shape{M, N}, DType::F32, x.device()) : out;
  auto chunk = [&](int64_t m0) {
    const int64_t mb = std::min(cuda::kQuantMatvecMaxM, M - m0);
    cuda::MatvecOperands o;
    o.x = x.narrow(0, m0, mb);
    o.norm = norm;
    o.eps = float(p.norm_eps);
    o.out = target.narrow(0, m0, mb);
    if (!glu) {
      o.bias = bias;
      o.residual = residual.defined() ? residual.narrow(0, m0, mb) : residual;
      o.e = p.e;
    }
    return o;
  };
  // Chunks differ only in M and x's offset (a multiple of 8 values when K % 8 == 0): the
  // first and the last decide.
  const bool fused =
      M <= matvec_rows_max() && cuda::quant_matvec_takes(w.type, K, chunk(0), q8) &&
      cuda::quant_matvec_takes(w.type, K, chunk((M - 1) / cuda::kQuantMatvecMaxM * cuda::kQuantMatvecMaxM), q8);
  if (!fused) return quant_linear_by_parts(*this, p, x, norm, w, act, bias, residual, out);
  const size_t row_bytes = ggml_row_bytes(w.type, K, "quant_linear");
  for (int64_t m0 = 0; m0 < M; m0 += cuda::kQuantMatvecMaxM)
    cuda::quant_matvec(w.type, w.bytes.data(), row_bytes, N, K, chunk(m0), q8);
  if (glu) linear_epilogue(p.e, target, bias, residual, out);
}

}  // namespace wick
