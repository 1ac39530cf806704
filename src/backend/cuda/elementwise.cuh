// The one elementwise launcher of the CUDA backend: out = f(in...) for any number of
// inputs, any strides, offsets and broadcasts. Contiguous operands take a vectorized
// path (16-byte loads and stores when aligned); a contiguous output whose inputs are
// contiguous or broadcast takes the broadcast path (vector loads, index modulo); a 2-D
// transpose between operands takes the tiled path (shared-memory tiles, both sides
// coalesced); the rest use OffsetCalc with 32-bit index math when the tensor allows and
// 64-bit when it needs it.
#pragma once

#include <array>
#include <utility>

#include "backend/cuda/launch.cuh"
#include "backend/cuda/offset_calc.cuh"
#include "wick/tensor.h"

namespace wick::cuda {

template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

template <int V, class F, class Out, class... In>
__device__ __forceinline__ void apply_vec(const F& f, Vec<Out, V>& r, const Vec<In, V>&... a) {
#pragma unroll
  for (int j = 0; j < V; ++j) r.v[j] = f(a.v[j]...);
}

// U vectors of one operand, at i, i + stride, ... (one step of a thread).
template <class T, int V, int U>
struct VecRun {
  Vec<T, V> v[U];
};

template <int V, int U, class T>
__device__ __forceinline__ VecRun<T, V, U> load_run(const T* __restrict__ p, uint32_t i, uint32_t stride) {
  VecRun<T, V, U> r;
#pragma unroll
  for (int u = 0; u < U; ++u) r.v[u] = reinterpret_cast<const Vec<T, V>*>(p)[i + u * stride];
  return r;
}

template <int V, int U, class F, class Out, class... In>
__device__ __forceinline__ void store_run(const F& f, Out* __restrict__ out, uint32_t i, uint32_t stride,
                                          const VecRun<In, V, U>&... x) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    Vec<Out, V> r;
    apply_vec<V>(f, r, x.v[u]...);
    reinterpret_cast<Vec<Out, V>*>(out)[i + u * stride] = r;
  }
}

// Vectors in flight per thread of the contiguous kernel (fewer with three inputs).
template <int kInputs>
inline constexpr int kEwUnroll = kInputs <= 2 ? 4 : 2;

// Elements per launch of the contiguous kernel: its index math is 32-bit (64-bit index
// math costs 16-bit unary ops registers and so occupancy; PyTorch's kernels split large
// tensors the same way), so the host launches larger tensors in chunks of this size. A
// multiple of every tile, so each chunk but the last has no tail and stays aligned.
inline constexpr int64_t kEwChunk = int64_t(1) << 30;

// A block takes tiles of blockDim x U consecutive vectors (grid-stride over tiles); each
// thread loads its U vectors of every input (blockDim apart, so each warp load is one
// contiguous 512-byte run) before computing any: U x 16 bytes per input in flight per
// thread instead of 16, and every block streams one contiguous region, which is what a
// streaming kernel needs to get near the HBM ceiling. The last partial tile goes vector
// by vector, then the scalar tail. Launched with one block per tile (no cap on the grid):
// blocks then stream the array in order, as PyTorch's kernels do, which Nsight Compute
// showed reaching 88% of peak DRAM throughput against 80% for a persistent grid of 16
// blocks per SM.
//
// Launched with kThreads threads (both launches below), so the tile is a compile-time
// power of two: no division by a runtime value (a slow-path call of some 70 instructions,
// a visible share of a tiny op's kernel) and fewer registers. n <= kEwChunk, so no index
// below overflows 32 bits.
template <int V, class F, class Out, class... In>
__global__ void ew_contiguous_kernel(uint32_t n, F f, Out* __restrict__ out, const In* __restrict__... in) {
  constexpr int U = kEwUnroll<sizeof...(In)>;
  constexpr uint32_t tile = uint32_t(kThreads) * U;
  const uint32_t nvec = n / V;
  const uint32_t full = nvec / tile * tile;
  for (uint32_t t = blockIdx.x * tile; t < full; t += gridDim.x * tile) {
    const uint32_t i = t + threadIdx.x;
    store_run<V, U>(f, out, i, kThreads, load_run<V, U>(in, i, kThreads)...);
  }
  const uint32_t stride = gridDim.x * kThreads;
  for (uint32_t i = full + blockIdx.x * kThreads + threadIdx.x; i < nvec; i += stride) {
    Vec<Out, V> r;
    apply_vec<V>(f, r, reinterpret_cast<const Vec<In, V>*>(in)[i]...);
    reinterpret_cast<Vec<Out, V>*>(out)[i] = r;
  }
  for (uint32_t j = nvec * V + blockIdx.x * kThreads + threadIdx.x; j < n; j += stride) out[j] = f(in[j]...);
}

