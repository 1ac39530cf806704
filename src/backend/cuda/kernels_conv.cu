// Convolution on CUDA: im2col + cuBLAS GEMM for conv, cuBLAS GEMM + col2im for the
// transposed conv, with the semantics of the CPU backend (src/backend/cpu/cpu_conv.cpp).
// The front end passes contiguous NCHW operands (1-D convs as H = 1) and the optional
// bias in p.bias; every size is already checked.
//
// Precision: f32 GEMMs run CUBLAS_COMPUTE_32F (exact f32; TF32 only when
// wick::allow_tf32()), f64 CUBLAS_COMPUTE_64F, f16/bf16 use 16-bit operands with f32
// accumulation. For conv the output starts as the bias (exact: the bias has the output's
// dtype) and the GEMM adds onto it with beta = 1, so a 16-bit output is rounded once.
// For the transposed conv the GEMM writes an f32 (or f64) column buffer, and col2im
// gathers each output pixel's taps in a fixed order from the bias, rounding once: no
// atomics, deterministic, and the same summation order as the CPU.
//
// f16/bf16 and f32 forward convs with groups == 1 take the implicit GEMM of
// kernels_conv_igemm.cu instead (no column buffer), unless their sizes exceed its 32-bit
// index math: f32 on TF32 tensor cores while wick::allow_tf32() is on (as cuDNN's default
// in PyTorch), else exact f32 on FFMA. f64, transposed and grouped convs (and what the
// implicit GEMM declines) take im2col + cuBLAS.
//
// Batching: images go through in chunks whose column buffer stays under kColBudget; one
// strided-batched GEMM covers either all images of a chunk (groups == 1) or all groups
// of one image.
#include <algorithm>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/kernels_conv_igemm.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/offset_calc.cuh"
#include "wick/memory.h"
#include "wick/tensor.h"

