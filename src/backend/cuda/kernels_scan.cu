// Running reductions along one dim (cumsum, cumprod) on CUDA: one generic kernel family
// over the shared reduction functors (reduce_ops.h's Sum, Prod seen through red::DeviceOp: f32 accumulators for
// f16/bf16, each output rounded from the accumulator; 64-bit wrapping ones for integers).
//
// Row path, when the output's lines are contiguous (dim is its last non-trivial dim): a
// group per line, a warp for short lines and the block for long ones, walks the line in
// tiles of G * kItems elements: each thread folds kItems consecutive elements, the group
// scans the thread totals (cub WarpScan / BlockScan) and a running carry joins the tiles.
// Few long lines are also split across blocks (blockIdx.y), reduce-then-scan: a first
// pass writes each chunk's total, a second turns the totals into each chunk's carry, and
// the scan pass starts each chunk from its carry (the input is read twice; no block waits
// for another, and the result does not depend on timing).
//
// Strided path (dim is followed by non-trivial dims): a thread per line walks it, adjacent
// threads on adjacent lines (coalesced when x's inner dims are contiguous). When those
// lines are too few to fill the GPU with threads, the lines are scanned on the row path
// into a temporary with dim last, which is then copied into the output.
#include <algorithm>
#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_scan.cuh>
#include <memory>
#include <type_traits>
#include <vector>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/lines.cuh"
#include "backend/cuda/reduce.cuh"

