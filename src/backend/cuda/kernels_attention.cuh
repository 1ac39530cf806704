// Shared pieces of the CUDA attention kernels (kernels_attention.cu: dispatch, the
// split-key warp kernel for decode and odd head dims; kernels_attention_flash.cu: the
// tiled prefill kernel).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <memory>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_types.cuh"
#include "backend/cuda/launch.cuh"
#include "wick/tensor.h"

namespace wick::cuda {

struct Strides4 {
  int64_t s[4];
  int64_t off;
};
inline Strides4 strides4(const Tensor& t) {
  Strides4 r{};
  if (!t.defined()) return r;
  for (int i = 0; i < 4; ++i) r.s[i] = t.strides()[size_t(i)];
  r.off = t.offset();
  return r;
}

// The additive mask, whatever its float dtype: the dtype is a runtime switch per element
// (cheap next to the score math) so the kernels are not instantiated once per mask dtype.
enum class MaskKind : int { None, F16, BF16, F32, F64 };
struct MaskRef {
  const void* p = nullptr;  // element 0 of the storage
  MaskKind kind = MaskKind::None;
  Strides4 st{};
  // Mask value for (b, h, i, j); only called when kind != None.
  __device__ __forceinline__ double at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    const int64_t idx = st.off + b * st.s[0] + h * st.s[1] + i * st.s[2] + j * st.s[3];
    switch (kind) {
      case MaskKind::F16: return __half2float(static_cast<const __half*>(p)[idx]);
      case MaskKind::BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[idx]);
      case MaskKind::F32: return static_cast<const float*>(p)[idx];
      default: return static_cast<const double*>(p)[idx];
    }
  }
};

struct AttnArgs {
  int64_t B, H, Tq, Tk, D;
  double scale;
  bool causal;
  Strides4 q, k, v;
  MaskRef mask;
  const float* sinks = nullptr;  // (H) sink logits (nn.h), or none
};

// The sink logit of each output row for launch_attention_combine: rows come per head in runs
// of per_head (the Tq queries of a prefill, 1 for a decode step's heads). With sinks the
// kernels always write partials, and the combine folds the sink into each row's softmax
// (math::softmax_inv): one place for every attention kernel.
struct SinkRows {
  const float* p = nullptr;
  int64_t H = 1, per_head = 1;
  __device__ __forceinline__ float at(int64_t row) const { return p ? p[(row / per_head) % H] : -INFINITY; }
};

// Last key query i may see (inclusive): with a KV cache the queries are the last Tq
// positions of the Tk keys. Negative: the row sees no key (it becomes NaN).
__host__ __device__ inline int64_t last_key(const AttnArgs& a, int64_t i) {
  const int64_t causal_last = i + a.Tk - a.Tq;
  return a.causal && causal_last < a.Tk - 1 ? causal_last : a.Tk - 1;
}

// One warp's finished query row (lane holds elements lane + 32 e of its accumulator): with
// part_acc, the split's partials for launch_attention_combine (row prow of [split][row]);
// otherwise the normalized output row out + orow * D. A row that saw no key gives NaN, as
// PyTorch does (0/0).
template <class S, int EPL, class A>
__device__ __forceinline__ void store_attention_row(int lane, int64_t D, const A (&acc)[EPL], A run_max, A run_sum,
                                                    int64_t prow, A* part_acc, A* part_ml, int64_t orow, S* out) {
  if (part_acc) {
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int64_t d = lane + 32 * e;
      if (d < D) part_acc[prow * D + d] = acc[e];
    }
    if (lane == 0) {
      part_ml[2 * prow] = run_max;
      part_ml[2 * prow + 1] = run_sum;
    }
    return;
  }
  const A inv = run_sum > A(0) ? A(1) / run_sum : A(NAN);
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const int64_t d = lane + 32 * e;
    if (d < D) out[orow * D + d] = from_compute<S>(acc[e] * inv);
  }
}

