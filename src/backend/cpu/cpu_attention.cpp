// Attention and RoPE on the CPU.
//
// Attention is flash-attention style: the score matrix is never built. A task is one
// (batch, head) and a block of up to kQueryBlock queries. It walks the keys kKeyTile at a
// time: each tile is converted to the compute type C once for the whole block (K
// transposed, V as rows), the block's scores over the tile (q pre-scaled) are a small matrix
// product, each query's row goes through online softmax (a running maximum and denominator,
// the output row rescaled when the maximum grows), and the probabilities times V are added
// to the output rows, a second small product. Both products are register-blocked: kRows
// queries (then single ones) by two SIMD vectors (simd_vec.h), the inner loop one broadcast
// per query and one FMA per accumulator. The kernel this replaced (one query and one key at
// a time, a scalar dot product, glibc's expf) took an eighth of all-MiniLM's time at batch
// 256; this one about a twentieth.
//
// f16/bf16 compute in f32 (their tiles are converted when loaded), f64 in f64. The key
// tile's padding (up to whole vectors) is zero in K and V and weighs 0. Measured on
// all-MiniLM's shapes: q, k, v rows strided across heads (views of a (B, T, 3H) product) take
// about 1.5x the time of contiguous ones, in loading the tiles; prefetching the next task's
// rows in software did not change that.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/simd_vec.h"
#include "backend/cpu/strided.h"
#include "backend/math.h"

