// The tiled ("flash") attention kernel for prefill in f32 (f16/bf16 go to the tensor-core
// kernel of kernels_attention_mma.cu, which launch_flash_attention dispatches to): a block of 4 warps owns 64 queries
// of one (batch, head); it walks the keys in tiles of 64 staged in shared memory, each warp computing the 16 x 64
// scores of its 16 query rows, an online softmax per row (running max and sum) and the 16 x D output accumulator, which
// stays in registers. The Tq x Tk score matrix never exists; with causal, tiles past a warp's last visible key are
// skipped. When the query tiles alone cannot fill the GPU (batch-1 prefill), each tile's keys are split over several
// blocks whose partials the decode path's combine kernel merges.
//
// Plain FMA register tiles (no TF32), so results stay within float rounding of the exact
// value. Head dims 64 and 128; others use the warp kernel of kernels_attention.cu.
#include <algorithm>

#include "backend/cuda/kernels_attention.cuh"
#include "backend/cuda/launch.cuh"

namespace wick::cuda {

namespace {

constexpr int kBQ = kFlashBQ, kBK = kFlashBK, kWQ = kFlashWQ, kWarps = kFlashWarps;  // kernels_attention.cuh
constexpr int kSLD = kBK + 4;  // row stride (floats) of a warp's score tile

constexpr size_t round128(size_t n) { return (n + 127) / 128 * 128; }

// Shared-memory layout. Row strides are padded against bank conflicts.
template <class S, int D>
struct FlashLayout {
  static constexpr int QLD = D;      // rows are read as broadcasts
  static constexpr int KLD = D + 1;  // lane = key, so an odd stride
  static constexpr int VLD = D;
  static constexpr int SCR = kWQ * kSLD;  // floats of a warp's score / probability tile
  static constexpr size_t q_off = 0;
  static constexpr size_t k_off = q_off + round128(sizeof(S) * kBQ * QLD);
  static constexpr size_t v_off = k_off + round128(sizeof(S) * kBK * KLD);
  static constexpr size_t scr_off = v_off + round128(sizeof(S) * kBK * VLD);
  static constexpr size_t stat_off = scr_off + round128(sizeof(float) * kWarps * SCR);
  static constexpr size_t bytes = stat_off + round128(sizeof(float) * kWarps * kWQ * 3);
};

// Rows [0, nrows) of a (rows, D) tile at src (row stride s_row, element stride s_d) into
// dst (row stride ld); rows >= valid are zero (so 0-weight keys never multiply garbage).
// vec: s_d == 1 and every row 16-byte aligned, so rows move in 16-byte pieces.
template <class S, int D>
__device__ __forceinline__ void load_tile(S* dst, int ld, const S* src, int64_t s_row, int64_t s_d, int64_t valid,
                                          bool vec) {
  constexpr int VEC = 16 / sizeof(S);
  constexpr int PER_ROW = D / VEC;
  if (vec) {
    for (int c = threadIdx.x; c < kBK * PER_ROW; c += kFlashThreads) {
      const int r = c / PER_ROW, d0 = (c % PER_ROW) * VEC;
      uint4 val = make_uint4(0, 0, 0, 0);
      if (r < valid) val = *reinterpret_cast<const uint4*>(src + r * s_row + d0);
      const S* e = reinterpret_cast<const S*>(&val);
#pragma unroll
      for (int t = 0; t < VEC; ++t) dst[r * ld + d0 + t] = e[t];
    }
  } else {
    for (int c = threadIdx.x; c < kBK * D; c += kFlashThreads) {
      const int r = c / D, d = c % D;
      dst[r * ld + d] = r < valid ? src[r * s_row + d * s_d] : from_compute<S>(0.0f);
    }
  }
}

template <class S, int D>
__global__ void __launch_bounds__(kFlashThreads)
    flash_attention_kernel(AttnArgs a, bool vec, int64_t kchunk, const S* __restrict__ q, const S* __restrict__ k,
                           const S* __restrict__ v, S* __restrict__ out, float* __restrict__ part_acc,
                           float* __restrict__ part_ml) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using L = FlashLayout<S, D>;
  constexpr int E = D / 32;  // output columns per lane
  extern __shared__ __align__(128) unsigned char smem[];
  S* Qs = reinterpret_cast<S*>(smem + L::q_off);
  S* Ks = reinterpret_cast<S*>(smem + L::k_off);
  S* Vs = reinterpret_cast<S*>(smem + L::v_off);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float* scr = reinterpret_cast<float*>(smem + L::scr_off) + warp * L::SCR;
  float* corr_s = reinterpret_cast<float*>(smem + L::stat_off) + warp * kWQ;
  float* l_s = corr_s + kWarps * kWQ;
  float* m_s = l_s + kWarps * kWQ;