template <class I, class F, class Out, class... In, size_t... Ks>
__device__ __forceinline__ void ew_one(const F& f, const I (&off)[1 + sizeof...(In)], Out* out,
                                       std::index_sequence<Ks...>, const In*... in) {
  out[off[0]] = f(in[off[Ks + 1]]...);
}

template <class I, class F, class Out, class... In>
__global__ void ew_strided_kernel(I n, OffsetCalc<1 + sizeof...(In), I> oc, F f, Out* __restrict__ out,
                                  const In* __restrict__... in) {
  const I stride = I(gridDim.x) * blockDim.x;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    I off[1 + sizeof...(In)];
    oc.get(i, off);
    ew_one<I>(f, off, out, std::index_sequence_for<In...>{}, in...);
  }
}

template <class T>
bool aligned_to(const T* p, int64_t offset, size_t bytes) {
  return (reinterpret_cast<uintptr_t>(p + offset) % bytes) == 0;
}

// ---- tiled path: a 2-D transpose between operands ------------------------------------
// The output has stride 1 along dim p; some input has stride 1 along another dim q (and a
// large stride along p). Walking the output in order reads that input with a stride, so
// a warp touches 32 cache lines per load. Instead each block takes a TxT tile of (p, q):
// those "staged" inputs are read with lanes along q (coalesced) into shared memory, then
// every thread computes with lanes along p, reading staged values from shared memory and
// the other inputs directly, and writes the output coalesced. The remaining dims are
// batch dims, addressed per tile through an OffsetCalc.

inline constexpr int kTileRows = 8;  // block = 32 x kTileRows threads

// Row pitch in elements: an odd number of 4-byte words (8-byte elements: odd element
// count), so a warp reading a column hits 32 distinct banks.
template <int T, class E>
constexpr int tile_pitch() {
  return T + (sizeof(E) >= 4 ? 1 : int(4 / sizeof(E)));
}
template <int T, class E>
constexpr size_t tile_bytes() {
  return (size_t(T) * size_t(tile_pitch<T, E>()) * sizeof(E) + 15) / 16 * 16;
}
template <int T, class... In>
constexpr size_t tile_offset(size_t k) {
  const size_t bytes[] = {tile_bytes<T, In>()...};
  size_t o = 0;
  for (size_t j = 0; j < k; ++j) o += bytes[j];
  return o;
}

// Tile side: 64 keeps a warp's row of 16-bit/8-bit elements at 128/64 bytes and gives
// each thread 16 elements in flight; 32 for 8-byte elements (256-byte rows) and wherever
// the staged tiles of all inputs at 64 would pass the 48 KiB static shared memory limit.
template <class Out, class... In>
constexpr int tile_side() {
  if (std::max({sizeof(Out), sizeof(In)...}) >= 8) return 32;
  return tile_offset<64, In...>(sizeof...(In)) <= 48 * 1024 ? 64 : 32;
}

