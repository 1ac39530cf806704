// The tiled ("flash") attention kernel for prefill in f32 (f16/bf16 go to the tensor-core
// kernel of kernels_attention_mma.cu, which launch_flash_attention dispatches to): a block of 4 warps owns 64 queries
// of one (batch, head); it walks the keys in tiles of 64 staged in shared memory, each warp computing the 16 x 64
// scores of its 16 query rows, an online softmax per row (running max and sum) and the 16 x D output accumulator, which
// stays in registers. The Tq x Tk score matrix never exists; with causal, tiles past a warp's last visible key are
// skipped. When the query tiles alone cannot fill the GPU (batch-1 prefill), each tile's keys are split over several
// blocks whose partials the decode path's combine kernel merges.
//
// Both products are register-blocked so that shared memory (one 128-byte wavefront per clock
// per SM, against four warp-wide FFMA per clock) does not limit them: lane (rg, kg) = (lane / 8,
// lane % 8) owns rows rg + 4 r (r < 4) of the warp's 16, and
//   S = Q K^T: keys kg + 8 j (j < 8): per 4 dims, 4 + 8 16-byte loads feed 128 FFMA;
//   O += P V:  columns 32 t + 4 kg + (0..3) (t < D / 32): per 4 keys, 4 + 4 D / 32 16-byte
//              loads feed 4 D / 2 FFMA.
// The probabilities go once through a per-warp shared tile to change from the first layout to
// the second. The softmax sum stays per lane (each lane's 8 keys) and is reduced once at the end.
//
// Plain FMA register tiles (no TF32), so results stay within float rounding of the exact
// value. Head dims 64 and 128; others use the warp kernel of kernels_attention.cu.
#include <algorithm>
#include <type_traits>

#include "backend/cuda/kernels_attention.cuh"
#include "backend/cuda/launch.cuh"

