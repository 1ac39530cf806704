// The fused linear on CUDA (nn.h LinearEpilogue).
//
// A decode step multiplies one (or a few) rows of x by each weight matrix: then the whole
// linear is ONE kernel, a GEMV that reads every weight row once with 16-byte loads and writes
// the epilogue's value directly (bias, activation, the gate of a [gate; up] pair, residual),
// and can take the rms_norm before it too (each warp sums x^2 as it reads x anyway),
// instead of a cuBLAS GEMM (whose small-M kernels reached 1.2 TB/s on a 2048x2048 f16 matrix,
// with split-K reduce kernels after them) plus one elementwise kernel per extra. A warp owns
// two weight rows (two outputs, or the gate and up rows of one output, so the gate needs no
// second pass) and walks K in 16-byte chunks per lane, four chunks in flight per row.
// Split K: when the rows alone give too few warps to keep enough loads in flight (a
// 2048x2048 o_proj is 1024 warps, under 8 per multiprocessor), 2 or 4 warps of a block share
// the same two rows, each a slice of K, and add their sums through shared memory.
// Larger M: cuBLAS into a scratch product, then the epilogue kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_types.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/row_vector.cuh"
#include "backend/env_knob.h"
#include "backend/linear_epilogue.h"

namespace wick {

using namespace cuda;

namespace {

constexpr int kGemvMaxM = 8;    // rows of x the GEMV kernel is built for
constexpr int kGemvWarps = 4;   // warps per block
constexpr int kGemvUnroll = 4;  // 16-byte chunks per row in flight per lane

template <class T>
struct GemvArgs {
  const T* x;
  const T* norm;  // nullptr: x as it is; else rms_norm(x, norm, eps) is what multiplies
  float eps;
  const T* w;
  const T* bias;      // nullptr: none
  const T* residual;  // nullptr: none; (M, n_out) contiguous
  T* out;             // (M, n_out) contiguous
  int64_t ldx, ldw, K, n_out;
  int M;
  LinearEpilogue e;
};

// The 16 bytes of v as floats.
template <class T>
__device__ __forceinline__ void unpack16(const uint4& v, float (&f)[16 / sizeof(T)]) {
  if constexpr (std::is_same_v<T, float>) {
    const float4 a = reinterpret_cast<const float4&>(v);
    f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w;
  } else {
    using T2 = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
    const T2* a = reinterpret_cast<const T2*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float2 p;
      if constexpr (std::is_same_v<T, __half>)
        p = __half22float2(a[i]);
      else
        p = __bfloat1622float2(a[i]);
      f[2 * i] = p.x, f[2 * i + 1] = p.y;
    }
  }
}

// The x chunk a row multiplies: x itself, or x * g with sum x^2 added to ss (the norm's
// scale 1 / rms(x) is applied to the finished dot product, once).
template <class T, bool kNorm>
__device__ __forceinline__ void x_chunk(const uint4& xv, const uint4& gv, float (&xf)[16 / sizeof(T)], float& ss) {
  unpack16<T>(xv, xf);
  if constexpr (kNorm) {
    float g[16 / sizeof(T)];
    unpack16<T>(gv, g);
#pragma unroll
    for (int i = 0; i < int(16 / sizeof(T)); ++i) {
      ss = fmaf(xf[i], xf[i], ss);
      xf[i] *= g[i];
    }
  }
}

template <class T>
__device__ __forceinline__ float dot_chunk(const float (&w)[16 / sizeof(T)], const float (&xf)[16 / sizeof(T)]) {
  float s = 0;
#pragma unroll
  for (int i = 0; i < int(16 / sizeof(T)); ++i) s = fmaf(w[i], xf[i], s);
  return s;
}

template <class T, int MB, bool kNorm>
__global__ void __launch_bounds__(kGemvWarps * 32) gemv_kernel(GemvArgs<T> a, int split) {
  constexpr int V = 16 / sizeof(T);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int part = warp % split;  // this warp's slice of K among the `split` warps of its rows
  const int64_t group = int64_t(blockIdx.x) * (kGemvWarps / split) + warp / split;
  // The warp's two weight rows: gate and up of output `group` (glu), or outputs 2g, 2g + 1.
  // A group past the end still reaches the block's barrier below (valid = false).
  int64_t r0, r1;
  bool two, valid;
  if (a.e.glu) {
    valid = group < a.n_out;
    r0 = group;
    r1 = a.n_out + group;
    two = true;
  } else {
    r0 = 2 * group;
    valid = r0 < a.n_out;
    two = r0 + 1 < a.n_out;
    r1 = two ? r0 + 1 : r0;
  }
  float acc0[MB], acc1[MB], ss[MB];
#pragma unroll
  for (int m = 0; m < MB; ++m) acc0[m] = acc1[m] = ss[m] = 0.0f;
  if (valid) {
    const uint4* w0 = reinterpret_cast<const uint4*>(a.w + r0 * a.ldw);
    const uint4* w1 = reinterpret_cast<const uint4*>(a.w + r1 * a.ldw);
    const uint4* g = reinterpret_cast<const uint4*>(a.norm);
    const int64_t chunks = a.K / V;  // 16-byte chunks per row
    const int64_t c_end = chunks * (part + 1) / split;
    // One chunk index c of both rows against every row of x. The weights are widened once
    // for all rows (per row, the conversions cost more than the FMAs at 8 rows).
    auto step = [&](const uint4& wa, const uint4& wb, int64_t c) {
      const uint4 gv = kNorm ? __ldg(g + c) : uint4{};
      float w0f[V], w1f[V];
      unpack16<T>(wa, w0f);
      unpack16<T>(wb, w1f);
#pragma unroll
      for (int m = 0; m < MB; ++m) {
        if (m >= a.M) break;
        float xf[V];
        x_chunk<T, kNorm>(__ldg(reinterpret_cast<const uint4*>(a.x + m * a.ldx) + c), gv, xf, ss[m]);
        acc0[m] += dot_chunk<T>(w0f, xf);
        acc1[m] += dot_chunk<T>(w1f, xf);
      }
    };
    int64_t c = chunks * part / split + lane;
    for (; c + 32 * (kGemvUnroll - 1) < c_end; c += 32 * kGemvUnroll) {
      uint4 wa[kGemvUnroll], wb[kGemvUnroll];
#pragma unroll
      for (int u = 0; u < kGemvUnroll; ++u) {
        wa[u] = __ldcs(w0 + c + 32 * u);  // streamed: every weight byte is read once
        wb[u] = __ldcs(w1 + c + 32 * u);
      }
#pragma unroll
      for (int u = 0; u < kGemvUnroll; ++u) step(wa[u], wb[u], c + 32 * u);
    }
    for (; c < c_end; c += 32) step(__ldcs(w0 + c), __ldcs(w1 + c), c);
  }
#pragma unroll
  for (int m = 0; m < MB; ++m)
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      acc0[m] += __shfl_xor_sync(0xffffffffu, acc0[m], o);
      acc1[m] += __shfl_xor_sync(0xffffffffu, acc1[m], o);
      if (kNorm) ss[m] += __shfl_xor_sync(0xffffffffu, ss[m], o);
    }
  if (split > 1) {  // uniform over the block: every warp reaches the barrier
    __shared__ float parts[kGemvWarps][3][MB];
    if (lane == 0)
#pragma unroll
      for (int m = 0; m < MB; ++m) parts[warp][0][m] = acc0[m], parts[warp][1][m] = acc1[m], parts[warp][2][m] = ss[m];
    __syncthreads();
    if (part != 0) return;
    for (int p = 1; p < split; ++p)
#pragma unroll
      for (int m = 0; m < MB; ++m)
        acc0[m] += parts[warp + p][0][m], acc1[m] += parts[warp + p][1][m], ss[m] += parts[warp + p][2][m];
  }
  if (!valid || lane != 0) return;
  if (kNorm)  // rms_norm's 1 / sqrt(mean(x^2) + eps), on the whole dot product
#pragma unroll
    for (int m = 0; m < MB; ++m) {
      const float inv = rsqrtf(ss[m] / float(a.K) + a.eps);
      acc0[m] *= inv;
      acc1[m] *= inv;
    }
  auto bias = [&](int64_t r) { return a.bias ? to_compute(a.bias[r]) : 0.0f; };
  auto res = [&](int m, int64_t n) { return a.residual ? to_compute(a.residual[m * a.n_out + n]) : 0.0f; };
#pragma unroll
  for (int m = 0; m < MB; ++m) {
    if (m >= a.M) break;
    if (a.e.glu) {
      a.out[m * a.n_out + r0] = from_compute<T>(linear_output(a.e, acc0[m] + bias(r0), acc1[m] + bias(r1), res(m, r0)));
    } else {
      a.out[m * a.n_out + r0] = from_compute<T>(linear_output(a.e, acc0[m] + bias(r0), 0.0f, res(m, r0)));
      if (two) a.out[m * a.n_out + r1] = from_compute<T>(linear_output(a.e, acc1[m] + bias(r1), 0.0f, res(m, r1)));
    }
  }
}