namespace wick {

using namespace cuda;

namespace {

constexpr int kItems = 4;               // consecutive elements per thread per tile
constexpr int64_t kWarpMaxLine = 1024;  // lines up to this length get a warp each, not a block
constexpr int64_t kMaxGridX = int64_t(1) << 20;

template <class Op>
struct Merge {
  Op op;
  template <class A>
  __device__ __forceinline__ A operator()(const A& a, const A& b) const {
    return op.merge(a, b);
  }
};

template <class A, int G>
using GroupScan = std::conditional_t<G == 32, cub::WarpScan<A>, cub::BlockScan<A, kThreads>>;

// Row path: groups of G threads (32 or kThreads), one per line; chunk c = blockIdx.y of
// each line covers [c * chunk, (c + 1) * chunk). kTotals: the pass that writes each
// chunk's total to carries[l * splits + c] instead of outputs; otherwise chunk c of a split
// line starts from carries[l * splits + c]. The output lines are contiguous (inner == 1).
template <class Op, class S, int G, bool kTotals>
__global__ void __launch_bounds__(kThreads)
    scan_row_kernel(Op op, DeviceLines L, const S* __restrict__ x, S* __restrict__ out, int64_t chunk,
                    typename Op::acc_t* __restrict__ carries) {
  using A = typename Op::acc_t;
  constexpr int kGroups = kThreads / G;
  __shared__ typename GroupScan<A, G>::TempStorage temp[kGroups];
  const int group = int(threadIdx.x) / G, tid = int(threadIdx.x) % G;
  const int64_t c = blockIdx.y, splits = gridDim.y;
  const int64_t lo = c * chunk, hi = lo + chunk < L.n ? lo + chunk : L.n;
  for (int64_t l = int64_t(blockIdx.x) * kGroups + group; l < L.count; l += int64_t(gridDim.x) * kGroups) {
    const S* p = x + L.x_offset(l);
    S* o = out + l * L.n;
    A carry = !kTotals && splits > 1 ? carries[l * splits + c] : op.init();
    for (int64_t t = lo; t < hi; t += int64_t(G) * kItems) {
      const int64_t i0 = t + int64_t(tid) * kItems;
      A run[kItems];
      A a = op.init();
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        if (i0 + k < hi) a = op.step(a, p[(i0 + k) * L.x_stride], i0 + k);
        run[k] = a;
      }
      A prefix, total;
      GroupScan<A, G>(temp[group]).ExclusiveScan(a, prefix, op.init(), Merge<Op>{op}, total);
      if constexpr (!kTotals) {
        const A base = op.merge(carry, prefix);
#pragma unroll
        for (int k = 0; k < kItems; ++k)
          if (i0 + k < hi) o[i0 + k] = op.finalize(op.merge(base, run[k]), i0 + k + 1);
      }
      carry = op.merge(carry, total);
      if constexpr (G == 32)  // the next tile reuses temp
        __syncwarp();
      else
        __syncthreads();
    }
    if (kTotals && tid == 0) carries[l * splits + c] = carry;
  }
}

// Turns each line's chunk totals into the carries the chunks start from (exclusive scan).
template <class Op>
__global__ void scan_carries_kernel(Op op, typename Op::acc_t* carries, int64_t count, int64_t splits) {
  for (int64_t l = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; l < count; l += int64_t(gridDim.x) * blockDim.x) {
    typename Op::acc_t run = op.init();
    for (int64_t c = 0; c < splits; ++c) {
      const auto total = carries[l * splits + c];
      carries[l * splits + c] = run;
      run = op.merge(run, total);
    }
  }
}

// Strided path: a thread per line.
template <class Op, class S>
__global__ void scan_strided_kernel(Op op, DeviceLines L, const S* __restrict__ x, S* __restrict__ out) {
  for (int64_t l = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; l < L.count; l += int64_t(gridDim.x) * blockDim.x) {
    const S* p = x + L.x_offset(l);
    S* o = out + L.out_offset(l, 0, L.n);
    typename Op::acc_t a = op.init();
    for (int64_t i = 0; i < L.n; ++i) {
      a = op.step(a, p[i * L.x_stride], i);
      o[i * L.inner] = op.finalize(a, i + 1);
    }
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The row path into out (lines contiguous, line l at out + l * L.n).
template <class Op, class S>
void scan_rows(CudaBackend& be, const char* name, const DeviceLines& L, const S* x, S* out) {
  using A = typename Op::acc_t;
  const Op op{};
  if (L.n <= kWarpMaxLine) {
    const unsigned blocks = unsigned(std::min(ceil_div(L.count, kThreads / 32), kMaxGridX));
    scan_row_kernel<Op, S, 32, false><<<blocks, kThreads, 0, be.stream()>>>(op, L, x, out, L.n, nullptr);
    check_launch(name);
    return;
  }
  // A block per line; split the lines when they are too few to give every SM several
  // blocks, keeping at least four tiles per chunk.
  constexpr int64_t kTile = int64_t(kThreads) * kItems;
  const int64_t blocks = std::min(L.count, kMaxGridX);
  const int64_t wave = int64_t(be.sm_count()) * (2048 / kThreads);
  int64_t splits = 1;
  if (blocks < wave) splits = std::clamp<int64_t>(std::min(wave / blocks, L.n / (4 * kTile)), 1, 65535);
  const int64_t chunk = ceil_div(ceil_div(L.n, splits), kTile) * kTile;
  splits = ceil_div(L.n, chunk);
  const dim3 grid{unsigned(blocks), unsigned(splits)};
  if (splits == 1) {
    scan_row_kernel<Op, S, kThreads, false><<<grid, kThreads, 0, be.stream()>>>(op, L, x, out, chunk, nullptr);
    check_launch(name);
    return;
  }
  const std::shared_ptr<void> scratch = be.scratch(size_t(L.count * splits) * sizeof(A));
  A* carries = static_cast<A*>(scratch.get());
  scan_row_kernel<Op, S, kThreads, true><<<grid, kThreads, 0, be.stream()>>>(op, L, x, out, chunk, carries);
  check_launch(name);
  scan_carries_kernel<Op><<<grid_for(L.count), kThreads, 0, be.stream()>>>(op, carries, L.count, splits);
  check_launch(name);
  scan_row_kernel<Op, S, kThreads, false><<<grid, kThreads, 0, be.stream()>>>(op, L, x, out, chunk, carries);
  check_launch(name);
}

template <template <class> class OpT>
void run(CudaBackend& be, const char* name, const Tensor& x, size_t dim, const Tensor& out) {
  const DeviceLines L(Lines(x, dim), name);
  dispatch(x.dtype(), [&]<class T>() {
    using S = dev_t<T>;
    using Op = red::DeviceOp<OpT<compute_t<T>>, S>;  // the shared functor over T's compute type
    const S* xp = dptr<const S>(x);
    if (L.inner == 1) return scan_rows<Op>(be, name, L, xp, dptr<S>(out) + out.offset());
    // Enough lines for a thread each to fill the GPU, or lines too short for the copies
    // of the row path to pay: a thread per line.
    if (L.count >= int64_t(be.sm_count()) * 1024 || L.n <= 32) {
      scan_strided_kernel<Op, S>
          <<<grid_for(L.count), kThreads, 0, be.stream()>>>(Op{}, L, xp, dptr<S>(out) + out.offset());
      return check_launch(name);
    }
    // Otherwise the row path into a temporary whose last dim is dim (its lines in x's line
    // order), then a copy that puts dim back.
    std::vector<int64_t> perm, inverse(x.rank());
    for (size_t d = 0; d < x.rank(); ++d)
      if (d != dim) perm.push_back(int64_t(d));
    perm.push_back(int64_t(dim));
    for (size_t d = 0; d < perm.size(); ++d) inverse[size_t(perm[d])] = int64_t(d);
    const Tensor rows = Tensor::empty(x.permute(perm).shape(), x.dtype(), x.device());
    scan_rows<Op>(be, name, L, xp, dptr<S>(rows) + rows.offset());
    be.copy(rows.permute(inverse), out);
  });
}

}  // namespace

void CudaBackend::cumulative(CumulativeOp op, const Tensor& x, size_t dim, const Tensor& out) {
  if (x.numel() == 0) return;
  activate();
  const char* name = cumulative_op_name(op);
  switch (op) {
    case CumulativeOp::Sum: return run<reduce::Sum>(*this, name, x, dim, out);
    case CumulativeOp::Prod: return run<reduce::Prod>(*this, name, x, dim, out);
  }
}

}  // namespace wick
