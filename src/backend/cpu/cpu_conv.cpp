// Convolution on the CPU. Forward convs of f32/f16/bf16 with stride 1 along the width go to
// the direct kernel (cpu_conv_direct.cpp: no im2col). The rest here: im2col + GEMM (OpenBLAS)
// for conv, GEMM + col2im for the transposed conv. The front end passes contiguous NCHW
// tensors (1-D as H = 1) and has checked every size. f16/bf16 are converted to f32 buffers,
// computed, and rounded back once. Images run one after another (forward convs in L2-sized
// bands of output rows); im2col/col2im split rows/channels over the thread pool and the GEMM
// is threaded by OpenBLAS itself (nesting both would oversubscribe cores).
#include <cblas.h>

#include <algorithm>
#include <memory>

#include "backend/convert.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_conv_direct.h"
#include "backend/cpu/thread_pool.h"

namespace wick {
namespace {

// Row-major C (M x N) = A (M x K, or K x M if ta) * B (K x N, or N x K if tb) + beta * C.
template <class C>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const C* a, int64_t lda, const C* b, int64_t ldb, C beta,
          C* c, int64_t ldc) {
  const auto at = ta ? CblasTrans : CblasNoTrans, bt = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<C, float>)
    cblas_sgemm(CblasRowMajor, at, bt, int(m), int(n), int(k), 1.0f, a, int(lda), b, int(ldb), beta, c, int(ldc));
  else
    cblas_dgemm(CblasRowMajor, at, bt, int(m), int(n), int(k), 1.0, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

// The outputs o in [lo, hi) of a length-out_len axis whose input coordinate
// o * stride + offset lies inside [0, in_len); outside it the input is padding.
struct Range {
  int64_t lo, hi;
};
Range valid_range(int64_t out_len, int64_t in_len, int64_t stride, int64_t offset) {
  const int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t hi = in_len - offset <= 0 ? 0 : std::min(out_len, (in_len - offset + stride - 1) / stride);
  return {std::min(lo, hi), hi};
}

// The geometry of one convolution: the "image" side (H x W, the conv input or the
// transposed conv output) and the "column" side (Ho x Wo positions per kernel tap).
struct Geometry {
  int64_t h, w, kh, kw, ho, wo;
  std::array<int64_t, 2> stride, padding, dilation;
  int64_t taps() const { return kh * kw; }
};

// Output rows [oh0, oh1) of the column matrix, with rows of cn = (oh1 - oh0) * wo:
// col[(c, i, j)][(oh - oh0) * wo + ow] = img[c][oh*s - p + i*d][ow*s - p + j*d] or 0
// where that falls in the padding.
template <class C>
void im2col(const Geometry& g, int64_t channels, const C* img, int64_t oh0, int64_t oh1, C* col) {
  const int64_t rows = channels * g.taps(), cn = (oh1 - oh0) * g.wo;
  cpu::parallel_for(rows, std::max<int64_t>(1, cpu::kElementwiseGrain / cn), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r / g.taps(), i = r / g.kw % g.kh, j = r % g.kw;
      const C* src = img + c * g.h * g.w;
      C* dst = col + r * cn;
      const int64_t off_h = i * g.dilation[0] - g.padding[0], off_w = j * g.dilation[1] - g.padding[1];
      const Range rh = valid_range(g.ho, g.h, g.stride[0], off_h);
      const Range rw = valid_range(g.wo, g.w, g.stride[1], off_w);
      for (int64_t oh = oh0; oh < oh1; ++oh) {
        C* d = dst + (oh - oh0) * g.wo;
        if (oh < rh.lo || oh >= rh.hi) {
          std::fill(d, d + g.wo, C(0));
          continue;
        }
        const C* s = src + (oh * g.stride[0] + off_h) * g.w + off_w;
        std::fill(d, d + rw.lo, C(0));
        if (g.stride[1] == 1) {
          std::copy(s + rw.lo, s + rw.hi, d + rw.lo);
        } else {
          for (int64_t ow = rw.lo; ow < rw.hi; ++ow) d[ow] = s[ow * g.stride[1]];
        }
        std::fill(d + rw.hi, d + g.wo, C(0));
      }
    }
  });
}

