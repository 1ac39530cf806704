// The f16/bf16 tiled ("flash") attention kernel for prefill, FlashAttention-2 style on
// raw mma.sync m16n8k16 tensor-core instructions.
//
// A block of 4 warps owns 64 queries of one (batch, head), 16 per warp; it walks the keys
// in tiles of 64. K and V tiles are double-buffered in shared memory: cp.async (16-byte,
// zero-filling rows past the end) fetches tile j + 1 while the warps compute tile j. Each
// warp keeps everything of its 16 rows in registers:
// - its Q fragments (loaded once with ldmatrix);
// - S = Q K^T of the tile as 8 m16n8 f32 accumulators (K fragments by ldmatrix);
// - the online softmax on those fragments: each row lives in one quad (4 lanes), so row
//   max and sum are two __shfl_xor; exponentials in the log2 domain (scale * log2 e folded
//   into one f32 multiply), running max and sum per row;
// - P rounded to f16/bf16 in registers: the C fragments of two adjacent m16n8 tiles are
//   exactly the A fragment of one m16n8k16, so P never touches shared memory;
// - O += P V with V fragments by ldmatrix.trans, O in f32 registers.
// Rows of shared tiles are padded by 16 bytes, so the 8 row addresses of every ldmatrix
// phase fall on distinct bank groups. Causal: tiles past a warp's last visible key are
// skipped; only tiles that cross some row's limit (the diagonal, the key tail) or carry an
// additive mask take the per-element masking path.
//
// When the query tiles alone cannot fill the GPU (batch-1 prefill), each tile's keys are
// split over several blocks whose partials the decode path's combine kernel merges.
// Layouts whose rows are not 16-byte aligned or whose head dim is strided are staged into
// shared memory by plain element loads instead of cp.async (same kernel otherwise).
#include <algorithm>

#include "backend/cuda/kernels_attention.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/mma.cuh"

