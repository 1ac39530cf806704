// The quant family on CUDA: dequantization and the small-M matrix-vector product, each
// ONE kernel templated over a block decoder of io/quant/block_decode.h (the same code the
// host test checks bit for bit against the CPU dequantizer).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

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

constexpr int kWarp = 32;

// ---- the matrix-vector product ------------------------------------------------------------
//
// y[m, n] = sum_k x[m, k] * W[n, k] for m < M <= 8, W read once at (close to) HBM speed:
//  - each warp owns kRows consecutive rows of W (a row group) and walks them together in
//    chunks of kTiles tiles of 256 values; a warp step decodes 8 values per lane of each of
//    the kRows rows, so every x value read from shared memory serves kRows rows;
//  - the packed bytes of a chunk (for the kRows rows) are copied into a per-warp shared
//    buffer by 16-byte cp.async copies, kStages chunks deep, the pipeline running on across
//    row groups: kStages - 1 chunks (several KB per warp) stay in flight while one is decoded;
//  - decoding is affine (decode8_u / scale_affine of io/quant/block_decode.h): 8 exact small
//    integers u, made from the packed bytes without int-to-float conversions, and a scale a
//    (and offset b) per sub-block, so the inner loop is one FMA per value per row of x and
//    the scale is applied once per 8 values: a * sum u x + b * sum x. The (a, b) of a tile's
//    sub-blocks are decoded once each (one or two per lane) and passed around by shuffles;
//    decoders without the affine pair (q2_K, q3_K, the float types) use decode8 with a = 1.
// Rows whose packed bytes are not 16-byte aligned (row_bytes % 16 or the base) take the
// same kernel with a byte-wise copy into the buffers instead of cp.async (kAligned false).
constexpr int kRows = 4;        // rows of W per warp
constexpr int kMaxWarps = 12;   // warps per block at most (one block per SM; <= 168 registers)
constexpr int kTileVals = 256;  // 8 values per lane
constexpr size_t kStagingPerWarp = 12 * 1024;
constexpr size_t kXSmemMax = 32 * 1024;  // x is staged in shared memory up to this

template <class D>
struct MatvecTiling {
  static constexpr int kTileBytes = kTileVals / D::kElems * D::kBytes;  // kElems is 1, 32 or 256
  // About 512 bytes of each row per chunk.
  static constexpr int kTiles = kTileBytes >= 512 ? 1 : (512 + kTileBytes - 1) / kTileBytes;
  static constexpr int kChunkVals = kTileVals * kTiles;
  static constexpr int kChunkBytes = kTileBytes * kTiles;
  // 16-byte pieces of the aligned window around a chunk (which may start mid-piece), and
  // a row's buffer: the window plus 16 bytes for bytes8_at's word over-read.
  static constexpr int kPieces = (kChunkBytes + 15) / 16 + 1;
  static constexpr int kRowBuffer = kPieces * 16 + 16;
  static constexpr int kStages = std::clamp(int(kStagingPerWarp / (kRows * kRowBuffer)), 2, 4);
  static constexpr size_t kWarpSmem = size_t(kStages) * kRows * kRowBuffer;
};

__device__ inline void cp_async16(void* smem, const void* gmem, int src_bytes) {
#if __CUDA_ARCH__ >= 800
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
#else
  uint4 v = make_uint4(0, 0, 0, 0);
  if (src_bytes) v = *static_cast<const uint4*>(gmem);
  *static_cast<uint4*>(smem) = v;
#endif
}
__device__ inline void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int kPending>
__device__ inline void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

