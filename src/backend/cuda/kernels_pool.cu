// max/avg 2-D pooling on CUDA over contiguous NCHW input with the semantics of the CPU backend
// (src/backend/cpu/cpu_pool.cpp): max keeps NaN (a NaN anywhere in the window wins, as PyTorch) and pools any dtype;
// avg sums in the compute type and divides by the window clipped to the padded input (count_include_pad) or to the real
// input. The front end caps padding at half the kernel, so every window holds at least one real element.
//
// Three kernels, picked on the host:
// - span (kh == kw == sw <= 4, no column padding, 16-byte aligned input rows: k2s2,
//   k3s3): a thread writes V = 16 / sizeof(D) outputs of one row with one 16-byte store
//   and reads, for each of its window rows, the contiguous V * kw input elements as kw
//   16-byte loads, all issued before the first use;
// - rows (any window, whole output vectors per row): V outputs per thread and one store,
//   scalar loads (unrolled and clamped for kw <= 3, a loop otherwise);
// - element (anything else: rows not a multiple of V, misaligned output, 64-bit indices):
//   one thread per output element.
// Every kernel reduces each window in the same order as the CPU (rows, then columns), so
// avg results match it bit for bit.
#include <algorithm>
#include <limits>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/row_vector.cuh"
#include "wick/tensor.h"

namespace wick {

using namespace cuda;

namespace {

template <class I>
struct PoolGeom {
  I h, w, ho, wo, kh, kw, sh, sw, ph, pw;
};

// The reduction of one window in the compute type: max (NaN wins) or sum.
template <class C, bool kMax>
__device__ __forceinline__ C pool_init() {
  if constexpr (!kMax)
    return C(0);
  else if constexpr (std::numeric_limits<C>::has_infinity)
    return -std::numeric_limits<C>::infinity();
  else
    return std::numeric_limits<C>::lowest();
}
template <bool kMax, class C>
__device__ __forceinline__ void pool_add(C& acc, C v) {
  if constexpr (!kMax)
    acc += v;
  else if constexpr (std::is_floating_point_v<C>)
    acc = (v > acc || v != v) ? v : acc;
  else
    acc = v > acc ? v : acc;
}

// 32-bit pooling geometry of the row-vector kernels (every index below 2^31).
struct PoolGeom32 {
  int h, w, kh, kw, sh, sw, ph, pw;
};

// One axis of a window: the real input range [lo, hi) of output index o, and the
// window's extent inside the padded input (for count_include_pad). S: a signed index type.
template <class S>
struct WindowSpan {
  S lo, hi, area;
};
template <class S>
__device__ __forceinline__ WindowSpan<S> window_span(S o, S stride, S pad, S k, S in) {
  S lo = o * stride - pad;
  S hi = lo + k < in + pad ? lo + k : in + pad;
  const S area = hi - lo;
  lo = lo > 0 ? lo : S(0);
  hi = hi < in ? hi : in;
  return {lo, hi, area};
}

template <class I, class D, bool kMax>
__global__ void pool2d_kernel(I total, PoolGeom<I> g, bool count_include_pad, const D* __restrict__ x,
                              D* __restrict__ out) {
  using C = dcompute_t<D>;
  using S = std::make_signed_t<I>;
  const I step = I(gridDim.x) * blockDim.x;
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += step) {
    const I ow = idx % g.wo, oh = (idx / g.wo) % g.ho, plane = idx / (g.wo * g.ho);
    const WindowSpan<S> wr = window_span(S(oh), S(g.sh), S(g.ph), S(g.kh), S(g.h));
    const WindowSpan<S> wc = window_span(S(ow), S(g.sw), S(g.pw), S(g.kw), S(g.w));
    const D* src = x + plane * g.h * g.w;
    C acc = pool_init<C, kMax>();
    for (S i = wr.lo; i < wr.hi; ++i)
      for (S j = wc.lo; j < wc.hi; ++j) pool_add<kMax>(acc, C(to_compute(src[I(i) * g.w + I(j)])));
    if constexpr (kMax) {
      out[idx] = from_compute<D>(acc);
    } else {
      const S count = count_include_pad ? wr.area * wc.area : (wr.hi - wr.lo) * (wc.hi - wc.lo);
      out[idx] = from_compute<D>(acc / C(count));
    }
  }
}

// The output vector of this thread of a row-vector pool kernel (vi >= g.vecs: none), where
// it lies and its window's input rows.
struct PoolVecTask {
  uint32_t vi;
  RowVecPos pos;
  WindowSpan<int> wr;
};
template <int V>
__device__ __forceinline__ PoolVecTask pool_vec_task(const RowVecGeom& g, const PoolGeom32& p) {
  PoolVecTask t;
  t.vi = blockIdx.x * blockDim.x + threadIdx.x;
  t.pos = row_vec_pos<V>(g, t.vi);  // past the end: harmless arithmetic, the caller returns
  t.wr = window_span(int(t.pos.oh), p.sh, p.ph, p.kh, p.h);
  return t;
}

// kh == kw == sw == K, pw == 0, x's rows 16-byte aligned. The V outputs of a thread read
// input columns [ow0 * K, (ow0 + V) * K): K whole vectors per window row (aligned as
// ow0 is a multiple of V, inside the row as wo * K <= w). Rows a window lacks (clipped
// by the row padding) load row h0 again and are left out of the reduction, so every
// load is unconditional and all K * K of them are in flight together.
template <class D, bool kMax, int K>
__global__ void __launch_bounds__(kThreads)
    pool_span_kernel(RowVecGeom g, PoolGeom32 p, bool count_include_pad, const D* __restrict__ x, D* __restrict__ out) {
  using C = dcompute_t<D>;
  constexpr int V = kRowVec<D>;
  const PoolVecTask t = pool_vec_task<V>(g, p);
  if (t.vi >= g.vecs) return;
  const RowVecPos pos = t.pos;
  const WindowSpan<int> wr = t.wr;
  const int rows = wr.hi - wr.lo;
  const D* src = x + (pos.plane * uint32_t(p.h)) * uint32_t(p.w) + pos.ow0 * uint32_t(K);
  RowVec<D> buf[K][K];  // [window row][vector]
#pragma unroll
  for (int r = 0; r < K; ++r) {
    const uint32_t row = uint32_t(wr.lo + (r < rows ? r : 0));
    const RowVec<D>* rp = reinterpret_cast<const RowVec<D>*>(src + row * uint32_t(p.w));
#pragma unroll
    for (int k = 0; k < K; ++k) buf[r][k] = rp[k];
  }
  RowVec<D> res;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    C acc = pool_init<C, kMax>();
#pragma unroll
    for (int r = 0; r < K; ++r) {
      C t = acc;
#pragma unroll
      for (int c = 0; c < K; ++c) {
        const int e = j * K + c;
        pool_add<kMax>(t, C(to_compute(buf[r][e / V].v[e % V])));
      }
      acc = r < rows ? t : acc;  // a select: rows past the window's end are left out
    }
    if constexpr (kMax)
      res.v[j] = from_compute<D>(acc);
    else
      res.v[j] = from_compute<D>(acc / C(count_include_pad ? wr.area * K : rows * K));
  }
  reinterpret_cast<RowVec<D>*>(out)[t.vi] = res;
}

