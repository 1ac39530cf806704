// Reductions (sum, mean, prod, min, max, argmin, argmax) over any set of dims on CUDA:
// one generic kernel family templated over an op and the storage type. The op functors
// and the enum -> functor table are the CPU backend's (backend/reduce_ops.h); here they
// run wrapped in red::DeviceOp (reduce.cuh), which takes storage-type elements.
//
// On the host x's dims are split into kept dims (they index the output, row-major, which
// is also the order of the contiguous keepdim output) and reduced dims, each group
// collapsed. The reduced group is seen as outer x inner, inner being its last collapsed
// dim, so the hot loops step a pointer along inner and pay an index division only once
// per inner run. Two strategies:
//  - row: inner is contiguous (stride 1) and long enough: a warp (short rows) or a block
//    (long rows) per output, 16-byte loads of the aligned middle of each run, four
//    independent accumulators per thread, then warp shuffles and shared memory; the
//    16-bit min/max/argmin/argmax fold those vectors as packed pairs (reduce_packed.cuh);
//  - column: otherwise: one thread per output (adjacent outputs are adjacent in memory
//    when the innermost kept dim is contiguous, so warps read coalesced), threadIdx.y
//    splitting the reduction within the block.
// When there are too few outputs to fill the GPU the reduction is also split across
// blockIdx.y: each block writes a partial accumulator to a scratch buffer and a second
// kernel merges them per output (deterministic, no atomics).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/elementwise.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/offset_calc.cuh"
#include "backend/cuda/reduce.cuh"
#include "backend/cuda/reduce_packed.cuh"

