// Nearest and bilinear resampling on CUDA of contiguous NCHW planes to out's H x W (1-D
// arrives as H = 1), with the semantics of the CPU
// backend (src/backend/cpu/cpu_upsample.cpp) and PyTorch's source-index rules:
//   nearest:  src = min(floor(dst * (float)in / out), in - 1)   (float math)
//   bilinear: src = align_corners ? dst * (in-1)/(out-1) : max((dst + 0.5) * in/out - 0.5, 0)
// in the compute type (f32 for f32/f16/bf16, f64 for f64). Every product and sum goes
// through the _rn intrinsics so nvcc cannot contract them into FMAs: the results then
// round exactly as the CPU kernel's do.
//
// When out's rows hold whole 16-byte vectors (and every index fits 32 bits) a thread
// writes V = 16 / sizeof(D) outputs of one row with one vector store: the row's source
// index and plane are found once per vector (FastDiv32, no hardware division), the
// column sources per output, and the scalar loads (L1 hits: neighbours share sources)
// all issue before the store. Otherwise one thread per output element.
#include <algorithm>
#include <bit>
#include <numeric>
#include <type_traits>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/row_vector.cuh"
#include "wick/tensor.h"

namespace wick {

using namespace cuda;

namespace {

template <class C>
__device__ __forceinline__ C mul_rn(C a, C b) {
  if constexpr (std::is_same_v<C, float>)
    return __fmul_rn(a, b);
  else
    return __dmul_rn(a, b);
}
template <class C>
__device__ __forceinline__ C add_rn(C a, C b) {
  if constexpr (std::is_same_v<C, float>)
    return __fadd_rn(a, b);
  else
    return __dadd_rn(a, b);
}

template <class I>
struct ResampleGeom {
  I h, w, ho, wo;
};

// floor(o * scale) by one round-down conversion (the product is never negative), not a
// floor and a conversion.
template <class I>
__device__ __forceinline__ I nearest_src(I o, I in, I out, float scale) {
  const float f = __fmul_rn(float(o), scale);
  I s;
  if constexpr (std::is_same_v<I, uint32_t>)
    s = __float2uint_rd(f);
  else
    s = I(__float2ll_rd(f));
  return in == out ? o : (s < in - 1 ? s : in - 1);  // selects: no branch between loads
}

template <class I, class D>
__global__ void nearest_kernel(I total, ResampleGeom<I> g, float scale_h, float scale_w, const D* __restrict__ x,
                               D* __restrict__ out) {
  const I step = I(gridDim.x) * blockDim.x;
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += step) {
    const I ow = idx % g.wo, oh = (idx / g.wo) % g.ho, plane = idx / (g.wo * g.ho);
    const I ih = nearest_src(oh, g.h, g.ho, scale_h), iw = nearest_src(ow, g.w, g.wo, scale_w);
    out[idx] = x[(plane * g.h + ih) * g.w + iw];
  }
}

// Nearest column sources without float conversions where they are exact: when w / wo
// reduces to a / 2^e and wo * w < 2^24, float(o) * scale is exact in float, so PyTorch's
// floor(o * scale) is (o * a) >> e (x2: o >> 1; same size: o). Otherwise the float rule
// of nearest_src, whose conversions per output (I2F, F2I: 16 per clock per SM) bound the
// kernel below the memory speed.
struct DyadicRatio {
  uint32_t num = 0, shift = 0;  // num == 0: not dyadic, use the float rule
};
inline DyadicRatio dyadic_ratio(int64_t in, int64_t out) {
  if (out * in >= (int64_t(1) << 24)) return {};
  const int64_t g = std::gcd(in, out), den = out / g;
  if ((den & (den - 1)) != 0) return {};
  return {uint32_t(in / g), uint32_t(std::countr_zero(uint64_t(den)))};
}

template <class D, bool kDyadic>
__global__ void __launch_bounds__(kThreads)
    nearest_rows_kernel(RowVecGeom g, ResampleGeom<uint32_t> r, float scale_h, float scale_w, DyadicRatio ratio_w,
                        const D* __restrict__ x, D* __restrict__ out) {
  constexpr int V = kRowVec<D>;
  const uint32_t vi = blockIdx.x * blockDim.x + threadIdx.x;
  if (vi >= g.vecs) return;
  const RowVecPos pos = row_vec_pos<V>(g, vi);
  const D* src = x + (pos.plane * r.h + nearest_src(pos.oh, r.h, r.ho, scale_h)) * r.w;
  RowVec<D> res;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const uint32_t o = pos.ow0 + j;
    uint32_t s;
    if constexpr (kDyadic)
      s = (o * ratio_w.num) >> ratio_w.shift;
    else
      s = nearest_src(o, r.w, r.wo, scale_w);
    res.v[j] = src[s];
  }
  reinterpret_cast<RowVec<D>*>(out)[vi] = res;
}