// Tile geometry of the prefill kernels (kernels_attention_flash.cu for f32,
// kernels_attention_mma.cu for f16/bf16): a block of kFlashWarps warps takes kFlashBQ
// queries (kFlashWQ per warp) of one (batch, head) and walks its keys in tiles of kFlashBK.
// (The f16/bf16 kernel can also take twice the queries per warp and block.)
inline constexpr int kFlashBQ = 64, kFlashBK = 64, kFlashWQ = 16;
inline constexpr int kFlashWarps = kFlashBQ / kFlashWQ, kFlashThreads = 32 * kFlashWarps;

// A prefill block's query tile, (batch, head) and base pointers. The last query tiles see
// the most keys under causal: they come first in blockIdx.x, for every (batch, head), so
// the long blocks start together and the short ones fill in after.
template <class S>
struct PrefillTile {
  int64_t q0, q_valid, b, h, bh;
  const S *qb, *kb, *vb;
};
template <class S>
__device__ __forceinline__ PrefillTile<S> prefill_tile(const AttnArgs& a, const S* q, const S* k, const S* v,
                                                       int bq = kFlashBQ) {
  PrefillTile<S> t;
  const int64_t n_qt = (a.Tq + bq - 1) / bq, bh_count = a.B * a.H;
  t.q0 = (n_qt - 1 - int64_t(blockIdx.x) / bh_count) * bq;
  t.bh = int64_t(blockIdx.x) % bh_count;
  t.b = t.bh / a.H;
  t.h = t.bh % a.H;
  t.q_valid = a.Tq - t.q0 < bq ? a.Tq - t.q0 : bq;
  t.qb = q + a.q.off + t.b * a.q.s[0] + t.h * a.q.s[1] + t.q0 * a.q.s[2];
  t.kb = k + a.k.off + t.b * a.k.s[0] + t.h * a.k.s[1];
  t.vb = v + a.v.off + t.b * a.v.s[0] + t.h * a.v.s[1];
  return t;
}

// The tiled tensor-core / register-tiled prefill kernel. Returns false (launching nothing)
// where it does not apply (dtype, head dim or layout); the caller then uses the warp kernel.
bool launch_flash_attention(CudaBackend& be, const AttnArgs& a, DType dtype, const Tensor& q, const Tensor& k,
                            const Tensor& v, const Tensor& out);

// The f16/bf16 tiled kernel (kernels_attention_mma.cu: mma.sync tensor-core tiles, scores
// kept in registers); called by launch_flash_attention. Same contract: false = not applicable.
bool launch_flash_attention_mma(CudaBackend& be, const AttnArgs& a, DType dtype, const Tensor& q, const Tensor& k,
                                const Tensor& v, const Tensor& out);

// Shared host-side pieces of the tiled kernels. 16-byte loads need the head dim contiguous
// and every row start 16-byte aligned (vec = elements per 16 bytes).
inline bool flash_rows_aligned(const Tensor& t, const Strides4& s, int vec) {
  if (s.s[3] != 1) return false;
  if (reinterpret_cast<uintptr_t>(t.storage_data()) % 16 != 0) return false;
  return s.off % vec == 0 && s.s[0] % vec == 0 && s.s[1] % vec == 0 && s.s[2] % vec == 0;
}

// How many blocks share one query tile's keys (whole key tiles of tile_k each, chunk_tiles
// per block) so that `blocks` query-tile blocks fill want_blocks resident slots (batch-1
// prefill); their partials go through launch_attention_combine.
struct FlashSplit {
  int64_t splits, chunk_tiles;
};
inline FlashSplit flash_key_split(int64_t blocks, int64_t want_blocks, int64_t Tk, int64_t tile_k) {
  const int64_t key_tiles = (Tk + tile_k - 1) / tile_k;
  if (key_tiles <= 1) return {1, 1};  // Tk == 0 included: every row is NaN
  int64_t splits = (want_blocks + blocks - 1) / blocks;
  splits = splits < 1 ? 1 : splits;
  splits = splits > key_tiles ? key_tiles : splits;
  splits = splits > 65535 ? 65535 : splits;
  const int64_t chunk_tiles = (key_tiles + splits - 1) / splits;
  return {(key_tiles + chunk_tiles - 1) / chunk_tiles, chunk_tiles};
}