  const PrefillTile<S> tile = prefill_tile(a, q, k, v);
  const int64_t q0 = tile.q0, q_valid = tile.q_valid, b = tile.b, h = tile.h, bh = tile.bh;
  const S *qb = tile.qb, *kb = tile.kb, *vb = tile.vb;
  load_tile<S, D>(Qs, L::QLD, qb, a.q.s[2], a.q.s[3], q_valid, vec);

  // Keys [0, block_end) matter to some row of the block, [0, warp_end) to some row of
  // this warp, [0, row_end) to the row this lane scores (softmax: lane -> row lane / 2,
  // columns lane % 2 + 2 j).
  const int64_t block_end = last_key(a, q0 + q_valid - 1) + 1;
  const int64_t wq0 = q0 + warp * kWQ;
  const int64_t warp_end = wq0 < a.Tq ? last_key(a, (wq0 + kWQ - 1 < a.Tq ? wq0 + kWQ - 1 : a.Tq - 1)) + 1 : 0;
  const int r = lane >> 1, half = lane & 1;
  const int64_t qi = wq0 + r;
  const int64_t row_end = qi < a.Tq ? last_key(a, qi) + 1 : 0;
  const float scale = float(a.scale);
  const bool masked = a.mask.kind != MaskKind::None;

  float m_run = -INFINITY, l_run = 0.0f;
  float o[kWQ][E];
#pragma unroll
  for (int i = 0; i < kWQ; ++i)
#pragma unroll
    for (int e = 0; e < E; ++e) o[i][e] = 0.0f;

  __syncthreads();