template <int N, class I>
struct TileGeom {
  OffsetCalc<N, I> batch;  // dims other than p and q; carries the operands' base offsets
  I P = 0, Q = 0;          // sizes of dims p and q
  I sp[N] = {}, sq[N] = {};
  bool staged[N] = {};  // read through shared memory (operand 0, the output, never is)
  bool vec = false;     // whole tiles may take the fast path (its vectors are aligned)
  int64_t tiles_p = 0, tiles_q = 0, n_tiles = 0;
};

// Copies operand k's tile into shared memory with lanes along q (its stride-1 dim).
template <int T, class I, class E, int N>
__device__ __forceinline__ void stage_tile(const TileGeom<N, I>& g, int k, E* __restrict__ s, const E* __restrict__ p,
                                           I off, I p0, I q0) {
  if (!g.staged[k]) return;
#pragma unroll
  for (int jj = 0; jj < T / kTileRows; ++jj)
#pragma unroll
    for (int ii = 0; ii < T / 32; ++ii) {
      const int j = int(threadIdx.y) + jj * kTileRows, i = int(threadIdx.x) + ii * 32;
      const I pp = p0 + I(j), qq = q0 + I(i);
      if (pp < g.P && qq < g.Q) s[j * tile_pitch<T, E>() + i] = p[off + pp * g.sp[k] + qq * g.sq[k]];
    }
}

// Operand k's element at tile position (i along p, j along q).
template <int T, class I, class E, int N>
__device__ __forceinline__ E tile_load(const TileGeom<N, I>& g, int k, const E* __restrict__ s, const E* __restrict__ p,
                                       I off, I pp, I qq, int i, int j) {
  return g.staged[k] ? s[i * tile_pitch<T, E>() + j] : p[off + pp * g.sp[k] + qq * g.sq[k]];
}

// ---- fast tiles: whole tiles of operands that allow W-element vectors -----------------
// Elements narrower than 4 bytes move W = 4 / size at a time (a bf16 pair, four u8), so a
// warp moves 128 contiguous bytes per load and per store as f32 does: staged operands are
// read with W-vectors along q, the output written with W-vectors along p (W consecutive
// tile rows gathered from shared memory). Every load of a phase is issued before its first
// use, none under a branch. Only tiles wholly inside (P, Q) take it, only when
// TileGeom::vec says every vector is aligned, and only with 32-bit index math; edge tiles
// take the element path.
template <class Out, class... In>
constexpr int tile_vec() {
  constexpr size_t w = std::max({sizeof(Out), sizeof(In)...});
  return w >= 4 ? 1 : int(4 / w);
}
inline constexpr int kTileThreads = 32 * kTileRows;

// Row pitch of the fast tiles: T + 1 elements, so that the W tile rows a lane gathers on
// the output side (lanes W rows apart: an odd number of 4-byte words, for any element size
// up to 4) fall in distinct banks; stage-side writes go element by element.
template <int T>
constexpr int fast_pitch() {
  return T + 1;
}

// Operand k's values at the fast output positions of this thread: A slots of W elements
// along p, from shared memory (staged) or global memory (every load in one block).
template <size_t K, class E, int A, int W>
struct TileVals {
  E v[A][W];
};
template <class Seq, int A, int W, class... In>
struct TileValsAll;
template <size_t... Ks, int A, int W, class... In>
struct TileValsAll<std::index_sequence<Ks...>, A, W, In...> : TileVals<Ks, In, A, W>... {};

template <int T, int W>
constexpr bool fast_tile_fits() {
  return T % W == 0 && kTileThreads % (T / W) == 0 && T % (kTileThreads / (T / W)) == 0;
}

