// The small-M quantized matrix-vector product on CUDA: y[m, n] = sum_k x[m, k] W[n, k] for
// M <= 8, W packed in a ggml type and read once at (close to) HBM speed. ONE kernel
// template over the block decoder D (io/quant/block_decode.h), the activation form Act
// (exact f32, or x rounded to q8_0 and multiplied with dp4a), MB (1 or 8: the most rows of
// x; the accumulators, and so the registers and the occupancy, scale with it) and whether
// the packed rows are 16-byte aligned. Instantiated in kernels_quant_matvec_{f32,q8}.cu.
//
// Work split:
//  - a warp owns kRows consecutive rows of W (a row group) and walks them together in
//    chunks of whole tiles (about 512 bytes of each row); a warp step decodes 8 values per
//    lane (256-value tiles), or 16 in the wide form (512-value tiles), of each of the kRows
//    rows, so every x value serves kRows rows;
//  - when there are fewer row groups than resident warps (a 4096-row W has 1024 groups;
//    an H200 holds 4224 warps of this kernel), ks warps of a block share a group, each
//    taking a contiguous slice of its chunks, and add their sums through shared memory at
//    the end; without the split most of the GPU would idle on a small W;
//  - blocks are persistent: `rounds` rounds of row groups each, the same for every warp
//    of a block (so the split's block barriers line up); a round's groups are dealt
//    block-minor, so a partly filled round leaves a few warps idle in every block rather
//    than whole SMs idle (448 full blocks of 528 slots put 4 blocks on some SMs and 3 on
//    others: the 4-block SMs set the time of an issue-bound kernel).
// Memory: the packed bytes of a chunk (for the kRows rows) are copied into a per-warp
// shared buffer by 16-byte cp.async copies, kStages chunks deep, the pipeline running on
// across rounds: the next chunks stay in flight while one is decoded. Rows whose packed
// bytes are not 16-byte aligned take the same kernel with a byte-wise copy (kAligned false).
// Arithmetic:
//  - ActF32: decoding is affine (decode8_u / scale_affine): 8 exact small integers u and a
//    scale a (and offset b) per sub-block, so the inner loop is one FMA per value per row
//    of x and the scale is applied once per 8 values: a * sum u x + b * sum x; decoders
//    without the affine pair (q2_K, q3_K, the float types) use decode8 with a = 1.
//  - ActQ8: x rounded to q8_0 per 32 values (ggml's reference rounding, the one the CPU's
//    quantize uses: int8 q and an f16 scale dx), staged in shared memory by the block or
//    by a pre-pass; the packed weight bytes go straight into dp4a: per lane and row,
//    dot = dp4a(bytes, q) - kByteOffset * sum q, exact in int32, then
//    acc += a dx dot + b dx sum q. The 4-6 bit types take the wide form (decode16_bytes):
//    both nibbles of every byte read, 16 values per lane from one 8-byte read, with two
//    scales per lane where the halves fall in different sub-blocks (the K-quants).
// The (a, b) of every scale group of a tile's rows are decoded once each (one or two per
// lane) and handed to the lanes that use them by shuffles.
// The fused quantized linear (op_table.h quant_linear): when x is staged, it may be f16 or
// bf16 (converted as it is read) and normalized on the way (rms_norm: the block first sums
// each row's squares, then stages x * inv_rms * g, in f32), and each output value may go
// through the linear epilogue (bias, activation, residual) into an f32/f16/bf16 output
// instead of the plain f32 product: in a decode step one kernel replaces the norm, the cast
// of x, the product and the epilogue.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

#include "backend/cuda/async_copy.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/quant_cuda.h"
#include "backend/linear_epilogue.h"
#include "io/quant/block_decode.h"

