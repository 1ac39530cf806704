// sort (stable; values optional: argsort) and topk along one dim on CUDA, generic over
// the dtype through radix keys.
//
// Keys: every dtype maps to the unsigned integer of its width whose ascending order is
// the dtype's order with NaN greater than every number and -0 equal to +0 (PyTorch's
// comparisons); inverted, it is the descending order. Elements are then ordered by key
// and, for equal keys, by index, which cub's radix sorts give since they are stable.
//
// sort: a kernel writes each line's keys and indices 0..n-1 contiguously, cub sorts them
// (DeviceRadixSort for one line, DeviceSegmentedSort for many), and a gather kernel writes
// the indices and the values (the input's own elements, read at the sorted indices) into
// the outputs' layout.
//
// topk (keys inverted for largest, so the best are always the smallest keys): for k of
// at least half the line, the sort's path, keeping the first k. Otherwise a radix select
// per segment (a block each) keeps the k smallest keys in index order without sorting the
// line (about one read of the line per 8 key bits, plus one); cub then sorts just those k
// per line. Lines too few to fill the GPU (the sampler: one row of 32k-256k logits, k
// small) are first split into chunks of at least max(16 k, 8192) elements selected by one
// block each, and a second select over the chunks' candidates (in index order, so ties
// still go to the smaller index) keeps the line's k.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstring>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <memory>
#include <type_traits>

#include "backend/cuda/device_types.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/cuda/lines.cuh"

namespace wick {

using namespace cuda;

namespace {

// ---- keys -------------------------------------------------------------------------------------
template <class S>
using key_t = std::conditional_t<
    sizeof(S) == 1, uint8_t,
    std::conditional_t<sizeof(S) == 2, uint16_t, std::conditional_t<sizeof(S) == 4, uint32_t, uint64_t>>>;

template <class S>
__device__ __forceinline__ key_t<S> ordered_key(S x) {
  using K = key_t<S>;
  if constexpr (std::is_unsigned_v<S>) {
    return K(x);
  } else if constexpr (std::is_integral_v<S>) {
    return K(x) ^ (K(1) << (8 * sizeof(K) - 1));  // two's complement: flip the sign bit
  } else {
    const auto v = to_compute(x);
    if (v != v) return K(~K(0));  // every NaN is the greatest
    K bits = 0;
    if (v != 0) memcpy(&bits, &x, sizeof(K));  // -0 keys as +0
    const K sign = K(K(1) << (8 * sizeof(K) - 1));
    return (bits & sign) ? K(~bits) : K(bits | sign);  // negatives reversed below positives
  }
}

// The key of x in ascending order, or in descending order when invert.
template <class S>
__device__ __forceinline__ key_t<S> sort_key(S x, bool invert) {
  const key_t<S> k = ordered_key(x);
  return invert ? key_t<S>(~k) : k;
}

// ---- line keys, cub sorts, output -----------------------------------------------------------
// Keys and line-local indices of `segments` segments of `len` elements, in device scratch.
template <class K>
struct Pairs {
  std::shared_ptr<void> key_mem, idx_mem;
  K* keys;
  int32_t* idx;
  Pairs(CudaBackend& be, int64_t n)
      : key_mem(be.scratch(size_t(n) * sizeof(K))),
        idx_mem(be.scratch(size_t(n) * sizeof(int32_t))),
        keys(static_cast<K*>(key_mem.get())),
        idx(static_cast<int32_t*>(idx_mem.get())) {}
};

template <class S>
__global__ void line_keys_kernel(DeviceLines L, const S* __restrict__ x, bool invert, key_t<S>* __restrict__ keys,
                                 int32_t* __restrict__ idx) {
  const int64_t total = L.count * L.n;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t l = e / L.n, i = e - l * L.n;
    keys[e] = sort_key(x[L.x_offset(l) + i * L.x_stride], invert);
    idx[e] = int32_t(i);
  }
}

struct SegmentStart {
  int64_t len;
  __host__ __device__ int64_t operator()(int64_t s) const { return s * len; }
};

// Stable ascending sort of each segment's (key, index) pairs.
template <class K>
Pairs<K> sort_segments(CudaBackend& be, const Pairs<K>& in, int64_t segments, int64_t len) {
  const int64_t n = segments * len;
  Pairs<K> out(be, n);
  const auto starts = thrust::make_transform_iterator(thrust::make_counting_iterator<int64_t>(0), SegmentStart{len});
  auto run_sort = [&](void* temp, size_t& bytes) {
    if (segments == 1)  // one long line: the device-wide radix sort uses every SM
      return cub::DeviceRadixSort::SortPairs(temp, bytes, in.keys, out.keys, in.idx, out.idx, n, 0, int(8 * sizeof(K)),
                                             be.stream());
    return cub::DeviceSegmentedSort::StableSortPairs(temp, bytes, in.keys, out.keys, in.idx, out.idx, n, segments,
                                                     starts, starts + 1, be.stream());
  };
  size_t bytes = 0;
  WICK_CUDA_CHECK(run_sort(nullptr, bytes));
  const std::shared_ptr<void> temp = be.scratch(std::max<size_t>(bytes, 1));
  WICK_CUDA_CHECK(run_sort(temp.get(), bytes));
  return out;
}

// Element i of line l of the outputs is the element at order[l * src_n + i] (a line-local
// index) of x's line l; values may be null.
template <class S>
__global__ void write_sorted_kernel(DeviceLines L, const S* __restrict__ x, const int32_t* __restrict__ order,
                                    int64_t src_n, int64_t out_n, S* __restrict__ values,
                                    int64_t* __restrict__ indices) {
  const int64_t total = L.count * out_n;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t l = e / out_n, i = e - l * out_n;
    const int64_t j = order[l * src_n + i], o = L.out_offset(l, i, out_n);
    indices[o] = j;
    if (values) values[o] = x[L.x_offset(l) + j * L.x_stride];
  }
}