namespace wick {

namespace {
// Element (i0, i1, i2, i3) of a rank-4 tensor.
template <class T>
struct View4 {
  const T* base;
  int64_t s0, s1, s2, s3;
  explicit View4(const Tensor& t)
      : base(cpu::base_ptr<const T>(t) + t.offset()),
        s0(t.strides()[0]),
        s1(t.strides()[1]),
        s2(t.strides()[2]),
        s3(t.strides()[3]) {}
  const T* row(int64_t a, int64_t b, int64_t c) const { return base + a * s0 + b * s1 + c * s2; }
};

constexpr int64_t kRows = 4;         // queries per register tile
constexpr int64_t kKeyTile = 64;     // keys per tile (a multiple of two vectors of f32 and f64)
constexpr int64_t kQueryBlock = 64;  // queries per task (a multiple of kRows)

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// A task's scratch in the compute type C. Row strides: q D, kt kKeyTile, v and acc dp (the
// head dim rounded up to two vectors), p kKeyTile.
template <class C>
struct Scratch {
  static constexpr int64_t kCols = 2 * cpu::simd::kLanes<C>;  // columns of a register tile
  int64_t D, dp;
  std::vector<C> q, kt, v, p, acc, max, denom;
  explicit Scratch(int64_t d)
      : D(d),
        dp(round_up(d, kCols)),
        q(size_t(kQueryBlock * d)),
        kt(size_t(d * kKeyTile)),
        v(size_t(kKeyTile * dp)),
        p(size_t(kQueryBlock * kKeyTile)),
        acc(size_t(kQueryBlock * dp)),
        max(size_t(kQueryBlock)),
        denom(size_t(kQueryBlock)) {}
};

// out (Rows x kCols, row stride ldo) = a (Rows x K, row stride lda) @ b (K x kCols, row stride
// ldb), added onto out when accumulate. The micro-kernel of both products.
template <int64_t Rows, class C>
void tile_product(const C* a, int64_t lda, const C* b, int64_t ldb, int64_t K, C* out, int64_t ldo, bool accumulate) {
  namespace simd = cpu::simd;
  using V = simd::vec_t<C>;
  constexpr int64_t L = simd::kLanes<C>;
  V c[Rows][2];
  for (int64_t r = 0; r < Rows; ++r) {
    c[r][0] = accumulate ? simd::load(out + r * ldo) : V{};
    c[r][1] = accumulate ? simd::load(out + r * ldo + L) : V{};
  }
  for (int64_t k = 0; k < K; ++k) {
    const V b0 = simd::load(b + k * ldb), b1 = simd::load(b + k * ldb + L);
    for (int64_t r = 0; r < Rows; ++r) {
      const C ar = a[r * lda + k];
      c[r][0] += ar * b0;
      c[r][1] += ar * b1;
    }
  }
  for (int64_t r = 0; r < Rows; ++r) {
    simd::store(out + r * ldo, c[r][0]);
    simd::store(out + r * ldo + L, c[r][1]);
  }
}

// The product over n rows of a and out: kRows at a time, then one at a time, for every
// kCols-wide column block of b up to cols.
template <class C>
void rows_product(int64_t n, const C* a, int64_t lda, const C* b, int64_t ldb, int64_t cols, int64_t K, C* out,
                  int64_t ldo, bool accumulate) {
  constexpr int64_t kCols = Scratch<C>::kCols;
  int64_t r = 0;
  for (; r + kRows <= n; r += kRows)
    for (int64_t c = 0; c < cols; c += kCols)
      tile_product<kRows>(a + r * lda, lda, b + c, ldb, K, out + r * ldo + c, ldo, accumulate);
  for (; r < n; ++r)
    for (int64_t c = 0; c < cols; c += kCols)
      tile_product<1>(a + r * lda, lda, b + c, ldb, K, out + r * ldo + c, ldo, accumulate);
}

// Keys [j0, j0 + n) of (b, h) into the scratch tiles, converted to C; the tile's columns
// (kt) and rows (v) up to n_pad beyond them are zeroed.
template <class T, class C>
void load_key_tile(const View4<T>& k, const View4<T>& v, int64_t b, int64_t h, int64_t j0, int64_t n, int64_t n_pad,
                   Scratch<C>& s) {
  const int64_t D = s.D;
  for (int64_t jj = 0; jj < n; ++jj) {
    const T* kp = k.row(b, h, j0 + jj);
    const T* vp = v.row(b, h, j0 + jj);
    C* kc = s.kt.data() + jj;
    C* vr = s.v.data() + jj * s.dp;
    if (k.s3 == 1) {  // the usual head dim: unit stride (the copy of v vectorizes)
      for (int64_t d = 0; d < D; ++d) kc[d * kKeyTile] = C(kp[d]);
    } else {
      for (int64_t d = 0; d < D; ++d) kc[d * kKeyTile] = C(kp[d * k.s3]);
    }
    if (v.s3 == 1) {
      for (int64_t d = 0; d < D; ++d) vr[d] = C(vp[d]);
    } else {
      for (int64_t d = 0; d < D; ++d) vr[d] = C(vp[d * v.s3]);
    }
  }
  for (int64_t d = 0; d < D; ++d) std::fill_n(s.kt.data() + d * kKeyTile + n, n_pad - n, C(0));
  std::fill(s.v.data() + n * s.dp, s.v.data() + n_pad * s.dp, C(0));
}

// A few queries (a decode step) in f32/f64 with unit head-dim strides skip the converted
// tile: each score is a dot product of the query with K's row in place and the weighted V
// rows are added from the tensor, so K and V are read once. (Through the tile, one query
// over 2048 keys took 1.3x the time of the scalar kernel this file had before.)
template <class C>
C dot(const C* a, const C* b, int64_t n) {
  namespace simd = cpu::simd;
  using V = simd::vec_t<C>;
  constexpr int64_t L = simd::kLanes<C>;
  V s0{}, s1{};
  int64_t d = 0;
  for (; d + 2 * L <= n; d += 2 * L) {
    s0 += simd::load(a + d) * simd::load(b + d);
    s1 += simd::load(a + d + L) * simd::load(b + d + L);
  }
  for (; d + L <= n; d += L) s0 += simd::load(a + d) * simd::load(b + d);
  s0 += s1;
  C sum = 0;
  for (int64_t l = 0; l < L; ++l) sum += s0[l];
  for (; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

template <class C>
void direct_scores(const View4<C>& k, int64_t b, int64_t h, int64_t j0, int64_t n, int64_t nq, Scratch<C>& s) {
  for (int64_t qi = 0; qi < nq; ++qi)
    for (int64_t jj = 0; jj < n; ++jj)
      s.p[size_t(qi * kKeyTile + jj)] = dot(s.q.data() + qi * s.D, k.row(b, h, j0 + jj), s.D);
}

template <class C>
void direct_values(const View4<C>& v, int64_t b, int64_t h, int64_t j0, int64_t n, int64_t nq, Scratch<C>& s) {
  for (int64_t qi = 0; qi < nq; ++qi) {
    C* acc = s.acc.data() + qi * s.dp;
    for (int64_t jj = 0; jj < n; ++jj) {
      const C w = s.p[size_t(qi * kKeyTile + jj)];
      const C* vr = v.row(b, h, j0 + jj);
      for (int64_t d = 0; d < s.D; ++d) acc[d] += w * vr[d];
    }
  }
}

// Query qi's scores (q scaled) over the tile's first n keys (row p of the scratch) become its softmax
// weights against its running maximum, which is raised first (rescaling its denominator and
// output row) when the tile holds a larger score; weights of keys n..n_pad are 0. A tile
// whose scores are all -inf (masked) weighs nothing; a NaN score makes the row NaN, as in
// PyTorch. The row loops run over whole vectors (n_pad is a multiple of kCols).
template <class C, class M>
void softmax_tile_row(C* p, int64_t n, int64_t n_pad, const M* mask, int64_t mask_stride, Scratch<C>& s, int64_t qi) {
  namespace simd = cpu::simd;
  using V = simd::vec_t<C>;
  constexpr int64_t L = simd::kLanes<C>;
  constexpr C kNegInf = -std::numeric_limits<C>::infinity();
  if (mask) {
    if (mask_stride == 1) {
      for (int64_t jj = 0; jj < n; ++jj) p[jj] += C(mask[jj]);
    } else {
      for (int64_t jj = 0; jj < n; ++jj) p[jj] += C(mask[jj * mask_stride]);
    }
  }
  std::fill(p + n, p + n_pad, kNegInf);  // beyond the keys: weight exp(-inf) = 0
  // The maximum, NaN-propagating: (x > m) | (x != x) picks x when x is NaN.
  V mv = V{} + kNegInf;
  for (int64_t jj = 0; jj < n_pad; jj += L) {
    const V x = simd::load(p + jj);
    mv = ((x > mv) | (x != x)) ? x : mv;
  }
  C tile_max = mv[0];
  for (int64_t l = 1; l < L; ++l) tile_max = (mv[l] > tile_max || mv[l] != mv[l]) ? mv[l] : tile_max;
  C& denom = s.denom[size_t(qi)];
  if (tile_max != tile_max || tile_max == kNegInf) {
    if (tile_max != tile_max) denom = std::numeric_limits<C>::quiet_NaN();
    std::fill_n(p, n_pad, C(0));
    return;
  }
  C mx = s.max[size_t(qi)];
  if (tile_max > mx) {
    const C rescale = math::wexp(mx - tile_max);  // 0 for the first visible tile (mx = -inf)
    denom *= rescale;
    C* acc = s.acc.data() + qi * s.dp;
    for (int64_t d = 0; d < s.dp; ++d) acc[d] *= rescale;
    mx = s.max[size_t(qi)] = tile_max;
  }
  for (int64_t jj = 0; jj < n_pad; ++jj) p[jj] = math::wexp(p[jj] - mx);  // f32: vectorized (math.h)
  V sum{};
  for (int64_t jj = 0; jj < n_pad; jj += L) sum += simd::load(p + jj);
  for (int64_t l = 0; l < L; ++l) denom += sum[l];
}

}  // namespace

void CpuBackend::attention(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& mask, const Tensor& out) {
  // The mask's dtype is dispatched once, outside the loops (q's dtype when absent).
  dispatch_float(mask.defined() ? mask.dtype() : q.dtype(), "scaled_dot_product_attention", [&]<class M>() {
    dispatch_float(q.dtype(), "scaled_dot_product_attention", [&]<class T>() {
      using C = compute_t<T>;
      constexpr int64_t kCols = Scratch<C>::kCols;
      const M* mp = mask.defined() ? cpu::base_ptr<const M>(mask) + mask.offset() : nullptr;
      const int64_t ms0 = mp ? mask.strides()[0] : 0, ms1 = mp ? mask.strides()[1] : 0,
                    ms2 = mp ? mask.strides()[2] : 0, ms3 = mp ? mask.strides()[3] : 0;
      const int64_t B = q.dim(0), H = q.dim(1), Tq = q.dim(2), D = q.dim(3), Tk = k.dim(2);
      const int64_t blocks = (Tq + kQueryBlock - 1) / kQueryBlock;
      const View4<T> qv(q), kv(k), vv(v);
      const C scale = C(p.scale);
      T* o = cpu::base_ptr<T>(out) + out.offset();  // contiguous (B, H, Tq, D)
      const float* sinks = p.sinks.defined() ? cpu::base_ptr<const float>(p.sinks) + p.sinks.offset() : nullptr;
      // Keys query i sees; with a KV cache the queries are the last Tq positions of the Tk keys.
      auto keys_of = [&](int64_t i) { return p.causal ? std::clamp<int64_t>(i + Tk - Tq + 1, 0, Tk) : Tk; };
      cpu::parallel_for(B * H * blocks, 1, [&](int64_t begin, int64_t end) {
        Scratch<C> s(D);
        for (int64_t task = begin; task < end; ++task) {
          const int64_t b = task / (H * blocks), h = (task / blocks) % H, i0 = (task % blocks) * kQueryBlock;
          const int64_t nq = std::min(kQueryBlock, Tq - i0);
          for (int64_t qi = 0; qi < nq; ++qi) {
            const T* qp = qv.row(b, h, i0 + qi);
            for (int64_t d = 0; d < D; ++d) s.q[size_t(qi * D + d)] = C(qp[d * qv.s3]) * scale;
          }
          std::fill_n(s.max.begin(), nq, -std::numeric_limits<C>::infinity());
          std::fill_n(s.denom.begin(), nq, C(0));
          std::fill_n(s.acc.begin(), nq * s.dp, C(0));
          const int64_t block_keys = keys_of(i0 + nq - 1);  // the block's last query sees the most
          const bool direct = std::is_same_v<T, C> && nq < kRows && kv.s3 == 1 && vv.s3 == 1;
          for (int64_t j0 = 0; j0 < block_keys; j0 += kKeyTile) {
            const int64_t n = std::min(kKeyTile, block_keys - j0), n_pad = round_up(n, kCols);
            if constexpr (std::is_same_v<T, C>) {
              if (direct) direct_scores(kv, b, h, j0, n, nq, s);
            }
            if (!direct) {
              load_key_tile(kv, vv, b, h, j0, n, n_pad, s);
              rows_product(nq, s.q.data(), D, s.kt.data(), kKeyTile, n_pad, D, s.p.data(), kKeyTile, false);
            }
            for (int64_t qi = 0; qi < nq; ++qi) {
              C* prow = s.p.data() + qi * kKeyTile;
              const int64_t visible = std::min(n, keys_of(i0 + qi) - j0);
              if (visible <= 0) {
                std::fill_n(prow, n_pad, C(0));
                continue;
              }
              const M* mrow = mp ? mp + b * ms0 + h * ms1 + (i0 + qi) * ms2 + j0 * ms3 : nullptr;
              softmax_tile_row(prow, visible, n_pad, mrow, ms3, s, qi);
            }
            if constexpr (std::is_same_v<T, C>) {
              if (direct) direct_values(vv, b, h, j0, n, nq, s);
            }
            if (!direct)
              rows_product(nq, s.p.data(), kKeyTile, s.v.data(), s.dp, s.dp, n_pad, s.acc.data(), s.dp, true);
          }
          const C sink = sinks ? C(sinks[h]) : -std::numeric_limits<C>::infinity();
          for (int64_t qi = 0; qi < nq; ++qi) {
            // A row whose every key is masked out gives NaN, as PyTorch does (0/0), or zeros
            // with a sink.
            const C inv = math::softmax_inv(s.max[size_t(qi)], s.denom[size_t(qi)], sink);
            const C* acc = s.acc.data() + qi * s.dp;
            T* op = o + ((b * H + h) * Tq + i0 + qi) * D;
            for (int64_t d = 0; d < D; ++d) op[d] = T(acc[d] * inv);
          }
        }
      });
    });
  });
}

void CpuBackend::rope(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved, const Tensor& out) {
  dispatch_float(x.dtype(), "rope", [&]<class T>() {
    using C = compute_t<T>;
    const int64_t B = x.dim(0), H = x.dim(1), T_ = x.dim(2), D = x.dim(3), half = D / 2;
    const Tensor c = cos.contiguous(), s = sin.contiguous();
    const T* cp = cpu::base_ptr<const T>(c) + c.offset();
    const T* sp = cpu::base_ptr<const T>(s) + s.offset();
    View4<T> xv(x);
    T* o = cpu::base_ptr<T>(out) + out.offset();
    cpu::parallel_for(B * H * T_, 64, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t b = r / (H * T_), h = (r / T_) % H, t = r % T_;
        const T* xp = xv.row(b, h, t);
        T* op = o + r * D;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
          const C x0 = C(xp[i0 * xv.s3]), x1 = C(xp[i1 * xv.s3]);
          const C cs = C(cp[t * half + i]), sn = C(sp[t * half + i]);
          op[i0] = T(x0 * cs - x1 * sn);
          op[i1] = T(x0 * sn + x1 * cs);
        }
      }
    });
  });
}

}  // namespace wick