template <int T, int W, class I, class E, int N>
__device__ __forceinline__ void stage_fast(const TileGeom<N, I>& g, int k, E* __restrict__ s, const E* __restrict__ p,
                                           I off, I p0, I q0) {
  if (!g.staged[k]) return;
  constexpr int CQ = T / W, RP = kTileThreads / CQ, A = T / RP;  // vectors per row, rows per pass
  const int t = int(threadIdx.y) * 32 + int(threadIdx.x);
  const int i = (t % CQ) * W, j0 = t / CQ;
  const E* src = p + off + (p0 + I(j0)) * g.sp[k] + q0 + I(i);
  const I step = I(RP) * g.sp[k];
  Vec<E, W> v[A];
#pragma unroll
  for (int a = 0; a < A; ++a, src += step) v[a] = *reinterpret_cast<const Vec<E, W>*>(src);
#pragma unroll
  for (int a = 0; a < A; ++a)
#pragma unroll
    for (int w = 0; w < W; ++w) s[(j0 + a * RP) * fast_pitch<T>() + i + w] = v[a].v[w];
}

template <int T, int W, int A, class I, class E, int N>
__device__ __forceinline__ void gather_fast(const TileGeom<N, I>& g, int k, const E* __restrict__ s,
                                            const E* __restrict__ p, I off, I p0, I q0, E (&v)[A][W]) {
  constexpr int CP = T / W, RQ = kTileThreads / CP;  // vectors per output row, rows per pass
  const int t = int(threadIdx.y) * 32 + int(threadIdx.x);
  const int i = (t % CP) * W, j0 = t / CP;
  if (g.staged[k]) {
#pragma unroll
    for (int a = 0; a < A; ++a)
#pragma unroll
      for (int w = 0; w < W; ++w) v[a][w] = s[(i + w) * fast_pitch<T>() + j0 + a * RQ];
  } else {
    const E* src = p + off + (p0 + I(i)) * g.sp[k] + (q0 + I(j0)) * g.sq[k];
    const I step = I(RQ) * g.sq[k], sp = g.sp[k];
#pragma unroll
    for (int a = 0; a < A; ++a, src += step)
#pragma unroll
      for (int w = 0; w < W; ++w) v[a][w] = src[I(w) * sp];
  }
}

template <int T, int W, class I, class F, class Out, class... In, size_t... Ks>
__device__ __forceinline__ void ew_tile_fast(unsigned char* smem, const TileGeom<1 + sizeof...(In), I>& g, const F& f,
                                             Out* __restrict__ out, std::index_sequence<Ks...>,
                                             const I (&off)[1 + sizeof...(In)], I p0, I q0,
                                             const In* __restrict__... in) {
  static_assert(fast_tile_fits<T, W>(), "the fast tile's vectors must split evenly over the block");
  constexpr int CP = T / W, RQ = kTileThreads / CP, A = T / RQ;
  (stage_fast<T, W, I>(g, int(Ks) + 1, reinterpret_cast<In*>(smem + tile_offset<T, In...>(Ks)), in, off[Ks + 1], p0,
                       q0),
   ...);
  __syncthreads();
  TileValsAll<std::index_sequence<Ks...>, A, W, In...> vals;
  (gather_fast<T, W, A, I>(g, int(Ks) + 1, reinterpret_cast<const In*>(smem + tile_offset<T, In...>(Ks)), in,
                           off[Ks + 1], p0, q0, static_cast<TileVals<Ks, In, A, W>&>(vals).v),
   ...);
  const int t = int(threadIdx.y) * 32 + int(threadIdx.x);
  const int i = (t % CP) * W, j0 = t / CP;
  Out* o = out + off[0] + p0 + I(i) + (q0 + I(j0)) * g.sq[0];
  const I step = I(RQ) * g.sq[0];
#pragma unroll
  for (int a = 0; a < A; ++a, o += step) {
    Vec<Out, W> r;
#pragma unroll
    for (int w = 0; w < W; ++w) r.v[w] = f(static_cast<const TileVals<Ks, In, A, W>&>(vals).v[a][w]...);
    *reinterpret_cast<Vec<Out, W>*>(o) = r;
  }
}

