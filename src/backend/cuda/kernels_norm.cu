// Fused row ops over the last dim on CUDA: softmax / log_softmax, layer_norm, rms_norm.
// One generic kernel per strategy, the op chosen by `if constexpr` on RowMode:
//  - warp: rows of at most 1024 elements, one row per warp, the row held in registers
//    (K values per lane, read once from global memory, 16-byte loads when the row is
//    contiguous and aligned), reductions by warp shuffles;
//  - block: longer rows, one row per block; the row is cached in shared memory (compute
//    type) when it fits, so global memory is still read once, else re-read per pass.
// f16/bf16 compute in f32, f64 in f64. Rows may be strided: the outer dims are addressed
// through an OffsetCalc, the last dim through its stride. out is contiguous (fresh).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/elementwise.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/offset_calc.cuh"

namespace wick {

using namespace cuda;

namespace {

enum class RowMode { Softmax, LogSoftmax, LayerNorm, RmsNorm };

constexpr int kMaxWarpRow = 1024;
constexpr int kBlockThreads = 512;
constexpr int64_t kMaxGridX = int64_t(1) << 20;  // more rows are covered by grid-stride loops
constexpr size_t kMaxRowCache = 48 * 1024;       // shared-memory row cache without opt-in

__device__ __forceinline__ float dexp(float x) { return ::expf(x); }
__device__ __forceinline__ double dexp(double x) { return ::exp(x); }
__device__ __forceinline__ float dlog(float x) { return ::logf(x); }
__device__ __forceinline__ double dlog(double x) { return ::log(x); }
__device__ __forceinline__ float drsqrt(float x) { return ::rsqrtf(x); }
__device__ __forceinline__ double drsqrt(double x) { return ::rsqrt(x); }
__device__ __forceinline__ float dmax(float a, float b) { return ::fmaxf(a, b); }
__device__ __forceinline__ double dmax(double a, double b) { return ::fmax(a, b); }

// Maximum that propagates NaN (a NaN anywhere in the row makes the whole softmax NaN).
template <class C>
__device__ __forceinline__ C nan_max(C a, C b) {
  return (b > a || b != b) ? b : a;
}

template <class C>
__device__ __forceinline__ C warp_sum(C v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
  return v;
}
template <class C>
__device__ __forceinline__ C warp_max(C v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
}

// Sum or max over the block, returned to every thread. Every thread must call it; ends
// with a barrier so the shared buffer can be reused at once.
template <bool kMax, class C>
__device__ __forceinline__ C block_all(C v) {
  __shared__ C shared[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = kMax ? warp_max(v) : warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  C r = shared[0];
  for (int w = 1; w < warps; ++w) r = kMax ? nan_max(r, shared[w]) : r + shared[w];
  __syncthreads();
  return r;
}

// Where one row's data lives, and whether whole chunks of VW elements may be moved as
// one vector (contiguous and aligned for every row).
struct RowGeom {
  OffsetCalc<1, int64_t> outer;  // row index -> input offset
  int64_t rows = 0, n = 0;
  int64_t xs = 1;          // input last-dim stride
  int64_t ws = 1, bs = 1;  // weight / bias strides
  bool x_vec = false, out_vec = false, w_vec = false, b_vec = false;
};

// Reads elements [e0, e0 + VW) of a strided row into compute values (0 past n).
template <int VW, class S, class C>
__device__ __forceinline__ void load_chunk(const S* __restrict__ p, int64_t stride, int64_t e0, int64_t n, bool vec,
                                           C (&v)[VW]) {
  if (vec) {  // n is a multiple of VW, so the chunk is whole
    const Vec<S, VW> t = *reinterpret_cast<const Vec<S, VW>*>(p + e0);
#pragma unroll
    for (int k = 0; k < VW; ++k) v[k] = to_compute(t.v[k]);
  } else {
#pragma unroll
    for (int k = 0; k < VW; ++k) v[k] = e0 + k < n ? C(to_compute(p[(e0 + k) * stride])) : C(0);
  }
}

// Elements [e0, e0 + VW) of a strided vector in its storage type; the chunk must be
// whole (the row kernel's chunks are: VW divides n, or is 1).
template <int VW, class S>
__device__ __forceinline__ Vec<S, VW> load_raw_chunk(const S* __restrict__ p, int64_t stride, int64_t e0, bool vec) {
  if (vec) return *reinterpret_cast<const Vec<S, VW>*>(p + e0);
  Vec<S, VW> t;
#pragma unroll
  for (int k = 0; k < VW; ++k) t.v[k] = p[(e0 + k) * stride];
  return t;
}

template <int VW, class S, class C>
__device__ __forceinline__ void store_chunk(S* __restrict__ p, int64_t e0, int64_t n, bool vec, const C (&v)[VW]) {
  if (vec) {
    Vec<S, VW> t;
#pragma unroll
    for (int k = 0; k < VW; ++k) t.v[k] = from_compute<S>(v[k]);
    *reinterpret_cast<Vec<S, VW>*>(p + e0) = t;
  } else {
#pragma unroll
    for (int k = 0; k < VW; ++k)
      if (e0 + k < n) p[e0 + k] = from_compute<S>(v[k]);
  }
}

// Row statistics computed from sums / max over the row's values.
template <class C>
struct RowStats {
  C a = 0, b = 0;  // softmax: max, 1/sum (or log-sum); norms: mean (0 for rms), rstd
};

// The output value of one element from its input and the row statistics.
template <RowMode M, class C>
__device__ __forceinline__ C row_output(C v, const RowStats<C>& st, C w, C bias) {
  if constexpr (M == RowMode::Softmax)
    return dexp(v - st.a) * st.b;
  else if constexpr (M == RowMode::LogSoftmax)
    return v - st.a - st.b;
  else if constexpr (M == RowMode::LayerNorm)
    return (v - st.a) * st.b * w + bias;
  else
    return v * st.b * w;
}

// ---- warp strategy: lane l holds chunks j * 32 + l (j < K / VW) of VW elements each -------
// The whole row is read into registers by loads that are all issued back to back, with no
// branch between them (chunks past the row re-read a valid address and are replaced by
// padding afterwards), so a warp has its whole row in flight at once, and is never
// re-read. kVec: every row is contiguous, n a multiple of VW and rows and out start
// VW-element aligned, so a chunk moves as one 16-byte vector (a uint4 of 8 bf16); else
// VW = 1: element j * 32 + l, one scalar load each (coalesced for contiguous rows).
// The row stays in registers in its storage type (16-bit floats take half the registers
// of their f32 values; the conversion on each use is exact and one instruction), except
// that softmax keeps exp(x - max) in the compute type so exp runs once per element.
// Register bounds: 16-bit rows fit 64 (four blocks, 32 warps, 64 KB of row in flight per
// SM; layer_norm with a 16-byte spill: at three blocks, 48 KB in flight, bf16 layer_norm
// read at 79% of copy bandwidth); f32 80 (three blocks). The scalar path (strided or unaligned rows, a
// fallback) computes 32 64-bit addresses too: 128 (two blocks). f64 (rare on GPUs; 64
// registers of row alone) is left unbounded.
template <RowMode M, bool kVec, class S>
constexpr int row_warp_min_blocks() {
  if (sizeof(S) > 4) return 1;
  if (!kVec) return 2;
  return sizeof(S) == 4 ? 3 : 4;
}

// exp(v - m), given ml = m * log2(e). 16-bit outputs take exp2 of one fused multiply-add
// (MUFU.EX2 and its range fix-up, about a third of expf's instructions): its error, a few
// f32 ulps, is far below a bf16/f16 ulp. f32/f64 keep the accurate exp.
template <class S, class C>
__device__ __forceinline__ C row_exp(C v, C m, C ml) {
  if constexpr (is_dev_half_v<S>)
    return ::exp2f(::fmaf(v, 1.44269504088896341f, -ml));
  else
    return dexp(v - m);
}

// Compute values -> one chunk of storage values; 16-bit floats are packed two by two
// (one conversion instruction per pair).
template <class S, int VW, class C>
__device__ __forceinline__ Vec<S, VW> pack_chunk(const C (&y)[VW]) {
  Vec<S, VW> t;
  if constexpr (std::is_same_v<S, __nv_bfloat16> && VW % 2 == 0) {
#pragma unroll
    for (int k = 0; k < VW; k += 2) {
      const __nv_bfloat162 h = __floats2bfloat162_rn(y[k], y[k + 1]);
      t.v[k] = h.x, t.v[k + 1] = h.y;
    }
  } else if constexpr (std::is_same_v<S, __half> && VW % 2 == 0) {
#pragma unroll
    for (int k = 0; k < VW; k += 2) {
      const __half2 h = __floats2half2_rn(y[k], y[k + 1]);
      t.v[k] = h.x, t.v[k + 1] = h.y;
    }
  } else {
#pragma unroll
    for (int k = 0; k < VW; ++k) t.v[k] = from_compute<S>(y[k]);
  }
  return t;
}

template <RowMode M, int K, bool kVec, class S>
__global__ void __launch_bounds__(kThreads, row_warp_min_blocks<M, kVec, S>())
    row_warp_kernel(RowGeom g, const S* __restrict__ x, S* __restrict__ out, const S* __restrict__ weight,
                    const S* __restrict__ bias, dcompute_t<S> eps) {
  using C = dcompute_t<S>;
  constexpr int Vmax = int(16 / sizeof(S));
  constexpr int VW = !kVec ? 1 : K < Vmax ? K : Vmax;
  constexpr int J = K / VW;
  constexpr bool kSoftmax = M == RowMode::Softmax || M == RowMode::LogSoftmax;
  // Softmax keeps exp(x - max) (in place of the row: raw is dead once it is computed).
  constexpr bool kKeepExp = M == RowMode::Softmax;
  // Padding past the row: neutral for the max (and exp(-inf - m) = 0 for the sum) or the sums.
  Vec<S, VW> pad;
#pragma unroll
  for (int k = 0; k < VW; ++k) pad.v[k] = S(kSoftmax ? -INFINITY : 0.0f);
  const int lane = threadIdx.x & 31;
  const int64_t warps = blockDim.x >> 5;
  const C n = C(g.n);
  const int len = int(g.n);  // <= kMaxWarpRow: in-row indices fit 32 bits
  // Whether chunk j lies in the row (chunks are whole or absent: VW divides n, or is 1).
  auto valid = [&](int j) { return (j * 32 + lane) * VW < len; };
  for (int64_t r = int64_t(blockIdx.x) * warps + (threadIdx.x >> 5); r < g.rows; r += int64_t(gridDim.x) * warps) {
    int64_t off[1];
    g.outer.get(r, off);
    const S* row = x + off[0];
    Vec<S, VW> raw[J];
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const int e0 = valid(j) ? (j * 32 + lane) * VW : 0;
      if constexpr (kVec)
        raw[j] = *reinterpret_cast<const Vec<S, VW>*>(row + e0);
      else
        raw[j].v[0] = row[int64_t(e0) * g.xs];
    }
#pragma unroll
    for (int j = 0; j < J; ++j) raw[j] = valid(j) ? raw[j] : pad;
    // Element k of chunk j in the compute type.
    auto v_at = [&](int j, int k) { return C(to_compute(raw[j].v[k])); };

    RowStats<C> st;
    C ex[kKeepExp ? J : 1][VW];  // exp(x - max)
    if constexpr (kSoftmax) {
      // dmax drops NaN, but a NaN element still makes exp(NaN - m), the sum and so every
      // output NaN, as a NaN-propagating max would.
      C m = -INFINITY;
#pragma unroll
      for (int j = 0; j < J; ++j)
#pragma unroll
        for (int k = 0; k < VW; ++k) m = dmax(m, v_at(j, k));
      m = warp_max(m);
      const C ml = m * C(1.44269504088896341);
      C s = 0;
#pragma unroll
      for (int j = 0; j < J; ++j) {
        // f64's long exp, if run on every chunk at once, needs more registers than exist;
        // a branch per chunk keeps the compiler from interleaving them.
        if constexpr (sizeof(C) == 8)
          if (!valid(j)) continue;
#pragma unroll
        for (int k = 0; k < VW; ++k) {
          const C e = row_exp<S>(v_at(j, k), m, ml);
          if constexpr (kKeepExp) ex[j][k] = e;  // kept: the output is e / sum
          s += e;
        }
      }
      s = warp_sum(s);
      st.a = m;
      st.b = M == RowMode::Softmax ? C(1) / s : dlog(s);
    } else if constexpr (M == RowMode::LayerNorm) {
      C s = 0;
#pragma unroll
      for (int j = 0; j < J; ++j)
#pragma unroll
        for (int k = 0; k < VW; ++k) s += v_at(j, k);  // padding is 0
      const C mean = warp_sum(s) / n;
      C q = 0;
#pragma unroll
      for (int j = 0; j < J; ++j)
#pragma unroll
        for (int k = 0; k < VW; ++k) {
          const C d = valid(j) ? v_at(j, k) - mean : C(0);
          q += d * d;
        }
      st.a = mean;
      st.b = drsqrt(warp_sum(q) / n + eps);
    } else {
      C q = 0;
#pragma unroll
      for (int j = 0; j < J; ++j)
#pragma unroll
        for (int k = 0; k < VW; ++k) q += v_at(j, k) * v_at(j, k);
      st.b = drsqrt(warp_sum(q) / n + eps);
    }
    S* orow = out + r * g.n;
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const int e0 = (j * 32 + lane) * VW;
      if (e0 >= len) continue;
      // Weight and bias chunks stay in their storage type until used (converted per
      // element): the unrolled loop hoists every chunk's loads, and 16-bit chunks take
      // half the registers of their f32 values.
      Vec<S, VW> wr, br;
      if constexpr (M == RowMode::LayerNorm || M == RowMode::RmsNorm) {
        if (weight) wr = load_raw_chunk<VW>(weight, g.ws, e0, g.w_vec);
        if (bias) br = load_raw_chunk<VW>(bias, g.bs, e0, g.b_vec);
      }
      C y[VW];
#pragma unroll
      for (int k = 0; k < VW; ++k) {
        const C w = weight ? C(to_compute(wr.v[k])) : C(1), b = bias ? C(to_compute(br.v[k])) : C(0);
        y[k] = kKeepExp ? ex[kKeepExp ? j : 0][k] * st.b : row_output<M>(v_at(j, k), st, w, b);
      }
      if constexpr (kVec)
        *reinterpret_cast<Vec<S, VW>*>(orow + e0) = pack_chunk<S>(y);
      else
        store_chunk<VW>(orow, e0, g.n, false, y);
    }
  }
}

// ---- block strategy: thread t handles chunks t, t + blockDim.x, ... of VW elements --------
// kCache: the row is kept in shared memory (compute type) after the first read.
template <RowMode M, bool kCache, class S>
__global__ void row_block_kernel(RowGeom g, const S* __restrict__ x, S* __restrict__ out, const S* __restrict__ weight,
                                 const S* __restrict__ bias, dcompute_t<S> eps) {
  using C = dcompute_t<S>;
  constexpr int VW = int(16 / sizeof(S));
  extern __shared__ __align__(16) unsigned char cache_raw[];
  C* cache = reinterpret_cast<C*>(cache_raw);
  const int64_t chunks = (g.n + VW - 1) / VW;
  const C n = C(g.n);
  for (int64_t r = blockIdx.x; r < g.rows; r += gridDim.x) {
    int64_t off[1];
    g.outer.get(r, off);
    const S* row = x + off[0];
    // Reads chunk c: from global memory on the first pass (or always without the cache).
    auto chunk = [&](int64_t c, bool first, C(&v)[VW]) {
      const int64_t e0 = c * VW;
      if (kCache && !first) {
#pragma unroll
        for (int k = 0; k < VW; ++k) v[k] = e0 + k < g.n ? cache[e0 + k] : C(0);
        return;
      }
      load_chunk<VW>(row, g.xs, e0, g.n, g.x_vec, v);
      if (kCache)
#pragma unroll
        for (int k = 0; k < VW; ++k)
          if (e0 + k < g.n) cache[e0 + k] = v[k];
    };
    RowStats<C> st;
    if constexpr (M == RowMode::Softmax || M == RowMode::LogSoftmax) {
      C m = -INFINITY;
      for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        C v[VW];
        chunk(c, true, v);
#pragma unroll
        for (int k = 0; k < VW; ++k)
          if (c * VW + k < g.n) m = nan_max(m, v[k]);
      }
      m = block_all<true>(m);  // its barrier also publishes the cache
      C s = 0;
      for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        C v[VW];
        chunk(c, false, v);
#pragma unroll
        for (int k = 0; k < VW; ++k)
          if (c * VW + k < g.n) s += dexp(v[k] - m);
      }
      s = block_all<false>(s);
      st.a = m;
      st.b = M == RowMode::Softmax ? C(1) / s : dlog(s);
    } else if constexpr (M == RowMode::LayerNorm) {
      C s = 0;
      for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        C v[VW];
        chunk(c, true, v);
#pragma unroll
        for (int k = 0; k < VW; ++k) s += v[k];
      }
      const C mean = block_all<false>(s) / n;
      C q = 0;
      for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        C v[VW];
        chunk(c, false, v);
#pragma unroll
        for (int k = 0; k < VW; ++k)
          if (c * VW + k < g.n) q += (v[k] - mean) * (v[k] - mean);
      }
      st.a = mean;
      st.b = drsqrt(block_all<false>(q) / n + eps);
    } else {
      C q = 0;
      for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        C v[VW];
        chunk(c, true, v);
#pragma unroll
        for (int k = 0; k < VW; ++k) q += v[k] * v[k];
      }
      st.b = drsqrt(block_all<false>(q) / n + eps);
    }
    S* orow = out + r * g.n;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      const int64_t e0 = c * VW;
      C v[VW], w[VW], b[VW], y[VW];
      chunk(c, false, v);
