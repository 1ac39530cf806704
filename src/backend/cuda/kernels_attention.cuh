// Shared pieces of the CUDA attention kernels (kernels_attention.cu: dispatch, the
// split-key warp kernel for decode and odd head dims; kernels_attention_flash.cu: the
// tiled prefill kernel).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_types.cuh"
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
};

// Last key query i may see (inclusive): with a KV cache the queries are the last Tq
// positions of the Tk keys. Negative: the row sees no key (it becomes NaN).
__host__ __device__ inline int64_t last_key(const AttnArgs& a, int64_t i) {
  const int64_t causal_last = i + a.Tk - a.Tq;
  return a.causal && causal_last < a.Tk - 1 ? causal_last : a.Tk - 1;
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
                              const void* ml, const Tensor& out);

}  // namespace wick::cuda