namespace wick::cuda::qmv {

constexpr int kWarp = 32;
constexpr int kRows = 4;                // rows of W per warp
constexpr int kBlockWarps = 8;          // warps per block
constexpr int kQ8Group = 32;            // values per q8_0 scale of x
constexpr int kQ8WarpStep = 8 * kWarp;  // values a warp rounds to q8_0 per step

struct ActF32;
struct ActQ8;

// Per activation form and MB: blocks per SM the registers allow (__launch_bounds__: 64
// registers for the q8 form with MB 1, 80 for the f32 form (whose 32 decoded floats per
// lane spill at 64), 128 for MB 8), the staging budget of a warp, and the most shared
// memory x may take.
template <class Act, int MB>
struct Budget {
  static constexpr int kBlocksPerSm = MB == 1 ? (std::is_same_v<Act, ActQ8> ? 4 : 3) : 2;
  static constexpr size_t kStagingPerWarp = MB == 1 ? 5 * 1024 + 512 : 8 * 1024 + 512;
  static constexpr size_t kXSmemMax = MB == 1 ? 16 * 1024 : 32 * 1024;
};

// Values a lane decodes per row and tile: 16 for the q8 form of decoders with the wide
// byte form (both nibbles of every byte it reads), else 8. A tile is 32 lanes' worth.
template <class D, class Act>
inline constexpr int kLaneVals = std::is_same_v<Act, ActQ8>&& quant::kHasWideBytes<D> ? 16 : 8;

// Whether a lane's two wide halves need two scales (the K-quants: two sub-blocks).
template <class D>
constexpr bool wide_two_scales() {
  if constexpr (quant::kHasWideBytes<D>) {
    return D::kWideStride >= D::kScaleVals;
  } else {
    return false;
  }
}

// Blocks per SM of a kernel (its __launch_bounds__): the Budget's, but fewer for the
// two-scale wide kernels, which spill at 64 registers: q4_K fits 80 (3 blocks), q5_K and
// q6_K (more bits to merge, up to 4 scale entries per lane) need 128 (2 blocks).
template <class D, class Act, int MB>
inline constexpr int kBlocksPerSm = MB == 1 && kLaneVals<D, Act> == 16 && wide_two_scales<D>()
                                        ? (std::is_same_v<D, quant::DecodeQ4_K> ? 3 : 2)
                                        : Budget<Act, MB>::kBlocksPerSm;

template <class D, class Act, int MB>
struct Tiling {
  static constexpr int kTileVals = kWarp * kLaneVals<D, Act>;
  static constexpr int kTileBytes = kTileVals / D::kElems * D::kBytes;  // kElems is 1, 32 or 256
  // About 512 bytes of each row per chunk.
  static constexpr int kTiles = kTileBytes >= 512 ? 1 : (512 + kTileBytes - 1) / kTileBytes;
  static constexpr int kChunkVals = kTileVals * kTiles;
  static constexpr int kChunkBytes = kTileBytes * kTiles;
  // 16-byte pieces of the aligned window around a chunk (which may start mid-piece), and
  // a row's buffer: the window plus 16 bytes for bytes8_at's word over-read.
  static constexpr int kPieces = (kChunkBytes + 15) / 16 + 1;
  static constexpr int kRowBuffer = kPieces * 16 + 16;
  static constexpr int kStages = std::clamp(int(Budget<Act, MB>::kStagingPerWarp / (kRows * kRowBuffer)), 2, 4);
  static constexpr size_t kWarpSmem = size_t(kStages) * kRows * kRowBuffer;
};

// Per-warp sums of a split row group, double-buffered by round parity.
template <int MB>
constexpr size_t kPartialBytes = 2 * kBlockWarps* kRows* MB * sizeof(float);

// Where the kernel finds x. ActF32: x (M, K) f32 in global memory, staged into shared
// memory when stage_x. ActQ8: with stage_x the block quantizes x from `x` into shared
// memory itself; otherwise q (M, K) int8 and d (M, K / 32) f32 scales in global memory
// (written by the pre-pass quantize_q8_kernel).
// The dtype of x, of the norm weight and of the fused output (f32, f16 or bf16).
enum class XKind : uint8_t { F32, F16, BF16 };

struct MatvecArgs {
  const uint8_t* w;
  size_t row_bytes;
  int64_t N, K;
  int M;
  const void* x;  // (M, K) of x_kind; f32 unless staged (stage_x)
  XKind x_kind;
  const void* norm;  // nullptr, or the rms_norm weight (K, x_kind) applied to x as it is staged
  float eps;
  const int8_t* xq;
  const float* xd;
  bool stage_x;
  int ks;      // warps sharing one row group (a power of two dividing kBlockWarps)
  int rounds;  // row-group rounds per block
  float* y;    // the (M, N) f32 product, when out is nullptr
  // The fused linear's output instead: out (M, N) of out_kind = linear_output(e, y + bias, 0,
  // residual), bias (N) and residual (M, N) of out_kind or nullptr (no glu: its two rows
  // are in different row groups).
  void* out;
  const void* bias;
  const void* residual;
  XKind out_kind;
  LinearEpilogue e;
};

// Shared memory x takes at the start of a block's (16-byte aligned) buffer; the kernel
// and its launcher must agree on it.
template <class Act>
__host__ __device__ inline size_t staged_x_bytes(const MatvecArgs& p) {
  return p.stage_x ? (Act::smem_bytes(int64_t(p.M) * p.K) + 15) / 16 * 16 : 0;
}

struct ActF32 {
  __host__ __device__ static size_t smem_bytes(int64_t mk) { return size_t(mk) * sizeof(float); }
};
struct ActQ8 {
  // int8 values (padded to 16 bytes), then one f32 scale per 32 values.
  __host__ __device__ static size_t smem_bytes(int64_t mk) {
    return (size_t(mk) + 15) / 16 * 16 + size_t(mk / kQ8Group) * sizeof(float);
  }
};

// Eight values of a (f32, f16 or bf16) array from element i (a multiple of 8; the array
// 16-byte aligned) as two float4.
__device__ __forceinline__ void load8(const void* p, XKind kind, int64_t i, float4& a, float4& b) {
  if (kind == XKind::F32) {
    const auto* v = reinterpret_cast<const float4*>(static_cast<const float*>(p) + i);
    a = v[0], b = v[1];
    return;
  }
  const uint4 v = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p) + i);
  float f[8];
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (kind == XKind::F16) {
      const float2 t = __half22float2(reinterpret_cast<const __half2&>(w[j]));
      f[2 * j] = t.x, f[2 * j + 1] = t.y;
    } else {  // bf16: the high half of an f32
      f[2 * j] = __uint_as_float(w[j] << 16), f[2 * j + 1] = __uint_as_float(w[j] & 0xFFFF0000u);
    }
  }
  a = make_float4(f[0], f[1], f[2], f[3]), b = make_float4(f[4], f[5], f[6], f[7]);
}
__device__ __forceinline__ float load1(const void* p, XKind kind, int64_t i) {
  if (kind == XKind::F32) return static_cast<const float*>(p)[i];
  if (kind == XKind::F16) return __half2float(static_cast<const __half*>(p)[i]);
  return __uint_as_float(uint32_t(static_cast<const uint16_t*>(p)[i]) << 16);
}
__device__ __forceinline__ void store1(void* p, XKind kind, int64_t i, float v) {
  if (kind == XKind::F32)
    static_cast<float*>(p)[i] = v;
  else if (kind == XKind::F16)
    static_cast<__half*>(p)[i] = __float2half_rn(v);
  else
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
}

// Where the values the kernel multiplies come from: x (M rows of K) of its kind, times
// inv[m] * g[k] when g (the rms_norm weight) is set (inv: each row's 1 / rms, in shared
// memory). load8 gives values i .. i + 7 of the flattened (M, K) (i % 8 == 0, K % 8 == 0:
// never across rows).
struct XSource {
  const void* x;
  XKind kind;
  const void* g;
  const float* inv;
  int K;
  __device__ __forceinline__ void load8(int64_t i, float4& a, float4& b) const {
    qmv::load8(x, kind, i, a, b);
    if (g) {
      const int m = int(i / K), k = int(i - int64_t(m) * K);
      float4 ga, gb;
      qmv::load8(g, kind, k, ga, gb);
      const float s = inv[m];
      a = make_float4(a.x * s * ga.x, a.y * s * ga.y, a.z * s * ga.z, a.w * s * ga.w);
      b = make_float4(b.x * s * gb.x, b.y * s * gb.y, b.z * s * gb.z, b.w * s * gb.w);
    }
  }
};