namespace wick::cuda {

namespace {

constexpr int kBQ = kFlashBQ, kBK = kFlashBK, kWQ = kFlashWQ;  // kernels_attention.cuh
constexpr int kMmaThreads = kFlashThreads;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Shared memory: Q, then K stage 0/1, then V stage 0/1, each 64 rows of D + 8 elements.
template <int D>
struct MmaLayout {
  static constexpr int LD = D + 8;  // 16-byte pad: an ldmatrix's 8 rows hit 8 bank groups
  static constexpr int TILE = kBK * LD;
  static constexpr size_t bytes = size_t(5) * TILE * 2;
  static constexpr int q_tile = 0;
  static constexpr int k_tile(int stage) { return 1 + stage; }
  static constexpr int v_tile(int stage) { return 3 + stage; }
};

__device__ __forceinline__ float ex2(float x) {  // 2^x; ex2(-inf) = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Rows [0, 64) of a (rows, D) tile at src (row stride s_row, element stride s_d) into the
// shared tile dst; rows >= valid (>= 1) are zero, so keys past the end weigh 0 times 0
// instead of garbage that could be NaN. vec: cp.async 16-byte pieces (s_d == 1, rows
// 16-byte aligned); else plain element loads and stores.
template <class S, int D>
__device__ __forceinline__ void load_tile(S* dst, const S* src, int64_t s_row, int64_t s_d, int valid, bool vec) {
  constexpr int LD = MmaLayout<D>::LD, CH = D / 8;  // 16-byte chunks per row
  if (vec) {
#pragma unroll
    for (int i = 0; i < kBK * CH / kMmaThreads; ++i) {
      const int c = threadIdx.x + i * kMmaThreads;
      const int r = c / CH, d0 = (c % CH) * 8;
      const bool in = r < valid;
      cp_async16(smem_addr(dst + r * LD + d0), src + (in ? r * s_row + d0 : 0), in ? 16 : 0);
    }
  } else {
    for (int c = threadIdx.x; c < kBK * D; c += kMmaThreads) {
      const int r = c / D, d = c % D;
      dst[r * LD + d] = r < valid ? src[r * s_row + d * s_d] : from_compute<S>(0.0f);
    }
  }
}

// MASKED: an additive mask is present (a separate instantiation keeps its per-element
// loads out of the common kernel's registers). Occupancy: D 64 at <= 168 registers, 3
// blocks (12 warps) per SM (128 spills); D 128 at <= 255, 2 blocks (87 KB of shared each).
template <class S, int D, bool MASKED>
__global__ void __launch_bounds__(kMmaThreads, D == 64 ? 3 : 2)
    flash_mma_kernel(AttnArgs a, bool vec, int64_t chunk_keys, const S* __restrict__ q, const S* __restrict__ k,
                     const S* __restrict__ v, S* __restrict__ out, float* __restrict__ part_acc,
                     float* __restrict__ part_ml) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using L = MmaLayout<D>;
  constexpr int LD = L::LD;
  constexpr int KD = D / 16;   // k-steps of Q K^T over the head dim
  constexpr int ND = D / 8;    // m16n8 output tiles over the head dim
  constexpr int NK = kBK / 8;  // m16n8 score tiles over the keys
  extern __shared__ __align__(128) unsigned char smem[];
  S* sm = reinterpret_cast<S*>(smem);
  const uint32_t sbase = smem_addr(smem);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;  // fragment row (and row + 8) and column pair

  const PrefillTile<S> tile = prefill_tile(a, q, k, v);
  const int64_t q0 = tile.q0, q_valid = tile.q_valid, b = tile.b, h = tile.h, bh = tile.bh;
  const S *qb = tile.qb, *kb = tile.kb, *vb = tile.vb;
  const int kchunk = int(chunk_keys);  // < 2^31: the launcher falls back beyond

  // Keys [0, block_end) matter to some row of the block, [0, warp_end) to some row of this
  // warp; every row of the warp sees [0, warp_full). This lane's rows qi0 and qi1 = qi0 + 8
  // see [0, re0) and [0, re1) (0 for rows past Tq, which are computed but never stored).
  // Positions fit in int (checked by the launcher): fewer registers than int64.
  const int block_end = int(last_key(a, q0 + q_valid - 1) + 1);
  const int wq0 = int(q0) + warp * kWQ, Tq = int(a.Tq);
  const int wq_last = wq0 + kWQ - 1 < Tq ? wq0 + kWQ - 1 : Tq - 1;
  const int warp_end = wq0 < Tq ? int(last_key(a, wq_last) + 1) : 0;
  const int warp_full = wq0 < Tq ? int(last_key(a, wq0) + 1) : 0;
  const int qi0 = wq0 + g, qi1 = qi0 + 8;
  const int re0 = qi0 < Tq ? int(last_key(a, qi0) + 1) : 0;
  const int re1 = qi1 < Tq ? int(last_key(a, qi1) + 1) : 0;
  const float scale2 = float(a.scale * 1.4426950408889634);  // scores -> log2 domain, in f32

  // This block's share of the keys (blockIdx.y-th chunk of whole tiles).
  const int k_begin = int(blockIdx.y) * kchunk;
  const int k_stop = k_begin + kchunk < block_end ? k_begin + kchunk : block_end;

  load_tile<S, D>(sm + L::q_tile * L::TILE, qb, a.q.s[2], a.q.s[3], int(q_valid), vec);
  auto load_kv = [&](int stage, int k0) {
    const int kv_valid = int(a.Tk) - k0 < kBK ? int(a.Tk) - k0 : kBK;
    load_tile<S, D>(sm + L::k_tile(stage) * L::TILE, kb + int64_t(k0) * a.k.s[2], a.k.s[2], a.k.s[3], kv_valid, vec);
    load_tile<S, D>(sm + L::v_tile(stage) * L::TILE, vb + int64_t(k0) * a.v.s[2], a.v.s[2], a.v.s[3], kv_valid, vec);
  };
  if (k_begin < k_stop) load_kv(0, k_begin);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();

  uint32_t qf[KD][4];  // A fragments of the warp's 16 rows: rows lane % 16, columns + 8 for lanes >= 16
#pragma unroll
  for (int kk = 0; kk < KD; ++kk)
    ldsm_x4(qf[kk], sbase + 2 * (L::q_tile * L::TILE + (warp * kWQ + (lane & 15)) * LD + kk * 16 + (lane >> 4) * 8));

  float o[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};  // log2 domain; l per lane

  int stage = 0;
  for (int k0 = k_begin; k0 < k_stop; k0 += kBK, stage ^= 1) {
    cp_async_wait<0>();  // this tile has landed (issued one iteration ago)
    __syncthreads();     // ... for every thread, and every warp is done with the other stage
    if (k0 + kBK < k_stop) load_kv(stage ^ 1, k0 + kBK);
    cp_async_commit();
    if (k0 >= warp_end) continue;  // no row of this warp sees these keys (warp-uniform)

    // S = Q K^T. ldmatrix x4 of K rows: matrices (keys +0, d +0), (keys +0, d +8),
    // (keys +8, d +0), (keys +8, d +8) = the two B fragments of two key tiles.
    const uint32_t ks = sbase + 2 * (L::k_tile(stage) * L::TILE);
    const uint32_t vs = sbase + 2 * (L::v_tile(stage) * L::TILE);
    float s[NK][4];
#pragma unroll
    for (int n = 0; n < NK; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KD; ++kk) {
#pragma unroll
      for (int np = 0; np < NK / 2; ++np) {
        uint32_t bf[4];
        ldsm_x4(bf, ks + 2 * ((np * 16 + (lane & 7) + (lane >> 4) * 8) * LD + kk * 16 + ((lane >> 3) & 1) * 8));
        mma16816<S>(s[2 * np], qf[kk], bf[0], bf[1]);
        mma16816<S>(s[2 * np + 1], qf[kk], bf[2], bf[3]);
      }
    }

    // Scale into the log2 domain; keys past a row's limit are -inf, masks are added.
    // Element e of tile n: row e < 2 ? qi0 : qi1, key k0 + 8 n + 2 t + (e & 1).
#pragma unroll
    for (int n = 0; n < NK; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] *= scale2;
    if (MASKED || k0 + kBK > warp_full) {  // warp-uniform: the diagonal, the key tail, masks
      // Visible columns of this tile per row (re <= Tk, and 0 for rows past Tq: the mask
      // is read in bounds only).
      const int c0 = re0 - k0, c1 = re1 - k0;
      const int lim[2] = {c0 < 0 ? 0 : c0 > kBK ? kBK : c0, c1 < 0 ? 0 : c1 > kBK ? kBK : c1};
#pragma unroll
      for (int n = 0; n < NK; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = 8 * n + 2 * t + (e & 1);
          if (col >= lim[e >> 1])
            s[n][e] = -INFINITY;
          else if constexpr (MASKED)
            s[n][e] += float(a.mask.at(b, h, e < 2 ? qi0 : qi1, int64_t(k0) + col)) * kLog2e;
        }
    }

    // Online softmax per row (a quad holds a row: lanes 4g .. 4g + 3).
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < NK; ++n) {
      mx[0] = fmaxf(mx[0], fmaxf(s[n][0], s[n][1]));
      mx[1] = fmaxf(mx[1], fmaxf(s[n][2], s[n][3]));
    }
    float corr[2], mu[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float m_new = fmaxf(m_run[r], mx[r]);
      mu[r] = m_new == -INFINITY ? 0.0f : m_new;  // all masked so far: exponentials give 0, not NaN
      corr[r] = ex2(m_run[r] - mu[r]);
      m_run[r] = m_new;
    }
    float rs[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < NK; ++n) {
      s[n][0] = ex2(s[n][0] - mu[0]);
      s[n][1] = ex2(s[n][1] - mu[0]);
      s[n][2] = ex2(s[n][2] - mu[1]);
      s[n][3] = ex2(s[n][3] - mu[1]);
      rs[0] += s[n][0] + s[n][1];
      rs[1] += s[n][2] + s[n][3];
    }
    l_run[0] = l_run[0] * corr[0] + rs[0];
    l_run[1] = l_run[1] * corr[1] + rs[1];
#pragma unroll
    for (int n = 0; n < ND; ++n) {
      o[n][0] *= corr[0];
      o[n][1] *= corr[0];
      o[n][2] *= corr[1];
      o[n][3] *= corr[1];
    }

    // O += P V: the C fragments of score tiles 2 kk and 2 kk + 1 form the A fragment of keys
    // [16 kk, 16 kk + 16). ldmatrix.trans x4 of V rows: matrices (keys +0, d +0),
    // (keys +8, d +0), (keys +0, d +8), (keys +8, d +8) = the B fragments of two d tiles.
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      const uint32_t pa[4] = {pack2<S>(s[2 * kk][0], s[2 * kk][1]), pack2<S>(s[2 * kk][2], s[2 * kk][3]),
                              pack2<S>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack2<S>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int np = 0; np < ND / 2; ++np) {
        uint32_t bf[4];
        ldsm_x4_trans(bf, vs + 2 * ((kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + np * 16 + (lane >> 4) * 8));
        mma16816<S>(o[2 * np], pa, bf[0], bf[1]);
        mma16816<S>(o[2 * np + 1], pa, bf[2], bf[3]);
      }
    }
  }