namespace wick {

using namespace cuda;

namespace {

constexpr int kAcc = 4;  // independent accumulators per thread (loads in flight)
// Block-per-output row strategy. 256 threads bounded to 64 registers: four blocks (32
// warps) per SM keep enough 16-byte loads in flight and overlap one block's final merge
// with the others' loads (512 threads at ~72 registers allowed only one block per SM).
constexpr int kRowBlockThreads = 256;
constexpr int kRowMinBlocks = 4;
constexpr int64_t kMaxGridX = int64_t(1) << 20;  // outputs beyond are covered by grid-stride loops

// Geometry of one reduction, passed by value to the kernels.
struct ReduceGeom {
  OffsetCalc<1, int64_t> kept;   // output index -> input offset
  OffsetCalc<1, int64_t> outer;  // outer reduction index -> input offset (rank 0 when none)
  int64_t n_out = 0;
  int64_t n_red = 0;  // = outer count * inner
  int64_t inner = 1;  // length of the last reduced dim
  int64_t inner_stride = 0;
  int64_t chunk = 0;  // reduction indices per split (blockIdx.y)
  int splits = 1;
};

template <class S>
constexpr int vec_width() {
  return sizeof(S) >= 16 ? 1 : int(16 / sizeof(S));
}

// Folds the 16-byte vectors pv[0, nvec) into folder f, the G threads of a group taking
// every G-th vector from thread tid: kAcc independent loads in flight, all issued before
// their first use. The fold calls come in increasing vector index j, except that a
// folder which may see a vector twice (Folder::kRepeatSafe: min/max and their arg forms,
// where a repeat is never strictly better) also takes the last partial round as one
// round of loads, those past the end re-reading the round's first vector, instead of
// one dependent load at a time.
template <class S, int V, class Folder>
__device__ __forceinline__ void fold_vectors(Folder& f, const Vec<S, V>* __restrict__ pv, int64_t nvec, int tid,
                                             int G) {
  int64_t j = tid;
  for (; j + (kAcc - 1) * int64_t(G) < nvec; j += kAcc * int64_t(G)) {
    Vec<S, V> v[kAcc];
#pragma unroll
    for (int u = 0; u < kAcc; ++u) v[u] = pv[j + u * int64_t(G)];
#pragma unroll
    for (int u = 0; u < kAcc; ++u) f.fold(u, v[u], j + u * int64_t(G));
  }
  if constexpr (requires { Folder::kRepeatSafe; }) {
    if (j < nvec) {
      const int n_in = int(std::min<int64_t>(kAcc, (nvec - 1 - j) / G + 1));  // vectors left: 1..kAcc-1
      Vec<S, V> v[kAcc];
#pragma unroll
      for (int u = 0; u < kAcc; ++u) v[u] = pv[j + (u < n_in ? u : 0) * int64_t(G)];
#pragma unroll
      for (int u = 0; u < kAcc; ++u) f.fold(u, v[u], j + (u < n_in ? u : 0) * int64_t(G));
    }
  } else {
    for (; j < nvec; j += G) f.fold(0, pv[j], j);
  }
}

// The generic vector folder: every element through op.step into accumulator slot u.
template <class Op, class S, int V, class A>
struct ElementFolder {
  const Op& op;
  A (&acc)[kAcc];
  int64_t vidx0;  // reduction index of vector 0's first element
  __device__ __forceinline__ void fold(int u, const Vec<S, V>& v, int64_t j) {
#pragma unroll
    for (int e = 0; e < V; ++e) acc[u] = op.step(acc[u], v.v[e], vidx0 + j * V + e);
  }
};

// Folds p[lo, hi) (stride 1; element k has reduction index idx0 + k) into acc, the G
// threads of a group taking every G-th element (or 16-byte vector) from thread tid.
// The aligned middle goes through the op's packed folder where it has one (16-bit
// min/max/argmin/argmax, reduce_packed.cuh), else element by element.
template <class Op, class S, class A>
__device__ __forceinline__ void row_segment(const Op& op, const S* __restrict__ p, int64_t lo, int64_t hi, int64_t idx0,
                                            int tid, int G, A (&acc)[kAcc]) {
  constexpr int V = vec_width<S>();
  int64_t a_lo = lo;  // first element at a 16-byte boundary
  if constexpr (V > 1) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p + lo);
    a_lo = std::min(hi, lo + int64_t((16 - addr % 16) % 16) / int64_t(sizeof(S)));
  }
  for (int64_t k = lo + tid; k < a_lo; k += G) acc[0] = op.step(acc[0], p[k], idx0 + k);
  const int64_t nvec = (hi - a_lo) / V;
  const Vec<S, V>* pv = reinterpret_cast<const Vec<S, V>*>(p + a_lo);
  const int64_t vidx0 = idx0 + a_lo;
  using Packed = typename red::PackedRowFolder<Op, kAcc>::type;
  if constexpr (!std::is_void_v<Packed>) {
    Packed f(op);
    fold_vectors(f, pv, nvec, tid, G);
    f.finish(op, vidx0, acc);
  } else {
    ElementFolder<Op, S, V, A> f{op, acc, vidx0};
    fold_vectors(f, pv, nvec, tid, G);
  }
  // Tail elements come after every vector, as op.step requires.
  for (int64_t k = a_lo + nvec * V + tid; k < hi; k += G) acc[0] = op.step(acc[0], p[k], idx0 + k);
}

template <class Op, class A>
__device__ __forceinline__ A merge_all(const Op& op, const A (&acc)[kAcc]) {
  A a = acc[0];
#pragma unroll
  for (int u = 1; u < kAcc; ++u) a = op.merge(a, acc[u]);
  return a;
}