// Sorts x's lines (keys inverted when invert) and writes the first out_n of each.
template <class S>
void sort_lines(CudaBackend& be, const char* name, const DeviceLines& L, const S* x, bool invert, int64_t out_n,
                S* values, int64_t* indices) {
  Pairs<key_t<S>> keys(be, L.count * L.n);
  line_keys_kernel<S><<<grid_for(L.count * L.n), kThreads, 0, be.stream()>>>(L, x, invert, keys.keys, keys.idx);
  check_launch(name);
  const Pairs<key_t<S>> sorted = sort_segments(be, keys, L.count, L.n);
  write_sorted_kernel<S>
      <<<grid_for(L.count * out_n), kThreads, 0, be.stream()>>>(L, x, sorted.idx, L.n, out_n, values, indices);
  check_launch(name);
}

// ---- radix select -------------------------------------------------------------------------------
constexpr int kSelectThreads = 256;

// Segments read from x: line l's chunk c of `chunks` (element ranges of at least k).
template <class S>
struct LineChunks {
  using K = key_t<S>;
  struct Seg {
    const S* p;
    int64_t lo, n;
  };
  DeviceLines L;
  const S* x;
  bool invert;
  int64_t chunks;
  __device__ int64_t count() const { return L.count * chunks; }
  __device__ Seg segment(int64_t s) const {
    const int64_t l = s / chunks, c = s - l * chunks;
    const int64_t lo = L.n * c / chunks, hi = L.n * (c + 1) / chunks;
    return {x + L.x_offset(l), lo, hi - lo};
  }
  __device__ K key(const Seg& g, int64_t i) const { return sort_key(g.p[(g.lo + i) * L.x_stride], invert); }
  __device__ int32_t index(const Seg& g, int64_t i) const { return int32_t(g.lo + i); }
};