// rms_norm's 1 / sqrt(mean(x^2) + eps) of each of x's M (<= MB) rows into inv, by the whole
// block (every thread calls it); red: kBlockWarps * MB floats of shared scratch.
template <int MB>
__device__ inline void row_inv_rms(const void* x, XKind kind, int M, int K, float eps, float* red, float* inv) {
  const int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32);
  for (int m = 0; m < M; ++m) {
    float s = 0.0f;
    for (int k = 8 * int(threadIdx.x); k < K; k += 8 * int(blockDim.x)) {
      float4 a, b;
      load8(x, kind, int64_t(m) * K + k, a, b);
      s += a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w + b.x * b.x + b.y * b.y + b.z * b.z + b.w * b.w;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) red[warp * MB + m] = s;
  }
  __syncthreads();
  if (int(threadIdx.x) < M) {
    float t = 0.0f;
    for (int w = 0; w < int(blockDim.x / 32); ++w) t += red[w * MB + threadIdx.x];
    inv[threadIdx.x] = rsqrtf(t / float(K) + eps);
  }
  __syncthreads();
}

// One output value of row m, column n: the plain f32 product into y, or the fused linear's
// epilogue into out.
__device__ __forceinline__ void write_out(const MatvecArgs& p, int m, int64_t n, float v) {
  const int64_t i = int64_t(m) * p.N + n;
  if (!p.out) {
    p.y[i] = v;
    return;
  }
  if (p.bias) v += load1(p.bias, p.out_kind, n);
  const float r = p.residual ? load1(p.residual, p.out_kind, i) : 0.0f;
  store1(p.out, p.out_kind, i, linear_output<float>(p.e, v, 0.0f, r));
}

// Programmatic dependent launch (sm_90): wait until the grids this one depends on have
// completed and their writes are visible; let the grids that depend on this one launch.
// Both are no-ops for a grid launched without the attribute.
__device__ __forceinline__ void grid_dependency_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void grid_launch_dependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// The 128-byte line at p into L2 (no registers, no completion to wait for).
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// sum_i a.byte[i] * b.byte[i] + c, a's bytes unsigned, b's signed.
__device__ __forceinline__ int dp4a_us(uint32_t a, int b, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// q8_0 rounding of 32 values held 8 per lane by 4 consecutive lanes (every lane of the
// warp takes part in the shuffles): d = max|x| / 127, q = roundf(x / d) computed as
// x * (1 / d), the scale stored as f16, exactly as the CPU quantizer (quantize.cpp) does.
// Returns the 8 quants packed little-endian and the f16-rounded scale as f32. (8 values
// per lane: the per-group division and reciprocal are shared by twice as many values.)
__device__ inline uint2 quantize8_q8(float4 a, float4 b, float& scale) {
  float amax = fmaxf(fmaxf(fmaxf(fabsf(a.x), fabsf(a.y)), fmaxf(fabsf(a.z), fabsf(a.w))),
                     fmaxf(fmaxf(fabsf(b.x), fabsf(b.y)), fmaxf(fabsf(b.z), fabsf(b.w))));
#pragma unroll
  for (int off = 1; off < kQ8Group / 8; off *= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  scale = __half2float(__float2half_rn(d));
  auto q = [&](float x) { return uint32_t(int(roundf(x * id))) & 0xFFu; };
  return {q(a.x) | (q(a.y) << 8) | (q(a.z) << 16) | (q(a.w) << 24),
          q(b.x) | (q(b.y) << 8) | (q(b.z) << 16) | (q(b.w) << 24)};
}

// Rounds total (a multiple of 32) values of x (XSource) to q8_0 into q and d (one
// scale per 32 values), warp w of nwarps taking 256-value steps w, w + nwarps, ...,
// 2 steps (4 16-byte loads) in flight per lane. With kDequant the rounded values q * d go
// to xr instead.
template <bool kDequant = false>
__device__ inline void quantize_q8_range(const XSource& x, int64_t total, int64_t w, int64_t nwarps, int lane,
                                         int8_t* q, float* d, float* xr = nullptr) {
  constexpr int kBatch = 2;
  const int64_t step = nwarps * kQ8WarpStep;
  for (int64_t base = w * kQ8WarpStep; base < total; base += kBatch * step) {  // uniform over the warp
    float4 v[kBatch][2];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int64_t i = base + b * step + 8 * lane;
      x.load8(i < total ? i : 0, v[b][0], v[b][1]);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int64_t i = base + b * step + 8 * lane;  // a lane's 8 values are all in or all out
      float s;
      const uint2 packed = quantize8_q8(v[b][0], v[b][1], s);
      if (i < total) {
        if constexpr (kDequant) {
          const auto qv = [&](uint32_t w, int k) { return float(int8_t(w >> (8 * k))) * s; };
          reinterpret_cast<float4*>(xr)[i / 4] =
              make_float4(qv(packed.x, 0), qv(packed.x, 1), qv(packed.x, 2), qv(packed.x, 3));
          reinterpret_cast<float4*>(xr)[i / 4 + 1] =
              make_float4(qv(packed.y, 0), qv(packed.y, 1), qv(packed.y, 2), qv(packed.y, 3));
        } else {
          reinterpret_cast<uint2*>(q)[i / 8] = packed;
          if (lane % (kQ8Group / 8) == 0) d[i / kQ8Group] = s;
        }
      }
    }
  }
}

// Copies x (M*K values, total % 8 == 0) into shared memory as f32, eight per thread and
// step, kBatch steps in flight.
__device__ inline void stage_f32(const XSource& x, int64_t total, float* xs) {
  constexpr int kBatch = 2;
  const int64_t step = 8 * int64_t(blockDim.x);
  for (int64_t i0 = 8 * int64_t(threadIdx.x); i0 < total; i0 += kBatch * step) {
    float4 v[kBatch][2];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int64_t i = i0 + j * step;
      x.load8(i < total ? i : 0, v[j][0], v[j][1]);
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int64_t i = i0 + j * step;
      if (i < total) {
        reinterpret_cast<float4*>(xs + i)[0] = v[j][0];
        reinterpret_cast<float4*>(xs + i)[1] = v[j][1];
      }
    }
  }
}