// Warps that share two weight rows (1, 2 or 4): more while the rows alone leave the GPU
// short of warps (about 32 resident per multiprocessor at this kernel's 64 registers), as
// long as each warp keeps at least two 16-byte chunks per lane.
int gemv_split(int64_t groups, int64_t chunks) {
  const int64_t want = int64_t(current_sm_count()) * 32;
  int split = 1;
  while (split < kGemvWarps && groups * split < want && chunks / (2 * split) >= 64) split *= 2;
  return split;
}

template <class Y, class T>
__global__ void epilogue_kernel(const Y* __restrict__ y, int64_t ld, const T* __restrict__ bias,
                                const T* __restrict__ residual, T* __restrict__ out, int64_t R, int64_t N,
                                LinearEpilogue e) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < R * N; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / N, n = i - r * N;
    const C p = C(to_compute(y[r * ld + n])) + (bias ? C(to_compute(bias[n])) : C(0));
    const C u = e.glu ? C(to_compute(y[r * ld + N + n])) + (bias ? C(to_compute(bias[N + n])) : C(0)) : C(0);
    const C res = residual ? C(to_compute(residual[i])) : C(0);
    out[i] = from_compute<T>(linear_output<C>(e, p, u, res));
  }
}

// Rows of x the GEMV takes; more go to cuBLAS. Its cost grows with the rows (each weight
// chunk meets every row's x): at 8 rows a 1B-shaped F16 batched step took 3.0 ms where
// cuBLAS did 16 rows in 1.5 ms (2026-12-04), so cuBLAS may well win from 5 rows; that was
// not measured yet, and WICK_CUDA_GEMV_ROWS (1 to 8) is the knob to measure it with
// (docs/perf.md).
constexpr int kGemvDefaultRows = kGemvMaxM;
int gemv_max_rows() {
  static const int rows = int(env_knob("WICK_CUDA_GEMV_ROWS", kGemvDefaultRows, 1, kGemvMaxM));
  return rows;
}

