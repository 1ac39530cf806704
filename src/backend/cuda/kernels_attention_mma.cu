// The f16/bf16 tiled ("flash") attention kernel for prefill, FlashAttention-2 style on
// raw mma.sync m16n8k16 tensor-core instructions.
//
// A block of 4 warps owns 64 MT queries of one (batch, head), 16 MT per warp (MT = 1, or 2
// for head dim 64 when the blocks alone fill the GPU: each K / V fragment then serves two
// row tiles); it walks the keys in tiles of 64. K and V tiles are double-buffered in
// shared memory: cp.async (16-byte, zero-filling rows past the end, each thread's source
// pointer stepped by a precomputed stride) fetches tile j + 1 while the warps compute
// tile j. Each warp keeps everything of its rows in registers:
// - its Q fragments (loaded once with ldmatrix);
// - S = Q K^T of the tile as 8 m16n8 f32 accumulators per row tile (K fragments by
//   ldmatrix);
// - the online softmax on those fragments: each row lives in one quad (4 lanes), so row
//   max and sum are two __shfl_xor after a tree over the lane's columns; maxima of the raw
//   scores, exponentials in the log2 domain with the scale folded into one FFMA
//   (ex2(s * scale log2 e - max)); O is rescaled only when some row's max moved;
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

constexpr int kBK = kFlashBK;  // kernels_attention.cuh
constexpr int kMmaThreads = kFlashThreads;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Shared memory: Q (BQ rows), then K stage 0/1, then V stage 0/1 (64 rows each), rows of
// D + 8 elements. Offsets in elements.
template <int D, int MT>
struct MmaLayout {
  static constexpr int BQ = 4 * 16 * MT;  // queries per block (kFlashWarps warps)
  static constexpr int LD = D + 8;        // 16-byte pad: an ldmatrix's 8 rows hit 8 bank groups
  static constexpr int TILE = kBK * LD;
  static constexpr int q_off = 0;
  static constexpr int k_off(int stage) { return BQ * LD + stage * TILE; }
  static constexpr int v_off(int stage) { return BQ * LD + (2 + stage) * TILE; }
  static constexpr size_t bytes = size_t(BQ * LD + 4 * TILE) * 2;
};