// Row r of a staged tile as the decoders' byte reader (block_decode.h's PtrBytes on the
// device): every row of a tile is read at the same offsets, kRowBuffer (a multiple of 4)
// apart, so written this way the alignment of a read, (base + off) & 3, and its aligned
// word address are computed once for all rows and each row's words are immediate offsets
// from them (bytes8_at per row pointer recomputed both for every row).
struct SharedRow {
  uint32_t base;  // shared address of row 0
  uint32_t roff;  // r * kRowBuffer
  __device__ __forceinline__ quant::Bytes8 bytes8(int64_t off) const {
    const uint32_t a = base + uint32_t(off), lo2 = a & 3u;
    return quant::bytes8_shared(a - lo2 + roff, lo2 * 8);
  }
  __device__ __forceinline__ uint32_t byte(int64_t off) const {
    uint32_t v;
    asm volatile("ld.shared.u8 %0, [%1];" : "=r"(v) : "r"(base + uint32_t(off) + roff));
    return v;
  }
};

// The (a, b) of every scale group of a tile's rows (a tile is LV values per lane),
// decoded once per group, one or more per lane (a q4_K sub-block scale takes some 20
// instructions; decoding it once per value octet would cost more than the values); pick()
// hands a lane the (a, b) of one group of each row by shuffles.
template <class D, int kRowBuffer, int LV>
struct TileScales {
  static constexpr int G = kWarp * LV / D::kScaleVals;  // scale groups per row of a tile
  static_assert(kWarp % G == 0 && (G * kRows) % kWarp == 0);
  static constexpr int kPer = G * kRows / kWarp;
  float ta[kPer], tb[kPer];

  __device__ __forceinline__ TileScales(const uint8_t* tile, int lane) {
#pragma unroll
    for (int p = 0; p < kPer; ++p) {
      const int j = lane + kWarp * p;  // entry j: group j % G of row j / G
      D::scale_affine(tile + (j / G) * kRowBuffer, int64_t(j % G) * D::kScaleVals, ta[p], tb[p]);
    }
  }
  // Group `group` (the same for every lane, or not) of every row.
  __device__ __forceinline__ void pick(int group, float (&a)[kRows], float (&b)[kRows]) const {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int src = (r * G + group) % kWarp;  // in ta[r * G / kWarp] of that lane
      a[r] = __shfl_sync(0xffffffffu, ta[r * G / kWarp], src);
      b[r] = quant::kAffineOffsetOf<D> ? __shfl_sync(0xffffffffu, tb[r * G / kWarp], src) : 0.0f;
    }
  }
};

// Decoders of ggml's 32-value blocks (q4_0/1, q5_0/1, q8_0): a lane reads its rows' block
// scales itself (an f16, two with the min, at the block's start), cheaper than decoding
// them once per group and handing them out by shuffles (TileScales, for the K-quants).
template <class D>
inline constexpr bool kLegacyBlocks = D::kElems == kQ8Group;

// One tile's contribution: this lane's values of the kRows rows at `tile` (the tile's first
// value is e_tile): e .. e + 7 with e = e_tile + 8 * lane, or in the wide form e .. e + 7
// and e + S .. e + S + 7 (S = D::kWideStride) with e as computed in the wide branch.
template <class D, class Act, int MB, int kRowBuffer>
__device__ __forceinline__ void tile_dot(const uint8_t* tile, int lane, int e_tile, int K, int M, const float* xs,
                                         const int8_t* xq, const float* xd, bool x_in_smem, float (&acc)[kRows][MB]) {
  static_assert(kRowBuffer % 4 == 0, "SharedRow reads every row at one alignment");
  const uint32_t tbase = smem_addr(tile);
  float a[kRows], b[kRows];
  if constexpr (std::is_same_v<Act, ActQ8> && kLaneVals<D, Act> == 16) {
    // The wide form: lanes in groups of S / 8 cover 2S values, lane j of a group the 8 at
    // 8j and the 8 at 8j + S (S = kWideStride); the two halves share a scale group when
    // S < kScaleVals (the legacy 32-value blocks) and an x scale when S < 32.
    constexpr int S = D::kWideStride;
    constexpr bool kTwoScales = S >= D::kScaleVals, kTwoX = S >= kQ8Group;
    static_assert(!(kLegacyBlocks<D> && kTwoScales), "the legacy-block scales fill a and b only");
    const int e_in = 2 * S * (lane / (S / 8)) + 8 * (lane % (S / 8));
    float a2[kRows], b2[kRows];
    if constexpr (kLegacyBlocks<D>) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) D::scale_affine(tile + r * kRowBuffer, e_in, a[r], b[r]);
    } else {
      const TileScales<D, kRowBuffer, 16> scales(tile, lane);
      scales.pick(e_in / D::kScaleVals, a, b);
      if constexpr (kTwoScales) scales.pick((e_in + S) / D::kScaleVals, a2, b2);
    }
    quant::Bytes8 lo[kRows], hi[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      D::decode16_bytes_at(SharedRow{tbase, uint32_t(r * kRowBuffer)}, e_in, lo[r], hi[r]);
    const int e = e_tile + e_in;
    if (e >= K) return;  // K % 32 == 0 (K % 256 == 0 for the K-quants): all in or all out
    constexpr bool kNeedSum = D::kByteOffset != 0 || quant::kAffineOffsetOf<D>;
    constexpr int k1 = 0x01010101;
#pragma unroll
    for (int m = 0; m < MB; ++m) {
      if (MB == 1 || m < M) {                    // MB == 1: M is 1
        const uint32_t i = uint32_t(m * K + e);  // M * K < 2^31 (launcher); unsigned: / 32 is a shift
        const int2 xl = *reinterpret_cast<const int2*>(xq + i), xh = *reinterpret_cast<const int2*>(xq + i + S);
        const float dl = xd[i / kQ8Group], dh = kTwoX ? xd[(i + S) / kQ8Group] : dl;
        int sl = 0, sh = 0;
        if constexpr (kNeedSum) {
          sl = __dp4a(xl.x, k1, __dp4a(xl.y, k1, 0));
          sh = __dp4a(xh.x, k1, __dp4a(xh.y, k1, 0));
        }
        // The byte offset's share of each dot, once for all rows: the dp4a chains start there.
        const int off_l = -D::kByteOffset * sl, off_h = -D::kByteOffset * sh;
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          float v = acc[r][m];
          if constexpr (kTwoScales) {
            const int dot_l = dp4a_us(lo[r].lo, xl.x, dp4a_us(lo[r].hi, xl.y, off_l));
            const int dot_h = dp4a_us(hi[r].lo, xh.x, dp4a_us(hi[r].hi, xh.y, off_h));
            v = fmaf(a[r] * dl, float(dot_l), v);
            v = fmaf(a2[r] * dh, float(dot_h), v);
            if constexpr (quant::kAffineOffsetOf<D>) {
              v = fmaf(b[r] * dl, float(sl), v);
              v = fmaf(b2[r] * dh, float(sh), v);
            }
          } else {  // one block: one scale, one x scale
            const int dot =
                dp4a_us(lo[r].lo, xl.x,
                        dp4a_us(lo[r].hi, xl.y, dp4a_us(hi[r].lo, xh.x, dp4a_us(hi[r].hi, xh.y, off_l + off_h))));
            v = fmaf(a[r] * dl, float(dot), v);
            if constexpr (quant::kAffineOffsetOf<D>) v = fmaf(b[r] * dl, float(sl + sh), v);
          }
          acc[r][m] = v;
        }
      }
    }
  } else if constexpr (std::is_same_v<Act, ActQ8>) {
    static_assert(quant::kHasAffine<D>, "q8 activations need a decoder with decode8_bytes_at");
    const int e = e_tile + 8 * lane;
    if constexpr (kLegacyBlocks<D>) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) D::scale_affine(tile + r * kRowBuffer, 8 * lane, a[r], b[r]);
    } else {
      TileScales<D, kRowBuffer, 8>(tile, lane).pick(8 * lane / D::kScaleVals, a, b);
    }
    quant::Bytes8 q[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) q[r] = D::decode8_bytes_at(SharedRow{tbase, uint32_t(r * kRowBuffer)}, 8 * lane);
    if (e >= K) return;  // K % 32 == 0: a lane's 8 values are all in or all out
    constexpr bool kNeedSum = D::kByteOffset != 0 || quant::kAffineOffsetOf<D>;
