// cache_attention and cache_write on CUDA: a batched decode step against a pool of KV
// cache blocks (nn.h). Neither launch depends on a value (the block tables and lengths are
// read by the kernels), so a CUDA graph records them once per lane count. Each key's address
// goes through its row's block table (block = table[row, key / N], offset key % N); a (B)
// `blocks` is a table of one column.
//
// Attention: a block is one (row, key/value head, head block of up to kWarps query heads,
// key split). The block's threads stage kTileKeys keys and values of its head in shared
// memory (prefetching the next tile into registers meanwhile), and each warp runs one query
// head over the tile: lane j scores key j (the row of K in shared memory is padded so that
// the 32 lanes hit 32 banks), an online softmax keeps the running maximum and sum, and
// the lanes, each holding head_dim/32 accumulator elements, add the values weighted by the
// probabilities shuffled from their lanes. The G query heads of a group read each key once.
// Rows are long or short at will: a split takes its share of the row's own keys
// [first, length), so a fixed grid (from the pool's capacity) serves any mix of lengths.
// Several splits write partials that launch_attention_combine merges.
#include <algorithm>

#include "backend/cuda/kernels_attention.cuh"
#include "backend/cuda/kernels_index.cuh"
#include "backend/cuda/launch.cuh"
#include "backend/math.h"

