// The quant family on CUDA: dequantization and the small-M matrix-vector product, each
// ONE kernel templated over a block decoder of io/quant/block_decode.h (the same code the
// host test checks bit for bit against the CPU dequantizer).
#include <cuda_runtime.h>

#include "backend/cuda/launch.cuh"
#include "backend/cuda/quant_cuda.h"
#include "io/quant/block_decode.h"

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

constexpr int kMatvecThreads = 256;  // 8 warps, one row of W each at a time
constexpr int kWarp = 32;
constexpr size_t kMatvecSmemBytes = 48 * 1024;  // x is staged in shared memory up to this

// y[m, n] = sum_k x[m, k] * W[n, k] for m < M <= 8. Each warp takes rows n of W in turn;
// lane l decodes the 8-value chunks l, l + 32, ... of the row (a warp step covers 256
// consecutive values, i.e. consecutive packed bytes) and multiplies each decoded chunk
// with all M rows of x, so every weight byte is read once. x (M x K f32) sits in shared
// memory when it fits, else it is read from global memory (it stays in L1/L2).
template <class D>
__global__ void __launch_bounds__(kMatvecThreads)
    matvec_kernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t N, int64_t K, const float* __restrict__ x,
                  int M, bool x_in_smem, float* __restrict__ y) {
  extern __shared__ float smem[];
  const float* xs = x;
  if (x_in_smem) {
    for (int64_t i = threadIdx.x; i < int64_t(M) * K; i += blockDim.x) smem[i] = x[i];
    __syncthreads();
    xs = smem;
  }
  const int lane = int(threadIdx.x) % kWarp, warp = int(threadIdx.x) / kWarp;
  const int warps = int(blockDim.x) / kWarp;
  for (int64_t n = int64_t(blockIdx.x) * warps + warp; n < N; n += int64_t(gridDim.x) * warps) {
    const uint8_t* row = w + size_t(n) * row_bytes;
    float acc[kQuantMatvecMaxM] = {};
    for (int64_t e0 = 8 * int64_t(lane); e0 < K; e0 += 8 * kWarp) {
      float v[8];
      quant::decode8<D>(row, e0, v);
#pragma unroll
      for (int m = 0; m < kQuantMatvecMaxM; ++m) {
        if (m < M) {
          const float* xm = xs + int64_t(m) * K + e0;
          float s = acc[m];
#pragma unroll
          for (int k = 0; k < 8; ++k) s = fmaf(v[k], xm[k], s);
          acc[m] = s;
        }
      }
    }
#pragma unroll
    for (int m = 0; m < kQuantMatvecMaxM; ++m) {
      if (m < M) {
        float s = acc[m];
        for (int off = kWarp / 2; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
        if (lane == 0) y[int64_t(m) * N + n] = s;
      }
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
                  const Tensor& y) {
  const int64_t M = x.dim(0);
  WICK_CHECK(M >= 1 && M <= kQuantMatvecMaxM && K % 8 == 0 && x.dtype() == DType::F32 && x.is_contiguous() &&
                 y.dtype() == DType::F32 && y.is_contiguous(),
             Internal, "quant_matvec: bad arguments x ", x.shape(), " ", x.dtype(), " K ", K);
  if (N == 0) return;
  CudaBackend& be = backend_of(y.device());
  const size_t x_bytes = size_t(M * K) * sizeof(float);
  const bool x_in_smem = x_bytes <= kMatvecSmemBytes;
  const int warps = kMatvecThreads / kWarp;
  const int64_t blocks = std::min<int64_t>((N + warps - 1) / warps, int64_t(be.sm_count()) * 4);
  quant::dispatch_decoder(type, [&]<class D>() {
    matvec_kernel<D><<<unsigned(blocks), kMatvecThreads, x_in_smem ? x_bytes : 0, be.stream()>>>(
        static_cast<const uint8_t*>(w), row_bytes, N, K, static_cast<const float*>(x.data()), int(M), x_in_smem,
        static_cast<float*>(y.mutable_data()));
    check_launch("quant_matmul");
  });
}

}  // namespace wick::cuda