// Row strategy: a group (a warp, or the whole block) per output; split blockIdx.y
// covers reduction indices [y * chunk, (y + 1) * chunk).
template <class Op, class S>
__global__ void __launch_bounds__(kRowBlockThreads, kRowMinBlocks)
    reduce_row_kernel(Op op, ReduceGeom g, const S* __restrict__ x, typename Op::out_t* __restrict__ out,
                      typename Op::acc_t* __restrict__ partial, bool warp_mode) {
  using A = typename Op::acc_t;
  const int G = warp_mode ? 32 : int(blockDim.x);
  const int tid = warp_mode ? int(threadIdx.x & 31) : int(threadIdx.x);
  const int64_t groups_per_block = blockDim.x / G;
  const int64_t s = blockIdx.y;
  const int64_t rb = s * g.chunk, re = std::min(g.n_red, rb + g.chunk);
  for (int64_t o = int64_t(blockIdx.x) * groups_per_block + (warp_mode ? threadIdx.x >> 5 : 0); o < g.n_out;
       o += int64_t(gridDim.x) * groups_per_block) {
    int64_t koff[1];
    g.kept.get(o, koff);
    A acc[kAcc];
#pragma unroll
    for (int u = 0; u < kAcc; ++u) acc[u] = op.init();
    for (int64_t ro = rb / g.inner; ro * g.inner < re; ++ro) {
      const int64_t seg0 = ro * g.inner;
      int64_t ooff[1];
      g.outer.get(ro, ooff);
      row_segment(op, x + koff[0] + ooff[0], std::max<int64_t>(rb - seg0, 0), std::min(re - seg0, g.inner), seg0, tid,
                  G, acc);
    }
    A a = merge_all(op, acc);
    a = warp_mode ? warp_merge(op, a) : block_merge(op, a);
    if (tid == 0) {
      if (g.splits == 1)
        out[o] = op.finalize(a, g.n_red);
      else
        partial[s * g.n_out + o] = a;
    }
  }
}

// Outputs per thread of the column strategy when they are contiguous and aligned: one
// 16-byte load feeds OV accumulators (bounded so the shared merge buffer stays <= 32 KiB;
// 16-bit argmax takes 8 outputs per thread, not 4: bf16 argmax over the first dim of
// 16384 x 16384 162 -> 155 us on the H200).
template <class Op, class S>
constexpr int col_vec_width() {
  constexpr int by_load = vec_width<S>();
  constexpr int by_acc = int(128 / sizeof(typename Op::acc_t));
  return std::max(1, std::min(by_load, by_acc));
}

// Column strategy: thread (tx, ty) of block (bx, y) serves outputs [o, o + OV) with
// o = (bx * blockDim.x + tx) * OV, taking every blockDim.y-th reduction index of split y
// from ty on. OV > 1 only when those outputs are adjacent and aligned in x.
template <class Op, class S, int OV>
__global__ void reduce_col_kernel(Op op, ReduceGeom g, const S* __restrict__ x, typename Op::out_t* __restrict__ out,
                                  typename Op::acc_t* __restrict__ partial) {
  using A = typename Op::acc_t;
  constexpr int KA = OV == 1 ? kAcc : 1;  // independent accumulator sets (loads stay kAcc deep)
  __shared__ alignas(16) unsigned char raw[kThreads * OV * sizeof(A)];
  A* shared = reinterpret_cast<A*>(raw);
  const int tx = threadIdx.x, ty = threadIdx.y, bx = blockDim.x, by = blockDim.y;
  const int64_t o = (int64_t(blockIdx.x) * bx + tx) * OV;
  const int64_t s = blockIdx.y;
  const int64_t rb = s * g.chunk, re = std::min(g.n_red, rb + g.chunk);
  A acc[KA][OV];
#pragma unroll
  for (int u = 0; u < KA; ++u)
#pragma unroll
    for (int k = 0; k < OV; ++k) acc[u][k] = op.init();
  using Packed = typename red::PackedColumnFolder<Op, OV>::type;
  constexpr bool kPacked = !std::is_void_v<Packed>;
  std::conditional_t<kPacked, Packed, char> packed{};
  // Folds the vector of reduction index r into accumulator set u (increasing r per set).
  auto fold = [&](int u, const Vec<S, OV>& v, int64_t r) {
    if constexpr (kPacked) {
      packed.fold(v);
    } else {
#pragma unroll
      for (int k = 0; k < OV; ++k) acc[u % KA][k] = op.step(acc[u % KA][k], v.v[k], r);
    }
  };
  if (o < g.n_out) {
    int64_t koff[1];
    g.kept.get(o, koff);
    const S* base = x + koff[0];
    const int64_t st = g.inner_stride;
    int64_t r = rb + ty;
    if (g.outer.rank == 0) {  // one reduced dim: plain strided walk
      for (; r + (kAcc - 1) * int64_t(by) < re; r += kAcc * int64_t(by)) {
        Vec<S, OV> v[kAcc];
#pragma unroll
        for (int u = 0; u < kAcc; ++u) v[u] = *reinterpret_cast<const Vec<S, OV>*>(base + (r + u * int64_t(by)) * st);
#pragma unroll
        for (int u = 0; u < kAcc; ++u) fold(u, v[u], r + u * int64_t(by));
      }
      for (; r < re; r += by) fold(0, *reinterpret_cast<const Vec<S, OV>*>(base + r * st), r);
    } else {
      for (; r < re; r += by) {
        int64_t ooff[1];
        g.outer.get(r / g.inner, ooff);
        fold(0, *reinterpret_cast<const Vec<S, OV>*>(base + ooff[0] + (r % g.inner) * st), r);
      }
    }
  }
  if constexpr (kPacked) packed.finish(op, acc[0]);
#pragma unroll
  for (int k = 0; k < OV; ++k) {
#pragma unroll
    for (int u = 1; u < KA; ++u) acc[0][k] = op.merge(acc[0][k], acc[u][k]);
  }
  if (by > 1) {
#pragma unroll
    for (int k = 0; k < OV; ++k) shared[(ty * bx + tx) * OV + k] = acc[0][k];
    __syncthreads();
    if (ty == 0)
      for (int j = 1; j < by; ++j)
#pragma unroll
        for (int k = 0; k < OV; ++k) acc[0][k] = op.merge(acc[0][k], shared[(j * bx + tx) * OV + k]);
  }
  if (ty == 0 && o < g.n_out) {
#pragma unroll
    for (int k = 0; k < OV; ++k) {
      if (g.splits == 1)
        out[o + k] = op.finalize(acc[0][k], g.n_red);
      else
        partial[s * g.n_out + o + k] = acc[0][k];
    }
  }
}