namespace wick {

using namespace cuda;

namespace {

constexpr int kWarps = 8;  // query heads per block at most
constexpr int kBlockThreads = 32 * kWarps;
constexpr int kMaxD = 256;

// Keys per shared-memory tile: a lane each for the 16-bit types, fewer for the wide ones
// (q and the K and V tiles stay under the 48 KB of static shared memory at head_dim 256).
template <class S>
constexpr int tile_keys() {
  return sizeof(S) == 2 ? 32 : sizeof(S) == 4 ? 16 : 4;
}
// Elements of 16 bytes; the prefetch registers of one thread (two tiles of kMaxD-wide rows).
template <class S>
constexpr int vec_elems() {
  return int(16 / sizeof(S));
}
template <class S>
constexpr int max_chunks() {
  return 2 * tile_keys<S>() * (kMaxD / vec_elems<S>()) / kBlockThreads;
}

struct Index1 {
  const int64_t* p;
  int64_t stride;
  __device__ int64_t operator[](int64_t i) const { return p[i * stride]; }
};
Index1 index1(const Tensor& t) { return {dptr<const int64_t>(t) + t.offset(), t.strides()[0]}; }

// A (B) or (B, M) block table (nn.h) and the blocks' positions N.
struct BlockTable {
  const int64_t* p;
  int64_t row_stride, col_stride, M, N;
  __device__ int64_t positions() const { return M * N; }
  // The entry of row b holding position key (key < M * N), unchecked.
  __device__ int64_t entry(int64_t b, int64_t key) const {
    return p[b * row_stride + int64_t(uint32_t(key) / uint32_t(N)) * col_stride];
  }
};
BlockTable block_table(const Tensor& t, int64_t N) {
  const bool two = t.rank() == 2;
  return {dptr<const int64_t>(t) + t.offset(), t.strides()[0], two ? t.strides()[1] : 0, two ? t.dim(1) : 1, N};
}

struct CacheArgs {
  int64_t B, H, KV, G, D, P, N;
  int64_t head_blocks, splits;
  int64_t row_stride;  // shared-memory elements per key row (D padded)
  double scale, softcap;
  int64_t window;
  int64_t qs[3], qoff;
  Strides4 k, v;
  BlockTable blocks;
  Index1 lengths;
  const float* sinks;  // (H) sink logits (nn.h), or null
};

// Shared-memory row stride for D elements of S: an odd number of 4-byte words for the 16-bit
// types (D + pad = 2 mod 4 elements), an odd number of elements for f32/f64, so that lanes
// reading one column of consecutive rows fall in distinct banks.
template <class S>
int64_t padded_row(int64_t D) {
  if constexpr (sizeof(S) == 2) {
    int64_t r = (D + 1) / 2 * 2;
    return r % 4 == 2 ? r : r + 2;
  } else {
    return D % 2 == 1 ? D : D + 1;
  }
}

// The keys [first, length) of a row, and this split's share [begin, end) of them (whole tiles).
struct KeyRange {
  int64_t begin, end;
};
__device__ KeyRange split_range(const CacheArgs& a, int64_t length, int64_t split, int tile) {
  const int64_t first = a.window > 0 && length > a.window ? length - a.window : 0;
  const int64_t n = length - first;
  const int64_t tiles = (n + tile - 1) / tile;
  const int64_t per = (tiles + a.splits - 1) / a.splits;
  const int64_t begin = first + split * per * tile;
  const int64_t end = begin + per * tile < length ? begin + per * tile : length;
  return {begin, end > begin ? end : begin};
}

// VEC: K and V rows are contiguous and 16-byte aligned (the pool as KvCache allocates it):
// tiles move in 16-byte chunks. Otherwise element by element.
template <class S, int EPL, bool VEC>
__global__ void __launch_bounds__(kBlockThreads)
    cache_attention_kernel(CacheArgs a, const S* __restrict__ q, const S* __restrict__ k, const S* __restrict__ v,
                           S* __restrict__ out, dcompute_t<S>* __restrict__ part_acc,
                           dcompute_t<S>* __restrict__ part_ml, DeviceErrorRecord* rec) {
  using A = dcompute_t<S>;
  constexpr int TK = tile_keys<S>();
  constexpr int V = vec_elems<S>();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  A* qsm = reinterpret_cast<A*>(smem_raw);           // [kWarps][D]
  S* ks = reinterpret_cast<S*>(qsm + kWarps * a.D);  // [TK][row_stride]
  S* vs = ks + TK * a.row_stride;                    // [TK][row_stride]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  int64_t bid = blockIdx.x;
  const int64_t hb = bid % a.head_blocks;
  bid /= a.head_blocks;
  const int64_t kvh = bid % a.KV, b = bid / a.KV;
  const int64_t split = blockIdx.y;
  const int64_t g = hb * kWarps + warp, h = kvh * a.G + g;
  const bool head_ok = g < a.G;

  const int64_t length_raw = a.lengths[b];
  const bool length_ok = length_raw >= 1 && length_raw <= a.blocks.positions();
  if (threadIdx.x == 0 && split == 0 && kvh == 0 && hb == 0)
    index_ok(length_raw - 1, a.blocks.positions(), rec, IndexOpId::CacheAttentionLength);
  // A bad length attends nothing (the row becomes NaN; the error is raised at the next
  // synchronization); a bad block id reads block 0 (likewise raised).
  const int64_t length = length_ok ? length_raw : 0;
  const KeyRange r = split_range(a, length, split, TK);
  auto block_of = [&](int64_t key) {
    const int64_t id = a.blocks.entry(b, key);
    return index_ok(id, a.P, rec, IndexOpId::CacheAttentionSlot) ? id : int64_t(0);
  };

  if (head_ok)
    for (int64_t d = lane; d < a.D; d += 32)
      qsm[warp * a.D + d] = A(to_compute(q[a.qoff + b * a.qs[0] + h * a.qs[1] + d * a.qs[2]]));
  const S* kb = k + a.k.off + kvh * a.k.s[1];  // this head's keys; a key's block and offset added per key
  const S* vb = v + a.v.off + kvh * a.v.s[1];
  const int64_t N = a.blocks.N;

  // The tile at j0 into registers (VEC) or straight into shared memory (scalar).
  const int64_t chunks_per_row = a.D / V, tile_chunks = TK * chunks_per_row;
  uint4 pre[VEC ? max_chunks<S>() : 1];
  auto fetch = [&](int64_t j0) {
#pragma unroll
    for (int i = 0; i < max_chunks<S>(); ++i) {
      const int64_t c = threadIdx.x + int64_t(i) * kBlockThreads;  // [0, tile_chunks): K, then V
      if (c >= 2 * tile_chunks) break;
      const bool is_v = c >= tile_chunks;
      const int64_t cc = is_v ? c - tile_chunks : c, j = cc / chunks_per_row, d = cc % chunks_per_row * V;
      const int64_t key = j0 + j < r.end ? j0 + j : r.end - 1;  // a short last tile repeats a key
      const int64_t blk = block_of(key), at = key % N;
      const S* src = is_v ? vb + blk * a.v.s[0] + at * a.v.s[2] + d : kb + blk * a.k.s[0] + at * a.k.s[2] + d;
      pre[i] = __ldg(reinterpret_cast<const uint4*>(src));
    }
  };
  auto stage = [&](int64_t j0) {
    if constexpr (VEC) {
#pragma unroll
      for (int i = 0; i < max_chunks<S>(); ++i) {
        const int64_t c = threadIdx.x + int64_t(i) * kBlockThreads;
        if (c >= 2 * tile_chunks) break;
        const bool is_v = c >= tile_chunks;
        const int64_t cc = is_v ? c - tile_chunks : c, j = cc / chunks_per_row, d = cc % chunks_per_row * V;
        // 4-byte stores: the padded rows are 4-byte but not 16-byte aligned.
        uint32_t* dst = reinterpret_cast<uint32_t*>((is_v ? vs : ks) + j * a.row_stride + d);
        dst[0] = pre[i].x, dst[1] = pre[i].y, dst[2] = pre[i].z, dst[3] = pre[i].w;
      }
    } else {
      for (int64_t e = threadIdx.x; e < 2 * TK * a.D; e += kBlockThreads) {
        const bool is_v = e >= TK * a.D;
        const int64_t ee = is_v ? e - TK * a.D : e, j = ee / a.D, d = ee % a.D;
        const int64_t key = j0 + j < r.end ? j0 + j : r.end - 1;
        const int64_t blk = block_of(key), at = key % N;
        const S x = is_v ? vb[blk * a.v.s[0] + at * a.v.s[2] + d * a.v.s[3]]
                         : kb[blk * a.k.s[0] + at * a.k.s[2] + d * a.k.s[3]];
        (is_v ? vs : ks)[j * a.row_stride + d] = x;
      }
    }
  };

  A acc[EPL];
#pragma unroll
  for (int e = 0; e < EPL; ++e) acc[e] = A(0);
  A run_max = -INFINITY, run_sum = 0;
  const A scale = A(a.scale), cap = A(a.softcap);
  if constexpr (VEC) {
    if (r.begin < r.end) fetch(r.begin);
  }
  for (int64_t j0 = r.begin; j0 < r.end; j0 += TK) {
    __syncthreads();  // the previous tile is consumed (and q is staged, the first time)
    stage(j0);
    __syncthreads();
    if constexpr (VEC) {
      if (j0 + TK < r.end) fetch(j0 + TK);  // in flight while this tile is computed
    }
    if (!head_ok) continue;
    const int jl = lane < TK ? lane : 0;
    const S* krow = ks + jl * a.row_stride;
    const A* qrow = qsm + warp * a.D;
    A dot = 0;
    for (int64_t d = 0; d < a.D; ++d) dot += qrow[d] * A(to_compute(krow[d]));
    A s = dot * scale;
    if (cap > A(0)) s = cap * math::wtanh(s / cap);
    const bool valid = lane < TK && j0 + lane < r.end;
    s = valid ? s : A(-INFINITY);
    A tile_max = s;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const A other = __shfl_xor_sync(0xffffffffu, tile_max, o);
      tile_max = other > tile_max ? other : tile_max;
    }
    const A new_max = run_max > tile_max ? run_max : tile_max;  // finite: the tile has a valid key
    const A correction = math::wexp(run_max - new_max);
    const A p = valid ? math::wexp(s - new_max) : A(0);
    A psum = p;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) psum += __shfl_xor_sync(0xffffffffu, psum, o);
    run_sum = run_sum * correction + psum;
    run_max = new_max;
#pragma unroll
    for (int e = 0; e < EPL; ++e) acc[e] *= correction;
#pragma unroll 8
    for (int j = 0; j < TK; ++j) {
      const A pj = __shfl_sync(0xffffffffu, p, j);
      const S* vrow = vs + j * a.row_stride;
#pragma unroll
      for (int e = 0; e < EPL; ++e) {
        const int64_t d = lane + 32 * e;
        if (d < a.D) acc[e] += pj * A(to_compute(vrow[d]));
      }
    }
  }
  if (!head_ok) return;
  const int64_t row = b * a.H + h;
  store_attention_row<S>(lane, a.D, acc, run_max, run_sum, split * a.B * a.H + row, part_acc, part_ml, row, out);
}

