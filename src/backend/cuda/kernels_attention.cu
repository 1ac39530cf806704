// Attention and RoPE on CUDA.
//
// Attention picks one of two kernels:
// - prefill (Tq >= kFlashMinQueries, f16/bf16/f32, head dim 64 or 128): the tiled kernel
//   of kernels_attention_flash.cu (a block per tile of queries, K/V tiles in shared memory,
//   tensor cores for the 16-bit floats);
// - otherwise (decode, f64, odd head dims): one warp per query row walking its keys with an
//   online softmax (running max and sum), each lane holding head_dim/32 elements of q and
//   of the accumulator. For decode (few rows, many keys) the keys are split into chunks
//   over several warps ("flash-decoding") whose partial (max, sum, accumulator) a second
//   kernel merges, so a 1-query step fills the GPU instead of running 12 warps.
// Neither materializes the Tq x Tk score matrix.
#include <algorithm>
#include <cmath>

#include "backend/cuda/kernels_attention.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/math.h"

namespace wick {

using namespace cuda;

namespace {

// A full tile of queries at least; shorter query blocks (decode, chunked prefill) get more
// parallelism from the split-key warp kernel.
constexpr int64_t kFlashMinQueries = 64;
constexpr int64_t kMinChunk = 16;  // keys per split at least (two steps of U = 8)

// Keys [split * chunk, (split + 1) * chunk) of one query row per warp. With partials,
// writes the row's running max and sum and the unnormalized accumulator; otherwise the
// normalized output. A chunk whose keys are all masked (or past the causal limit) leaves
// max = -inf, sum = 0, accumulator 0: the merge then ignores it.
template <class S, int EPL>
__global__ void attention_warp_kernel(AttnArgs a, int64_t chunk, const S* __restrict__ q, const S* __restrict__ k,
                                      const S* __restrict__ v, S* __restrict__ out,
                                      dcompute_t<S>* __restrict__ part_acc, dcompute_t<S>* __restrict__ part_ml) {
  using A = dcompute_t<S>;  // accumulation type: f32, or f64 for f64
  const int lane = threadIdx.x & 31;
  const int64_t rows = a.B * a.H * a.Tq;
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (row >= rows) return;
  const int64_t split = blockIdx.y;
  const int64_t b = row / (a.H * a.Tq), h = (row / a.Tq) % a.H, i = row % a.Tq;
  A qr[EPL], acc[EPL];
  const S* qp = q + a.q.off + b * a.q.s[0] + h * a.q.s[1] + i * a.q.s[2];
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const int64_t d = lane + 32 * e;
    qr[e] = d < a.D ? A(to_compute(qp[d * a.q.s[3]])) : A(0);
    acc[e] = A(0);
  }
  const int64_t j_begin = split * chunk;
  const int64_t j_last = last_key(a, i) + 1, j_end = j_begin + chunk < j_last ? j_begin + chunk : j_last;
  const S* kb = k + a.k.off + b * a.k.s[0] + h * a.k.s[1];
  const S* vb = v + a.v.off + b * a.v.s[0] + h * a.v.s[1];
  const bool masked = a.mask.kind != MaskKind::None;
  A run_max = -INFINITY, run_sum = 0;
  // U keys per step. Every global load of a step is branch-free and issued before any use:
  // keys past j_end are clamped to the last valid key (their score becomes -inf, weight 0)
  // and lanes past the head dim read element D - 1 against a zero q. A conditional load,
  // or the mask's dtype switch between loads, would split the step into basic blocks and
  // serialize the loads into one memory round trip per key (measured: 27 us instead of a
  // few for a 1 x 1024-key decode step).
  constexpr int U = EPL <= 2 ? 8 : 4;
  int64_t dcol[EPL];
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const int64_t d = lane + 32 * e;
    dcol[e] = d < a.D ? d : a.D - 1;
  }
  for (int64_t j0 = j_begin; j0 < j_end; j0 += U) {
    A kv[U][EPL], vv[U][EPL];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t j = j0 + u < j_end ? j0 + u : j_end - 1;
      const S* kp = kb + j * a.k.s[2];
      const S* vp = vb + j * a.v.s[2];
#pragma unroll
      for (int e = 0; e < EPL; ++e) {
        kv[u][e] = A(to_compute(kp[dcol[e] * a.k.s[3]]));
        vv[u][e] = A(to_compute(vp[dcol[e] * a.v.s[3]]));
      }
    }
    // Lane u < U reads key j0 + u's mask value (one dtype switch per lane, after the K/V
    // loads are in flight); the lanes then share them.
    A mlane = 0;
    if (masked && lane < U) mlane = A(a.mask.at(b, h, i, j0 + lane < j_end ? j0 + lane : j_end - 1));
    A part[U], mv[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      A t = 0;
#pragma unroll
      for (int e = 0; e < EPL; ++e) t += qr[e] * kv[u][e];
      part[u] = t;
      mv[u] = __shfl_sync(0xffffffffu, mlane, u);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int u = 0; u < U; ++u) part[u] += __shfl_xor_sync(0xffffffffu, part[u], o);
    A s[U], group_max = -INFINITY;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      s[u] = j0 + u < j_end ? part[u] * A(a.scale) + mv[u] : A(-INFINITY);
      group_max = s[u] > group_max ? s[u] : group_max;
    }
    const A new_max = run_max > group_max ? run_max : group_max;
    if (new_max == -INFINITY) continue;  // everything so far masked out
    const A correction = math::wexp(run_max - new_max);
    A p[U], psum = 0;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      p[u] = math::wexp(s[u] - new_max);  // 0 for masked keys
      psum += p[u];
    }
    run_sum = run_sum * correction + psum;