template <class D, bool kAligned>
__global__ void __launch_bounds__(kMaxWarps* kWarp, 1)
    matvec_kernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t N, int64_t K, const float* __restrict__ x,
                  int M, bool x_in_smem, float* __restrict__ y) {
  using T = MatvecTiling<D>;
  constexpr int S = T::kStages;
  extern __shared__ __align__(16) uint8_t smem[];
  const size_t x_bytes = x_in_smem ? size_t(M) * size_t(K) * sizeof(float) : 0;  // a multiple of 32
  const int lane = int(threadIdx.x) % kWarp, warp = int(threadIdx.x) / kWarp;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
  const int64_t gw = int64_t(blockIdx.x) * (blockDim.x / kWarp) + warp;
  const int64_t groups = (N + kRows - 1) / kRows;
  uint8_t* buffers = smem + x_bytes + size_t(warp) * T::kWarpSmem;
  const int64_t chunks = (K + T::kChunkVals - 1) / T::kChunkVals;
  // (row group, chunk) pairs of this warp: groups gw, gw + warps, ...
  const int64_t items = gw < groups ? (groups - gw + warps - 1) / warps * chunks : 0;

  // Starts the copy of item it into its buffer (commits an empty group past the end, so
  // the wait below always counts the same number of groups).
  // Items are walked by cursors (no 64-bit division per item): item it is chunk c of row
  // group g, in buffer it % S.
  struct Cursor {
    int64_t it, g, c;
    int stage;
  };
  auto advance = [&](Cursor& q) {
    ++q.it;
    q.stage = q.stage + 1 == S ? 0 : q.stage + 1;
    if (++q.c == chunks) q.c = 0, q.g += warps;
  };
  Cursor next{0, gw, 0, 0};  // the next item to copy in
  auto issue = [&]() {
    if (next.it < items) {
      const int64_t g = next.g, c = next.c;
      const size_t start = size_t(c) * T::kChunkBytes;
      const size_t end = std::min(start + size_t(T::kChunkBytes), row_bytes);
      uint8_t* dst = buffers + size_t(next.stage) * kRows * T::kRowBuffer;
#pragma unroll
      for (int r = 0; r < kRows; ++r, dst += T::kRowBuffer) {
        const uint8_t* src = w + size_t(std::min(g * kRows + r, N - 1)) * row_bytes;
        if constexpr (kAligned) {
          const size_t g0 = start & ~size_t(15), g1 = (end + 15) & ~size_t(15);  // g1 <= row_bytes
#pragma unroll
          for (int p0 = 0; p0 < T::kPieces; p0 += kWarp) {
            const int p = p0 + lane;
            const size_t off = g0 + size_t(16) * p;
            const bool ok = p < T::kPieces && off < g1;
            if (p < T::kPieces) cp_async16(dst + 16 * p, src + (ok ? off : 0), ok ? 16 : 0);
          }
        } else {
          for (size_t i = start + lane; i < end; i += kWarp) dst[i - start] = src[i];
        }
      }
    }
    cp_async_commit();
    advance(next);
  };

  // The first chunks of W start streaming in while the block stages x.
  for (int s = 0; s < S - 1; ++s) issue();
  const float* xs = x;
  if (x_in_smem) {
    auto* xsm = reinterpret_cast<float*>(smem);
    const int64_t total = int64_t(M) * K;
    constexpr int kBatch = 8;  // loads in flight per thread
    for (int64_t i0 = threadIdx.x; i0 < total; i0 += kBatch * int64_t(blockDim.x)) {
      float v[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int64_t i = i0 + j * int64_t(blockDim.x);
        v[j] = x[i < total ? i : 0];
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int64_t i = i0 + j * int64_t(blockDim.x);
        if (i < total) xsm[i] = v[j];
      }
    }
    __syncthreads();
    xs = xsm;
  }
  if (items == 0) return;  // no block-wide barrier below

  float acc[kRows][kQuantMatvecMaxM] = {};
  for (Cursor cur{0, gw, 0, 0}; cur.it < items; advance(cur)) {
    issue();  // item it + S - 1, into the buffer item it - 1 used (the __syncwarp below ended its reads)
    cp_async_wait<S - 1>();
    __syncwarp();
    const int64_t g = cur.g, c = cur.c;
    const size_t start = size_t(c) * T::kChunkBytes;
    const uint8_t* chunk = buffers + size_t(cur.stage) * kRows * T::kRowBuffer + (kAligned ? (start & 15) : 0);
#pragma unroll 1
    for (int t = 0; t < T::kTiles; ++t) {
      const int64_t e_tile = c * T::kChunkVals + int64_t(t) * kTileVals;
      if (e_tile >= K) break;  // the same for the whole warp
      const int64_t e = e_tile + 8 * lane;
      const uint8_t* tile = chunk + t * T::kTileBytes;
      float u[kRows][8], a[kRows], b[kRows];
      if constexpr (quant::kHasAffine<D>) {
        // The (a, b) of every scale group of the tile's rows are decoded once, one or two
        // per lane, and handed to the lanes that use them by shuffles (not 8 / kScaleVals
        // times over: a q4_K sub-block scale takes some 20 instructions).
        constexpr int G = kTileVals / D::kScaleVals;  // scale groups per row of a tile
        static_assert(kWarp % G == 0 && (G * kRows) % kWarp == 0);
        constexpr int kPer = G * kRows / kWarp;
        float ta[kPer], tb[kPer];
#pragma unroll
        for (int p = 0; p < kPer; ++p) {
          const int j = lane + kWarp * p;  // entry j: group j % G of row j / G
          D::scale_affine(tile + (j / G) * T::kRowBuffer, int64_t(j % G) * D::kScaleVals, ta[p], tb[p]);
        }
        const int group = 8 * lane / D::kScaleVals;
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const int src = (r * G + group) % kWarp;  // in ta[r * G / kWarp] of that lane
          a[r] = __shfl_sync(0xffffffffu, ta[r * G / kWarp], src);
          b[r] = quant::kAffineOffsetOf<D> ? __shfl_sync(0xffffffffu, tb[r * G / kWarp], src) : 0.0f;
          D::decode8_u(tile + r * T::kRowBuffer, 8 * lane, u[r]);
        }
      } else {
#pragma unroll
        for (int r = 0; r < kRows; ++r) quant::decode8_affine<D>(tile + r * T::kRowBuffer, 8 * lane, u[r], a[r], b[r]);
      }
      // Past K (K % 8 == 0: a lane's 8 values are all in or all out) the decoded bytes are
      // stale: leave them out.
      if (e >= K) continue;
#pragma unroll
      for (int m = 0; m < kQuantMatvecMaxM; ++m) {
        if (m < M) {
          const float* xm = xs + int64_t(m) * K + e;
          float xv[8];
          if (x_in_smem) {
            const float4 x0 = reinterpret_cast<const float4*>(xm)[0], x1 = reinterpret_cast<const float4*>(xm)[1];
            xv[0] = x0.x, xv[1] = x0.y, xv[2] = x0.z, xv[3] = x0.w, xv[4] = x1.x, xv[5] = x1.y, xv[6] = x1.z,
            xv[7] = x1.w;
          } else {
#pragma unroll
            for (int k = 0; k < 8; ++k) xv[k] = xm[k];
          }
          float xsum = 0.0f;
          if constexpr (quant::kAffineOffsetOf<D>) {
#pragma unroll
            for (int k = 0; k < 8; ++k) xsum += xv[k];
          }
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            float s0 = u[r][0] * xv[0], s1 = u[r][1] * xv[1];
#pragma unroll
            for (int k = 2; k < 8; k += 2) {
              s0 = fmaf(u[r][k], xv[k], s0);
              s1 = fmaf(u[r][k + 1], xv[k + 1], s1);
            }
            float v = fmaf(a[r], s0 + s1, acc[r][m]);
            if constexpr (quant::kAffineOffsetOf<D>) v = fmaf(b[r], xsum, v);
            acc[r][m] = v;
          }
        }
      }
    }
    __syncwarp();
    if (c == chunks - 1) {  // the row group is done: reduce over the warp and store
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int64_t n = g * kRows + r;
#pragma unroll
        for (int m = 0; m < kQuantMatvecMaxM; ++m) {
          if (m < M) {
            float s = acc[r][m];
            for (int off = kWarp / 2; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
            if (lane == 0 && n < N) y[int64_t(m) * N + n] = s;
            acc[r][m] = 0.0f;
          }
        }
      }
    }
  }
}