__device__ __forceinline__ float ex2(float x) {  // 2^x; ex2(-inf) = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// v[0] op v[1] op ... as a balanced tree (N a power of two): log2 N dependent steps.
struct Fmax {
  __device__ float operator()(float x, float y) const { return fmaxf(x, y); }
};
struct Fadd {
  __device__ float operator()(float x, float y) const { return x + y; }
};
template <int N, class Op>
__device__ __forceinline__ float tree_reduce(float (&v)[N], Op op) {
  static_assert((N & (N - 1)) == 0);
#pragma unroll
  for (int w = N / 2; w >= 1; w /= 2)
#pragma unroll
    for (int i = 0; i < w; ++i) v[i] = op(v[i], v[i + w]);
  return v[0];
}

// This thread's share of staging a 64-row (rows, D) tile into shared memory: rows row0,
// row0 + RSTEP, ... at columns [d0, d0 + 8). The 16-byte path (s_d == 1, rows 16-byte
// aligned) takes the source pointer of its first row per tile and steps it by a
// precomputed stride, so a tile costs a few adds per piece instead of 64-bit index math.
// Rows >= valid are zero (all of them when valid <= 0: the empty second half of a last
// query tile), so keys past the end weigh 0 times 0 instead of garbage that could be NaN;
// src must be a valid address even then. The fallback path does plain element loads and
// stores.
template <class S, int D>
struct TileStager {
  static constexpr int LD = D + 8, CH = D / 8;  // as MmaLayout; 16-byte chunks per row
  static constexpr int RSTEP = kMmaThreads / CH, N = kBK / RSTEP;
  static_assert(kMmaThreads % CH == 0 && kBK % RSTEP == 0);
  int row0, d0;
  __device__ TileStager() : row0(int(threadIdx.x) / CH), d0(int(threadIdx.x) % CH * 8) {}

  __device__ __forceinline__ void operator()(S* dst, const S* src, int64_t s_row, int64_t s_d, int valid,
                                             bool vec) const {
    if (vec) {
      const S* p = src + row0 * s_row + d0;
      const int64_t step = RSTEP * s_row;
      S* d = dst + row0 * LD + d0;
#pragma unroll
      for (int i = 0; i < N; ++i, p += step) {
        const bool in = row0 + i * RSTEP < valid;
        cp_async16(smem_addr(d + i * RSTEP * LD), in ? p : src, in ? 16 : 0);
      }
    } else {
      by_element(dst, src, s_row, s_d, valid);
    }
  }
  // Out of line, so that its index math is not hoisted into the common path.
  static __device__ __noinline__ void by_element(S* dst, const S* src, int64_t s_row, int64_t s_d, int valid) {
    for (int c = threadIdx.x; c < kBK * D; c += kMmaThreads) {
      const int r = c / D, dd = c % D;
      dst[r * LD + dd] = r < valid ? src[r * s_row + dd * s_d] : from_compute<S>(0.0f);
    }
  }
};

// MT: m16 row tiles per warp (16 MT queries per warp, 64 MT per block). Two tiles share
// every K and V fragment loaded by ldmatrix (half the shared-memory reads per mma) and give
// the tensor pipe twice the independent accumulator chains; they take twice the registers,
// so only head dim 64 uses them, and only where the query tiles alone fill the GPU.
// MASKED: an additive mask is present (a separate instantiation keeps its per-element
// loads out of the common kernel's registers). Occupancy: D 64, MT 1 at <= 168 registers,
// 3 blocks (12 warps) per SM (128 spills); D 64, MT 2 and D 128 at <= 255, 2 blocks.
template <class S, int D, int MT, bool MASKED>
__global__ void __launch_bounds__(kMmaThreads, D == 64 && MT == 1 ? 3 : 2)
    flash_mma_kernel(AttnArgs a, bool vec, int64_t chunk_keys, const S* __restrict__ q, const S* __restrict__ k,
                     const S* __restrict__ v, S* __restrict__ out, float* __restrict__ part_acc,
                     float* __restrict__ part_ml) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using L = MmaLayout<D, MT>;
  constexpr int LD = L::LD;
  constexpr int WQ = 16 * MT;  // queries per warp
  constexpr int KD = D / 16;   // k-steps of Q K^T over the head dim
  constexpr int ND = D / 8;    // m16n8 output tiles over the head dim
  constexpr int NK = kBK / 8;  // m16n8 score tiles over the keys
  extern __shared__ __align__(128) unsigned char smem[];
  S* sm = reinterpret_cast<S*>(smem);
  const uint32_t sbase = smem_addr(smem);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;  // fragment row (and row + 8) and column pair

  const PrefillTile<S> tile = prefill_tile(a, q, k, v, L::BQ);
  const int64_t q0 = tile.q0, q_valid = tile.q_valid, b = tile.b, h = tile.h, bh = tile.bh;
  const S *qb = tile.qb, *kb = tile.kb, *vb = tile.vb;
  const int kchunk = int(chunk_keys);  // < 2^31: the launcher falls back beyond

  // Keys [0, block_end) matter to some row of the block, [0, warp_end) to some row of this
  // warp; every row of the warp sees [0, warp_full). This lane's rows qi[m][0] =
  // wq0 + 16 m + g and qi[m][1] = qi[m][0] + 8 see [0, re[m][0]) and [0, re[m][1]) (0 for
  // rows past Tq, which are computed but never stored). Positions fit in int (checked by
  // the launcher): fewer registers than int64.
  const int block_end = int(last_key(a, q0 + q_valid - 1) + 1);
  const int wq0 = int(q0) + warp * WQ, Tq = int(a.Tq);
  const int wq_last = wq0 + WQ - 1 < Tq ? wq0 + WQ - 1 : Tq - 1;
  const int warp_end = wq0 < Tq ? int(last_key(a, wq_last) + 1) : 0;
  const int warp_full = wq0 < Tq ? int(last_key(a, wq0) + 1) : 0;
  int qi[MT][2], re[MT][2];
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      qi[m][r] = wq0 + 16 * m + 8 * r + g;
      re[m][r] = qi[m][r] < Tq ? int(last_key(a, qi[m][r]) + 1) : 0;
    }
  const float scale2 = float(a.scale * 1.4426950408889634);  // scores -> log2 domain, in f32

  // This block's share of the keys (blockIdx.y-th chunk of whole tiles).
  const int k_begin = int(blockIdx.y) * kchunk;
  const int k_stop = k_begin + kchunk < block_end ? k_begin + kchunk : block_end;

  const TileStager<S, D> stage_tile;