// Segments of earlier candidates: `len` (key, line index) pairs each, in index order.
template <class KT>
struct Candidates {
  using K = KT;
  struct Seg {
    const K* keys;
    const int32_t* idx;
    int64_t n;
  };
  const K* keys;
  const int32_t* idx;
  int64_t segments, len;
  __device__ int64_t count() const { return segments; }
  __device__ Seg segment(int64_t s) const { return {keys + s * len, idx + s * len, len}; }
  __device__ K key(const Seg& g, int64_t i) const { return g.keys[i]; }
  __device__ int32_t index(const Seg& g, int64_t i) const { return g.idx[i]; }
};

// The k smallest keys of each segment (1 <= k <= its length; equal keys: the earlier
// ones), in segment order, to out_keys / out_idx[s * k, (s + 1) * k). Each pass over the
// key's 8-bit digits, from the top, counts the keys that match the digits fixed so far in
// a 256-bin histogram (one shared atomic per distinct bin per warp) and fixes the digit of
// the k-th smallest key T; a last ordered pass keeps the keys below T and the first ones
// equal to T (a block scan per tile of positions; tiles without any are skipped and the
// pass ends once all are found).
template <class Segs>
__global__ void __launch_bounds__(kSelectThreads)
    select_kernel(Segs segs, int64_t k, typename Segs::K* __restrict__ out_keys, int32_t* __restrict__ out_idx) {
  using K = typename Segs::K;
  using Scan = cub::BlockScan<uint32_t, kSelectThreads>;
  __shared__ uint32_t hist[256];
  __shared__ uint32_t found_digit, found_rank;
  __shared__ typename Scan::TempStorage scan_temp;
  const int tid = int(threadIdx.x), lane = tid & 31;
  for (int64_t s = blockIdx.x; s < segs.count(); s += gridDim.x) {
    const auto g = segs.segment(s);
    K prefix = 0, mask = 0;
    uint32_t rank = uint32_t(k);  // T is the rank-th smallest of the keys matching prefix under mask
    for (int shift = 8 * int(sizeof(K)) - 8; shift >= 0; shift -= 8) {
      for (int b = tid; b < 256; b += kSelectThreads) hist[b] = 0;
      __syncthreads();
      for (int64_t base = 0; base < g.n; base += kSelectThreads) {  // uniform bound: every lane meets the match
        const int64_t i = base + tid;
        int bin = 256;  // none
        if (i < g.n) {
          const K key = segs.key(g, i);
          if (K(key & mask) == prefix) bin = int((key >> shift) & 0xff);
        }
        const unsigned peers = __match_any_sync(0xffffffffu, bin);
        if (bin < 256 && lane == __ffs(peers) - 1) atomicAdd(&hist[bin], uint32_t(__popc(peers)));
      }
      __syncthreads();
      if (tid < 32) {  // lane j holds bins 8j..8j+7; the lane whose range holds the rank-th key finds its bin
        uint32_t c[8], sum = 0;
#pragma unroll
        for (int j = 0; j < 8; ++j) sum += (c[j] = hist[lane * 8 + j]);
        uint32_t incl = sum;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
          const uint32_t v = __shfl_up_sync(0xffffffffu, incl, d);
          if (lane >= d) incl += v;
        }
        uint32_t before = incl - sum;
        if (before < rank && rank <= incl) {
          int j = 0;
          while (before + c[j] < rank) before += c[j++];
          found_digit = uint32_t(lane * 8 + j);
          found_rank = rank - before;
        }
      }
      __syncthreads();
      prefix = K(prefix | (K(found_digit) << shift));
      mask = K(mask | (K(0xff) << shift));
      rank = found_rank;
    }
    // prefix is T; all keys below it are kept, and the first `rank` equal to it.
    const uint32_t n_below = uint32_t(k) - rank;
    uint32_t below_seen = 0, equal_seen = 0;
    for (int64_t base = 0; base < g.n && (below_seen < n_below || equal_seen < rank); base += kSelectThreads) {
      const int64_t i = base + tid;
      K key = 0;
      bool below = false, equal = false;
      if (i < g.n) {
        key = segs.key(g, i);
        below = key < prefix;
        equal = key == prefix;
      }
      if (!__syncthreads_or(below || equal)) continue;
      uint32_t before, total;  // (below, equal) counts packed in 16 bits each: a tile has < 2^16
      Scan(scan_temp).ExclusiveSum(uint32_t(below) | (uint32_t(equal) << 16), before, total);
      const uint32_t below_before = below_seen + (before & 0xffff), equal_before = equal_seen + (before >> 16);
      if (below || (equal && equal_before < rank)) {
        const int64_t pos = s * k + below_before + (equal_before < rank ? equal_before : rank);
        out_keys[pos] = key;
        out_idx[pos] = segs.index(g, i);
      }
      below_seen += total & 0xffff;
      equal_seen += total >> 16;
      __syncthreads();  // scan_temp is reused
    }
  }
}