// Second pass of a split reduction: a warp per output merges its `splits` partials.
template <class Op>
__global__ void reduce_finish_kernel(Op op, const typename Op::acc_t* __restrict__ partial,
                                     typename Op::out_t* __restrict__ out, int64_t n_out, int splits, int64_t n_red) {
  using A = typename Op::acc_t;
  const int lane = threadIdx.x & 31;
  const int64_t warps_per_block = blockDim.x >> 5;
  for (int64_t o = int64_t(blockIdx.x) * warps_per_block + (threadIdx.x >> 5); o < n_out;
       o += int64_t(gridDim.x) * warps_per_block) {
    A a = op.init();
    for (int s = lane; s < splits; s += 32) a = op.merge(a, partial[int64_t(s) * n_out + o]);
    a = warp_merge(op, a);
    if (lane == 0) out[o] = op.finalize(a, n_red);
  }
}

struct DimGroup {
  std::vector<int64_t> shape, strides;
};

DimGroup collapsed(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  const CollapsedDims c = collapse_dims(Shape(shape), {&strides});
  return {c.shape, c.strides.empty() ? std::vector<int64_t>{} : c.strides[0]};
}

OffsetCalc<1, int64_t> make_calc(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, size_t rank) {
  WICK_CHECK(rank <= size_t(kMaxDims), Unsupported, "reduce: ", rank, " non-collapsible dims (at most ", kMaxDims,
             " on cuda)");
  OffsetCalc<1, int64_t> c{};
  c.rank = int(rank);
  for (size_t d = 0; d < rank; ++d) {
    c.sizes[d] = shape[d];
    c.strides[0][d] = strides[d];
  }
  c.base[0] = 0;
  return c;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How the work is laid out on the GPU, chosen from the sizes and how many blocks of each
// kernel fit on an SM at once (splits aim at one full wave, never a partial second one).
struct Plan {
  bool row = false;
  bool warp_mode = false;
  dim3 grid, block;
};

// col_ov: outputs per thread of the column strategy (1 unless they are vector-loadable).
Plan plan_reduction(ReduceGeom& g, size_t esize, int sm_count, int row_blocks_per_sm, int col_blocks_per_sm,
                    int col_ov) {
  Plan p;
  g.splits = 1;
  g.chunk = g.n_red;
  p.row = g.n_red > 0 && g.inner_stride == 1 && g.inner >= 32;
  if (p.row) {
    // A warp per row for short rows, and for rows up to 64 KiB when the rows fill the GPU
    // with warps (64 per SM) at least once: a block per row pays a block-wide merge (two
    // barriers, shared memory, nine warp merges) every few vectors per thread, which cost
    // 20% of the bandwidth of argmax over 16384 x 16384 (H200: f32 320 -> 264 us, bf16
    // 169 -> 133 us as a warp per row; max 271 -> 255 us; sum 245 -> 250 us, still above
    // the copy bandwidth).
    const int64_t row_bytes = g.n_red * int64_t(esize);
    p.warp_mode = row_bytes <= 8192 || (row_bytes <= 65536 && g.n_out >= int64_t(sm_count) * 64);
    if (p.warp_mode) {
      p.block = dim3(kThreads);
      p.grid = dim3(unsigned(std::min(ceil_div(g.n_out, kThreads / 32), kMaxGridX)));
      return p;
    }
    p.block = dim3(kRowBlockThreads);
    const int64_t blocks = std::min(g.n_out, kMaxGridX);
    const int64_t wave = int64_t(sm_count) * row_blocks_per_sm;
    if (blocks < wave) {
      // At least four 16-byte vectors per thread per split keep the split worth it.
      const int64_t min_chunk = int64_t(kRowBlockThreads) * 4 * (16 / int64_t(esize > 16 ? 16 : esize));
      const int64_t splits = std::clamp<int64_t>(std::min(wave / blocks, g.n_red / min_chunk), 1, 65535);
      g.chunk = ceil_div(ceil_div(g.n_red, splits), 256) * 256;  // keeps split starts 16-byte aligned in a row
      g.splits = int(ceil_div(g.n_red, g.chunk));
    }
    p.grid = dim3(unsigned(blocks), unsigned(g.splits));
    return p;
  }
  int by = 1;
  while (by < 8 && by * 16 <= g.n_red) by *= 2;
  const int bx = kThreads / by;
  const int64_t blocks = ceil_div(g.n_out / col_ov, bx);
  WICK_CHECK(blocks < (int64_t(1) << 31), Unsupported, "reduce: ", g.n_out, " outputs are too many for one launch");
  const int64_t wave = int64_t(sm_count) * col_blocks_per_sm;
  if (blocks < wave && g.n_red >= int64_t(by) * 64) {
    const int64_t splits = std::clamp<int64_t>(std::min(wave / blocks, g.n_red / (int64_t(by) * 32)), 1, 65535);
    g.chunk = ceil_div(g.n_red, splits);
    g.splits = int(ceil_div(g.n_red, g.chunk));
  }
  p.block = dim3(bx, by);
  p.grid = dim3(unsigned(blocks), unsigned(g.splits));
  return p;
}

// Whether the column strategy may give each thread `ov` adjacent outputs loaded as one
// vector: the innermost kept dim is contiguous and every row of ov outputs is aligned.
bool column_vectorizable(const ReduceGeom& g, const void* x, size_t esize, int ov) {
  if (ov <= 1 || g.kept.rank == 0) return false;
  const int last = g.kept.rank - 1;
  if (g.kept.strides[0][last] != 1 || g.kept.sizes[last] % ov != 0) return false;
  for (int d = 0; d < last; ++d)
    if (g.kept.strides[0][d] % ov != 0) return false;
  for (int d = 0; d < g.outer.rank; ++d)
    if (g.outer.strides[0][d] % ov != 0) return false;
  return g.inner_stride % ov == 0 && reinterpret_cast<uintptr_t>(x) % (esize * size_t(ov)) == 0;
}

template <class Kernel>
int blocks_per_sm(Kernel kernel, int threads) {
  int n = 0;
  WICK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, 0));
  return std::max(n, 1);
}

