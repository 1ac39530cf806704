// The quant family on CUDA: dequantization (ONE kernel templated over a block decoder of
// io/quant/block_decode.h, the same code the host test checks bit for bit against the
// CPU dequantizer), the q8_0 rounding of activations, and the host side of the small-M
// matrix-vector product (its kernels: quant_matvec.cuh).
#include <cuda_runtime.h>

#include "backend/cuda/quant_matvec.cuh"

namespace wick::cuda {

namespace {

// One thread per output value (grid-stride): value e of row r. Narrow outputs are rounded
// with wick's own f16/bf16 conversions, the ones the CPU path uses, so the bits agree.
template <class D, class T>
__global__ void dequantize_kernel(const uint8_t* __restrict__ src, size_t row_bytes, int64_t row_elems, int64_t total,
                                  T* __restrict__ out) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t r = i / row_elems, e = i - r * row_elems;
    const float v = D::value(src + size_t(r) * row_bytes, e);
    if constexpr (std::is_same_v<T, float>) {
      out[i] = v;
    } else {
      out[i] = T(v);
    }
  }
}

}  // namespace

void quant_dequantize(GgmlType type, const void* src, size_t row_bytes, int64_t rows, int64_t row_elems,
                      const Tensor& out) {
  const int64_t total = rows * row_elems;
  if (total == 0) return;
  CudaBackend& be = backend_of(out.device());
  const auto* s = static_cast<const uint8_t*>(src);
  quant::dispatch_decoder(type, [&]<class D>() {
    dispatch_float(out.dtype(), "dequantize", [&]<class T>() {
      if constexpr (std::is_same_v<T, float> || is_half_v<T>) {
        dequantize_kernel<D, T><<<grid_for(total), kThreads, 0, be.stream()>>>(s, row_bytes, row_elems, total,
                                                                               static_cast<T*>(out.mutable_data()));
        check_launch("dequantize");
      } else {
        fail(ErrorKind::DTypeMismatch, "dequantize: output dtype must be f32, f16 or bf16, got ", out.dtype());
      }
    });
  });
}

void quant_matvec(GgmlType type, const void* w, size_t row_bytes, int64_t N, int64_t K, const Tensor& x,
                  const Tensor& y, bool q8_x) {
  const int64_t M = x.dim(0);
  WICK_CHECK(M >= 1 && M <= kQuantMatvecMaxM && K % (q8_x ? qmv::kQ8Group : 8) == 0 && x.dtype() == DType::F32 &&
                 x.is_contiguous() && reinterpret_cast<uintptr_t>(x.data()) % 16 == 0 && y.dtype() == DType::F32 &&
                 y.is_contiguous() && (!q8_x || quant_matvec_q8_supported(type)),
             Internal, "quant_matvec: bad arguments x ", x.shape(), " ", x.dtype(), " K ", K, " q8 ", q8_x);
  if (N == 0) return;
  qmv::MatvecArgs p{};
  p.w = static_cast<const uint8_t*>(w);
  p.row_bytes = row_bytes;
  p.N = N;
  p.K = K;
  p.M = int(M);
  p.x = static_cast<const float*>(x.data());
  p.y = static_cast<float*>(y.mutable_data());
  CudaBackend& be = backend_of(y.device());
  if (q8_x) {
    qmv::matvec_q8(be, type, p);
  } else {
    qmv::matvec_f32(be, type, p);
  }
}

namespace {
struct HasQ8Kernel {
  template <class D>
  bool operator()() const {
    return quant::kHasAffine<D>;
  }
};
}  // namespace

bool quant_matvec_q8_supported(GgmlType type) { return quant::dispatch_decoder(type, HasQ8Kernel{}); }

void quant_round_q8(const Tensor& x, const Tensor& out) {
  const int64_t total = x.numel();
  WICK_CHECK(x.dtype() == DType::F32 && out.dtype() == DType::F32 && x.is_contiguous() && out.is_contiguous() &&
                 total % qmv::kQ8Group == 0 && reinterpret_cast<uintptr_t>(x.data()) % 16 == 0 &&
                 reinterpret_cast<uintptr_t>(out.data()) % 16 == 0,
             Internal, "quant_round_q8: bad arguments x ", x.shape(), " ", x.dtype());
  if (total == 0) return;
  CudaBackend& be = backend_of(x.device());
  qmv::quantize_q8_kernel<true><<<qmv::quantize_q8_blocks(total), qmv::kBlockWarps * qmv::kWarp, 0, be.stream()>>>(
      static_cast<const float*>(x.data()), total, nullptr, nullptr, static_cast<float*>(out.mutable_data()));
  check_launch("quant_matmul");
}

}  // namespace wick::cuda