// The adjoint of im2col: img[c][oh*s - p + i*d][ow*s - p + j*d] += col[(c, i, j)][oh, ow].
// Channels are split over threads; each writes only its own plane.
template <class C>
void col2im(const Geometry& g, int64_t channels, const C* col, C* img) {
  cpu::parallel_for(channels, std::max<int64_t>(1, cpu::kElementwiseGrain / (g.ho * g.wo * g.taps())),
                    [&](int64_t c0, int64_t c1) {
                      for (int64_t c = c0; c < c1; ++c) {
                        C* dst = img + c * g.h * g.w;
                        for (int64_t t = 0; t < g.taps(); ++t) {
                          const int64_t i = t / g.kw, j = t % g.kw;
                          const C* src = col + (c * g.taps() + t) * g.ho * g.wo;
                          const int64_t off_h = i * g.dilation[0] - g.padding[0];
                          const int64_t off_w = j * g.dilation[1] - g.padding[1];
                          const Range rh = valid_range(g.ho, g.h, g.stride[0], off_h);
                          const Range rw = valid_range(g.wo, g.w, g.stride[1], off_w);
                          for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
                            const C* s = src + oh * g.wo;
                            C* d = dst + (oh * g.stride[0] + off_h) * g.w + off_w;
                            for (int64_t ow = rw.lo; ow < rw.hi; ++ow) d[ow * g.stride[1]] += s[ow];
                          }
                        }
                      }
                    });
}

// Elements of src as compute type C: the tensor's own memory when T is C, else a
// converted copy held by `keep`.
template <class C, class T>
const C* as_compute(const T* src, int64_t n, std::unique_ptr<C[]>& keep) {
  if constexpr (std::is_same_v<C, T>) {
    return src;
  } else {
    keep = std::make_unique_for_overwrite<C[]>(size_t(n));
    cpu::parallel_for(n, cpu::kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) keep[i] = convert<C>(src[i]);
    });
    return keep.get();
  }
}

// Bytes of one band of the column matrix (see conv_kernel); about half an L2 cache.
constexpr int64_t kColumnBandBytes = int64_t(1) << 19;