// One axis' linear taps: indices i0, i1 (= i0 at the last index) and weights l0, l1.
template <class I, class C>
struct Tap {
  I i0, i1;
  C l0, l1;
};

template <class I, class C>
__device__ __forceinline__ Tap<I, C> linear_tap(I o, I in, C scale, bool align_corners) {
  // Both forms, then a select: no branch between the loads of an unrolled caller.
  const C corners = mul_rn(scale, C(o));
  C centers = add_rn(mul_rn(scale, add_rn(C(o), C(0.5))), C(-0.5));
  centers = centers > C(0) ? centers : C(0);
  const C real = align_corners ? corners : centers;
  I i0;
  if constexpr (std::is_same_v<C, float>)
    i0 = I(floorf(real));
  else
    i0 = I(::floor(real));
  i0 = i0 < in - 1 ? i0 : in - 1;
  C l1 = add_rn(real, -C(i0));
  l1 = l1 < C(0) ? C(0) : (l1 > C(1) ? C(1) : l1);
  return {i0, i0 + (i0 < in - 1 ? I(1) : I(0)), add_rn(C(1), -l1), l1};
}

template <class I, class D>
__global__ void bilinear_kernel(I total, ResampleGeom<I> g, dcompute_t<D> scale_h, dcompute_t<D> scale_w,
                                bool align_corners, const D* __restrict__ x, D* __restrict__ out) {
  using C = dcompute_t<D>;
  const I step = I(gridDim.x) * blockDim.x;
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += step) {
    const I ow = idx % g.wo, oh = (idx / g.wo) % g.ho, plane = idx / (g.wo * g.ho);
    const Tap<I, C> th = linear_tap(oh, g.h, scale_h, align_corners);
    const Tap<I, C> tw = linear_tap(ow, g.w, scale_w, align_corners);
    const D* r0 = x + (plane * g.h + th.i0) * g.w;
    const D* r1 = x + (plane * g.h + th.i1) * g.w;
    const C top = add_rn(mul_rn(tw.l0, C(to_compute(r0[tw.i0]))), mul_rn(tw.l1, C(to_compute(r0[tw.i1]))));
    const C bottom = add_rn(mul_rn(tw.l0, C(to_compute(r1[tw.i0]))), mul_rn(tw.l1, C(to_compute(r1[tw.i1]))));
    out[idx] = from_compute<D>(add_rn(mul_rn(th.l0, top), mul_rn(th.l1, bottom)));
  }
}

template <class D>
__global__ void __launch_bounds__(kThreads)
    bilinear_rows_kernel(RowVecGeom g, ResampleGeom<uint32_t> r, dcompute_t<D> scale_h, dcompute_t<D> scale_w,
                         bool align_corners, const D* __restrict__ x, D* __restrict__ out) {
  using C = dcompute_t<D>;
  constexpr int V = kRowVec<D>;
  const uint32_t vi = blockIdx.x * blockDim.x + threadIdx.x;
  if (vi >= g.vecs) return;
  const RowVecPos pos = row_vec_pos<V>(g, vi);
  const Tap<uint32_t, C> th = linear_tap(pos.oh, r.h, scale_h, align_corners);
  const D* r0 = x + (pos.plane * r.h + th.i0) * r.w;
  const D* r1 = x + (pos.plane * r.h + th.i1) * r.w;
  D a[V][2], b[V][2];  // the four taps of each output, loaded before any arithmetic
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const Tap<uint32_t, C> tw = linear_tap(pos.ow0 + j, r.w, scale_w, align_corners);
    a[j][0] = r0[tw.i0];
    a[j][1] = r0[tw.i1];
    b[j][0] = r1[tw.i0];
    b[j][1] = r1[tw.i1];
  }
  RowVec<D> res;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const Tap<uint32_t, C> tw = linear_tap(pos.ow0 + j, r.w, scale_w, align_corners);
    const C top = add_rn(mul_rn(tw.l0, C(to_compute(a[j][0]))), mul_rn(tw.l1, C(to_compute(a[j][1]))));
    const C bottom = add_rn(mul_rn(tw.l0, C(to_compute(b[j][0]))), mul_rn(tw.l1, C(to_compute(b[j][1]))));
    res.v[j] = from_compute<D>(add_rn(mul_rn(th.l0, top), mul_rn(th.l1, bottom)));
  }
  reinterpret_cast<RowVec<D>*>(out)[vi] = res;
}

