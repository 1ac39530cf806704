// max/avg pooling over contiguous NCHW planes, one plane per work item. Max keeps NaN
// (as PyTorch: a NaN anywhere in the window wins) and pools any dtype; avg sums in the
// compute type and divides by the window area clipped to the padded input
// (count_include_pad) or to the real input.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/convert.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"

namespace wick {
namespace {

template <class T>
void pool_kernel(const PoolParams& p, const Tensor& x, const Tensor& out) {
  using C = compute_t<T>;
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3), ho = out.dim(2), wo = out.dim(3);
  const T* src_all = static_cast<const T*>(x.data());
  T* dst_all = static_cast<T*>(out.mutable_data());
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / (ho * wo * p.kernel[0] * p.kernel[1]));
  cpu::parallel_for(planes, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t pl = p0; pl < p1; ++pl) {
      const T* src = src_all + pl * h * w;
      T* dst = dst_all + pl * ho * wo;
      for (int64_t oh = 0; oh < ho; ++oh) {
        int64_t h0 = oh * p.stride[0] - p.padding[0], h1 = std::min(h0 + p.kernel[0], h + p.padding[0]);
        const int64_t area_h = h1 - h0;  // inside the padded input, for count_include_pad
        h0 = std::max<int64_t>(h0, 0);
        h1 = std::min(h1, h);
        for (int64_t ow = 0; ow < wo; ++ow) {
          int64_t w0 = ow * p.stride[1] - p.padding[1], w1 = std::min(w0 + p.kernel[1], w + p.padding[1]);
          const int64_t area_w = w1 - w0;
          w0 = std::max<int64_t>(w0, 0);
          w1 = std::min(w1, w);
          if (p.kind == PoolKind::Max) {
            C m = std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                       : std::numeric_limits<C>::lowest();
            for (int64_t i = h0; i < h1; ++i)
              for (int64_t j = w0; j < w1; ++j) {
                const C v = convert<C>(src[i * w + j]);
                if constexpr (std::is_floating_point_v<C>) {
                  if (v > m || std::isnan(v)) m = v;
                } else {
                  m = std::max(m, v);
                }
              }
            dst[oh * wo + ow] = convert<T>(m);
          } else if constexpr (std::is_floating_point_v<C>) {
            C sum = 0;
            for (int64_t i = h0; i < h1; ++i)
              for (int64_t j = w0; j < w1; ++j) sum += convert<C>(src[i * w + j]);
            const int64_t count = p.count_include_pad ? area_h * area_w : (h1 - h0) * (w1 - w0);
            dst[oh * wo + ow] = convert<T>(sum / C(count));
          }
        }
      }
    }
  });
}

}  // namespace

void CpuBackend::pool2d(const PoolParams& p, const Tensor& x, const Tensor& out) {
  WICK_CHECK(x.rank() == 4 && out.rank() == 4 && x.is_contiguous() && out.is_contiguous(), Internal,
             "pool2d (cpu): expected contiguous 4-D NCHW operands, got ", x.shape(), " and ", out.shape());
  if (p.kind == PoolKind::Avg) {
    dispatch_float(x.dtype(), "avg_pool2d", [&]<class T>() { pool_kernel<T>(p, x, out); });
  } else {
    dispatch(x.dtype(), [&]<class T>() { pool_kernel<T>(p, x, out); });
  }
}

}  // namespace wick