template <class T>
void conv_kernel(const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) {
  using C = compute_t<T>;
  const int64_t n = x.dim(0), groups = p.groups;
  const int64_t c_in = x.dim(1), c_out = out.dim(1);
  const int64_t cig = c_in / groups, cog = c_out / groups;
  // Geometry: the image side is the conv input (or the transposed conv output).
  const Tensor& image = p.transposed ? out : x;
  const Tensor& cols = p.transposed ? x : out;
  const Geometry g{image.dim(2), image.dim(3), weight.dim(2), weight.dim(3), cols.dim(2),
                   cols.dim(3),  p.stride,     p.padding,     p.dilation};
  const int64_t in_plane = x.dim(2) * x.dim(3), out_plane = out.dim(2) * out.dim(3);
  const int64_t col_n = g.ho * g.wo;

  std::unique_ptr<C[]> w_keep, b_keep, x_keep, col_keep, out_keep;
  const C* w = as_compute<C>(static_cast<const T*>(weight.data()), weight.numel(), w_keep);
  const C* bias = p.bias.defined() ? as_compute<C>(static_cast<const T*>(p.bias.data()), c_out, b_keep) : nullptr;
  const T* x_all = static_cast<const T*>(x.data());
  T* out_all = static_cast<T*>(out.mutable_data());
  if constexpr (!std::is_same_v<C, T>) out_keep = std::make_unique_for_overwrite<C[]>(size_t(c_out * out_plane));

  // A 1x1 stride-1 unpadded conv needs no im2col: the image is already the column matrix.
  const bool direct = !p.transposed && g.taps() == 1 && p.stride == (std::array<int64_t, 2>{1, 1}) &&
                      p.padding == (std::array<int64_t, 2>{0, 0});
  // Forward convs build the column matrix a band of output rows at a time, sized to stay
  // in L2 between im2col and the GEMM that reads it (whole-image columns are several MB
  // and cost a round trip to memory). Transposed convs use the whole (cog * taps, col_n).
  const int64_t k_rows = cig * g.taps();
  const int64_t band =
      std::clamp<int64_t>(kColumnBandBytes / int64_t(sizeof(C)) / std::max<int64_t>(1, k_rows * g.wo), 1, g.ho);
  if (!direct)
    col_keep =
        std::make_unique_for_overwrite<C[]>(size_t(p.transposed ? cog * g.taps() * col_n : k_rows * band * g.wo));
  if constexpr (!std::is_same_v<C, T>) x_keep = std::make_unique_for_overwrite<C[]>(size_t(c_in * in_plane));

  for (int64_t b = 0; b < n; ++b) {
    const C* xb;
    if constexpr (std::is_same_v<C, T>) {
      xb = x_all + b * c_in * in_plane;
    } else {
      const T* src = x_all + b * c_in * in_plane;
      cpu::parallel_for(c_in * in_plane, cpu::kElementwiseGrain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) x_keep[i] = convert<C>(src[i]);
      });
      xb = x_keep.get();
    }
    C* ob;
    if constexpr (std::is_same_v<C, T>)
      ob = out_all + b * c_out * out_plane;
    else
      ob = out_keep.get();

    // Start from the bias (or 0): the GEMM accumulates onto it with beta = 1.
    cpu::parallel_for(c_out, std::max<int64_t>(1, cpu::kElementwiseGrain / out_plane), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) std::fill(ob + c * out_plane, ob + (c + 1) * out_plane, bias ? bias[c] : C(0));
    });

    for (int64_t gi = 0; gi < groups; ++gi) {
      const C* xg = xb + gi * cig * in_plane;
      C* og = ob + gi * cog * out_plane;
      if (!p.transposed) {
        // out_g (cog, col_n) += W_g (cog, cig * taps) @ col (cig * taps, col_n)
        const C* wg = w + gi * cog * k_rows;
        if (direct) {
          gemm<C>(false, false, cog, col_n, k_rows, wg, k_rows, xg, col_n, C(1), og, col_n);
          continue;
        }
        for (int64_t oh0 = 0; oh0 < g.ho; oh0 += band) {
          const int64_t oh1 = std::min(oh0 + band, g.ho), cn = (oh1 - oh0) * g.wo;
          im2col(g, cig, xg, oh0, oh1, col_keep.get());
          gemm<C>(false, false, cog, cn, k_rows, wg, k_rows, col_keep.get(), cn, C(1), og + oh0 * g.wo, col_n);
        }
      } else {
        // col (cog * taps, in_plane) = W_g^T, W_g (cig, cog * taps); then scatter-add.
        const C* wg = w + gi * cig * cog * g.taps();
        gemm<C>(true, false, cog * g.taps(), col_n, cig, wg, cog * g.taps(), xg, col_n, C(0), col_keep.get(), col_n);
        col2im(g, cog, col_keep.get(), og);
      }
    }

    if constexpr (!std::is_same_v<C, T>) {
      T* dst = out_all + b * c_out * out_plane;
      cpu::parallel_for(c_out * out_plane, cpu::kElementwiseGrain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) dst[i] = convert<T>(ob[i]);
      });
    }
  }
}

}  // namespace

void CpuBackend::conv(const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) {
  WICK_CHECK(x.rank() == 4 && weight.rank() == 4 && out.rank() == 4 && x.is_contiguous() && weight.is_contiguous() &&
                 out.is_contiguous(),
             Internal, "conv (cpu): expected contiguous 4-D NCHW operands, got ", x.shape(), ", ", weight.shape(), ", ",
             out.shape());
  if (cpu::conv_direct_applies(p, x, weight)) return cpu::conv_direct(p, x, weight, out);
  dispatch_float(x.dtype(), "conv", [&]<class T>() { conv_kernel<T>(p, x, weight, out); });
}

}  // namespace wick