// The tiled kernel's body (a __global__ template may have only one parameter pack).
template <int T, class I, class F, class Out, class... In, size_t... Ks>
__device__ __forceinline__ void ew_tiled(unsigned char* smem, const TileGeom<1 + sizeof...(In), I>& g, const F& f,
                                         Out* __restrict__ out, std::index_sequence<Ks...>,
                                         const In* __restrict__... in) {
  constexpr int N = 1 + sizeof...(In);
  constexpr int W = tile_vec<Out, In...>();
  const int64_t per_batch = g.tiles_p * g.tiles_q;
  for (int64_t t = blockIdx.x; t < g.n_tiles; t += gridDim.x) {
    const int64_t b = t / per_batch, r = t - b * per_batch;
    const int64_t tq = r / g.tiles_p, tp = r - tq * g.tiles_p;
    I off[N];
    g.batch.get(I(b), off);
    const I p0 = I(tp * T), q0 = I(tq * T);
    // 32-bit index math only: tensors past 2^32 elements are rare, and with 64-bit index
    // math ptxas spills on some casts (float -> int conversions have branches).
    if constexpr (std::is_same_v<I, uint32_t>) {
      if (g.vec && p0 + I(T) <= g.P && q0 + I(T) <= g.Q) {
        ew_tile_fast<T, W, I>(smem, g, f, out, std::index_sequence<Ks...>{}, off, p0, q0, in...);
        __syncthreads();  // the next tile overwrites shared memory
        continue;
      }
    }
    (stage_tile<T, I>(g, int(Ks) + 1, reinterpret_cast<In*>(smem + tile_offset<T, In...>(Ks)), in, off[Ks + 1], p0, q0),
     ...);
    __syncthreads();
#pragma unroll
    for (int jj = 0; jj < T / kTileRows; ++jj)
#pragma unroll
      for (int ii = 0; ii < T / 32; ++ii) {
        const int j = int(threadIdx.y) + jj * kTileRows, i = int(threadIdx.x) + ii * 32;
        const I pp = p0 + I(i), qq = q0 + I(j);
        if (pp < g.P && qq < g.Q)
          out[off[0] + pp * g.sp[0] + qq * g.sq[0]] =
              f(tile_load<T, I>(g, int(Ks) + 1, reinterpret_cast<const In*>(smem + tile_offset<T, In...>(Ks)), in,
                                off[Ks + 1], pp, qq, i, j)...);
      }
    __syncthreads();  // the next tile overwrites shared memory
  }
}

template <int T, class I, class F, class Out, class... In>
__global__ void __launch_bounds__(kTileThreads)
    ew_tiled_kernel(TileGeom<1 + sizeof...(In), I> g, F f, Out* __restrict__ out, const In* __restrict__... in) {
  __shared__ alignas(16) unsigned char smem[tile_offset<T, In...>(sizeof...(In))];
  ew_tiled<T>(smem, g, f, out, std::index_sequence_for<In...>{}, in...);
}

// The (p, q) pair of the tiled path, or {-1, -1} when the pattern is absent: p is the
// output's stride-1 dim, q a dim where an input has stride 1 while its stride along p is
// neither 0 nor 1; both at least 8 long (else the tile would be mostly idle threads).
template <int N>
std::pair<int, int> transpose_dims(const Geometry<N>& g) {
  const int r = int(g.dims.shape.size());
  if (r < 2 || N < 2) return {-1, -1};
  int p = -1;
  for (int d = r - 1; d >= 0 && p < 0; --d)
    if (g.dims.strides[0][d] == 1) p = d;
  if (p < 0 || g.dims.shape[p] < 8) return {-1, -1};
  for (int k = 1; k < N; ++k) {
    const int64_t sp = g.dims.strides[k][p];
    if (sp == 0 || sp == 1) continue;
    for (int d = r - 1; d >= 0; --d)
      if (d != p && g.dims.strides[k][d] == 1 && g.dims.shape[d] >= 8) return {p, d};
  }
  return {-1, -1};
}