namespace wick::cuda {

namespace {

constexpr int kBQ = kFlashBQ, kBK = kFlashBK, kWQ = kFlashWQ, kWarps = kFlashWarps;  // kernels_attention.cuh
constexpr int kRows = kWQ / 4;                                                       // rows per lane
constexpr int kKeys = kBK / 8;                                                       // keys per lane
static_assert(kBQ == kBK && kWQ == 16 && kBK == 64, "load_tile stages kBK rows, Q too; lane blocks are 4 x 8");

constexpr size_t round128(size_t n) { return (n + 127) / 128 * 128; }

// Shared-memory layout (floats). Row strides are chosen against bank conflicts of the
// 16-byte accesses: a Q or K load reads 4 rows (Q) or 8 rows (K) that are 1 apart, so a
// stride of 4 mod 32 puts them on distinct banks; a P store writes 4 rows 1 apart x 8
// consecutive keys (stride 8 mod 32), a P load 4 rows 1 apart x 4 keys.
template <int D>
struct FlashLayout {
  static constexpr int QLD = D + 4;
  static constexpr int KLD = D + 4;
  static constexpr int VLD = D;  // a V load is one row, 32 consecutive floats
  static constexpr int PLD = kBK + 8;
  // Head dim 128: the warps' P tiles go over K (free once every warp has its scores, at the
  // cost of one more barrier per key tile), which brings a block from 116 to 98 KiB: two
  // blocks per SM instead of one. Head dim 64 is held to three blocks by registers anyway.
  static constexpr bool p_over_k = D > 64;
  static constexpr size_t q_off = 0;
  static constexpr size_t k_off = q_off + round128(sizeof(float) * kBQ * QLD);
  static constexpr size_t v_off = k_off + round128(sizeof(float) * kBK * KLD);
  static constexpr size_t p_bytes = round128(sizeof(float) * kWarps * kWQ * PLD);
  static constexpr size_t p_off = p_over_k ? k_off : v_off + round128(sizeof(float) * kBK * VLD);
  static constexpr size_t bytes = p_over_k ? v_off + round128(sizeof(float) * kBK * VLD) : p_off + p_bytes;
  static_assert(!p_over_k || p_bytes <= v_off - k_off);
};

// Rows [0, kBK) of a (rows, D) tile at src (row stride s_row, element stride s_d) into dst
// (row stride ld, a multiple of 4, 16-byte aligned); rows >= valid are zero (so 0-weight keys
// never multiply garbage). vec: s_d == 1 and every row 16-byte aligned, so rows move in
// 16-byte pieces.
template <int D>
__device__ __forceinline__ void load_tile(float* dst, int ld, const float* src, int64_t s_row, int64_t s_d,
                                          int64_t valid, bool vec) {
  constexpr int PER_ROW = D / 4;
  if (vec) {
    // Thread t moves columns d0 of rows r0 + n RSTEP: its pieces are one pointer step apart.
    constexpr int N = kBK * PER_ROW / kFlashThreads, RSTEP = kFlashThreads / PER_ROW;
    static_assert(kFlashThreads % PER_ROW == 0);
    const int r0 = threadIdx.x / PER_ROW, d0 = threadIdx.x % PER_ROW * 4;
    // The step is opaque to the compiler, so it cannot keep N precomputed 64-bit offsets
    // alive across the key loop (it did: 60+ registers).
    int64_t step = RSTEP * s_row;
    asm volatile("" : "+l"(step));
    const float* p = src + r0 * s_row + d0;
    float4 val[N];
#pragma unroll
    for (int n = 0; n < N; ++n, p += step) {  // every load before the first store
      const bool ok = r0 + n * RSTEP < valid;
      val[n] = *reinterpret_cast<const float4*>(ok ? p : src + d0);
      if (!ok) val[n] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float* q = dst + r0 * ld + d0;
#pragma unroll
    for (int n = 0; n < N; ++n) *reinterpret_cast<float4*>(q + n * RSTEP * ld) = val[n];
  } else {
    for (int c = threadIdx.x; c < kBK * D; c += kFlashThreads) {
      const int r = c / D, d = c % D;
      dst[r * ld + d] = r < valid ? src[r * s_row + d * s_d] : 0.0f;
    }
  }
}

__device__ __forceinline__ float4 lds4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float comp(const float4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

template <class S, int D>
__global__ void __launch_bounds__(kFlashThreads)
    flash_attention_kernel(AttnArgs a, bool vec, int64_t kchunk, const S* __restrict__ q, const S* __restrict__ k,
                           const S* __restrict__ v, S* __restrict__ out, float* __restrict__ part_acc,
                           float* __restrict__ part_ml) {
  static_assert(std::is_same_v<S, float>, "f32 only: f16/bf16 use the tensor-core kernel");
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using L = FlashLayout<D>;
  constexpr int T = D / 32;  // 4-column groups per lane
  extern __shared__ __align__(128) unsigned char smem[];
  float* Qs = reinterpret_cast<float*>(smem + L::q_off);
  float* Ks = reinterpret_cast<float*>(smem + L::k_off);
  float* Vs = reinterpret_cast<float*>(smem + L::v_off);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rg = lane >> 3, kg = lane & 7;
  float* Ps = reinterpret_cast<float*>(smem + L::p_off) + warp * kWQ * L::PLD;

  const PrefillTile<S> tile = prefill_tile(a, q, k, v);
  const int64_t q0 = tile.q0, q_valid = tile.q_valid, b = tile.b, h = tile.h, bh = tile.bh;
  const S *qb = tile.qb, *kb = tile.kb, *vb = tile.vb;
  load_tile<D>(Qs, L::QLD, qb, a.q.s[2], a.q.s[3], q_valid, vec);

  // Keys [0, block_end) matter to some row of the block, [0, warp_end) to some row of
  // this warp, [0, row_end[r]) to row rg + 4 r of this lane.
  const int64_t block_end = last_key(a, q0 + q_valid - 1) + 1;
  const int64_t wq0 = q0 + warp * kWQ;
  const int64_t warp_end = wq0 < a.Tq ? last_key(a, (wq0 + kWQ - 1 < a.Tq ? wq0 + kWQ - 1 : a.Tq - 1)) + 1 : 0;
  int64_t row_end[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int64_t qi = wq0 + rg + 4 * r;
    row_end[r] = qi < a.Tq ? last_key(a, qi) + 1 : 0;  // <= Tk; 0 for rows past Tq
  }
  const int64_t row_end_min = std::min(std::min(row_end[0], row_end[1]), std::min(row_end[2], row_end[3]));
  const float scale = float(a.scale);
  const bool masked = a.mask.kind != MaskKind::None;

  float m_run[kRows], l_run[kRows];  // l_run: this lane's keys only
  float o[kRows][4 * T];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    m_run[r] = -INFINITY;
    l_run[r] = 0.0f;
#pragma unroll
    for (int e = 0; e < 4 * T; ++e) o[r][e] = 0.0f;
  }

  __syncthreads();

  const float* qw = Qs + (warp * kWQ + rg) * L::QLD;  // row rg + 4 r at qw + 4 r QLD
  const float* kl = Ks + kg * L::KLD;                 // key kg + 8 j at kl + 8 j KLD
  float* pw = Ps + rg * L::PLD;                       // row rg + 4 r at pw + 4 r PLD

  // This block's share of the keys (blockIdx.y-th chunk): with partials, several blocks
  // split one query tile's keys and attention_combine merges them.
  const int64_t k_begin = int64_t(blockIdx.y) * kchunk;
  const int64_t k_stop = k_begin + kchunk < block_end ? k_begin + kchunk : block_end;
  for (int64_t k0 = k_begin; k0 < k_stop; k0 += kBK) {
    const int64_t kv_valid = a.Tk - k0 < kBK ? a.Tk - k0 : kBK;
    __syncthreads();  // every warp is done with the previous K/V tile
    load_tile<D>(Ks, L::KLD, kb + k0 * a.k.s[2], a.k.s[2], a.k.s[3], kv_valid, vec);
    load_tile<D>(Vs, L::VLD, vb + k0 * a.v.s[2], a.v.s[2], a.v.s[3], kv_valid, vec);
    __syncthreads();
    // A warp none of whose rows sees these keys skips them (warp-uniform), but still meets
    // the barrier that frees K for P where P lives over K.
    const bool active = k0 < warp_end;
    float s[kRows][kKeys];  // scores, then probabilities: row rg + 4 r, key kg + 8 j
    if (active) {
      // Raw scores Q K^T.
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int j = 0; j < kKeys; ++j) s[r][j] = 0.0f;
#pragma unroll 2
      for (int d = 0; d < D; d += 4) {
        float4 qv[kRows], kv[kKeys];
#pragma unroll
        for (int r = 0; r < kRows; ++r) qv[r] = lds4(qw + 4 * r * L::QLD + d);
#pragma unroll
        for (int j = 0; j < kKeys; ++j) kv[j] = lds4(kl + 8 * j * L::KLD + d);
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
          for (int j = 0; j < kKeys; ++j) {
            s[r][j] = fmaf(qv[r].x, kv[j].x, s[r][j]);
            s[r][j] = fmaf(qv[r].y, kv[j].y, s[r][j]);
            s[r][j] = fmaf(qv[r].z, kv[j].z, s[r][j]);
            s[r][j] = fmaf(qv[r].w, kv[j].w, s[r][j]);
          }
      }

      // Scale; keys a row does not see (causal, past Tk, or the whole row past Tq) are -inf.
      // Most tiles lie wholly before every row's last key and skip the per-key test.
      int lim[kRows];  // row r sees tile keys [0, lim[r])
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int64_t n = row_end[r] - k0;
        lim[r] = n < 0 ? 0 : n > kBK ? kBK : int(n);
      }
      if (k0 + kBK <= row_end_min) {
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
          for (int j = 0; j < kKeys; ++j) s[r][j] *= scale;
      } else {
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
          for (int j = 0; j < kKeys; ++j) s[r][j] = kg + 8 * j < lim[r] ? s[r][j] * scale : -INFINITY;
      }
      if (masked) {
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
          for (int j = 0; j < kKeys; ++j)
            if (kg + 8 * j < lim[r]) s[r][j] += float(a.mask.at(b, h, wq0 + rg + 4 * r, k0 + kg + 8 * j));
      }

      // Online softmax: a row's 64 keys lie on the 8 lanes of its row group.
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float tmax = s[r][0];
#pragma unroll
        for (int j = 1; j < kKeys; ++j) tmax = fmaxf(tmax, s[r][j]);
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 4));
        const float m_new = fmaxf(m_run[r], tmax);
        // Every key so far masked (m_new = -inf): subtracting 0 keeps p = exp(-inf) = 0 (and
        // corr = 0 on an accumulator that is still 0) instead of NaN from -inf - -inf.
        const float m_ref = m_new == -INFINITY ? 0.0f : m_new;
        const float corr = expf(m_run[r] - m_ref);
        m_run[r] = m_new;
        float tsum = 0.0f;
#pragma unroll
        for (int j = 0; j < kKeys; ++j) {
          s[r][j] = expf(s[r][j] - m_ref);
          tsum += s[r][j];
        }
        l_run[r] = l_run[r] * corr + tsum;
#pragma unroll
        for (int e = 0; e < 4 * T; ++e) o[r][e] *= corr;
      }
    }
    if constexpr (L::p_over_k) __syncthreads();  // every warp is done reading K
    if (!active) continue;
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int j = 0; j < kKeys; ++j) pw[4 * r * L::PLD + kg + 8 * j] = s[r][j];
    __syncwarp();

    // o += P V: per 4 keys, 4 P loads (this lane's rows) and T V loads per key.