#pragma unroll
  for (int m = 0; m < MT; ++m) {  // Q in 64-row tiles (a tile past the rows: zeros, read from row 0)
    const int valid = int(q_valid) - kBK * m;
    stage_tile(sm + L::q_off + m * kBK * LD, valid > 0 ? qb + int64_t(kBK * m) * a.q.s[2] : qb, a.q.s[2], a.q.s[3],
               valid, vec);
  }
  auto load_kv = [&](int stage, int k0) {
    const int kv_valid = int(a.Tk) - k0 < kBK ? int(a.Tk) - k0 : kBK;
    stage_tile(sm + L::k_off(stage), kb + int64_t(k0) * a.k.s[2], a.k.s[2], a.k.s[3], kv_valid, vec);
    stage_tile(sm + L::v_off(stage), vb + int64_t(k0) * a.v.s[2], a.v.s[2], a.v.s[3], kv_valid, vec);
  };
  if (k_begin < k_stop) load_kv(0, k_begin);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();

  // A fragments of the warp's rows: rows lane % 16 of tile m, columns + 8 for lanes >= 16.
  uint32_t qf[MT][KD][4];
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int kk = 0; kk < KD; ++kk)
      ldsm_x4(qf[m][kk], sbase + 2 * (L::q_off + (warp * WQ + 16 * m + (lane & 15)) * LD + kk * 16 + (lane >> 4) * 8));

  float o[MT][ND][4];
  float m_run[MT][2], l_run[MT][2];  // log2 domain; l per lane
#pragma unroll
  for (int m = 0; m < MT; ++m) {
#pragma unroll
    for (int n = 0; n < ND; ++n) o[m][n][0] = o[m][n][1] = o[m][n][2] = o[m][n][3] = 0.0f;
    m_run[m][0] = m_run[m][1] = -INFINITY;
    l_run[m][0] = l_run[m][1] = 0.0f;
  }

  int stage = 0;
  for (int k0 = k_begin; k0 < k_stop; k0 += kBK, stage ^= 1) {
    cp_async_wait<0>();  // this tile has landed (issued one iteration ago)
    __syncthreads();     // ... for every thread, and every warp is done with the other stage
    if (k0 + kBK < k_stop) load_kv(stage ^ 1, k0 + kBK);
    cp_async_commit();
    if (k0 >= warp_end) continue;  // no row of this warp sees these keys (warp-uniform)

    // S = Q K^T. ldmatrix x4 of K rows: matrices (keys +0, d +0), (keys +0, d +8),
    // (keys +8, d +0), (keys +8, d +8) = the two B fragments of two key tiles, used by
    // every row tile.
    const uint32_t ks = sbase + 2 * L::k_off(stage);
    const uint32_t vs = sbase + 2 * L::v_off(stage);
    float s[MT][NK][4];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int n = 0; n < NK; ++n) s[m][n][0] = s[m][n][1] = s[m][n][2] = s[m][n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < KD; ++kk) {
#pragma unroll
      for (int np = 0; np < NK / 2; ++np) {
        uint32_t bf[4];
        ldsm_x4(bf, ks + 2 * ((np * 16 + (lane & 7) + (lane >> 4) * 8) * LD + kk * 16 + ((lane >> 3) & 1) * 8));
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          mma16816<S>(s[m][2 * np], qf[m][kk], bf[0], bf[1]);
          mma16816<S>(s[m][2 * np + 1], qf[m][kk], bf[2], bf[3]);
        }
      }
    }

    // Scores stay raw (unscaled) for the max, and the scale into the log2 domain is folded
    // into the exponent's FFMA, ex2(s * scale2 - max * scale2) (the launcher guarantees
    // scale2 > 0, so the max commutes with it). Keys past a row's limit are -inf. With a
    // mask the scores are scaled first and the mask added (sc = 1 from there on).
    // Element e of tile (m, n): row qi[m][e >> 1], key k0 + 8 n + 2 t + (e & 1).
    const float sc = MASKED ? 1.0f : scale2;
    if constexpr (MASKED) {
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int n = 0; n < NK; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[m][n][e] *= scale2;
    }
    if (MASKED || k0 + kBK > warp_full) {  // warp-uniform: the diagonal, the key tail, masks
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        // Visible columns of this tile per row (re <= Tk, and 0 for rows past Tq: the
        // mask is read in bounds only).
        int lim[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int c = re[m][r] - k0;
          lim[r] = c < 0 ? 0 : c > kBK ? kBK : c;
        }
#pragma unroll
        for (int n = 0; n < NK; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int col = 8 * n + 2 * t + (e & 1);
            if (col >= lim[e >> 1])
              s[m][n][e] = -INFINITY;
            else if constexpr (MASKED)
              s[m][n][e] += float(a.mask.at(b, h, qi[m][e >> 1], int64_t(k0) + col)) * kLog2e;
          }
      }
    }

    // Online softmax per row (a quad holds a row: lanes 4g .. 4g + 3).
    float corr[MT][2];
    bool rescale = false;
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      float tm[2][NK];  // row maxima as trees (short dependency chains)
#pragma unroll
      for (int n = 0; n < NK; ++n) {
        tm[0][n] = fmaxf(s[m][n][0], s[m][n][1]);
        tm[1][n] = fmaxf(s[m][n][2], s[m][n][3]);
      }
      float mx[2] = {tree_reduce(tm[0], Fmax{}), tree_reduce(tm[1], Fmax{})};
      float mu[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        const float m_new = fmaxf(m_run[m][r], mx[r] * sc);
        mu[r] = m_new == -INFINITY ? 0.0f : m_new;  // all masked so far: exponentials give 0, not NaN
        corr[m][r] = ex2(m_run[m][r] - mu[r]);
        m_run[m][r] = m_new;
        rescale |= corr[m][r] != 1.0f;
      }
      float ts[2][NK];  // row sums of this lane's columns, as trees