template <class Op, class S>
void launch_reduction(CudaBackend& be, const char* name, const Op& op, ReduceGeom g, const S* x,
                      typename Op::out_t* out) {
  using A = typename Op::acc_t;
  constexpr int OV = col_vec_width<Op, S>();
  // Asked once per instantiation (the device is current: reduce() activated it).
  static const int row_bps = blocks_per_sm(reduce_row_kernel<Op, S>, kRowBlockThreads);
  static const int col_bps = blocks_per_sm(reduce_col_kernel<Op, S, 1>, kThreads);
  static const int colv_bps = blocks_per_sm(reduce_col_kernel<Op, S, OV>, kThreads);
  const bool col_vec = g.n_red > 0 && column_vectorizable(g, x, sizeof(S), OV);
  const Plan p = plan_reduction(g, sizeof(S), be.sm_count(), row_bps, col_vec ? colv_bps : col_bps, col_vec ? OV : 1);
  std::shared_ptr<void> scratch;
  A* partial = nullptr;
  if (g.splits > 1) {
    scratch = be.scratch(size_t(g.splits) * size_t(g.n_out) * sizeof(A));
    partial = static_cast<A*>(scratch.get());
  }
  if (p.row)
    reduce_row_kernel<Op, S><<<p.grid, p.block, 0, be.stream()>>>(op, g, x, out, partial, p.warp_mode);
  else if (col_vec)
    reduce_col_kernel<Op, S, OV><<<p.grid, p.block, 0, be.stream()>>>(op, g, x, out, partial);
  else
    reduce_col_kernel<Op, S, 1><<<p.grid, p.block, 0, be.stream()>>>(op, g, x, out, partial);
  check_launch(name);
  if (g.splits > 1) {
    const unsigned blocks = unsigned(std::min(ceil_div(g.n_out, kThreads / 32), kMaxGridX));
    reduce_finish_kernel<Op><<<blocks, kThreads, 0, be.stream()>>>(op, partial, out, g.n_out, g.splits, g.n_red);
    check_launch(name);
  }
  // The scratch buffer goes back to the cache here; the allocator's reuse is ordered on
  // this backend's one stream, after these kernels.
}

}  // namespace