#pragma unroll
    for (int m = 0; m < MB; ++m) {
      if (MB == 1 || m < M) {  // MB == 1: M is 1
        const uint32_t i = uint32_t(m * K + e);
        const int2 xv = *reinterpret_cast<const int2*>(xq + i);
        const float dx = xd[i / kQ8Group];
        int xsum = 0;
        if constexpr (kNeedSum) xsum = __dp4a(xv.x, 0x01010101, __dp4a(xv.y, 0x01010101, 0));
        const int off = -D::kByteOffset * xsum;  // the dp4a chains start there
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const int dot = dp4a_us(q[r].lo, xv.x, dp4a_us(q[r].hi, xv.y, off));
          float v = fmaf(a[r] * dx, float(dot), acc[r][m]);
          if constexpr (quant::kAffineOffsetOf<D>) v = fmaf(b[r] * dx, float(xsum), v);
          acc[r][m] = v;
        }
      }
    }
  } else {
    const int e = e_tile + 8 * lane;
    float u[kRows][8];
    if constexpr (quant::kHasAffine<D>) {
      TileScales<D, kRowBuffer, 8>(tile, lane).pick(8 * lane / D::kScaleVals, a, b);
#pragma unroll
      for (int r = 0; r < kRows; ++r) quant::decode8_u<D>(tile + r * kRowBuffer, 8 * lane, u[r]);
    } else {
#pragma unroll
      for (int r = 0; r < kRows; ++r) quant::decode8_affine<D>(tile + r * kRowBuffer, 8 * lane, u[r], a[r], b[r]);
    }
    // Past K (K % 8 == 0: a lane's 8 values are all in or all out) the decoded bytes are
    // stale: leave them out.
    if (e >= K) return;
#pragma unroll
    for (int m = 0; m < MB; ++m) {
      if (MB == 1 || m < M) {  // MB == 1: M is 1
        const float* xm = xs + uint32_t(m * K + e);
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
}

template <class D, class Act, int MB, bool kAligned>
__global__ void __launch_bounds__(kBlockWarps* kWarp, kBlocksPerSm<D, Act, MB>) matvec_kernel(MatvecArgs p) {
  using T = Tiling<D, Act, MB>;
  constexpr int S = T::kStages;
  constexpr bool kQ8 = std::is_same_v<Act, ActQ8>;
  extern __shared__ __align__(16) uint8_t smem[];
  const int64_t N = p.N;
  const int K = int(p.K);  // < 2^31 (launcher)
  const int M = p.M;
  const size_t x_bytes = staged_x_bytes<Act>(p);
  const int lane = int(threadIdx.x % kWarp), warp = int(threadIdx.x / kWarp);
  float* partials = reinterpret_cast<float*>(smem + x_bytes);
  uint8_t* buffers = smem + x_bytes + kPartialBytes<MB> + size_t(warp) * T::kWarpSmem;
  // 32-bit counts (the launcher checks that they fit): fewer registers.
  const int groups = int((N + kRows - 1) / kRows);
  const int chunks = int((K + T::kChunkVals - 1) / T::kChunkVals);
  const int ks = p.ks, gpb = kBlockWarps / ks;
  const int local = warp / ks, slice = warp % ks;  // the warps of a group are consecutive
  const int per_slice = (chunks + ks - 1) / ks;
  const int c_begin = std::min(chunks, slice * per_slice), c_end = std::min(chunks, c_begin + per_slice);
  const int items = (c_end - c_begin) * p.rounds;  // (round, chunk) pairs of this warp
  // Group slots are dealt block-minor (slot i of every block, then slot i + 1), so when the
  // groups do not fill the last slots, the idle warps are spread over all blocks (and SMs)
  // instead of leaving whole blocks to the last SMs.
  auto group_of = [&](int round) { return (round * gpb + local) * int(gridDim.x) + int(blockIdx.x); };

  // Items are walked by cursors (no division per item): item it is chunk c of round
  // `round`, in buffer it % S.
  struct Cursor {
    int it, c, round, stage;
  };
  auto advance = [&](Cursor& q) {
    ++q.it;
    q.stage = q.stage + 1 == S ? 0 : q.stage + 1;
    if (++q.c == c_end) q.c = c_begin, ++q.round;
  };
  // A lane's share of a chunk's copy: kWarp / kRows lanes per row, each taking every
  // (kWarp / kRows)-th 16-byte piece of the row's window, from lane_first on; lane_src is
  // the byte offset of its first piece from the group's first row (kRows * row_bytes <
  // 2^31: launcher).
  constexpr int kLanesPerRow = kWarp / kRows, kStride = 16 * kLanesPerRow;
  const int lane_row = lane / kLanesPerRow, lane_first = 16 * (lane % kLanesPerRow);
  const uint32_t lane_src = uint32_t(lane_row) * uint32_t(p.row_bytes) + uint32_t(lane_first);
  const uint32_t row_bytes = uint32_t(p.row_bytes);  // < 2^31 (launcher)
  // What a chunk's copy needs of its round, worked out once per round (a chunk then costs
  // 32-bit offset math only): whether the round's group exists (the same for the whole
  // warp), and the lane's source, row lane_row of the group from byte lane_first, with
  // whether that row exists (a short last group).
  struct RoundSrc {
    const uint8_t* lane_row_src;
    bool group_ok, row_ok;
  };
  auto round_src = [&](int round) {
    const int g = group_of(round);
    RoundSrc r;
    r.group_ok = g < groups;
    r.row_ok = r.group_ok && int64_t(g) * kRows + lane_row < N;
    r.lane_row_src = p.w + (r.row_ok ? size_t(g) * kRows * p.row_bytes + lane_src : 0);
    return r;
  };
  // Starts the copy of the next item into its buffer (commits an empty group past the
  // end or for a group past N, so the wait below always counts the same number of groups).
  Cursor next{0, c_begin, 0, 0};
  RoundSrc next_src = round_src(0);
  auto issue = [&]() {
    if (next.it < items && next_src.group_ok) {
      const uint32_t start = uint32_t(next.c) * uint32_t(T::kChunkBytes);  // < row_bytes + a chunk < 2^31
      const uint32_t end = std::min(start + uint32_t(T::kChunkBytes), row_bytes);
      uint8_t* dst = buffers + next.stage * (kRows * T::kRowBuffer);
      if constexpr (kAligned) {
        // Pieces past the window (the row's end) and of rows past N are zero-filled (read
        // from nowhere; cp_async16 still wants a valid address: W's first byte).
        constexpr int kSlots = (T::kPieces + kLanesPerRow - 1) / kLanesPerRow;
        const uint32_t g0 = start & ~15u;
        const int window = int(((end + 15u) & ~15u) - g0);  // <= kPieces * 16; end <= row_bytes
        const uint8_t* src = next_src.lane_row_src + g0;
        uint8_t* d = dst + lane_row * T::kRowBuffer + lane_first;
#pragma unroll
        for (int j = 0; j < kSlots; ++j) {
          const int off = lane_first + kStride * j;
          if (j < kSlots - 1 || off < T::kPieces * 16) {  // inside the row's buffer
            const bool ok = next_src.row_ok && off < window;
            cp_async16(d + kStride * j, ok ? src + kStride * j : p.w, ok ? 16 : 0);
          }
        }
      } else {
        const int g = group_of(next.round);
        const uint8_t* rows = p.w + size_t(g) * kRows * p.row_bytes;
        const int rows_in = int(std::min<int64_t>(kRows, N - int64_t(g) * kRows));  // the last group may be short
        for (int r = 0; r < kRows; ++r, dst += T::kRowBuffer) {
          const uint8_t* src = rows + size_t(std::min(r, rows_in - 1)) * p.row_bytes;
          for (uint32_t i = start + lane; i < end; i += kWarp) dst[i - start] = src[i];
        }
      }
    }
    cp_async_commit();
    const int round = next.round;
    advance(next);
    if (next.round != round) next_src = round_src(next.round);
  };

  // Programmatic dependent launch (the launcher's attribute): this grid may start while
  // the previous kernel on the stream still runs. Until griddepcontrol.wait nothing it
  // wrote may be read (x) or anything it reads be written (y), so meanwhile the warp pulls
  // its first chunks of W into L2 only: L2 is the point of coherence, so a prefetch there
  // cannot go stale even if a previous kernel wrote W; the copies into shared memory come
  // after the wait. launch_dependents lets the next product's grid be set up early (its
  // blocks still wait for free SM slots and for this grid's completion at their own wait).
  if (const int g = group_of(0); g < groups && c_begin < c_end) {
    const size_t first = (size_t(c_begin) * T::kChunkBytes) & ~size_t(127);
    // Only what the pipeline copies first (S - 1 chunks): a whole round of a large W
    // prefetched by the next product would evict the running one's data from L2.
    const size_t end = std::min(size_t(std::min(c_end, c_begin + S - 1)) * T::kChunkBytes, p.row_bytes);
    const int lines = int((end - first + 127) / 128);  // 128-byte lines of a row's share
    const int rows_in = int(std::min<int64_t>(kRows, N - int64_t(g) * kRows));
    for (int i = lane; i < rows_in * lines; i += kWarp) {
      const int r = i / lines;
      prefetch_l2(p.w + (size_t(g) * kRows + r) * p.row_bytes + first + size_t(128) * (i - r * lines));
    }
  }
  grid_dependency_wait();
  grid_launch_dependents();

  // The first chunks of W start streaming in while the block stages x.
  for (int s = 0; s < S - 1; ++s) issue();
  const float* xs = static_cast<const float*>(p.x);  // f32 when not staged (launcher)
  const int8_t* xq = p.xq;
  const float* xd = p.xd;
  if (p.stage_x) {
    const int64_t total = int64_t(M) * K;
    // With the norm, each row's 1 / rms first (its scratch: the partial sums' space,
    // unused until the first row group ends, kBlockWarps * MB floats, then inv).
    float* inv = partials + kBlockWarps * MB;
    static_assert(kPartialBytes<MB> >= (kBlockWarps + 1) * MB * sizeof(float));
    if (p.norm) row_inv_rms<MB>(p.x, p.x_kind, M, K, p.eps, partials, inv);
    const XSource src{p.x, p.x_kind, p.norm, inv, K};
    if constexpr (kQ8) {
      auto* q = reinterpret_cast<int8_t*>(smem);
      auto* d = reinterpret_cast<float*>(smem + (size_t(total) + 15) / 16 * 16);
      quantize_q8_range(src, total, warp, kBlockWarps, lane, q, d);
      xq = q, xd = d;
    } else {
      stage_f32(src, total, reinterpret_cast<float*>(smem));
      xs = reinterpret_cast<const float*>(smem);
    }
  }
  __syncthreads();

  Cursor cur{0, c_begin, 0, 0};
  for (int round = 0; round < p.rounds; ++round) {
    const int g = group_of(round);
    const int64_t row0 = int64_t(g) * kRows;
    float acc[kRows][MB] = {};
    for (int c = c_begin; c < c_end; ++c, advance(cur)) {
      issue();  // item it + S - 1, into the buffer item it - 1 used (the __syncwarp below ended its reads)
      cp_async_wait<S - 1>();
      __syncwarp();
      if (g < groups) {  // the same for the whole warp
        const size_t start = size_t(c) * T::kChunkBytes;
        const uint8_t* chunk = buffers + size_t(cur.stage) * kRows * T::kRowBuffer + (kAligned ? (start & 15) : 0);
        // Unrolled (a few tiles per chunk): later tiles reuse the first one's lane offsets
        // and addresses, which the 64-register bound made the rolled loop recompute.
#pragma unroll
        for (int t = 0; t < T::kTiles; ++t) {
          const int e_tile = c * T::kChunkVals + t * T::kTileVals;  // < K + kChunkVals < 2^31 (launcher)
          if (e_tile >= K) break;
          tile_dot<D, Act, MB, T::kRowBuffer>(chunk + t * T::kTileBytes, lane, e_tile, K, M, xs, xq, xd, p.stage_x,
                                              acc);
        }
      }
      __syncwarp();
    }
    // The row group is done: reduce over the warp (and over the ks warps sharing it).
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int m = 0; m < MB; ++m) {
        float s = acc[r][m];
        for (int off = kWarp / 2; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
        acc[r][m] = s;
      }
    }
    if (ks == 1) {
      if (lane == 0) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
#pragma unroll
          for (int m = 0; m < MB; ++m)
            if (m < M && row0 + r < N) write_out(p, m, row0 + r, acc[r][m]);
        }
      }
    } else {
      constexpr int kVals = kRows * MB;
      float* part = partials + (round & 1) * kBlockWarps * kVals;
      if (lane == 0) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
#pragma unroll
          for (int m = 0; m < MB; ++m) part[warp * kVals + r * MB + m] = acc[r][m];
        }
      }
      __syncthreads();
      const int r = lane / MB, m = lane % MB;
      if (slice == 0 && lane < kVals && m < M && row0 + r < N) {
        float s = 0.0f;
        for (int j = 0; j < ks; ++j) s += part[(warp + j) * kVals + lane];
        write_out(p, m, row0 + r, s);
      }
    }
  }
}