template <class S>
bool rows_vectorizable(const Tensor& t, const Strides4& s, int64_t D) {
  constexpr int V = vec_elems<S>();
  if (s.s[3] != 1 || D % V != 0) return false;
  if (reinterpret_cast<uintptr_t>(t.storage_data()) % 16 != 0) return false;
  return s.off % V == 0 && s.s[0] % V == 0 && s.s[1] % V == 0 && s.s[2] % V == 0;
}

template <class S, int EPL, bool VEC>
void launch_cache_attention(CudaBackend& be, CacheArgs a, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& out) {
  using A = dcompute_t<S>;
  constexpr int TK = tile_keys<S>();
  auto kernel = cache_attention_kernel<S, EPL, VEC>;
  const size_t smem = size_t(kWarps * a.D) * sizeof(A) + size_t(2 * TK * a.row_stride) * sizeof(S);
  // About 4 blocks per SM before the keys are split; a split keeps 4 tiles at least.
  const int64_t blocks = a.B * a.KV * a.head_blocks;
  const int64_t want = int64_t(be.sm_count()) * 4;
  const int64_t keys = a.blocks.M * a.N;  // a row's most keys
  const int64_t max_splits = std::max<int64_t>(1, (keys + 4 * TK - 1) / (4 * TK));
  a.splits = std::clamp<int64_t>((want + blocks - 1) / blocks, 1, std::min<int64_t>(max_splits, 65535));
  const dim3 grid{unsigned(blocks), unsigned(a.splits)};
  S* o = dptr<S>(out) + out.offset();
  const S* qp = dptr<const S>(q);
  const S* kp = dptr<const S>(k);
  const S* vp = dptr<const S>(v);
  if (a.splits == 1 && !a.sinks) {  // with sinks the combine finishes every row (SinkRows)
    kernel<<<grid, kBlockThreads, smem, be.stream()>>>(a, qp, kp, vp, o, nullptr, nullptr, be.error_record());
    check_launch("cache_attention");
    return;
  }
  const int64_t rows = a.B * a.H;
  std::shared_ptr<void> acc = be.scratch(size_t(a.splits * rows * a.D) * sizeof(A));
  std::shared_ptr<void> ml = be.scratch(size_t(a.splits * rows * 2) * sizeof(A));
  kernel<<<grid, kBlockThreads, smem, be.stream()>>>(a, qp, kp, vp, o, static_cast<A*>(acc.get()),
                                                     static_cast<A*>(ml.get()), be.error_record());
  check_launch("cache_attention");
  launch_attention_combine(be, out.dtype(), rows, a.D, a.splits, acc.get(), ml.get(), out, {a.sinks, a.H, 1});
}