  // Row sums over the quad (each lane summed its own columns).
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 1);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 2);
  }
  if (part_acc) {  // unnormalized, max in the natural-log domain of the combine kernel
    const int64_t rows = a.B * a.H * a.Tq;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t qi = r == 0 ? qi0 : qi1;
      if (qi < Tq) {
        const int64_t prow = int64_t(blockIdx.y) * rows + bh * a.Tq + qi;
        float* pa = part_acc + prow * D + 2 * t;
#pragma unroll
        for (int n = 0; n < ND; ++n) *reinterpret_cast<float2*>(pa + 8 * n) = make_float2(o[n][2 * r], o[n][2 * r + 1]);
        if (t == 0) {
          part_ml[2 * prow] = m_run[r] * kLn2;  // -inf stays -inf (no key here)
          part_ml[2 * prow + 1] = l_run[r];
        }
      }
    }
    return;
  }
  S* ob = out + bh * a.Tq * D;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t qi = r == 0 ? qi0 : qi1;
    if (qi < Tq) {
      // A row whose every key is masked out gives NaN, as PyTorch does (0/0).
      const float inv = l_run[r] > 0.0f ? 1.0f / l_run[r] : NAN;
      S* orow = ob + qi * D + 2 * t;
#pragma unroll
      for (int n = 0; n < ND; ++n)
        *reinterpret_cast<uint32_t*>(orow + 8 * n) = pack2<S>(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
    }
  }