// Rounds M*K values of x to q8_0 into q and d (or, kDequant, the rounded values into xr):
// the pre-pass of the q8 path when x does not fit the kernel's shared memory, and the
// q8 rounding for decoders without the byte form.
template <bool kDequant>
__global__ void quantize_q8_kernel(const float* __restrict__ x, int64_t total, int8_t* q, float* d, float* xr) {
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
  const int64_t w = int64_t(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  const XSource src{x, XKind::F32, nullptr, nullptr, 0};
  quantize_q8_range<kDequant>(src, total, w, warps, int(threadIdx.x % kWarp), q, d, xr);
}

// The launch: geometry from the occupancy the registers and shared memory allow.
// Shared memory of an SM and what the system keeps of it per resident block, read once
// per device.
inline size_t smem_per_sm(int device, bool reserved) {
  static std::atomic<int> cache[2][64];
  std::atomic<int>& c = cache[reserved][device & 63];
  int v = c.load(std::memory_order_relaxed);
  if (v == 0) {
    WICK_CHECK(cudaDeviceGetAttribute(
                   &v, reserved ? cudaDevAttrReservedSharedMemoryPerBlock : cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                   device) == cudaSuccess,
               Device, "quant_matmul: cannot read the shared memory size of cuda:", device);
    c.store(v + 1, std::memory_order_relaxed);  // + 1: 0 means unknown
    return size_t(v);
  }
  return size_t(v - 1);
}

// Whether every image of the kernels has the dependency wait (see launch_matvec).
#if defined(WICK_CUDA_MIN_ARCH) && WICK_CUDA_MIN_ARCH >= 90
inline constexpr bool kDependentLaunchBuilt = true;
#else
inline constexpr bool kDependentLaunchBuilt = false;
#endif

// Blocks of quantize_q8_kernel for total values (2 warp steps in flight).
inline unsigned quantize_q8_blocks(int64_t total) {
  const int64_t warps = (total + 2 * kQ8WarpStep - 1) / (2 * kQ8WarpStep);
  return unsigned(std::clamp<int64_t>((warps + kBlockWarps - 1) / kBlockWarps, 1, int64_t(resident_blocks())));
}

template <class D, class Act, int MB, bool kAligned>
void launch_matvec(CudaBackend& be, MatvecArgs p) {
  using T = Tiling<D, Act, MB>;
  auto* kernel = matvec_kernel<D, Act, MB, kAligned>;
  const int64_t mk = int64_t(p.M) * p.K;
  const int64_t groups = (p.N + kRows - 1) / kRows;
  const int64_t chunks = (p.K + T::kChunkVals - 1) / T::kChunkVals;
  WICK_CHECK(groups * chunks < (int64_t(1) << 31) && mk + T::kChunkVals < (int64_t(1) << 31) &&
                 p.row_bytes * kRows < (size_t(1) << 31),
             Unsupported, "quant_matmul: x of ", p.M, " x ", p.K, " and W of ", p.N, " x ", p.K,
             " are past the matrix-vector kernel's 32-bit counts and indices");
  // x in shared memory when it fits; else the kernel reads it from global memory (for
  // the q8 form after a pre-pass has rounded it there).
  p.stage_x = Act::smem_bytes(mk) <= Budget<Act, MB>::kXSmemMax;
  WICK_CHECK(p.stage_x || (p.x_kind == XKind::F32 && !p.norm), Internal, "quant_matmul: x of ", p.M, " x ", p.K,
             " is converted or normalized as it is staged, but does not fit shared memory (see stages_x)");
  std::shared_ptr<void> x_q8;
  if constexpr (std::is_same_v<Act, ActQ8>) {
    if (!p.stage_x) {
      const size_t q_bytes = (size_t(mk) + 255) / 256 * 256;
      x_q8 = be.scratch(q_bytes + size_t(mk / kQ8Group) * sizeof(float));
      auto* q = static_cast<int8_t*>(x_q8.get());
      auto* d = reinterpret_cast<float*>(static_cast<uint8_t*>(x_q8.get()) + q_bytes);
      quantize_q8_kernel<false><<<quantize_q8_blocks(mk), kBlockWarps * kWarp, 0, be.stream()>>>(
          static_cast<const float*>(p.x), mk, q, d, nullptr);
      p.xq = q, p.xd = d;
      check_launch("quant_matmul");
    }
  }
  const size_t smem = staged_x_bytes<Act>(p) + kPartialBytes<MB> + kBlockWarps * T::kWarpSmem;
  // Once per device (the attributes are per device): opt in to the most dynamic shared
  // memory this kernel can ask for (above the default 48 KB), and find out whether it may
  // take programmatic dependent launch: only when every image of the kernel has the
  // dependency wait, i.e. the build's oldest architecture is sm_90 or later (a compute_80
  // image JIT-compiled for an H100 has none, and would race with the previous kernel),
  // on a device of compute capability 9.0 or later.
  static std::atomic<uint64_t> opted_in{0}, dependent_launch{0};
  const uint64_t bit = uint64_t(1) << (be.ordinal() & 63);
  if (!(opted_in.load(std::memory_order_acquire) & bit)) {
    const size_t most = Budget<Act, MB>::kXSmemMax + kPartialBytes<MB> + kBlockWarps * T::kWarpSmem;
    WICK_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(most)) == cudaSuccess,
               Internal, "quant_matmul: cannot raise the shared memory limit of the matvec kernel");
    int major = 0;
    WICK_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, be.ordinal()) == cudaSuccess, Device,
               "quant_matmul: cannot read the compute capability of cuda:", be.ordinal());
    if (kDependentLaunchBuilt && major >= 9) dependent_launch.fetch_or(bit, std::memory_order_relaxed);
    opted_in.fetch_or(bit, std::memory_order_release);
  }
  const bool pdl = dependent_launch.load(std::memory_order_relaxed) & bit;
  const int64_t sms = be.sm_count();
  const size_t sm_bytes = smem_per_sm(be.ordinal(), false), reserved = smem_per_sm(be.ordinal(), true);
  const int64_t per_sm = std::clamp<int64_t>(int64_t(sm_bytes / (smem + reserved)), 1, kBlocksPerSm<D, Act, MB>);
  const int64_t resident = sms * per_sm;
  // Split a row group over more warps while the groups alone leave the GPU half empty.
  int ks = 1;
  while (ks < kBlockWarps && groups * ks * 2 <= resident * kBlockWarps && ks * 2 <= chunks) ks *= 2;
  p.ks = ks;
  const int64_t gpb = kBlockWarps / ks;
  // Every resident slot (a short last round of slots is spread over all blocks), but no
  // block without a group.
  const int64_t blocks = std::min(groups, resident);
  p.rounds = int((groups + blocks * gpb - 1) / (blocks * gpb));
  // Programmatic dependent launch: the grid may start during the previous kernel's tail
  // (the kernel's griddepcontrol.wait keeps x and y ordered after it).
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(blocks));
  cfg.blockDim = dim3(kBlockWarps * kWarp);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = be.stream();
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = pdl ? 1 : 0;
  (void)cudaLaunchKernelEx(&cfg, kernel, p);  // an error is also the last error: check_launch reports it
  check_launch("quant_matmul");
}

