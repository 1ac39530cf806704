// mul_mat_id on CUDA (op_table.h): every (token, slot) pair's row of x against the expert its
// id names, read on the device, so a decode step launches the same work whatever the router
// picked (a CUDA graph records it) and nothing waits for the host. ONE kernel templated over
// the block decoder (io/quant/block_decode.h: every packed type and the float ones).
//
// Work split: block (g, p) computes rows [g R, g R + R) of pair p's output, R = 2 rows per
// warp; the block first stages the pair's x row in shared memory as f32 (x rounded to q8_0
// when act says so, by quant_round_q8 before the launch), then each warp walks its rows'
// packed bytes, 8 values per lane per step (decode8, the dequantizer's values), and reduces
// across the warp. Every weight byte of the experts a pair uses is read once per
// pair: pairs that share an expert read it again (the host-grouped path of mul_mat_id.cpp
// reads it once per step, but synchronizes), which is why the front end takes this kernel
// for a decode step's few pairs only.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_types.cuh"
#include "backend/cuda/kernels_index.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/quant_cuda.h"
#include "io/quant/block_decode.h"

namespace wick {

namespace {

constexpr int kWarps = 8;
constexpr int kRowsPerWarp = 2;
constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;

template <class D, class XS, class Idx>
__global__ void __launch_bounds__(kWarps * 32)
    mul_mat_id_kernel(const uint8_t* __restrict__ w, size_t row_bytes, size_t expert_bytes, int64_t E, int64_t M,
                      int64_t K, const XS* __restrict__ x, const Idx* __restrict__ ids, int64_t k, bool per_slot,
                      float* __restrict__ out, DeviceErrorRecord* rec) {
  extern __shared__ float xs[];
  const int64_t p = blockIdx.y;
  const int64_t e = int64_t(ids[p]);
  if (!cuda::index_ok(e, E, rec, IndexOpId::MulMatId)) return;
  const XS* xr = x + (per_slot ? p : p / k) * K;
  for (int64_t i = threadIdx.x; i < K; i += blockDim.x) xs[i] = float(cuda::to_compute(xr[i]));
  __syncthreads();
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int64_t m0 = int64_t(blockIdx.x) * kRowsPerBlock + warp * kRowsPerWarp;
  const uint8_t* base = w + size_t(e) * expert_bytes;
  float acc[kRowsPerWarp] = {};
  for (int64_t e0 = int64_t(lane) * 8; e0 < K; e0 += 32 * 8) {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      if (m0 + r >= M) break;
      // decode8 reads the packed bytes where they are (global memory); the affine form's
      // byte reads are for rows staged in shared memory (quant_matvec.cuh).
      float v[8];
      quant::decode8<D>(base + size_t(m0 + r) * row_bytes, e0, v);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[r] = fmaf(v[j], xs[e0 + j], acc[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    float v = acc[r];
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0 && m0 + r < M) out[p * M + m0 + r] = v;
  }
}

}  // namespace

void CudaBackend::mul_mat_id(const Tensor& x, const QuantTensor& w, const Tensor& ids, bool per_slot,
                             QuantActivation act, const Tensor& out) {
  activate();
  const int64_t E = w.shape[0], M = w.shape[1], K = w.shape[2], k = ids.dim(1), P = out.dim(0);
  WICK_CHECK(K % 8 == 0, Unsupported, "mul_mat_id: rows of ", K, " values (CUDA takes multiples of 8)");
  const size_t smem = size_t(K) * sizeof(float);
  WICK_CHECK(smem <= 48 * 1024, Unsupported, "mul_mat_id: rows of ", K, " values (CUDA stages at most 12288)");
  if (P == 0 || M == 0) return;
  Tensor xin = x;
  if (act == QuantActivation::Q8) {  // x rounded to q8_0 per 32 values, as quant_matmul's other routes
    WICK_CHECK(K % 32 == 0, Unsupported, "mul_mat_id: q8 activations need rows of a multiple of 32, got ", K);
    Tensor xf = x.to(DType::F32).contiguous();
    if (reinterpret_cast<uintptr_t>(xf.data()) % 16 != 0) xf = xf.clone();
    xin = Tensor::empty(xf.shape(), DType::F32, device());
    cuda::quant_round_q8(xf, xin);
  }
  const size_t row_bytes = ggml_row_bytes(w.type, K, "mul_mat_id");
  const dim3 grid(unsigned((M + kRowsPerBlock - 1) / kRowsPerBlock), unsigned(P));
  quant::dispatch_decoder(w.type, [&]<class D>() {
    dispatch_float(xin.dtype(), "mul_mat_id", [&]<class T>() {
      using XS = cuda::dev_t<T>;
      if constexpr (std::is_same_v<T, float> || is_half_v<T>) {
        auto launch = [&]<class Idx>(const Idx* id) {
          mul_mat_id_kernel<D, XS, Idx><<<grid, kWarps * 32, smem, stream_>>>(
              static_cast<const uint8_t*>(w.bytes.data()), row_bytes, row_bytes * size_t(M), E, M, K,
              static_cast<const XS*>(xin.data()), id, k, per_slot, static_cast<float*>(out.mutable_data()),
              error_record());
        };
        if (ids.dtype() == DType::I64)
          launch(static_cast<const int64_t*>(ids.data()));
        else
          launch(static_cast<const uint32_t*>(ids.data()));
        cuda::check_launch("mul_mat_id");
      } else {
        fail(ErrorKind::DTypeMismatch, "mul_mat_id: x must be f32, f16 or bf16, got ", xin.dtype());
      }
    });
  });
}

}  // namespace wick