template <class Segs>
Pairs<typename Segs::K> select_smallest(CudaBackend& be, const char* name, const Segs& segs, int64_t segments,
                                        int64_t k) {
  Pairs<typename Segs::K> out(be, segments * k);
  const unsigned blocks = unsigned(std::min<int64_t>(segments, int64_t(1) << 20));
  select_kernel<Segs><<<blocks, kSelectThreads, 0, be.stream()>>>(segs, k, out.keys, out.idx);
  check_launch(name);
  return out;
}

int64_t checked_line(const DeviceLines& L, const char* name) {
  WICK_CHECK(L.n < (int64_t(1) << 31), Unsupported, name, ": lines of ", L.n, " elements (at most 2^31 - 1 on cuda)");
  return L.n;
}

template <class S>
S* values_ptr(const Tensor& values) {
  return values.defined() ? dptr<S>(values) + values.offset() : nullptr;
}

}  // namespace

void CudaBackend::sort(const Tensor& x, size_t dim, bool descending, const Tensor& values, const Tensor& indices) {
  if (x.numel() == 0) return;
  activate();
  const DeviceLines L(Lines(x, dim), "sort");
  checked_line(L, "sort");
  dispatch(x.dtype(), [&]<class T>() {
    using S = dev_t<T>;
    sort_lines<S>(*this, "sort", L, dptr<const S>(x), descending, L.n, values_ptr<S>(values),
                  dptr<int64_t>(indices) + indices.offset());
  });
}

void CudaBackend::topk(const Tensor& x, size_t dim, int64_t k, bool largest, const Tensor& values,
                       const Tensor& indices) {
  if (x.numel() == 0 || k == 0) return;
  activate();
  const DeviceLines L(Lines(x, dim), "topk");
  const int64_t n = checked_line(L, "topk");
  dispatch(x.dtype(), [&]<class T>() {
    using S = dev_t<T>;
    const S* xp = dptr<const S>(x);
    S* vals = values_ptr<S>(values);
    int64_t* idx = dptr<int64_t>(indices) + indices.offset();
    if (2 * k >= n) return sort_lines<S>(*this, "topk", L, xp, largest, k, vals, idx);
    int64_t chunks = 1;
    if (L.count < sm_count())
      chunks = std::clamp<int64_t>(std::min(n / std::max<int64_t>(16 * k, 8192), 2 * sm_count() / L.count), 1, 65535);
    auto cand = select_smallest(*this, "topk", LineChunks<S>{L, xp, largest, chunks}, L.count * chunks, k);
    if (chunks > 1)
      cand = select_smallest(*this, "topk", Candidates<key_t<S>>{cand.keys, cand.idx, L.count, chunks * k}, L.count, k);
    const auto sorted = sort_segments(*this, cand, L.count, k);
    write_sorted_kernel<S><<<grid_for(L.count * k), kThreads, 0, stream()>>>(L, xp, sorted.idx, k, k, vals, idx);
    check_launch("topk");
  });
}

}  // namespace wick