template <int N, class I>
TileGeom<N, I> tile_geom(const Geometry<N>& g, int p, int q, int T) {
  TileGeom<N, I> t;
  t.P = I(g.dims.shape[p]);
  t.Q = I(g.dims.shape[q]);
  int64_t batches = 1;
  t.batch.rank = 0;
  for (int d = 0; d < int(g.dims.shape.size()); ++d) {
    if (d == p || d == q) continue;
    t.batch.sizes[t.batch.rank] = I(g.dims.shape[d]);
    for (int k = 0; k < N; ++k) t.batch.strides[k][t.batch.rank] = I(g.dims.strides[k][d]);
    batches *= g.dims.shape[d];
    ++t.batch.rank;
  }
  for (int k = 0; k < N; ++k) {
    t.batch.base[k] = I(g.base[k]);
    t.sp[k] = I(g.dims.strides[k][p]);
    t.sq[k] = I(g.dims.strides[k][q]);
    t.staged[k] = k > 0 && g.dims.strides[k][q] == 1 && g.dims.strides[k][p] != 0 && g.dims.strides[k][p] != 1;
  }
  if constexpr (std::is_same_v<I, uint32_t>) t.batch.set_divisors();
  t.tiles_p = (g.dims.shape[p] + T - 1) / T;
  t.tiles_q = (g.dims.shape[q] + T - 1) / T;
  t.n_tiles = batches * t.tiles_p * t.tiles_q;
  return t;
}

// ---- broadcast path: contiguous output, inputs contiguous or broadcast ----------------
// Each input's offset is a function of the output's linear index i alone:
// base + (i / D) % M, where M spans the input's contiguous dims and D the broadcast
// (stride-0) dims after them; stride-0 dims before them are free (the modulo). A
// contiguous input has D = 1, M = numel; a row (1, n) has D = 1, M = n; a column (n, 1)
// D = n, M = n. Threads take V consecutive outputs: an input with D = 1 and V | M is one
// vector load, one with V | D one scalar load, any other V scalar loads.

struct BcastOperand {
  int64_t D = 1, M = 1;
};

// The (D, M) form of one operand in the collapsed dims, or false when it has none.
inline bool bcast_form(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, BcastOperand& b) {
  int d = int(shape.size()) - 1;
  b.D = 1;
  b.M = 1;
  for (; d >= 0 && strides[d] == 0; --d) b.D *= shape[d];
  for (; d >= 0 && strides[d] == b.M; --d) b.M *= shape[d];
  for (; d >= 0; --d)
    if (strides[d] != 0) return false;
  return true;
}

template <class I>
struct BcastIndex {
  I D, M;
  FastDiv32 dd, dm;  // used when I is uint32_t
  int mode;          // 0: per element; 1: one vector load; 2: one value for the whole vector
  __device__ __forceinline__ I at(I i) const {
    if constexpr (std::is_same_v<I, uint32_t>) {
      const I q = D == 1 ? i : dd.div(i);
      return q - dm.div(q) * M;
    } else {
      return (i / D) % M;
    }
  }
};

template <class I, int V, class E>
__device__ __forceinline__ Vec<E, V> bcast_load(const E* __restrict__ p, const BcastIndex<I>& b, I i) {
  Vec<E, V> r;
  if (b.mode == 1) {
    r = *reinterpret_cast<const Vec<E, V>*>(p + b.at(i));
  } else if (b.mode == 2) {
    const E x = p[b.at(i)];
#pragma unroll
    for (int e = 0; e < V; ++e) r.v[e] = x;
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) r.v[e] = p[b.at(i + I(e))];
  }
  return r;
}