template <class S>
__global__ void cache_write_kernel(int64_t B, int64_t KV, int64_t D, int64_t P, BlockTable blocks, Index1 positions,
                                   Strides4 kc, Strides4 vc, Strides4 ks, Strides4 vs, S* __restrict__ kcache,
                                   S* __restrict__ vcache, const S* __restrict__ k, const S* __restrict__ v,
                                   DeviceErrorRecord* rec) {
  const int64_t n = B * KV * D;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t d = i % D, h = (i / D) % KV, b = i / (D * KV);
    const int64_t pos = positions[b];
    const bool first = h == 0 && d == 0;  // one record per row
    const bool pos_ok = pos >= 0 && pos < blocks.positions();
    const int64_t blk = pos_ok ? blocks.entry(b, pos) : -1;
    if (!pos_ok || blk < 0 || blk >= P) {
      if (first) {
        if (!pos_ok)
          index_ok(pos, blocks.positions(), rec, IndexOpId::CacheWritePosition);
        else
          index_ok(blk, P, rec, IndexOpId::CacheWriteSlot);
      }
      continue;
    }
    const int64_t at = pos % blocks.N;
    kcache[kc.off + blk * kc.s[0] + h * kc.s[1] + at * kc.s[2] + d * kc.s[3]] =
        k[ks.off + b * ks.s[0] + h * ks.s[1] + d * ks.s[2]];
    vcache[vc.off + blk * vc.s[0] + h * vc.s[1] + at * vc.s[2] + d * vc.s[3]] =
        v[vs.off + b * vs.s[0] + h * vs.s[1] + d * vs.s[2]];
  }
}