#pragma unroll
    for (int e = 0; e < EPL; ++e) {
      A t = acc[e] * correction;
#pragma unroll
      for (int u = 0; u < U; ++u) t += p[u] * vv[u][e];
      acc[e] = t;
    }
    run_max = new_max;
  }
  store_attention_row<S>(lane, a.D, acc, run_max, run_sum, split * rows + row, part_acc, part_ml, row, out);
}

// Merges the splits' partials of each row (one warp per row): rescales each split's sum and
// accumulator to the global max. Splits with max -inf (no visible key) weigh 0, so a row is
// NaN only when no split saw a key. The lanes first take 32 splits at a time for the
// maxima and weights, so the accumulator loads below depend on nothing and overlap.
template <class S, int EPL>
__global__ void attention_combine_kernel(int64_t rows, int64_t D, int64_t splits, const dcompute_t<S>* __restrict__ acc,
                                         const dcompute_t<S>* __restrict__ ml, S* __restrict__ out, SinkRows sinks) {
  using A = dcompute_t<S>;
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (row >= rows) return;
  A m = -INFINITY;
  for (int64_t s = lane; s < splits; s += 32) {
    const A ms = ml[2 * (s * rows + row)];
    m = ms > m ? ms : m;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const A other = __shfl_xor_sync(0xffffffffu, m, o);
    m = other > m ? other : m;
  }
  A sum = 0, o[EPL];
#pragma unroll
  for (int e = 0; e < EPL; ++e) o[e] = 0;
  if (m != -INFINITY) {
    for (int64_t s0 = 0; s0 < splits; s0 += 32) {
      // Lane l holds the weight of split s0 + l: exp(max_s - max) (0 for -inf or absent).
      const int64_t sl = s0 + lane;
      A w = 0;
      if (sl < splits) {
        const A ms = ml[2 * (sl * rows + row)];
        w = ms == -INFINITY ? A(0) : math::wexp(ms - m);
        sum += w * ml[2 * (sl * rows + row) + 1];
      }
      // TB splits' accumulators at a time (64 values per lane: no spills), loaded
      // branch-free (absent splits read the last one and weigh 0) so that they are all in
      // flight at once; then the weighted sum.
      constexpr int TB = 64 / (EPL * int(sizeof(A) / sizeof(float)));
#pragma unroll
      for (int t0 = 0; t0 < 32; t0 += TB) {
        A part[TB][EPL];
#pragma unroll
        for (int t = 0; t < TB; ++t) {
          const int64_t prow = (s0 + t0 + t < splits ? s0 + t0 + t : splits - 1) * rows + row;
#pragma unroll
          for (int e = 0; e < EPL; ++e) part[t][e] = acc[prow * D + (lane + 32 * e < D ? lane + 32 * e : D - 1)];
        }
#pragma unroll
        for (int t = 0; t < TB; ++t) {
          const A wt = __shfl_sync(0xffffffffu, w, t0 + t);
#pragma unroll
          for (int e = 0; e < EPL; ++e) o[e] += wt * part[t][e];
        }
      }
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  const A inv = math::softmax_inv(m, sum, A(sinks.at(row)));
#pragma unroll
  for (int e = 0; e < EPL; ++e) {
    const int64_t d = lane + 32 * e;
    if (d < D) out[row * D + d] = from_compute<S>(o[e] * inv);
  }
}

// The same merge for the prefill kernels' few splits (at most kFewSplits) of f32 partials
// with D % 4 == 0: a thread per 4 consecutive elements of a row, every load a 16-byte
// vector (the warp-per-row kernel above spent ~300 instructions on a row of 3 splits).
constexpr int kFewSplits = 4;
template <class S>
__global__ void attention_combine_few_kernel(int64_t rows, int D, int splits, const float* __restrict__ acc,
                                             const float2* __restrict__ ml, S* __restrict__ out, SinkRows sinks) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int quads = D / 4;
  const int64_t row = i / quads;
  if (row >= rows) return;
  const int d0 = int(i - row * quads) * 4;
  float2 st[kFewSplits];
  float4 part[kFewSplits];
  float m = -INFINITY;
#pragma unroll
  for (int s = 0; s < kFewSplits; ++s) {  // absent splits read split 0 and weigh 0
    const int64_t prow = (s < splits ? s : 0) * rows + row;
    st[s] = ml[prow];
    part[s] = *reinterpret_cast<const float4*>(acc + prow * D + d0);
    if (s < splits) m = fmaxf(m, st[s].x);
  }
  float sum = 0.0f;
  float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (m != -INFINITY) {
#pragma unroll
    for (int s = 0; s < kFewSplits; ++s) {
      const float w = s < splits && st[s].x != -INFINITY ? math::wexp(st[s].x - m) : 0.0f;
      sum += w * st[s].y;
      o.x += w * part[s].x, o.y += w * part[s].y, o.z += w * part[s].z, o.w += w * part[s].w;
    }
  }
  const float inv = math::softmax_inv(m, sum, sinks.at(row));  // no key: NaN as PyTorch (0/0), 0 with a sink
  S* op = out + row * D + d0;
  op[0] = from_compute<S>(o.x * inv), op[1] = from_compute<S>(o.y * inv);
  op[2] = from_compute<S>(o.z * inv), op[3] = from_compute<S>(o.w * inv);
}

template <class S, int EPL>
void launch_warp_attention(CudaBackend& be, const AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& out) {
  using A = dcompute_t<S>;
  const int64_t rows = a.B * a.H * a.Tq;
  // Enough warps for about 16 per SM; chunks of at least kMinChunk keys.
  const int64_t want_warps = int64_t(be.sm_count()) * 16;
  int64_t splits = std::clamp<int64_t>((want_warps + rows - 1) / rows, 1, (a.Tk + kMinChunk - 1) / kMinChunk);
  splits = std::min<int64_t>(splits, 65535);  // grid y limit
  const int64_t chunk = (a.Tk + splits - 1) / splits;
  splits = (a.Tk + chunk - 1) / chunk;
  const unsigned blocks = unsigned((rows * 32 + kThreads - 1) / kThreads);
  S* o = dptr<S>(out) + out.offset();
  if (splits <= 1 && !a.sinks) {
    attention_warp_kernel<S, EPL><<<dim3(blocks, 1), kThreads, 0, be.stream()>>>(
        a, a.Tk, dptr<const S>(q), dptr<const S>(k), dptr<const S>(v), o, nullptr, nullptr);
    check_launch("scaled_dot_product_attention");
    return;
  }
  std::shared_ptr<void> acc = be.scratch(size_t(splits * rows * a.D) * sizeof(A));
  std::shared_ptr<void> ml = be.scratch(size_t(splits * rows * 2) * sizeof(A));
  attention_warp_kernel<S, EPL><<<dim3(blocks, unsigned(splits)), kThreads, 0, be.stream()>>>(
      a, chunk, dptr<const S>(q), dptr<const S>(k), dptr<const S>(v), o, static_cast<A*>(acc.get()),
      static_cast<A*>(ml.get()));
  check_launch("scaled_dot_product_attention");
  launch_attention_combine(be, out.dtype(), rows, a.D, splits, acc.get(), ml.get(), out, {a.sinks, a.H, a.Tq});
}

MaskRef mask_ref(const Tensor& mask) {
  MaskRef m;
  if (!mask.defined()) return m;
  m.p = mask.storage_data();
  m.st = strides4(mask);
  switch (mask.dtype()) {
    case DType::F16: m.kind = MaskKind::F16; break;
    case DType::BF16: m.kind = MaskKind::BF16; break;
    case DType::F32: m.kind = MaskKind::F32; break;
    case DType::F64: m.kind = MaskKind::F64; break;
    default:
      fail(ErrorKind::DTypeMismatch, "scaled_dot_product_attention: mask dtype ", dtype_name(mask.dtype()),
           " is not a float type");
  }
  return m;
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

void cuda::launch_attention_combine(CudaBackend& be, DType dtype, int64_t rows, int64_t D, int64_t splits,
                                    const void* acc, const void* ml, const Tensor& out, SinkRows sinks) {
  dispatch_float(dtype, "scaled_dot_product_attention", [&]<class T>() {
    using S = dev_t<T>;
    using A = dcompute_t<S>;
    const unsigned blocks = unsigned((rows * 32 + kThreads - 1) / kThreads);
    S* o = dptr<S>(out) + out.offset();
    if constexpr (std::is_same_v<A, float>) {
      if (splits <= kFewSplits && D % 4 == 0) {
        const int64_t threads = rows * (D / 4);
        attention_combine_few_kernel<S><<<unsigned((threads + kThreads - 1) / kThreads), kThreads, 0, be.stream()>>>(
            rows, int(D), int(splits), static_cast<const float*>(acc), static_cast<const float2*>(ml), o, sinks);
        check_launch("scaled_dot_product_attention (combine)");
        return;
      }
    }
    auto go = [&]<int EPL>() {
      attention_combine_kernel<S, EPL><<<blocks, kThreads, 0, be.stream()>>>(
          rows, D, splits, static_cast<const A*>(acc), static_cast<const A*>(ml), o, sinks);
    };
    if (D <= 64)
      go.template operator()<2>();
    else if (D <= 128)
      go.template operator()<4>();
    else
      go.template operator()<8>();
    check_launch("scaled_dot_product_attention (combine)");
  });
}

void CudaBackend::attention(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& mask, const Tensor& out) {
  activate();
  if (out.numel() == 0) return;
  AttnArgs a{q.dim(0), q.dim(1),    q.dim(2),    k.dim(2),    q.dim(3),      p.scale,
             p.causal, strides4(q), strides4(k), strides4(v), mask_ref(mask)};
  a.sinks = p.sinks.defined() ? dptr<const float>(p.sinks) + p.sinks.offset() : nullptr;
  WICK_CHECK(a.D <= 256, Unsupported, "scaled_dot_product_attention: head_dim ", a.D,
             " is not supported on cuda (at most 256)");
  if (a.Tq >= kFlashMinQueries && launch_flash_attention(*this, a, q.dtype(), q, k, v, out)) return;
  dispatch_float(q.dtype(), "scaled_dot_product_attention", [&]<class T>() {
    using S = dev_t<T>;
    if (a.D <= 64)
      launch_warp_attention<S, 2>(*this, a, q, k, v, out);
    else if (a.D <= 128)
      launch_warp_attention<S, 4>(*this, a, q, k, v, out);
    else
      launch_warp_attention<S, 8>(*this, a, q, k, v, out);
  });
}

void CudaBackend::rope(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved, const Tensor& out) {
  activate();
  const int64_t B = x.dim(0), H = x.dim(1), T = x.dim(2), half = x.dim(3) / 2;
  const int64_t rows = B * H * T;
  if (rows * half == 0) return;
  dispatch_float(x.dtype(), "rope", [&]<class T_>() {
    using S = dev_t<T_>;
    rope_kernel<S><<<std::min(grid_for(rows * half), resident_blocks()), kThreads, 0, stream_>>>(
        rows, H, T, half, interleaved, strides4(x), cos.strides()[0], cos.strides()[1], sin.strides()[0],
        sin.strides()[1], dptr<const S>(x), dptr<const S>(cos) + cos.offset(), dptr<const S>(sin) + sin.offset(),
        dptr<S>(out) + out.offset());
    check_launch("rope");
  });
}

}  // namespace wick