#pragma unroll
      for (int k = 0; k < VW; ++k) w[k] = C(1), b[k] = C(0);
      if constexpr (M == RowMode::LayerNorm || M == RowMode::RmsNorm) {
        if (weight) load_chunk<VW>(weight, g.ws, e0, g.n, g.w_vec, w);
        if (bias) load_chunk<VW>(bias, g.bs, e0, g.n, g.b_vec, b);
      }
#pragma unroll
      for (int k = 0; k < VW; ++k) y[k] = row_output<M>(v[k], st, w[k], b[k]);
      store_chunk<VW>(orow, e0, g.n, g.out_vec, y);
    }
    __syncthreads();  // the next row overwrites the cache
  }
}

bool aligned_bytes(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <RowMode M, class T>
void launch_row_op(CudaBackend& be, const char* name, const Tensor& x, const Tensor& weight, const Tensor& bias,
                   double eps, const Tensor& out) {
  using S = dev_t<T>;
  using C = dcompute_t<S>;
  constexpr int Vmax = int(16 / sizeof(S));
  RowGeom g;
  g.n = x.rank() ? x.shape()[x.rank() - 1] : 1;
  if (g.n == 0 || x.numel() == 0) return;
  g.rows = x.numel() / g.n;
  g.xs = x.rank() ? x.strides()[x.rank() - 1] : 1;
  std::vector<int64_t> oshape(x.shape().begin(), x.shape().end() - (x.rank() ? 1 : 0));
  std::vector<int64_t> ostrides(x.strides().begin(), x.strides().end() - (x.rank() ? 1 : 0));
  const CollapsedDims c = collapse_dims(Shape(oshape), {&ostrides});
  WICK_CHECK(c.shape.size() <= size_t(kMaxDims), Unsupported, name, ": ", c.shape.size(),
             " non-collapsible dims (at most ", kMaxDims, " on cuda)");
  g.outer.rank = int(c.shape.size());
  for (size_t d = 0; d < c.shape.size(); ++d) {
    g.outer.sizes[d] = c.shape[d];
    g.outer.strides[0][d] = c.strides[0][d];
  }
  g.outer.base[0] = 0;

  const S* xp = dptr<const S>(x) + x.offset();
  S* op = dptr<S>(out) + out.offset();
  const S* wp = weight.defined() ? dptr<const S>(weight) + weight.offset() : nullptr;
  const S* bp = bias.defined() ? dptr<const S>(bias) + bias.offset() : nullptr;
  g.ws = weight.defined() ? weight.strides()[0] : 1;
  g.bs = bias.defined() ? bias.strides()[0] : 1;

  // Vector moves of VW elements need every row (and the params) to start 16-byte aligned.
  auto set_vec = [&](int VW) {
    const size_t bytes = sizeof(S) * size_t(VW);
    const bool whole = VW > 1 && g.n % VW == 0;
    bool xv = whole && g.xs == 1 && aligned_bytes(xp, bytes);
    for (size_t d = 0; d < c.shape.size(); ++d) xv = xv && c.strides[0][d] % VW == 0;
    g.x_vec = xv;
    g.out_vec = whole && aligned_bytes(op, bytes);
    g.w_vec = whole && wp && g.ws == 1 && aligned_bytes(wp, bytes);
    g.b_vec = whole && bp && g.bs == 1 && aligned_bytes(bp, bytes);
  };

  const C ceps = C(eps);
  cudaStream_t stream = be.stream();
  if (g.n <= kMaxWarpRow) {
    const unsigned blocks = unsigned(std::min((g.rows + kThreads / 32 - 1) / (kThreads / 32), kMaxGridX));
    auto launch = [&]<int K>() {
      set_vec(K < Vmax ? K : Vmax);
      if (g.x_vec && g.out_vec)
        row_warp_kernel<M, K, true, S><<<blocks, kThreads, 0, stream>>>(g, xp, op, wp, bp, ceps);
      else
        row_warp_kernel<M, K, false, S><<<blocks, kThreads, 0, stream>>>(g, xp, op, wp, bp, ceps);
    };
    if (g.n <= 32)
      launch.template operator()<1>();
    else if (g.n <= 64)
      launch.template operator()<2>();
    else if (g.n <= 128)
      launch.template operator()<4>();
    else if (g.n <= 256)
      launch.template operator()<8>();
    else if (g.n <= 512)
      launch.template operator()<16>();
    else
      launch.template operator()<32>();
  } else {
    set_vec(Vmax);
    const unsigned blocks = unsigned(std::min(g.rows, kMaxGridX));
    const size_t cache_bytes = size_t(g.n) * sizeof(C);
    if (cache_bytes <= kMaxRowCache)
      row_block_kernel<M, true, S><<<blocks, kBlockThreads, cache_bytes, stream>>>(g, xp, op, wp, bp, ceps);
    else
      row_block_kernel<M, false, S><<<blocks, kBlockThreads, 0, stream>>>(g, xp, op, wp, bp, ceps);
  }
  check_launch(name);
}

}  // namespace

void CudaBackend::softmax(const Tensor& x, const Tensor& out, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  activate();
  dispatch_float(x.dtype(), name, [&]<class T>() {
    if (log)
      launch_row_op<RowMode::LogSoftmax, T>(*this, name, x, Tensor(), Tensor(), 0.0, out);
    else
      launch_row_op<RowMode::Softmax, T>(*this, name, x, Tensor(), Tensor(), 0.0, out);
  });
}

void CudaBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out) {
  activate();
  dispatch_float(x.dtype(), "layer_norm", [&]<class T>() {
    launch_row_op<RowMode::LayerNorm, T>(*this, "layer_norm", x, weight, bias, eps, out);
  });
}

void CudaBackend::rms_norm(const Tensor& x, const Tensor& weight, double eps, const Tensor& out) {
  activate();
  dispatch_float(x.dtype(), "rms_norm", [&]<class T>() {
    launch_row_op<RowMode::RmsNorm, T>(*this, "rms_norm", x, weight, Tensor(), eps, out);
  });
}

}  // namespace wick
