// Attention and RoPE on the CPU. Attention keeps one row of scores per query (online
// softmax would save memory, but one row of Tk floats is small) and never builds the
// full Tq x Tk matrix.
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"

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
}  // namespace

void CpuBackend::attention(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& mask, const Tensor& out) {
  // The mask's dtype is dispatched once, outside the loops (q's dtype when absent).
  dispatch_float(mask.defined() ? mask.dtype() : q.dtype(), "scaled_dot_product_attention", [&]<class M>() {
    dispatch_float(q.dtype(), "scaled_dot_product_attention", [&]<class T>() {
      using C = compute_t<T>;
      const M* mp = mask.defined() ? cpu::base_ptr<const M>(mask) + mask.offset() : nullptr;
      const int64_t ms0 = mp ? mask.strides()[0] : 0, ms1 = mp ? mask.strides()[1] : 0,
                    ms2 = mp ? mask.strides()[2] : 0, ms3 = mp ? mask.strides()[3] : 0;
      const int64_t B = q.dim(0), H = q.dim(1), Tq = q.dim(2), D = q.dim(3), Tk = k.dim(2);
      View4<T> qv(q), kv(k), vv(v);
      T* o = cpu::base_ptr<T>(out) + out.offset();  // contiguous (B, H, Tq, D)
      cpu::parallel_for(B * H * Tq, 1, [&](int64_t begin, int64_t end) {
        const size_t d_sz = static_cast<size_t>(D);
        std::vector<C> qrow(d_sz), scores(static_cast<size_t>(Tk)), acc(d_sz);
        for (int64_t r = begin; r < end; ++r) {
          const int64_t b = r / (H * Tq), h = (r / Tq) % H, i = r % Tq;
          const T* qp = qv.row(b, h, i);
          for (int64_t d = 0; d < D; ++d) qrow[size_t(d)] = C(qp[d * qv.s3]);
          // With a KV cache the queries are the last Tq positions of the Tk keys.
          const int64_t last_key = p.causal ? std::min(Tk - 1, i + Tk - Tq) : Tk - 1;
          C mx = -std::numeric_limits<C>::infinity();
          for (int64_t j = 0; j <= last_key; ++j) {
            const T* kp = kv.row(b, h, j);
            C dot = 0;
            if (kv.s3 == 1) {
              for (int64_t d = 0; d < D; ++d) dot += qrow[size_t(d)] * C(kp[d]);
            } else {
              for (int64_t d = 0; d < D; ++d) dot += qrow[size_t(d)] * C(kp[d * kv.s3]);
            }
            C s = dot * C(p.scale);
            if (mp) s += C(mp[b * ms0 + h * ms1 + i * ms2 + j * ms3]);
            scores[size_t(j)] = s;
            mx = std::max(mx, s);
          }
          std::fill(acc.begin(), acc.end(), C(0));
          C denom = 0;
          if (mx != -std::numeric_limits<C>::infinity()) {
            for (int64_t j = 0; j <= last_key; ++j) {
              const C w = std::exp(scores[size_t(j)] - mx);
              denom += w;
              const T* vp = vv.row(b, h, j);
              for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += w * C(vp[d * vv.s3]);
            }
          }
          // A row whose every key is masked out gives NaN, as PyTorch does (0/0).
          const C inv = denom > 0 ? C(1) / denom : std::numeric_limits<C>::quiet_NaN();
          T* op = o + r * D;
          for (int64_t d = 0; d < D; ++d) op[d] = T(acc[size_t(d)] * inv);
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