template <class S>
const S* opt_ptr(const Tensor& t) {
  return t.defined() ? static_cast<const S*>(t.data()) : nullptr;
}

// The GEMV when its preconditions hold (few rows, unit column strides, 16-byte rows);
// false otherwise.
template <class D>
bool try_gemv(CudaBackend& be, const LinearParams& p, const Tensor& x, const Tensor& norm, const Tensor& w,
              const Tensor& bias, const Tensor& residual, const Tensor& out) {
  const LinearEpilogue& e = p.e;
  using T = dev_t<D>;
  constexpr int V = 16 / sizeof(T);
  const int64_t M = x.dim(0), K = x.dim(1), n_out = out.dim(1);
  if constexpr (std::is_same_v<D, double>) {
    return false;
  } else {
    if (M > gemv_max_rows() || K % V != 0 || K == 0) return false;
    if (x.strides()[1] != 1 || w.strides()[1] != 1 || (M > 1 && x.strides()[0] % V != 0) || w.strides()[0] % V != 0)
      return false;
    if (!aligned16<T>(x) || !aligned16<T>(w) || (norm.defined() && !aligned16<T>(norm))) return false;
    GemvArgs<T> a{static_cast<const T*>(x.data()),
                  opt_ptr<T>(norm),
                  float(p.norm_eps),
                  static_cast<const T*>(w.data()),
                  opt_ptr<T>(bias),
                  opt_ptr<T>(residual),
                  static_cast<T*>(out.mutable_data()),
                  x.strides()[0],
                  w.strides()[0],
                  K,
                  n_out,
                  int(M),
                  e};
    const int64_t groups = e.glu ? n_out : (n_out + 1) / 2;
    const int split = gemv_split(groups, K / V);
    const int64_t per_block = kGemvWarps / split;
    const unsigned blocks = unsigned((groups + per_block - 1) / per_block);
    auto launch = [&]<int MB>() {
      if (norm.defined())
        gemv_kernel<T, MB, true><<<blocks, kGemvWarps * 32, 0, be.stream()>>>(a, split);
      else
        gemv_kernel<T, MB, false><<<blocks, kGemvWarps * 32, 0, be.stream()>>>(a, split);
    };
    if (M == 1)
      launch.template operator()<1>();
    else if (M == 2)
      launch.template operator()<2>();
    else if (M <= 4)
      launch.template operator()<4>();
    else
      launch.template operator()<8>();
    check_launch("linear");
    return true;
  }
}

}  // namespace

void CudaBackend::linear_epilogue(const LinearEpilogue& e, const Tensor& y, const Tensor& bias, const Tensor& residual,
                                  const Tensor& out) {
  activate();
  const int64_t R = out.dim(0), N = out.dim(1);
  dispatch_float(y.dtype(), "linear_epilogue", [&]<class YD>() {
    dispatch_float(out.dtype(), "linear_epilogue", [&]<class D>() {
      using Y = dev_t<YD>;
      using T = dev_t<D>;
      epilogue_kernel<Y, T><<<std::min(grid_for(R * N), resident_blocks()), kThreads, 0, stream_>>>(
          static_cast<const Y*>(y.data()), y.strides()[0], opt_ptr<T>(bias), opt_ptr<T>(residual),
          static_cast<T*>(out.mutable_data()), R, N, e);
      check_launch("linear_epilogue");
    });
  });
}

void CudaBackend::linear(const LinearParams& p, const Tensor& x, const Tensor& norm, const Tensor& w,
                         const Tensor& bias, const Tensor& residual, const Tensor& out) {
  activate();
  const bool done = dispatch_float(x.dtype(), "linear",
                                   [&]<class D>() { return try_gemv<D>(*this, p, x, norm, w, bias, residual, out); });
  if (!done) linear_by_parts(*this, p, x, norm, w, bias, residual, out);
}

}  // namespace wick