namespace wick {

using namespace cuda;

namespace {

constexpr size_t kColBudget = size_t(256) << 20;  // bytes of column buffer per chunk

// The image side (h x w: the conv input, or the transposed conv output) and the column
// side (ho x wo positions per kernel tap: the conv output, or the transposed conv input).
template <class I>
struct ConvGeom {
  I h, w, kh, kw, ho, wo;
  I sh, sw, ph, pw, dh, dw;
  __host__ __device__ I taps() const { return kh * kw; }
  __host__ __device__ I positions() const { return ho * wo; }
};

// Divides by the output width: a multiply-high for 32-bit indices, plain division else.
template <class I>
struct WidthDiv {
  I d;
  FastDiv32 fast;
  explicit WidthDiv(I divisor) : d(divisor), fast(std::is_same_v<I, uint32_t> ? uint32_t(divisor) : 1u) {}
  __device__ __forceinline__ I div(I n) const {
    if constexpr (std::is_same_v<I, uint32_t>)
      return fast.div(n);
    else
      return n / d;
  }
};

// col[r * P + p] = img[bc][oh*sh - ph + i*dh][ow*sw - pw + j*dw], or 0 in the padding,
// for column row r = bc * taps + t (bc over images x channels of the chunk, tap t = (i, j)).
// A block takes whole rows (grid-stride over rows in x, positions split over y): the
// row's (bc, i, j) cost a few divisions per row, and each position one multiply-high for
// (oh, ow). (Decomposing a flat index per element took eight integer divisions per
// element, which made im2col compute-bound on the H200.)
template <class I, class D>
__global__ void im2col_kernel(I rows, ConvGeom<I> g, WidthDiv<I> wo_div, const D* __restrict__ img,
                              D* __restrict__ col) {
  using S = std::make_signed_t<I>;
  const I P = g.positions(), taps = g.taps();
  for (I r = blockIdx.x; r < rows; r += gridDim.x) {
    const I t = r % taps, bc = r / taps;
    const S y0 = S((t / g.kw) * g.dh) - S(g.ph), x0 = S((t % g.kw) * g.dw) - S(g.pw);
    const D* src = img + bc * g.h * g.w;
    D* dst = col + r * P;
    for (I p = I(blockIdx.y) * blockDim.x + threadIdx.x; p < P; p += I(gridDim.y) * blockDim.x) {
      const I oh = wo_div.div(p), ow = p - oh * g.wo;
      const S y = S(oh * g.sh) + y0, x = S(ow * g.sw) + x0;
      D v = from_compute<D>(dcompute_t<D>(0));
      if (y >= 0 && y < S(g.h) && x >= 0 && x < S(g.w)) v = src[I(y) * g.w + I(x)];
      dst[p] = v;
    }
  }
}

// The adjoint of im2col as a gather: out[bc][y][x] = bias[c] + the sum over taps (i, j)
// (in order) of col[(bc * taps + t) * P + oh * wo + ow] where y = oh*sh - ph + i*dh and
// x = ow*sw - pw + j*dw.
template <class I, class D, class A>
__global__ void col2im_kernel(I total, I channels, ConvGeom<I> g, const A* __restrict__ col, const D* __restrict__ bias,
                              D* __restrict__ out) {
  using S = std::make_signed_t<I>;
  const I step = I(gridDim.x) * blockDim.x;
  const I P = g.positions(), taps = g.taps();
  for (I idx = I(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += step) {
    const I x = idx % g.w, y = (idx / g.w) % g.h, bc = idx / (g.w * g.h);
    A acc = bias ? A(to_compute(bias[bc % channels])) : A(0);
    const A* cb = col + bc * taps * P;
    for (I i = 0; i < g.kh; ++i) {
      const S ty = S(y + g.ph) - S(i * g.dh);
      if (ty < 0 || ty % S(g.sh) != 0) continue;
      const I oh = I(ty / S(g.sh));
      if (oh >= g.ho) continue;
      for (I j = 0; j < g.kw; ++j) {
        const S tx = S(x + g.pw) - S(j * g.dw);
        if (tx < 0 || tx % S(g.sw) != 0) continue;
        const I ow = I(tx / S(g.sw));
        if (ow >= g.wo) continue;
        acc += cb[(i * g.kw + j) * P + oh * g.wo + ow];
      }
    }
    out[idx] = from_compute<D>(acc);
  }
}

// out[i] = bias[(i / plane) % channels]: the starting value the conv GEMM adds onto.
template <class D>
__global__ void fill_bias_kernel(int64_t total, int64_t plane, int64_t channels, const D* __restrict__ bias,
                                 D* __restrict__ out) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step)
    out[i] = bias[(i / plane) % channels];
}

template <class D>
constexpr cudaDataType cuda_type() {
  if constexpr (std::is_same_v<D, float>)
    return CUDA_R_32F;
  else if constexpr (std::is_same_v<D, double>)
    return CUDA_R_64F;
  else if constexpr (std::is_same_v<D, __half>)
    return CUDA_R_16F;
  else
    return CUDA_R_16BF;
}

const char* cublas_status(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "alloc failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "arch mismatch";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    default: return "error";
  }
}

// Column-major strided-batched C (m x n) = op(A) op(B) + beta C with operand storage
// types TA/TB (= D) and TC, computing in the precision D calls for.
template <class D, class TC>
void gemm_batched(CudaBackend& be, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
                  const D* a, int64_t lda, int64_t stride_a, const D* b, int64_t ldb, int64_t stride_b, bool accumulate,
                  TC* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  WICK_CHECK(std::max({m, n, k, lda, ldb, ldc, batch}) < (int64_t(1) << 31), Unsupported, "conv (cuda): GEMM size ", m,
             "x", n, "x", k, " exceeds cuBLAS's 32-bit dimensions");
  cublasStatus_t st;
  if constexpr (std::is_same_v<D, double>) {
    const double alpha = 1.0, beta = accumulate ? 1.0 : 0.0;
    st = cublasGemmStridedBatchedEx(be.cublas(), ta, tb, int(m), int(n), int(k), &alpha, a, CUDA_R_64F, int(lda),
                                    stride_a, b, CUDA_R_64F, int(ldb), stride_b, &beta, c, CUDA_R_64F, int(ldc),
                                    stride_c, int(batch), CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT);
  } else {
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    const cublasComputeType_t ct =
        std::is_same_v<D, float> && allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    st = cublasGemmStridedBatchedEx(be.cublas(), ta, tb, int(m), int(n), int(k), &alpha, a, cuda_type<D>(), int(lda),
                                    stride_a, b, cuda_type<D>(), int(ldb), stride_b, &beta, c, cuda_type<TC>(),
                                    int(ldc), stride_c, int(batch), ct, CUBLAS_GEMM_DEFAULT);
  }
  if (st != CUBLAS_STATUS_SUCCESS)
    fail(ErrorKind::Device, "conv (cuda): cublasGemmStridedBatchedEx failed: ", cublas_status(st));
}