#pragma unroll 2
    for (int c = 0; c < kBK; c += 4) {
      float4 pv[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r) pv[r] = lds4(pw + 4 * r * L::PLD + c);
#pragma unroll
      for (int cc = 0; cc < 4; ++cc) {
        float4 vv[T];
#pragma unroll
        for (int t = 0; t < T; ++t) vv[t] = lds4(Vs + (c + cc) * L::VLD + 32 * t + 4 * kg);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const float p = comp(pv[r], cc);
#pragma unroll
          for (int t = 0; t < T; ++t) {
            o[r][4 * t + 0] = fmaf(p, vv[t].x, o[r][4 * t + 0]);
            o[r][4 * t + 1] = fmaf(p, vv[t].y, o[r][4 * t + 1]);
            o[r][4 * t + 2] = fmaf(p, vv[t].z, o[r][4 * t + 2]);
            o[r][4 * t + 3] = fmaf(p, vv[t].w, o[r][4 * t + 3]);
          }
        }
      }
    }
    __syncwarp();  // Ps is rewritten by the next tile (over K: after the next barriers)
  }

  // The row sums over the row group's 8 lanes.
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 1);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 2);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 4);
  }
  if (part_acc) {  // unnormalized; rows with no key here keep max -inf, sum 0 (skipped)
    const int64_t rows = a.B * a.H * a.Tq;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int64_t row = wq0 + rg + 4 * r;
      if (row < a.Tq) {
        const int64_t prow = int64_t(blockIdx.y) * rows + bh * a.Tq + row;
#pragma unroll
        for (int t = 0; t < T; ++t)
#pragma unroll
          for (int e = 0; e < 4; ++e) part_acc[prow * D + 32 * t + 4 * kg + e] = o[r][4 * t + e];
        if (kg == 0) {
          part_ml[2 * prow] = m_run[r];
          part_ml[2 * prow + 1] = l_run[r];
        }
      }
    }
    return;
  }
  S* ob = out + ((b * a.H + h) * a.Tq) * D;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int64_t row = wq0 + rg + 4 * r;
    if (row < a.Tq) {
      // A row whose every key is masked out gives NaN, as PyTorch does (0/0).
      const float inv = l_run[r] > 0.0f ? 1.0f / l_run[r] : NAN;
#pragma unroll
      for (int t = 0; t < T; ++t)
#pragma unroll
        for (int e = 0; e < 4; ++e) ob[row * D + 32 * t + 4 * kg + e] = o[r][4 * t + e] * inv;
    }
  }
#endif
}

template <class S, int D>
void launch_flash(CudaBackend& be, const AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& out) {
  launch_prefill<flash_attention_kernel<S, D>, S>(be, a, FlashLayout<D>::bytes, kFlashBQ, q, k, v, out);
}

template <class S>
bool launch_for_dim(CudaBackend& be, const AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v,
                    const Tensor& out) {
  if (a.D == 64)
    launch_flash<S, 64>(be, a, q, k, v, out);
  else if (a.D == 128)
    launch_flash<S, 128>(be, a, q, k, v, out);
  else
    return false;
  return true;
}

}  // namespace

bool launch_flash_attention(CudaBackend& be, const AttnArgs& a, DType dtype, const Tensor& q, const Tensor& k,
                            const Tensor& v, const Tensor& out) {
  if ((a.Tq + kBQ - 1) / kBQ * a.B * a.H > (int64_t(1) << 31) - 1) return false;  // grid x
  switch (dtype) {
    case DType::F16:
    case DType::BF16: return launch_flash_attention_mma(be, a, dtype, q, k, v, out);
    case DType::F32: return launch_for_dim<float>(be, a, q, k, v, out);
    default: return false;  // f64: the warp kernel
  }
}

}  // namespace wick::cuda
