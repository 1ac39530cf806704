// Attention and RoPE on CUDA.
//
// Attention: one warp per query row, flash-attention style: keys are visited once with
// an online softmax (running max and sum), so the Tq x Tk score matrix never exists in
// memory. Each lane holds head_dim/32 elements of q and of the output accumulator.
#include <cmath>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/math.h"

namespace wick {

using namespace cuda;

namespace {

struct Strides4 {
  int64_t s[4];
  int64_t off;
};
Strides4 strides4(const Tensor& t) {
  Strides4 r{};
  if (!t.defined()) return r;
  for (int i = 0; i < 4; ++i) r.s[i] = t.strides()[size_t(i)];
  r.off = t.offset();
  return r;
}

struct AttnArgs {
  int64_t B, H, Tq, Tk, D;
  double scale;
  bool causal;
  Strides4 q, k, v, m;
};

template <class S, class MS, int EPL>
__global__ void attention_warp_kernel(AttnArgs a, const S* __restrict__ q, const S* __restrict__ k,
                                      const S* __restrict__ v, const MS* __restrict__ mask, S* __restrict__ out) {
  using A = std::conditional_t<std::is_same_v<S, double>, double, float>;  // accumulation type
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (row >= a.B * a.H * a.Tq) return;
  const int64_t b = row / (a.H * a.Tq), h = (row / a.Tq) % a.H, i = row % a.Tq;
  A qr[EPL], acc[EPL];
  const S* qp = q + a.q.off + b * a.q.s[0] + h * a.q.s[1] + i * a.q.s[2];
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const int64_t d = lane + 32 * e;
    qr[e] = d < a.D ? A(to_compute(qp[d * a.q.s[3]])) : A(0);
    acc[e] = A(0);
  }
  const int64_t causal_last = i + a.Tk - a.Tq;
  const int64_t last = a.causal && causal_last < a.Tk - 1 ? causal_last : a.Tk - 1;
  const S* kb = k + a.k.off + b * a.k.s[0] + h * a.k.s[1];
  const S* vb = v + a.v.off + b * a.v.s[0] + h * a.v.s[1];
  const MS* mb = mask ? mask + a.m.off + b * a.m.s[0] + h * a.m.s[1] + i * a.m.s[2] : nullptr;
  A run_max = -INFINITY, run_sum = 0;
  for (int64_t j = 0; j <= last; ++j) {
    const S* kp = kb + j * a.k.s[2];
    A part = 0;
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int64_t d = lane + 32 * e;
      if (d < a.D) part += qr[e] * A(to_compute(kp[d * a.k.s[3]]));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) part += __shfl_xor_sync(0xffffffffu, part, o);
    A s = part * A(a.scale);
    if (mb) s += A(to_compute(mb[j * a.m.s[3]]));
    const A new_max = run_max > s ? run_max : s;
    if (new_max == -INFINITY) continue;  // everything so far masked out
    const A correction = math::wexp(run_max - new_max);
    const A p = math::wexp(s - new_max);
    run_sum = run_sum * correction + p;
    const S* vp = vb + j * a.v.s[2];
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      const int64_t d = lane + 32 * e;
      const A vv = d < a.D ? A(to_compute(vp[d * a.v.s[3]])) : A(0);
      acc[e] = acc[e] * correction + p * vv;
    }
    run_max = new_max;
  }
  // A row whose every key is masked out gives NaN, as PyTorch does (0/0).
  const A inv = run_sum > A(0) ? A(1) / run_sum : A(NAN);
  S* op = out + row * a.D;
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const int64_t d = lane + 32 * e;
    if (d < a.D) op[d] = from_compute<S>(acc[e] * inv);
  }
}

template <class S, class MS, int EPL>
void launch_attention(const AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                      const Tensor& out, cudaStream_t stream) {
  const int64_t warps = a.B * a.H * a.Tq;
  const unsigned blocks = unsigned((warps * 32 + kThreads - 1) / kThreads);
  attention_warp_kernel<S, MS, EPL>
      <<<blocks, kThreads, 0, stream>>>(a, dptr<const S>(q), dptr<const S>(k), dptr<const S>(v),
                                        mask.defined() ? dptr<const MS>(mask) : nullptr, dptr<S>(out) + out.offset());
  check_launch("scaled_dot_product_attention");
}

template <class S>
__global__ void rope_kernel(int64_t rows, int64_t H, int64_t T, int64_t half, bool interleaved, Strides4 xs,
                            int64_t cs0, int64_t cs1, int64_t ss0, int64_t ss1, const S* __restrict__ x,
                            const S* __restrict__ cosp, const S* __restrict__ sinp, S* __restrict__ out) {
  const int64_t n = rows * half;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n; idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = idx / half, i = idx % half;
    const int64_t b = r / (H * T), h = (r / T) % H, t = r % T;
    const S* xp = x + xs.off + b * xs.s[0] + h * xs.s[1] + t * xs.s[2];
    const int64_t i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
    using A = dcompute_t<S>;  // f32 for the 16-bit floats, else the dtype
    const A x0 = to_compute(xp[i0 * xs.s[3]]), x1 = to_compute(xp[i1 * xs.s[3]]);
    const A c = to_compute(cosp[t * cs0 + i * cs1]), s = to_compute(sinp[t * ss0 + i * ss1]);
    S* op = out + r * 2 * half;
    op[i0] = from_compute<S>(x0 * c - x1 * s);
    op[i1] = from_compute<S>(x0 * s + x1 * c);
  }
}

}  // namespace

void CudaBackend::attention(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& mask, const Tensor& out) {
  activate();
  AttnArgs a{q.dim(0), q.dim(1),    q.dim(2),    k.dim(2),    q.dim(3),      p.scale,
             p.causal, strides4(q), strides4(k), strides4(v), strides4(mask)};
  if (out.numel() == 0) return;
  WICK_CHECK(a.D <= 256, Unsupported, "scaled_dot_product_attention: head_dim ", a.D,
             " is not supported on cuda (at most 256)");
  dispatch_float(q.dtype(), "scaled_dot_product_attention", [&]<class T>() {
    {
      using S = dev_t<T>;
      dispatch_float(mask.defined() ? mask.dtype() : q.dtype(), "attention mask", [&]<class MT>() {
        using MS = dev_t<MT>;
        if (a.D <= 64)
          launch_attention<S, MS, 2>(a, q, k, v, mask, out, stream_);
        else if (a.D <= 128)
          launch_attention<S, MS, 4>(a, q, k, v, mask, out, stream_);
        else
          launch_attention<S, MS, 8>(a, q, k, v, mask, out, stream_);
      });
    }
  });
}

void CudaBackend::rope(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved, const Tensor& out) {
  activate();
  const int64_t B = x.dim(0), H = x.dim(1), T = x.dim(2), half = x.dim(3) / 2;
  const int64_t rows = B * H * T;
  if (rows * half == 0) return;
  dispatch_float(x.dtype(), "rope", [&]<class T_>() {
    using S = dev_t<T_>;
    rope_kernel<S><<<std::min(grid_for(rows * half), 132u * 16u), kThreads, 0, stream_>>>(
        rows, H, T, half, interleaved, strides4(x), cos.strides()[0], cos.strides()[1], sin.strides()[0],
        sin.strides()[1], dptr<const S>(x), dptr<const S>(cos) + cos.offset(), dptr<const S>(sin) + sin.offset(),
        dptr<S>(out) + out.offset());
    check_launch("rope");
  });
}

}  // namespace wick