template <class I>
ConvGeom<I> make_geom(const ConvParams& p, const Tensor& image, const Tensor& cols, const Tensor& weight) {
  return ConvGeom<I>{I(image.dim(2)), I(image.dim(3)), I(weight.dim(2)), I(weight.dim(3)),
                     I(cols.dim(2)),  I(cols.dim(3)),  I(p.stride[0]),   I(p.stride[1]),
                     I(p.padding[0]), I(p.padding[1]), I(p.dilation[0]), I(p.dilation[1])};
}

// Runs f.template operator()<I>(geometry) with I = uint32_t when every index of the
// chunk's buffers (largest `extent` elements) fits, int64_t otherwise.
template <class F>
void with_geom(const ConvParams& p, const Tensor& image, const Tensor& cols, const Tensor& weight, int64_t extent,
               F&& f) {
  if (extent < (int64_t(1) << 31))
    f.template operator()<uint32_t>(make_geom<uint32_t>(p, image, cols, weight));
  else
    f.template operator()<int64_t>(make_geom<int64_t>(p, image, cols, weight));
}

template <class T>
void conv_kernel(CudaBackend& be, const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) {
  using D = dev_t<T>;
  using A = dcompute_t<D>;  // the transposed conv's column buffer (f32 for 16-bit floats)
  cudaStream_t stream = be.stream();
  const int64_t n = x.dim(0), groups = p.groups, c_in = x.dim(1), c_out = out.dim(1);
  const int64_t cig = c_in / groups, cog = c_out / groups;
  const int64_t kh = weight.dim(2), kw = weight.dim(3), taps = kh * kw;
  const int64_t in_plane = x.dim(2) * x.dim(3), out_plane = out.dim(2) * out.dim(3);
  const D* xd = dptr<const D>(x) + x.offset();
  const D* wd = dptr<const D>(weight) + weight.offset();
  const D* bias = p.bias.defined() ? dptr<const D>(p.bias) + p.bias.offset() : nullptr;
  D* od = dptr<D>(out) + out.offset();

  // f16/bf16 and f32 forward convs run as an implicit GEMM (tensor cores; exact f32 on
  // FFMA unless allow_tf32()), bias included, without the column buffer; shapes it
  // declines fall through to im2col + cuBLAS.
  if constexpr (is_dev_half_v<D> || std::is_same_v<D, float>)
    if (!p.transposed && groups == 1 && conv2d_igemm(be, p, x, weight, out)) return;

  if (!p.transposed) {
    const int64_t P = out_plane, K = cig * taps;
    // A 1x1 stride-1 unpadded conv needs no im2col: the image is the column matrix.
    const bool direct =
        taps == 1 && p.stride == (std::array<int64_t, 2>{1, 1}) && p.padding == (std::array<int64_t, 2>{0, 0});
    const int64_t per_image = c_in * taps * P;  // column elements per image
    const int64_t chunk = direct ? n : std::clamp<int64_t>(int64_t(kColBudget / sizeof(D)) / per_image, 1, n);
    std::shared_ptr<void> col_buf = direct ? nullptr : be.scratch(size_t(chunk * per_image) * sizeof(D));
    if (bias) {
      fill_bias_kernel<<<std::min(grid_for(out.numel(), 4), resident_blocks()), kThreads, 0, stream>>>(out.numel(), P,
                                                                                                       c_out, bias, od);
      check_launch("conv");
    }
    for (int64_t b0 = 0; b0 < n; b0 += chunk) {
      const int64_t nb = std::min(chunk, n - b0);
      const D* col = xd + b0 * c_in * in_plane;
      if (!direct) {
        D* cd = static_cast<D*>(col_buf.get());
        const int64_t total = nb * per_image, rows = nb * c_in * taps;
        // Blocks along rows (up to 65535 at once), positions split over y only when there
        // are too few rows to fill the GPU.
        const unsigned bx = unsigned(std::min<int64_t>(rows, 65535));
        const unsigned by =
            unsigned(std::clamp<int64_t>(int64_t(resident_blocks()) / bx, 1, (P + kThreads - 1) / kThreads));
        with_geom(p, x, out, weight, std::max(total, nb * c_in * in_plane), [&]<class I>(const ConvGeom<I>& g) {
          im2col_kernel<I, D><<<dim3(bx, by), kThreads, 0, stream>>>(I(rows), g, WidthDiv<I>(g.wo), col, cd);
        });
        check_launch("conv");
        col = cd;
      }
      D* ob = od + b0 * c_out * P;
      // Row-major out_g (cog x P) = W_g (cog x K) col_g (K x P), i.e. column-major
      // out_g^T (P x cog) = col_g^T (P x K) W_g^T (K x cog).
      if (groups == 1) {
        gemm_batched<D>(be, CUBLAS_OP_N, CUBLAS_OP_N, P, cog, K, col, P, K * P, wd, K, 0, bias != nullptr, ob, P,
                        c_out * P, nb);
      } else {
        for (int64_t b = 0; b < nb; ++b)
          gemm_batched<D>(be, CUBLAS_OP_N, CUBLAS_OP_N, P, cog, K, col + b * c_in * taps * P, P, K * P, wd, K, cog * K,
                          bias != nullptr, ob + b * c_out * P, P, cog * P, groups);
      }
    }
  } else {
    // col_g (cog*taps x P) = W_g^T x_g with W_g (cig x cog*taps), x_g (cig x P), P the
    // input plane; column-major: col_g^T (P x cog*taps) = x_g^T (P x cig) W_g (cig x cog*taps).
    const int64_t P = in_plane, M = cog * taps;
    const int64_t per_image = c_out * taps * P;
    const int64_t chunk = std::clamp<int64_t>(int64_t(kColBudget / sizeof(A)) / per_image, 1, n);
    std::shared_ptr<void> col_buf = be.scratch(size_t(chunk * per_image) * sizeof(A));
    A* cd = static_cast<A*>(col_buf.get());
    for (int64_t b0 = 0; b0 < n; b0 += chunk) {
      const int64_t nb = std::min(chunk, n - b0);
      const D* xb = xd + b0 * c_in * P;
      if (groups == 1) {
        gemm_batched<D>(be, CUBLAS_OP_N, CUBLAS_OP_T, P, M, cig, xb, P, c_in * P, wd, M, 0, false, cd, P,
                        c_out * taps * P, nb);
      } else {
        for (int64_t b = 0; b < nb; ++b)
          gemm_batched<D>(be, CUBLAS_OP_N, CUBLAS_OP_T, P, M, cig, xb + b * c_in * P, P, cig * P, wd, M, cig * M, false,
                          cd + b * c_out * taps * P, P, M * P, groups);
      }
      const int64_t total = nb * c_out * out_plane;
      with_geom(p, out, x, weight, std::max(total, nb * per_image), [&]<class I>(const ConvGeom<I>& g) {
        col2im_kernel<I, D, A><<<std::min(grid_for(total, 4), resident_blocks()), kThreads, 0, stream>>>(
            I(total), I(c_out), g, cd, bias, od + b0 * c_out * out_plane);
      });
      check_launch("conv_transpose");
    }
  }
}

}  // namespace

void CudaBackend::conv(const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) {
  WICK_CHECK(x.rank() == 4 && weight.rank() == 4 && out.rank() == 4 && x.is_contiguous() && weight.is_contiguous() &&
                 out.is_contiguous() && (!p.bias.defined() || p.bias.is_contiguous()),
             Internal, "conv (cuda): expected contiguous 4-D NCHW operands, got ", x.shape(), ", ", weight.shape(),
             ", ", out.shape());
  activate();
  if (out.numel() == 0) return;
  dispatch_float(x.dtype(), "conv", [&]<class T>() { conv_kernel<T>(*this, p, x, weight, out); });
}

}  // namespace wick