  // This block's share of the keys (blockIdx.y-th chunk): with partials, several blocks
  // split one query tile's keys and attention_combine merges them.
  const int64_t k_begin = int64_t(blockIdx.y) * kchunk;
  const int64_t k_stop = k_begin + kchunk < block_end ? k_begin + kchunk : block_end;
  for (int64_t k0 = k_begin; k0 < k_stop; k0 += kBK) {
    const int64_t kv_valid = a.Tk - k0 < kBK ? a.Tk - k0 : kBK;
    __syncthreads();  // every warp is done with the previous K/V tile
    load_tile<S, D>(Ks, L::KLD, kb + k0 * a.k.s[2], a.k.s[2], a.k.s[3], kv_valid, vec);
    load_tile<S, D>(Vs, L::VLD, vb + k0 * a.v.s[2], a.v.s[2], a.v.s[3], kv_valid, vec);
    __syncthreads();
    if (k0 >= warp_end) continue;  // no row of this warp sees these keys (warp-uniform)

    // Raw scores Q K^T of the warp's 16 rows x 64 keys into scr (row stride kSLD).
    {
      // Lane -> keys lane and lane + 32, all 16 rows; q rows are broadcast reads.
      float sacc[kWQ][2];
#pragma unroll
      for (int i = 0; i < kWQ; ++i) sacc[i][0] = sacc[i][1] = 0.0f;
      const S* qw = Qs + warp * kWQ * L::QLD;
#pragma unroll 4
      for (int d = 0; d < D; ++d) {
        const float k0v = Ks[lane * L::KLD + d], k1v = Ks[(lane + 32) * L::KLD + d];
#pragma unroll
        for (int i = 0; i < kWQ; ++i) {
          const float qv = qw[i * L::QLD + d];
          sacc[i][0] = fmaf(qv, k0v, sacc[i][0]);
          sacc[i][1] = fmaf(qv, k1v, sacc[i][1]);
        }
      }
#pragma unroll
      for (int i = 0; i < kWQ; ++i) {
        scr[i * kSLD + lane] = sacc[i][0];
        scr[i * kSLD + lane + 32] = sacc[i][1];
      }
    }
    __syncwarp();

    // Online softmax of row r over this tile: masked / invisible keys are -inf.
    float sv[kBK / 2];
    float tmax = -INFINITY;
#pragma unroll
    for (int j = 0; j < kBK / 2; ++j) {
      const int c = half + 2 * j;
      const int64_t key = k0 + c;
      float s = -INFINITY;
      if (key < row_end) {  // row_end <= Tk, and 0 for rows past Tq
        s = scr[r * kSLD + c] * scale;
        if (masked) s += float(a.mask.at(b, h, qi, key));
      }
      sv[j] = s;
      tmax = fmaxf(tmax, s);
    }
    tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
    const float m_new = fmaxf(m_run, tmax);
    float corr = 1.0f, tsum = 0.0f;
    if (m_new != -INFINITY) {  // else every key so far is masked: nothing accumulates
      corr = expf(m_run - m_new);
#pragma unroll
      for (int j = 0; j < kBK / 2; ++j) {
        sv[j] = expf(sv[j] - m_new);
        tsum += sv[j];
      }
    } else {
#pragma unroll
      for (int j = 0; j < kBK / 2; ++j) sv[j] = 0.0f;
    }
    tsum += __shfl_xor_sync(0xffffffffu, tsum, 1);
    l_run = l_run * corr + tsum;
    m_run = m_new;
#pragma unroll
    for (int j = 0; j < kBK / 2; ++j) {
      const int c = half + 2 * j;
      scr[r * kSLD + c] = sv[j];
    }
    if (half == 0) corr_s[r] = corr;
    __syncwarp();

    // o = o * corr + P V.
    {
#pragma unroll
      for (int i = 0; i < kWQ; ++i) {
        const float cr = corr_s[i];
#pragma unroll
        for (int e = 0; e < E; ++e) o[i][e] *= cr;
      }
      for (int c = 0; c < kBK; ++c) {
        float vv[E];
#pragma unroll
        for (int e = 0; e < E; ++e) vv[e] = Vs[c * L::VLD + lane + 32 * e];
#pragma unroll
        for (int i = 0; i < kWQ; ++i) {
          const float p = scr[i * kSLD + c];
#pragma unroll
          for (int e = 0; e < E; ++e) o[i][e] = fmaf(p, vv[e], o[i][e]);
        }
      }
    }
    __syncwarp();  // scr and corr_s are rewritten by the next tile
  }

  if (half == 0) {
    l_s[r] = l_run;
    m_s[r] = m_run;
  }
  __syncwarp();
  if (part_acc) {  // unnormalized; rows with no key here keep max -inf, sum 0 (skipped)
    const int64_t rows = a.B * a.H * a.Tq;
#pragma unroll
    for (int i = 0; i < kWQ; ++i) {
      const int64_t row = wq0 + i;
      if (row < a.Tq) {
        const int64_t prow = int64_t(blockIdx.y) * rows + bh * a.Tq + row;
#pragma unroll
        for (int e = 0; e < E; ++e) part_acc[prow * D + lane + 32 * e] = o[i][e];
        if (lane == 0) {
          part_ml[2 * prow] = m_s[i];
          part_ml[2 * prow + 1] = l_s[i];
        }
      }
    }
    return;
  }
  S* ob = out + ((b * a.H + h) * a.Tq) * D;
#pragma unroll
  for (int i = 0; i < kWQ; ++i) {
    const int64_t row = wq0 + i;
    if (row < a.Tq) {
      // A row whose every key is masked out gives NaN, as PyTorch does (0/0).
      const float inv = l_s[i] > 0.0f ? 1.0f / l_s[i] : NAN;
#pragma unroll
      for (int e = 0; e < E; ++e) ob[row * D + lane + 32 * e] = from_compute<S>(o[i][e] * inv);
    }
  }
#endif
}

template <class S, int D>
void launch_flash(CudaBackend& be, const AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& out) {
  launch_prefill<flash_attention_kernel<S, D>, S>(be, a, FlashLayout<S, D>::bytes, q, k, v, out);
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