#pragma unroll
      for (int n = 0; n < NK; ++n) {
        s[m][n][0] = ex2(fmaf(s[m][n][0], sc, -mu[0]));
        s[m][n][1] = ex2(fmaf(s[m][n][1], sc, -mu[0]));
        s[m][n][2] = ex2(fmaf(s[m][n][2], sc, -mu[1]));
        s[m][n][3] = ex2(fmaf(s[m][n][3], sc, -mu[1]));
        ts[0][n] = s[m][n][0] + s[m][n][1];
        ts[1][n] = s[m][n][2] + s[m][n][3];
      }
      l_run[m][0] = fmaf(l_run[m][0], corr[m][0], tree_reduce(ts[0], Fadd{}));
      l_run[m][1] = fmaf(l_run[m][1], corr[m][1], tree_reduce(ts[1], Fadd{}));
    }
    // Once the running maxima settle, most tiles leave every row's max unchanged (corr is
    // exactly ex2(0) = 1): the warp then skips rescaling O.
    if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int n = 0; n < ND; ++n) {
          o[m][n][0] *= corr[m][0];
          o[m][n][1] *= corr[m][0];
          o[m][n][2] *= corr[m][1];
          o[m][n][3] *= corr[m][1];
        }
    }

    // O += P V: the C fragments of score tiles 2 kk and 2 kk + 1 form the A fragment of keys
    // [16 kk, 16 kk + 16). ldmatrix.trans x4 of V rows: matrices (keys +0, d +0),
    // (keys +8, d +0), (keys +0, d +8), (keys +8, d +8) = the B fragments of two d tiles,
    // used by every row tile.
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      uint32_t pa[MT][4];
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        pa[m][0] = pack2<S>(s[m][2 * kk][0], s[m][2 * kk][1]);
        pa[m][1] = pack2<S>(s[m][2 * kk][2], s[m][2 * kk][3]);
        pa[m][2] = pack2<S>(s[m][2 * kk + 1][0], s[m][2 * kk + 1][1]);
        pa[m][3] = pack2<S>(s[m][2 * kk + 1][2], s[m][2 * kk + 1][3]);
      }
