// max/avg 2-D pooling on CUDA over contiguous NCHW input, one thread per output element,
// with the semantics of the CPU backend (src/backend/cpu/cpu_pool.cpp): max keeps NaN
// (a NaN anywhere in the window wins, as PyTorch) and pools any dtype; avg sums in the
// compute type and divides by the window clipped to the padded input
// (count_include_pad) or to the real input. The front end caps padding at half the
// kernel, so every window holds at least one real element.
#include <algorithm>
#include <limits>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/launch.cuh"
#include "wick/tensor.h"

namespace wick {

using namespace cuda;

namespace {

template <class I>
struct PoolGeom {
  I h, w, ho, wo, kh, kw, sh, sw, ph, pw;
};

template <class I, class D, bool kMax>
__global__ void pool2d_kernel(I total, PoolGeom<I> g, bool count_include_pad, const D* __restrict__ x,
                              D* __restrict__ out) {
  using C = dcompute_t<D>;
  using S = std::make_signed_t<I>;
  const I step = I(gridDim.x) * blockDim.x;
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += step) {
    const I ow = idx % g.wo, oh = (idx / g.wo) % g.ho, plane = idx / (g.wo * g.ho);
    S h0 = S(oh * g.sh) - S(g.ph), w0 = S(ow * g.sw) - S(g.pw);
    S h1 = std::min(h0 + S(g.kh), S(g.h + g.ph)), w1 = std::min(w0 + S(g.kw), S(g.w + g.pw));
    const S area = (h1 - h0) * (w1 - w0);  // inside the padded input
    h0 = std::max(h0, S(0));
    w0 = std::max(w0, S(0));
    h1 = std::min(h1, S(g.h));
    w1 = std::min(w1, S(g.w));
    const D* src = x + plane * g.h * g.w;
    if constexpr (kMax) {
      C m;
      if constexpr (std::numeric_limits<C>::has_infinity)
        m = -std::numeric_limits<C>::infinity();
      else
        m = std::numeric_limits<C>::lowest();
      for (S i = h0; i < h1; ++i)
        for (S j = w0; j < w1; ++j) {
          const C v = to_compute(src[I(i) * g.w + I(j)]);
          if constexpr (std::is_floating_point_v<C>) {
            if (v > m || v != v) m = v;
          } else {
            m = v > m ? v : m;
          }
        }
      out[idx] = from_compute<D>(m);
    } else {
      C sum = 0;
      for (S i = h0; i < h1; ++i)
        for (S j = w0; j < w1; ++j) sum += to_compute(src[I(i) * g.w + I(j)]);
      const S count = count_include_pad ? area : (h1 - h0) * (w1 - w0);
      out[idx] = from_compute<D>(sum / C(count));
    }
  }
}

template <class T>
void pool_launch(cudaStream_t stream, const PoolParams& p, const Tensor& x, const Tensor& out) {
  using D = dev_t<T>;
  const int64_t total = out.numel();
  auto run = [&]<class I>() {
    const PoolGeom<I> g{I(x.dim(2)),    I(x.dim(3)),    I(out.dim(2)),  I(out.dim(3)),   I(p.kernel[0]),
                        I(p.kernel[1]), I(p.stride[0]), I(p.stride[1]), I(p.padding[0]), I(p.padding[1])};
    const unsigned blocks = std::min(grid_for(total), 132u * 16u);
    const D* xd = dptr<const D>(x) + x.offset();
    D* od = dptr<D>(out) + out.offset();
    if (p.kind == PoolKind::Max) {
      pool2d_kernel<I, D, true><<<blocks, kThreads, 0, stream>>>(I(total), g, p.count_include_pad, xd, od);
    } else if constexpr (is_float_v<T>) {
      pool2d_kernel<I, D, false><<<blocks, kThreads, 0, stream>>>(I(total), g, p.count_include_pad, xd, od);
    }
  };
  // Signed 32-bit math needs every index, padded coordinates included, below 2^31.
  if (std::max(x.numel(), total) + 2 * (p.padding[0] + p.padding[1]) < (int64_t(1) << 31))
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