// Merges per-split partials into out (contiguous (rows, D) of dtype): acc holds the
// unnormalized accumulators as [split][row][D], ml the (running max, sum) pairs as
// [split][row][2], both in dcompute_t of the dtype (f32, or f64 for f64).
void launch_attention_combine(CudaBackend& be, DType dtype, int64_t rows, int64_t D, int64_t splits, const void* acc,
                              const void* ml, const Tensor& out, SinkRows sinks = {});

// Resident blocks per SM of a prefill kernel with smem bytes of dynamic shared memory (the
// opt-in above 48 KiB is made once per kernel, with the occupancy query).
template <auto Kernel>
int prefill_blocks_per_sm(size_t smem) {
  static const int per_sm = [smem] {
    WICK_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    int n = 1;
    WICK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, kFlashThreads, smem));
    return n < 1 ? 1 : n;
  }();
  return per_sm;
}

// Runs a prefill kernel, Kernel(a, rows_aligned, chunk_keys, q, k, v, out, part_acc,
// part_ml), over every (query tile of bq rows, batch, head). When the tiles alone cannot
// fill the GPU (batch-1 prefill) the keys are split over several blocks per tile (whole
// key tiles each) whose partials launch_attention_combine merges; otherwise the kernel
// writes out itself. With sinks the partials always go through the combine, which adds them.
template <auto Kernel, class S>
void launch_prefill(CudaBackend& be, const AttnArgs& a, size_t smem, int bq, const Tensor& q, const Tensor& k,
                    const Tensor& v, const Tensor& out) {
  const int per_sm = prefill_blocks_per_sm<Kernel>(smem);
  constexpr int vec = 16 / sizeof(S);
  const bool aligned =
      flash_rows_aligned(q, a.q, vec) && flash_rows_aligned(k, a.k, vec) && flash_rows_aligned(v, a.v, vec);
  const int64_t blocks = (a.Tq + bq - 1) / bq * a.B * a.H;
  const FlashSplit sp = flash_key_split(blocks, int64_t(per_sm) * be.sm_count(), a.Tk, kFlashBK);
  const dim3 grid{unsigned(blocks), unsigned(sp.splits)};
  const int64_t chunk_keys = sp.chunk_tiles * kFlashBK;
  S* o = dptr<S>(out) + out.offset();
  if (sp.splits <= 1 && !a.sinks) {
    Kernel<<<grid, kFlashThreads, smem, be.stream()>>>(a, aligned, chunk_keys, dptr<const S>(q), dptr<const S>(k),
                                                       dptr<const S>(v), o, nullptr, nullptr);
    check_launch("scaled_dot_product_attention");
    return;
  }
  const int64_t rows = a.B * a.H * a.Tq;
  std::shared_ptr<void> acc = be.scratch(size_t(sp.splits * rows * a.D) * sizeof(float));
  std::shared_ptr<void> ml = be.scratch(size_t(sp.splits * rows * 2) * sizeof(float));
  Kernel<<<grid, kFlashThreads, smem, be.stream()>>>(a, aligned, chunk_keys, dptr<const S>(q), dptr<const S>(k),
                                                     dptr<const S>(v), o, static_cast<float*>(acc.get()),
                                                     static_cast<float*>(ml.get()));
  check_launch("scaled_dot_product_attention");
  launch_attention_combine(be, out.dtype(), rows, a.D, sp.splits, acc.get(), ml.get(), out, {a.sinks, a.H, a.Tq});
}

}  // namespace wick::cuda