// The bilinear scale along one axis, in the compute type, exactly as the CPU computes it.
template <class C>
C linear_scale(int64_t in, int64_t out, bool align_corners) {
  return align_corners ? (out > 1 ? C(in - 1) / C(out - 1) : C(0)) : C(in) / C(out);
}

template <class T>
void upsample_launch(cudaStream_t stream, const UpsampleParams& p, const Tensor& x, const Tensor& out) {
  using D = dev_t<T>;
  const int64_t total = out.numel(), h = x.dim(2), w = x.dim(3), ho = out.dim(2), wo = out.dim(3);
  const D* xd = dptr<const D>(x) + x.offset();
  D* od = dptr<D>(out) + out.offset();
  if (row_vec_fits<D>(out, std::max(total, x.numel()))) {
    const RowVecGeom g(total, ho, wo, kRowVec<D>);
    const ResampleGeom<uint32_t> r{uint32_t(h), uint32_t(w), uint32_t(ho), uint32_t(wo)};
    if (p.mode == UpsampleMode::Nearest) {
      const float sh = float(h) / float(ho), sw = float(w) / float(wo);
      const DyadicRatio ratio = dyadic_ratio(w, wo);
      if (ratio.num != 0)
        nearest_rows_kernel<D, true><<<g.blocks(kThreads), kThreads, 0, stream>>>(g, r, sh, sw, ratio, xd, od);
      else
        nearest_rows_kernel<D, false><<<g.blocks(kThreads), kThreads, 0, stream>>>(g, r, sh, sw, ratio, xd, od);
    } else if constexpr (is_float_v<T>) {
      using C = dcompute_t<D>;
      bilinear_rows_kernel<D><<<g.blocks(kThreads), kThreads, 0, stream>>>(
          g, r, linear_scale<C>(h, ho, p.align_corners), linear_scale<C>(w, wo, p.align_corners), p.align_corners, xd,
          od);
    }
    return;
  }
  const unsigned blocks = std::min(grid_for(total), resident_blocks());
  auto run = [&]<class I>() {
    const ResampleGeom<I> g{I(h), I(w), I(ho), I(wo)};
    if (p.mode == UpsampleMode::Nearest) {
      nearest_kernel<I, D>
          <<<blocks, kThreads, 0, stream>>>(I(total), g, float(h) / float(ho), float(w) / float(wo), xd, od);
    } else if constexpr (is_float_v<T>) {
      using C = dcompute_t<D>;
      bilinear_kernel<I, D><<<blocks, kThreads, 0, stream>>>(I(total), g, linear_scale<C>(h, ho, p.align_corners),
                                                             linear_scale<C>(w, wo, p.align_corners), p.align_corners,
                                                             xd, od);
    }
  };
  if (std::max(total, x.numel()) < (int64_t(1) << 31))
    run.template operator()<uint32_t>();
  else
    run.template operator()<int64_t>();
}

}  // namespace

void CudaBackend::upsample(const UpsampleParams& p, const Tensor& x, const Tensor& out) {
  WICK_CHECK(x.rank() == 4 && out.rank() == 4 && x.is_contiguous() && out.is_contiguous(), Internal,
             "upsample (cuda): expected contiguous 4-D NCHW operands, got ", x.shape(), " and ", out.shape());
  activate();
  if (out.numel() == 0) return;
  if (p.mode == UpsampleMode::Bilinear)
    dispatch_float(x.dtype(), "upsample_bilinear2d", [&]<class T>() { upsample_launch<T>(stream_, p, x, out); });
  else
    dispatch(x.dtype(), [&]<class T>() { upsample_launch<T>(stream_, p, x, out); });
  check_launch("upsample");
}

}  // namespace wick
