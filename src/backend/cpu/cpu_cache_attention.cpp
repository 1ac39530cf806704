// cache_attention and cache_write on the CPU: a batched decode step against a pool of KV
// cache blocks (nn.h). Every block id, length and position is read and checked before
// anything is computed or written (IndexOutOfRange naming the value and its bound).
//
// Attention: a task is one (row, key/value head): its G query heads walk that head's keys
// kTile at a time, the tile converted to the compute type once for all G of them (each key
// read once per group), with an online softmax (running maximum and denominator, the
// accumulators rescaled when the maximum grows). f16/bf16 compute in f32, f64 in f64.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"
#include "backend/math.h"

namespace wick {

namespace {

constexpr int64_t kTile = 64;  // keys per tile

// A 1-D i64 tensor's values, each checked against [lo, hi].
std::vector<int64_t> checked_values(std::string_view op, std::string_view what, const Tensor& t, int64_t lo,
                                    int64_t hi) {
  std::vector<int64_t> v = t.to_vector<int64_t>();
  for (size_t i = 0; i < v.size(); ++i)
    WICK_CHECK(v[i] >= lo && v[i] <= hi, IndexOutOfRange, op, ": ", what, "[", i, "] = ", v[i], " outside [", lo, ", ",
               hi, "]");
  return v;
}

// The block addressing of nn.h: blocks (B) is a table of one block per row over N positions.
struct BlockTable {
  std::vector<int64_t> ids;  // (B, M) row-major
  int64_t M = 1, N = 1;
  int64_t positions() const { return M * N; }  // a row's most positions
  // The block and offset of row b's position j.
  int64_t block(int64_t b, int64_t j) const { return ids[size_t(b * M + j / N)]; }
};

// Reads blocks and checks, for each row b, that the entries its first reach[b] positions use
// name a block of [0, P).
BlockTable checked_table(std::string_view op, const Tensor& blocks, int64_t P, int64_t N,
                         const std::vector<int64_t>& reach) {
  BlockTable t;
  t.ids = blocks.to_vector<int64_t>();
  t.M = blocks.rank() == 2 ? blocks.dim(1) : 1;
  t.N = N;
  for (size_t b = 0; b < reach.size(); ++b)
    for (int64_t i = 0; i < (reach[b] + N - 1) / N; ++i) {
      const int64_t id = t.ids[b * size_t(t.M) + size_t(i)];
      WICK_CHECK(id >= 0 && id < P, IndexOutOfRange, op, ": blocks[", b, blocks.rank() == 2 ? "][" : "",
                 blocks.rank() == 2 ? std::to_string(i) : std::string(), "] = ", id, " outside [0, ", P - 1, "]");
    }
  return t;
}

}  // namespace

void CpuBackend::cache_attention(const CacheAttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                                 const Tensor& blocks, const Tensor& lengths, const Tensor& out) {
  constexpr std::string_view op = "cache_attention";
  const int64_t B = q.dim(0), H = q.dim(1), D = q.dim(2), P = k.dim(0), KV = k.dim(1), N = k.dim(2);
  const int64_t G = H / KV, M = blocks.rank() == 2 ? blocks.dim(1) : 1;
  const std::vector<int64_t> len = checked_values(op, "lengths", lengths, 1, M * N);
  const BlockTable table = checked_table(op, blocks, P, N, len);
  dispatch_float(q.dtype(), op, [&]<class T>() {
    using C = compute_t<T>;
    const T* qp = cpu::base_ptr<const T>(q) + q.offset();
    const T* kp = cpu::base_ptr<const T>(k) + k.offset();
    const T* vp = cpu::base_ptr<const T>(v) + v.offset();
    T* op_ = cpu::base_ptr<T>(out) + out.offset();  // contiguous (B, H, D)
    const auto& qs = q.strides();
    const auto& ks = k.strides();
    const auto& vs = v.strides();
    const C scale = C(p.scale), cap = C(p.softcap);
    const float* sinks = p.sinks.defined() ? cpu::base_ptr<const float>(p.sinks) + p.sinks.offset() : nullptr;
    // Tasks per chunk: enough multiply-adds (~64k) that a pool dispatch pays for itself; a
    // decode step of a small model (a few heads, a few keys each) then runs on one thread.
    const int64_t longest = len.empty() ? 1 : *std::max_element(len.begin(), len.end());
    const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, 2 * longest * G * D));
    cpu::parallel_for(B * KV, grain, [&](int64_t begin, int64_t end) {
      const auto g_count = size_t(G), row = size_t(D), tile = size_t(kTile);
      std::vector<C> qg(g_count * row), kt(tile * row), vt(tile * row), s(g_count * tile);
      std::vector<C> acc(g_count * row), mx(g_count), den(g_count);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t b = task / KV, kvh = task % KV, L = len[size_t(b)];
        const int64_t first = p.window > 0 ? std::max<int64_t>(0, L - p.window) : 0;
        for (int64_t g = 0; g < G; ++g)
          for (int64_t d = 0; d < D; ++d) qg[size_t(g * D + d)] = C(qp[b * qs[0] + (kvh * G + g) * qs[1] + d * qs[2]]);
        std::fill(acc.begin(), acc.end(), C(0));
        std::fill(mx.begin(), mx.end(), -std::numeric_limits<C>::infinity());
        std::fill(den.begin(), den.end(), C(0));
        for (int64_t j0 = first; j0 < L; j0 += kTile) {
          const int64_t n = std::min(kTile, L - j0);
          for (int64_t j = 0; j < n; ++j) {
            const int64_t key = j0 + j, blk = table.block(b, key), at = key % N;
            const T* kr = kp + blk * ks[0] + kvh * ks[1] + at * ks[2];
            const T* vr = vp + blk * vs[0] + kvh * vs[1] + at * vs[2];
            C* kd = kt.data() + j * D;
            C* vd = vt.data() + j * D;
            if (ks[3] == 1 && vs[3] == 1) {  // the usual layout: unit strides, a loop the compiler vectorizes
              for (int64_t d = 0; d < D; ++d) kd[d] = C(kr[d]);
              for (int64_t d = 0; d < D; ++d) vd[d] = C(vr[d]);
            } else {
              for (int64_t d = 0; d < D; ++d) {
                kd[d] = C(kr[d * ks[3]]);
                vd[d] = C(vr[d * vs[3]]);
              }
            }
          }
          for (int64_t g = 0; g < G; ++g) {
            const C* qr = qg.data() + g * D;
            C* sr = s.data() + g * kTile;
            C tile_max = -std::numeric_limits<C>::infinity();
            for (int64_t j = 0; j < n; ++j) {
              const C* kr = kt.data() + j * D;
              C dot = 0;
              for (int64_t d = 0; d < D; ++d) dot += qr[d] * kr[d];
              dot *= scale;
              if (cap > 0) dot = cap * math::wtanh(dot / cap);
              sr[j] = dot;
              tile_max = std::max(tile_max, dot);
            }
            const C new_max = std::max(mx[size_t(g)], tile_max);
            const C correction = math::wexp(mx[size_t(g)] - new_max);  // 0 on the first tile
            C* ar = acc.data() + g * D;
            for (int64_t d = 0; d < D; ++d) ar[d] *= correction;
            C sum = 0;
            for (int64_t j = 0; j < n; ++j) {
              const C w = math::wexp(sr[j] - new_max);
              sum += w;
              const C* vr = vt.data() + j * D;
              for (int64_t d = 0; d < D; ++d) ar[d] += w * vr[d];
            }
            den[size_t(g)] = den[size_t(g)] * correction + sum;
            mx[size_t(g)] = new_max;
          }
        }
        for (int64_t g = 0; g < G; ++g) {
          // Every row sees at least one key (lengths >= 1), so den > 0 unless a score is NaN.
          const C sink = sinks ? C(sinks[kvh * G + g]) : -std::numeric_limits<C>::infinity();
          const C inv = math::softmax_inv(mx[size_t(g)], den[size_t(g)], sink);
          T* o = op_ + (b * H + kvh * G + g) * D;
          for (int64_t d = 0; d < D; ++d) o[d] = T(acc[size_t(g * D + d)] * inv);
        }
      }
    });
  });
}