void CudaBackend::reduce(ReduceOp op, const Tensor& x, const std::vector<size_t>& dims, const Tensor& out) {
  const char* name = reduce_op_name(op);
  activate();
  std::vector<int64_t> kshape, kstrides, rshape, rstrides;
  for (size_t d = 0; d < x.rank(); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    (reduced ? rshape : kshape).push_back(x.shape()[d]);
    (reduced ? rstrides : kstrides).push_back(x.strides()[d]);
  }
  const DimGroup kept = collapsed(kshape, kstrides), redg = collapsed(rshape, rstrides);
  ReduceGeom g;
  g.kept = make_calc(kept.shape, kept.strides, kept.shape.size());
  g.n_out = 1;
  for (int64_t s : kept.shape) g.n_out *= s;
  g.n_red = 1;
  for (int64_t s : redg.shape) g.n_red *= s;
  if (g.n_out == 0) return;
  if (redg.shape.empty()) {
    g.outer = make_calc({}, {}, 0);
    g.inner = 1;
    g.inner_stride = 0;
  } else {
    g.outer = make_calc(redg.shape, redg.strides, redg.shape.size() - 1);
    g.inner = redg.shape.back();
    g.inner_stride = redg.strides.back();
  }
  dispatch(x.dtype(), [&]<class T>() {
    using S = dev_t<T>;
    reduce::with_reduce_op<compute_t<T>>(op, [&]<class Op>(const Op& f) {
      using DOp = red::DeviceOp<Op, S>;
      launch_reduction<DOp, S>(*this, name, DOp{f}, g, dptr<const S>(x) + x.offset(),
                               dptr<typename DOp::out_t>(out) + out.offset());
    });
  });
}

}  // namespace wick