// Whether launch_matvec stages M x K values of x in shared memory (where x may be f16/bf16
// and normalized on the way): the aligned kernels' rule (the unaligned one, MB 8, has room
// for at least as much).
inline bool stages_x(bool q8, int64_t M, int64_t K) {
  const int64_t mk = M * K;
  if (q8) return ActQ8::smem_bytes(mk) <= (M == 1 ? Budget<ActQ8, 1>::kXSmemMax : Budget<ActQ8, 8>::kXSmemMax);
  return ActF32::smem_bytes(mk) <= (M == 1 ? Budget<ActF32, 1>::kXSmemMax : Budget<ActF32, 8>::kXSmemMax);
}

// Every decoder's kernel for one activation form; the q8 form only for the decoders
// with the byte form (the caller rounds x for the others and takes ActF32).
template <class Act>
void dispatch_matvec(CudaBackend& be, GgmlType type, const MatvecArgs& p) {
  const bool aligned = p.row_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(p.w) % 16 == 0;
  quant::dispatch_decoder(type, [&]<class D>() {
    if constexpr (std::is_same_v<Act, ActQ8> && !quant::kHasAffine<D>) {
      fail(ErrorKind::Internal, "quant_matvec: no q8 kernel for ", ggml_type_name(type));
    } else if (!aligned) {
      launch_matvec<D, Act, kQuantMatvecMaxM, false>(be, p);  // rare: one generic kernel
    } else if (p.M == 1) {
      launch_matvec<D, Act, 1, true>(be, p);
    } else {
      launch_matvec<D, Act, kQuantMatvecMaxM, true>(be, p);
    }
  });
}

// The instantiations (kernels_quant_matvec_f32.cu, kernels_quant_matvec_q8.cu).
void matvec_f32(CudaBackend& be, GgmlType type, const MatvecArgs& p);
void matvec_q8(CudaBackend& be, GgmlType type, const MatvecArgs& p);

}  // namespace wick::cuda::qmv