// A (B, KV, D) source's strides in Strides4's first three places.
Strides4 strides3(const Tensor& t) {
  Strides4 r{};
  for (int i = 0; i < 3; ++i) r.s[i] = t.strides()[size_t(i)];
  r.off = t.offset();
  return r;
}

}  // namespace

void CudaBackend::cache_attention(const CacheAttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& blocks, const Tensor& lengths, const Tensor& out) {
  activate();
  CacheArgs a{};
  a.sinks = p.sinks.defined() ? dptr<const float>(p.sinks) + p.sinks.offset() : nullptr;
  a.B = q.dim(0), a.H = q.dim(1), a.D = q.dim(2), a.P = k.dim(0), a.KV = k.dim(1), a.N = k.dim(2);
  a.G = a.H / a.KV;
  WICK_CHECK(a.D <= kMaxD, Unsupported, "cache_attention: head_dim ", a.D, " is not supported on cuda (at most ", kMaxD,
             ")");
  a.head_blocks = (a.G + kWarps - 1) / kWarps;
  a.scale = p.scale, a.softcap = p.softcap, a.window = p.window;
  for (int i = 0; i < 3; ++i) a.qs[i] = q.strides()[size_t(i)];
  a.qoff = q.offset();
  a.k = strides4(k), a.v = strides4(v);
  a.blocks = block_table(blocks, a.N), a.lengths = index1(lengths);
  dispatch_float(q.dtype(), "cache_attention", [&]<class T>() {
    using S = dev_t<T>;
    a.row_stride = padded_row<S>(a.D);
    const bool vec = rows_vectorizable<S>(k, a.k, a.D) && rows_vectorizable<S>(v, a.v, a.D);
    auto go = [&]<int EPL>() {
      if (vec)
        launch_cache_attention<S, EPL, true>(*this, a, q, k, v, out);
      else
        launch_cache_attention<S, EPL, false>(*this, a, q, k, v, out);
    };
    if (a.D <= 64)
      go.template operator()<2>();
    else if (a.D <= 128)
      go.template operator()<4>();
    else
      go.template operator()<8>();
  });
}

void CudaBackend::cache_write(const Tensor& k_cache, const Tensor& v_cache, const Tensor& blocks,
                              const Tensor& positions, const Tensor& k, const Tensor& v) {
  activate();
  const int64_t B = k.dim(0), KV = k.dim(1), D = k.dim(2);
  dispatch(k.dtype(), [&]<class T>() {
    using S = dev_t<T>;
    cache_write_kernel<S><<<std::min(grid_for(B * KV * D), resident_blocks()), kThreads, 0, stream_>>>(
        B, KV, D, k_cache.dim(0), block_table(blocks, k_cache.dim(2)), index1(positions), strides4(k_cache),
        strides4(v_cache), strides3(k), strides3(v), dptr<S>(k_cache), dptr<S>(v_cache), dptr<const S>(k),
        dptr<const S>(v), error_record());
    check_launch("cache_write_");
  });
}

}  // namespace wick