void CpuBackend::cache_write(const Tensor& k_cache, const Tensor& v_cache, const Tensor& blocks,
                             const Tensor& positions, const Tensor& k, const Tensor& v) {
  constexpr std::string_view op = "cache_write_";
  const int64_t B = k.dim(0), KV = k.dim(1), D = k.dim(2), N = k_cache.dim(2);
  const int64_t M = blocks.rank() == 2 ? blocks.dim(1) : 1;
  const std::vector<int64_t> pos = checked_values(op, "positions", positions, 0, M * N - 1);
  std::vector<int64_t> reach(pos.size());
  for (size_t b = 0; b < pos.size(); ++b) reach[b] = pos[b] + 1;
  const BlockTable table = checked_table(op, blocks, k_cache.dim(0), N, reach);
  dispatch(k.dtype(), [&]<class T>() {
    // Rows in order, one thread: a decode step writes a few KB, and rows naming one
    // position then land last-writer-wins as documented.
    for (const auto& [cache, src] : {std::pair{&k_cache, &k}, std::pair{&v_cache, &v}}) {
      T* c = cpu::base_ptr<T>(*cache) + cache->offset();
      const T* s = cpu::base_ptr<const T>(*src) + src->offset();
      const auto& cs = cache->strides();
      const auto& ss = src->strides();
      for (int64_t b = 0; b < B; ++b) {
        const int64_t p = pos[size_t(b)];
        T* row = c + table.block(b, p) * cs[0] + p % N * cs[2];
        for (int64_t h = 0; h < KV; ++h)
          for (int64_t d = 0; d < D; ++d) row[h * cs[1] + d * cs[3]] = s[b * ss[0] + h * ss[1] + d * ss[2]];
      }
    }
  });
}

}  // namespace wick