// Any window; V outputs of one row per thread, one 16-byte store. Column windows are
// recomputed where used (a few integer ops) rather than kept in 2 * V registers. KW > 0: kw <= KW, and
// each window row's V * KW column loads are unrolled, clamped into the window and masked
// out of the reduction (all in flight together); KW == 0: a loop over the window.
template <class D, bool kMax, int KW>
__global__ void __launch_bounds__(kThreads)
    pool_rows_kernel(RowVecGeom g, PoolGeom32 p, bool count_include_pad, const D* __restrict__ x, D* __restrict__ out) {
  using C = dcompute_t<D>;
  constexpr int V = kRowVec<D>;
  const PoolVecTask t = pool_vec_task<V>(g, p);
  if (t.vi >= g.vecs) return;
  const RowVecPos pos = t.pos;
  const WindowSpan<int> wr = t.wr;
  const D* src = x + pos.plane * uint32_t(p.h) * uint32_t(p.w);
  C acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = pool_init<C, kMax>();
  if constexpr (KW > 0) {
    for (int i = wr.lo; i < wr.hi; ++i) {
      const D* row = src + uint32_t(i) * uint32_t(p.w);
      D vals[V][KW];
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const WindowSpan<int> ws = window_span(int(pos.ow0) + j, p.sw, p.pw, p.kw, p.w);
#pragma unroll
        for (int c = 0; c < KW; ++c) vals[j][c] = row[::min(ws.lo + c, ws.hi - 1)];
      }
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const WindowSpan<int> ws = window_span(int(pos.ow0) + j, p.sw, p.pw, p.kw, p.w);
#pragma unroll
        for (int c = 0; c < KW; ++c)
          if (c < ws.hi - ws.lo) pool_add<kMax>(acc[j], C(to_compute(vals[j][c])));
      }
    }
  } else {
    // Large windows: one output at a time (one live accumulator), rows then columns.
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const WindowSpan<int> ws = window_span(int(pos.ow0) + j, p.sw, p.pw, p.kw, p.w);
      for (int i = wr.lo; i < wr.hi; ++i) {
        const D* row = src + uint32_t(i) * uint32_t(p.w);
        for (int c = ws.lo; c < ws.hi; ++c) pool_add<kMax>(acc[j], C(to_compute(row[c])));
      }
    }
  }
  RowVec<D> res;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    if constexpr (kMax) {
      res.v[j] = from_compute<D>(acc[j]);
    } else {
      const WindowSpan<int> ws = window_span(int(pos.ow0) + j, p.sw, p.pw, p.kw, p.w);
      const int count = count_include_pad ? wr.area * ws.area : (wr.hi - wr.lo) * (ws.hi - ws.lo);
      res.v[j] = from_compute<D>(acc[j] / C(count));
    }
  }
  reinterpret_cast<RowVec<D>*>(out)[t.vi] = res;
}

