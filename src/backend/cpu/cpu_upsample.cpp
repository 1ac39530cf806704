// Nearest and bilinear resampling of contiguous NCHW planes to out's H x W. Source
// indices and weights are computed once per output row/column in PyTorch's precision
// (float for nearest; compute_t<T> for bilinear) so results match it bit for bit where
// the arithmetic allows. Planes are split over threads.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/convert.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"

namespace wick {
namespace {

// PyTorch 'nearest': src = min(floor(dst * (float)in / out), in - 1).
std::vector<int64_t> nearest_indices(int64_t in, int64_t out) {
  std::vector<int64_t> idx(static_cast<size_t>(out));
  const float scale = float(in) / float(out);
  for (int64_t o = 0; o < out; ++o)
    idx[size_t(o)] = in == out ? o : std::min(int64_t(std::floor(float(o) * scale)), in - 1);
  return idx;
}

// Linear interpolation taps along one axis: src index i0, its neighbour i1 (i0 at the
// last index) and the weight l1 of i1 (l0 = 1 - l1).
template <class C>
struct Taps {
  std::vector<int64_t> i0, i1;
  std::vector<C> l0, l1;
};
template <class C>
Taps<C> linear_taps(int64_t in, int64_t out, bool align_corners) {
  Taps<C> t;
  const C scale = align_corners ? (out > 1 ? C(in - 1) / C(out - 1) : C(0)) : C(in) / C(out);
  for (int64_t o = 0; o < out; ++o) {
    const C real = align_corners ? scale * C(o) : std::max(scale * (C(o) + C(0.5)) - C(0.5), C(0));
    const int64_t i0 = std::min(int64_t(std::floor(real)), in - 1);
    const C l1 = std::clamp(real - C(i0), C(0), C(1));
    t.i0.push_back(i0);
    t.i1.push_back(i0 + (i0 < in - 1 ? 1 : 0));
    t.l0.push_back(C(1) - l1);
    t.l1.push_back(l1);
  }
  return t;
}

template <class T>
void upsample_kernel(const UpsampleParams& p, const Tensor& x, const Tensor& out) {
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3), ho = out.dim(2), wo = out.dim(3);
  const T* src_all = static_cast<const T*>(x.data());
  T* dst_all = static_cast<T*>(out.mutable_data());
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / (ho * wo));
  if (p.mode == UpsampleMode::Nearest) {
    const std::vector<int64_t> ih = nearest_indices(h, ho), iw = nearest_indices(w, wo);
    cpu::parallel_for(planes, grain, [&](int64_t p0, int64_t p1) {
      for (int64_t pl = p0; pl < p1; ++pl)
        for (int64_t oh = 0; oh < ho; ++oh) {
          const T* s = src_all + pl * h * w + ih[size_t(oh)] * w;
          T* d = dst_all + (pl * ho + oh) * wo;
          for (int64_t ow = 0; ow < wo; ++ow) d[ow] = s[iw[size_t(ow)]];
        }
    });
  } else if constexpr (is_float_v<T>) {
    using C = compute_t<T>;
    const Taps<C> th = linear_taps<C>(h, ho, p.align_corners), tw = linear_taps<C>(w, wo, p.align_corners);
    cpu::parallel_for(planes, grain, [&](int64_t p0, int64_t p1) {
      for (int64_t pl = p0; pl < p1; ++pl)
        for (int64_t oh = 0; oh < ho; ++oh) {
          const T* r0 = src_all + pl * h * w + th.i0[size_t(oh)] * w;
          const T* r1 = src_all + pl * h * w + th.i1[size_t(oh)] * w;
          const C a = th.l0[size_t(oh)], b = th.l1[size_t(oh)];
          T* d = dst_all + (pl * ho + oh) * wo;
          for (int64_t ow = 0; ow < wo; ++ow) {
            const size_t k = size_t(ow);
            const C top = tw.l0[k] * convert<C>(r0[tw.i0[k]]) + tw.l1[k] * convert<C>(r0[tw.i1[k]]);
            const C bottom = tw.l0[k] * convert<C>(r1[tw.i0[k]]) + tw.l1[k] * convert<C>(r1[tw.i1[k]]);
            d[ow] = convert<T>(a * top + b * bottom);
          }
        }
    });
  }
}

}  // namespace

void CpuBackend::upsample(const UpsampleParams& p, const Tensor& x, const Tensor& out) {
  WICK_CHECK(x.rank() == 4 && out.rank() == 4 && x.is_contiguous() && out.is_contiguous(), Internal,
             "upsample (cpu): expected contiguous 4-D NCHW operands, got ", x.shape(), " and ", out.shape());
  if (p.mode == UpsampleMode::Bilinear) {
    dispatch_float(x.dtype(), "upsample_bilinear2d", [&]<class T>() { upsample_kernel<T>(p, x, out); });
  } else {
    dispatch(x.dtype(), [&]<class T>() { upsample_kernel<T>(p, x, out); });
  }
}

}  // namespace wick