#pragma unroll
      for (int np = 0; np < ND / 2; ++np) {
        uint32_t bf[4];
        ldsm_x4_trans(bf, vs + 2 * ((kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + np * 16 + (lane >> 4) * 8));
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          mma16816<S>(o[m][2 * np], pa[m], bf[0], bf[1]);
          mma16816<S>(o[m][2 * np + 1], pa[m], bf[2], bf[3]);
        }
      }
    }
  }

  // Row sums over the quad (each lane summed its own columns).
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      l_run[m][r] += __shfl_xor_sync(0xffffffffu, l_run[m][r], 1);
      l_run[m][r] += __shfl_xor_sync(0xffffffffu, l_run[m][r], 2);
    }
  if (part_acc) {  // unnormalized, max in the natural-log domain of the combine kernel
    const int64_t rows = a.B * a.H * a.Tq;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        if (qi[m][r] < Tq) {
          const int64_t prow = int64_t(blockIdx.y) * rows + bh * a.Tq + qi[m][r];
          float* pa = part_acc + prow * D + 2 * t;
#pragma unroll
          for (int n = 0; n < ND; ++n)
            *reinterpret_cast<float2*>(pa + 8 * n) = make_float2(o[m][n][2 * r], o[m][n][2 * r + 1]);
          if (t == 0) {
            part_ml[2 * prow] = m_run[m][r] * kLn2;  // -inf stays -inf (no key here)
            part_ml[2 * prow + 1] = l_run[m][r];
          }
        }
      }
    return;
  }
  S* ob = out + bh * a.Tq * D;
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (qi[m][r] < Tq) {
        // A row whose every key is masked out gives NaN, as PyTorch does (0/0).
        const float inv = l_run[m][r] > 0.0f ? 1.0f / l_run[m][r] : NAN;
        S* orow = ob + int64_t(qi[m][r]) * D + 2 * t;
#pragma unroll
        for (int n = 0; n < ND; ++n)
          *reinterpret_cast<uint32_t*>(orow + 8 * n) = pack2<S>(o[m][n][2 * r] * inv, o[m][n][2 * r + 1] * inv);
      }
    }
#endif
}

template <class S, int D, int MT, bool MASKED>
void launch_mma(CudaBackend& be, const AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v,
                const Tensor& out) {
  using L = MmaLayout<D, MT>;
  launch_prefill<flash_mma_kernel<S, D, MT, MASKED>, S>(be, a, L::bytes, L::BQ, q, k, v, out);
}

// Two row tiles per warp (head dim 64) where their blocks alone fill every SM; else one,
// whose twice as many blocks need fewer key splits.
template <class S, bool MASKED>
void launch_mma_for_dim(CudaBackend& be, const AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& out) {
  if (a.D == 128) return launch_mma<S, 128, 1, MASKED>(be, a, q, k, v, out);
  const int64_t wide_blocks = (a.Tq + MmaLayout<64, 2>::BQ - 1) / MmaLayout<64, 2>::BQ * a.B * a.H;
  if (wide_blocks >= 2 * int64_t(be.sm_count()))
    launch_mma<S, 64, 2, MASKED>(be, a, q, k, v, out);
  else
    launch_mma<S, 64, 1, MASKED>(be, a, q, k, v, out);
}

template <class S>
bool launch_mma_for_dtype(CudaBackend& be, const AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& out) {
  if (a.D != 64 && a.D != 128) return false;
  if (a.mask.kind != MaskKind::None)
    launch_mma_for_dim<S, true>(be, a, q, k, v, out);
  else
    launch_mma_for_dim<S, false>(be, a, q, k, v, out);
  return true;
}

}  // namespace

bool launch_flash_attention_mma(CudaBackend& be, const AttnArgs& a, DType dtype, const Tensor& q, const Tensor& k,
                                const Tensor& v, const Tensor& out) {
  // The output is written as (B, H, Tq, D) row-major in element pairs.
  if (!out.is_contiguous() || out.offset() % 2 != 0) return false;
  if ((a.Tq + kFlashBQ - 1) / kFlashBQ * a.B * a.H > (int64_t(1) << 31) - 1) return false;  // grid x (the most blocks)
  constexpr int64_t kMaxPos = (int64_t(1) << 31) - 1 - 4 * kBK;  // positions in int, with tile overshoot
  if (a.Tq > kMaxPos || a.Tk > kMaxPos) return false;
  // The kernel takes row maxima of the unscaled scores (the scale folded into the exponent),
  // which needs a positive finite scale; any other goes to the warp kernel.
  const float scale2 = float(a.scale * kLog2e);
  if (!(scale2 > 0.0f && scale2 < INFINITY)) return false;
  switch (dtype) {
    case DType::F16: return launch_mma_for_dtype<__half>(be, a, q, k, v, out);
    case DType::BF16: return launch_mma_for_dtype<__nv_bfloat16>(be, a, q, k, v, out);
    default: return false;
  }
}

}  // namespace wick::cuda