template <class D, bool kMax>
void pool_rows_launch(cudaStream_t stream, const PoolParams& p, const Tensor& x, const Tensor& out) {
  const RowVecGeom g(out.numel(), out.dim(2), out.dim(3), kRowVec<D>);
  const PoolGeom32 pg{int(x.dim(2)),    int(x.dim(3)),    int(p.kernel[0]),  int(p.kernel[1]),
                      int(p.stride[0]), int(p.stride[1]), int(p.padding[0]), int(p.padding[1])};
  const D* xd = dptr<const D>(x) + x.offset();
  D* od = dptr<D>(out) + out.offset();
  const unsigned blocks = g.blocks(kThreads);
  const bool cip = p.count_include_pad;
  const int k = pg.kw;
  const bool span = pg.pw == 0 && pg.kh == k && pg.sw == k && k >= 2 && k <= 4 &&
                    (x.dim(3) * int64_t(sizeof(D))) % 16 == 0 && aligned16<D>(x);
  if (span && k == 2)
    pool_span_kernel<D, kMax, 2><<<blocks, kThreads, 0, stream>>>(g, pg, cip, xd, od);
  else if (span && k == 3)
    pool_span_kernel<D, kMax, 3><<<blocks, kThreads, 0, stream>>>(g, pg, cip, xd, od);
  else if (span && k == 4)
    pool_span_kernel<D, kMax, 4><<<blocks, kThreads, 0, stream>>>(g, pg, cip, xd, od);
  else if (kRowVec<D> <= 8 && k <= 2)  // 16 u8 outputs x kw unrolled loads cost 128+ registers
    pool_rows_kernel<D, kMax, kRowVec<D> <= 8 ? 2 : 0><<<blocks, kThreads, 0, stream>>>(g, pg, cip, xd, od);
  else if (kRowVec<D> <= 8 && k == 3)
    pool_rows_kernel<D, kMax, kRowVec<D> <= 8 ? 3 : 0><<<blocks, kThreads, 0, stream>>>(g, pg, cip, xd, od);
  else
    pool_rows_kernel<D, kMax, 0><<<blocks, kThreads, 0, stream>>>(g, pg, cip, xd, od);
}

template <class T>
void pool_launch(cudaStream_t stream, const PoolParams& p, const Tensor& x, const Tensor& out) {
  using D = dev_t<T>;
  const int64_t total = out.numel();
  // Signed 32-bit math needs every index, padded coordinates included, below 2^31.
  const int64_t max_index = std::max(x.numel(), total) + 2 * (p.padding[0] + p.padding[1]);
  if (row_vec_fits<D>(out, max_index)) {
    if (p.kind == PoolKind::Max)
      pool_rows_launch<D, true>(stream, p, x, out);
    else if constexpr (is_float_v<T>)
      pool_rows_launch<D, false>(stream, p, x, out);
    return;
  }
  auto run = [&]<class I>() {
    const PoolGeom<I> g{I(x.dim(2)),    I(x.dim(3)),    I(out.dim(2)),  I(out.dim(3)),   I(p.kernel[0]),
                        I(p.kernel[1]), I(p.stride[0]), I(p.stride[1]), I(p.padding[0]), I(p.padding[1])};
    const unsigned blocks = std::min(grid_for(total), resident_blocks());
    const D* xd = dptr<const D>(x) + x.offset();
    D* od = dptr<D>(out) + out.offset();
    if (p.kind == PoolKind::Max) {
      pool2d_kernel<I, D, true><<<blocks, kThreads, 0, stream>>>(I(total), g, p.count_include_pad, xd, od);
    } else if constexpr (is_float_v<T>) {
      pool2d_kernel<I, D, false><<<blocks, kThreads, 0, stream>>>(I(total), g, p.count_include_pad, xd, od);
    }
  };
  if (max_index < (int64_t(1) << 31))
    run.template operator()<uint32_t>();
  else
    run.template operator()<int64_t>();
}

}  // namespace

void CudaBackend::pool2d(const PoolParams& p, const Tensor& x, const Tensor& out) {
  WICK_CHECK(x.rank() == 4 && out.rank() == 4 && x.is_contiguous() && out.is_contiguous(), Internal,
             "pool2d (cuda): expected contiguous 4-D NCHW operands, got ", x.shape(), " and ", out.shape());
  activate();
  if (out.numel() == 0) return;
  if (p.kind == PoolKind::Avg)
    dispatch_float(x.dtype(), "avg_pool2d", [&]<class T>() { pool_launch<T>(stream_, p, x, out); });
  else
    dispatch(x.dtype(), [&]<class T>() { pool_launch<T>(stream_, p, x, out); });
  check_launch(p.kind == PoolKind::Max ? "max_pool2d" : "avg_pool2d");
}

}  // namespace wick