template <class D, bool kAligned>
void launch_matvec(int64_t blocks, int64_t block_warps, size_t smem, cudaStream_t stream, const void* w,
                   size_t row_bytes, int64_t N, int64_t K, const Tensor& x, const Tensor& y) {
  // Above the default 48 KB of dynamic shared memory: opt in to the most this kernel can
  // ask for, once per device (the attribute is per device).
  static std::atomic<uint64_t> opted_in{0};
  const int device = y.device().index;
  const uint64_t bit = uint64_t(1) << (device & 63);
  if (!(opted_in.load(std::memory_order_relaxed) & bit)) {
    WICK_CHECK(cudaFuncSetAttribute(matvec_kernel<D, kAligned>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(kXSmemMax + kMaxWarps * MatvecTiling<D>::kWarpSmem)) == cudaSuccess,
               Internal, "quant_matmul: cannot raise the shared memory limit of the matvec kernel");
    opted_in.fetch_or(bit, std::memory_order_relaxed);
  }
  const bool x_in_smem = size_t(x.numel()) * sizeof(float) <= kXSmemMax;
  matvec_kernel<D, kAligned><<<unsigned(blocks), unsigned(block_warps * kWarp), smem, stream>>>(
      static_cast<const uint8_t*>(w), row_bytes, N, K, static_cast<const float*>(x.data()), int(x.dim(0)), x_in_smem,
      static_cast<float*>(y.mutable_data()));
  check_launch("quant_matmul");
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
  const bool x_in_smem = x_bytes <= kXSmemMax;
  // Every warp gets the same number of row groups, as many warps as fit one block per SM
  // (kMaxWarps each), spread over all SMs.
  const int64_t sms = be.sm_count();
  const int64_t groups = (N + kRows - 1) / kRows;
  const int64_t per_warp = (groups + sms * kMaxWarps - 1) / (sms * kMaxWarps);
  const int64_t warps_needed = (groups + per_warp - 1) / per_warp;
  const int64_t block_warps = std::min<int64_t>(kMaxWarps, (warps_needed + sms - 1) / sms);
  const int64_t blocks = (warps_needed + block_warps - 1) / block_warps;
  const bool aligned = row_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
  quant::dispatch_decoder(type, [&]<class D>() {
    const size_t smem = (x_in_smem ? x_bytes : 0) + size_t(block_warps) * MatvecTiling<D>::kWarpSmem;
    if (aligned) {
      launch_matvec<D, true>(blocks, block_warps, smem, be.stream(), w, row_bytes, N, K, x, y);
    } else {
      launch_matvec<D, false>(blocks, block_warps, smem, be.stream(), w, row_bytes, N, K, x, y);
    }
  });
}

}  // namespace wick::cuda