template <class I, int V, class F, class Out, class... In, size_t... Ks>
__device__ __forceinline__ void ew_bcast(I n, const std::array<BcastIndex<I>, sizeof...(In)>& bi, const F& f,
                                         Out* __restrict__ out, std::index_sequence<Ks...>,
                                         const In* __restrict__... in) {
  const I nvec = n / V;
  const I stride = I(gridDim.x) * blockDim.x;
  for (I v = I(blockIdx.x) * blockDim.x + threadIdx.x; v < nvec; v += stride) {
    Vec<Out, V> r;
    apply_vec<V>(f, r, bcast_load<I, V>(in, bi[Ks], v * V)...);
    reinterpret_cast<Vec<Out, V>*>(out)[v] = r;
  }
  for (I i = nvec * V + I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = f(in[bi[Ks].at(i)]...);
}

template <class I, int V, class F, class Out, class... In>
__global__ void ew_bcast_kernel(I n, std::array<BcastIndex<I>, sizeof...(In)> bi, F f, Out* __restrict__ out,
                                const In* __restrict__... in) {
  ew_bcast<I, V>(n, bi, f, out, std::index_sequence_for<In...>{}, in...);
}

template <class Out, class... In, class F, size_t... Ks>
void launch_elementwise_impl(const char* op, cudaStream_t stream, const F& f, const Tensor& out,
                             const std::array<const Tensor*, sizeof...(In)>& ins, std::index_sequence<Ks...>) {
  constexpr int N = 1 + sizeof...(In);
  const Geometry<N> g({&out.layout(), &ins[Ks]->layout()...}, op);
  if (g.numel == 0) return;
  Out* o = dptr<Out>(out);
  const unsigned max_blocks = resident_blocks();
  constexpr size_t widest = std::max({sizeof(Out), sizeof(In)...});
  constexpr int V = int(16 / widest) > 0 ? int(16 / widest) : 1;
  if (g.contiguous) {
    const bool aligned = aligned_to(o, g.base[0], sizeof(Out) * V) &&
                         (aligned_to(dptr<const In>(*ins[Ks]), ins[Ks]->offset(), sizeof(In) * V) && ...);
    for (int64_t s = 0; s < g.numel; s += kEwChunk) {
      const int64_t m = std::min(kEwChunk, g.numel - s);
      if (aligned) {
        ew_contiguous_kernel<V><<<grid_for(m, V * kEwUnroll<sizeof...(In)>), kThreads, 0, stream>>>(
            uint32_t(m), f, o + g.base[0] + s, (dptr<const In>(*ins[Ks]) + ins[Ks]->offset() + s)...);
      } else {
        ew_contiguous_kernel<1><<<std::min(grid_for(m, 4), max_blocks), kThreads, 0, stream>>>(
            uint32_t(m), f, o + g.base[0] + s, (dptr<const In>(*ins[Ks]) + ins[Ks]->offset() + s)...);
      }
      check_launch(op);
    }
    return;
  }
  if constexpr (sizeof...(In) > 0) {
    // Broadcast path: the output is contiguous in the collapsed dims and every input has
    // a (D, M) form; 32-bit index math (the usual case) or 64-bit.
    BcastOperand bo[N];
    bool bcast = bcast_form(g.dims.shape, g.dims.strides[0], bo[0]) && bo[0].D == 1 && bo[0].M == g.numel;
    for (int k = 1; k < N && bcast; ++k) bcast = bcast_form(g.dims.shape, g.dims.strides[k], bo[k]);
    if (bcast) {
      const bool out_aligned = aligned_to(o, g.base[0], sizeof(Out) * V);
      auto launch = [&]<class I, int W>() {
        std::array<BcastIndex<I>, sizeof...(In)> bi{};
        for (int k = 1; k < N; ++k) {
          BcastIndex<I>& b = bi[k - 1];
          b.D = I(bo[k].D);
          b.M = I(bo[k].M);
          if constexpr (std::is_same_v<I, uint32_t>) {
            b.dd = FastDiv32(uint32_t(bo[k].D));
            b.dm = FastDiv32(uint32_t(bo[k].M));
          }
          b.mode = 0;
        }
        // Vector loads need the operand's base aligned too.
        ((bi[Ks].mode = W > 1 && bo[Ks + 1].D == 1 && bo[Ks + 1].M % W == 0 &&
                                aligned_to(dptr<const In>(*ins[Ks]), ins[Ks]->offset(), sizeof(In) * W)
                            ? 1
                        : W > 1 && bo[Ks + 1].D % W == 0 ? 2
                                                         : 0),
         ...);
        // One vector per thread, blocks in array order (as the contiguous kernel; capped so
        // grid x block stays far inside 32-bit index math, loops take the rest).
        ew_bcast_kernel<I, W><<<std::min(grid_for(g.numel, W), 1u << 22), kThreads, 0, stream>>>(
            I(g.numel), bi, f, o + g.base[0], (dptr<const In>(*ins[Ks]) + ins[Ks]->offset())...);
      };
      if (g.fits_32bit)
        out_aligned ? launch.template operator()<uint32_t, V>() : launch.template operator()<uint32_t, 1>();
      else
        out_aligned ? launch.template operator()<int64_t, V>() : launch.template operator()<int64_t, 1>();
      check_launch(op);
      return;
    }
    const auto [tp, tq] = transpose_dims(g);
    if (tp >= 0) {
      constexpr int T = tile_side<Out, In...>();
      auto launch = [&]<class I>() {
        TileGeom<N, I> tg = tile_geom<N, I>(g, tp, tq, T);
        // Fast tiles move W-element vectors: the output's along p (stride 1), the staged
        // inputs' along q (stride 1); each needs its base, its other strides and every
        // batch stride to keep them aligned.
        constexpr int W = tile_vec<Out, In...>();
        auto vec_ok = [&](int k, const void* ptr, size_t esize, int64_t other_stride) {
          bool ok = reinterpret_cast<uintptr_t>(ptr) % (esize * W) == 0 && g.base[k] % W == 0 && other_stride % W == 0;
          for (int d = 0; d < tg.batch.rank; ++d) ok = ok && int64_t(tg.batch.strides[k][d]) % W == 0;
          return ok;
        };
        tg.vec = vec_ok(0, o, sizeof(Out), int64_t(tg.sq[0]));
        ((tg.vec = tg.vec && (!tg.staged[Ks + 1] ||
                              vec_ok(int(Ks) + 1, dptr<const In>(*ins[Ks]), sizeof(In), int64_t(tg.sp[Ks + 1])))),
         ...);
        const unsigned blocks = unsigned(std::min<int64_t>(tg.n_tiles, int64_t(resident_blocks(64))));
        ew_tiled_kernel<T, I><<<blocks, dim3(32, kTileRows), 0, stream>>>(tg, f, o, dptr<const In>(*ins[Ks])...);
      };
      if (g.fits_32bit)
        launch.template operator()<uint32_t>();
      else
        launch.template operator()<int64_t>();
      check_launch(op);
      return;
    }
  }
  if (g.fits_32bit) {
    ew_strided_kernel<uint32_t><<<std::min(grid_for(g.numel, 4), max_blocks), kThreads, 0, stream>>>(
        uint32_t(g.numel), g.template calc<uint32_t>(), f, o, dptr<const In>(*ins[Ks])...);
  } else {
    ew_strided_kernel<int64_t><<<std::min(grid_for(g.numel, 4), max_blocks), kThreads, 0, stream>>>(
        g.numel, g.template calc<int64_t>(), f, o, dptr<const In>(*ins[Ks])...);
  }
  check_launch(op);
}

// out (storage type Out) = f(ins (storage types In...)) elementwise, all of one shape.
// f is a functor struct with a __device__ operator() (nvcc does not allow extended
// device lambdas inside the generic lambdas that dtype dispatch uses).
template <class Out, class... In, class F, class... Ts>
void launch_elementwise(const char* op, cudaStream_t stream, const F& f, const Tensor& out, const Ts&... ins) {
  static_assert(sizeof...(In) == sizeof...(Ts), "one storage type per input tensor");
  launch_elementwise_impl<Out, In...>(op, stream, f, out, std::array<const Tensor*, sizeof...(In)>{&ins...},
                                      std::index_sequence_for<In...>{});
}

}  // namespace wick::cuda