#endif
}

template <class S, int D, bool MASKED>
void launch_mma(CudaBackend& be, const AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v,
                const Tensor& out) {
  launch_prefill<flash_mma_kernel<S, D, MASKED>, S>(be, a, MmaLayout<D>::bytes, q, k, v, out);
}

template <class S>
bool launch_mma_for_dim(CudaBackend& be, const AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out) {
  const bool masked = a.mask.kind != MaskKind::None;
  if (a.D == 64)
    masked ? launch_mma<S, 64, true>(be, a, q, k, v, out) : launch_mma<S, 64, false>(be, a, q, k, v, out);
  else if (a.D == 128)
    masked ? launch_mma<S, 128, true>(be, a, q, k, v, out) : launch_mma<S, 128, false>(be, a, q, k, v, out);
  else
    return false;
  return true;
}

}  // namespace

bool launch_flash_attention_mma(CudaBackend& be, const AttnArgs& a, DType dtype, const Tensor& q, const Tensor& k,
                                const Tensor& v, const Tensor& out) {
  // The output is written as (B, H, Tq, D) row-major in element pairs.
  if (!out.is_contiguous() || out.offset() % 2 != 0) return false;
  if ((a.Tq + kBQ - 1) / kBQ * a.B * a.H > (int64_t(1) << 31) - 1) return false;  // grid x
  constexpr int64_t kMaxPos = (int64_t(1) << 31) - 1 - 4 * kBK;  // positions in int, with tile overshoot
  if (a.Tq > kMaxPos || a.Tk > kMaxPos) return false;
  switch (dtype) {
    case DType::F16: return launch_mma_for_dim<__half>(be, a, q, k, v, out);
    case DType::BF16: return launch_mma_for_dim<__nv_bfloat16>(be, a, q, k, v, out);
    default: return false;
  }
}

}  // namespace wick::cuda
