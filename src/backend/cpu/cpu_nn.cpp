// Fused row ops over the last dim: softmax / log_softmax, layer_norm, rms_norm.
// One row per task, rows split across threads. Each row is read once into registers or
// a float scratch row (f16/bf16 compute in f32, f64 in f64), reductions use interleaved
// accumulators (vectorizable, and more accurate than one running sum).
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/convert.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided.h"

namespace wick {

namespace {

constexpr int kLanes = 32;  // four AVX registers of floats: independent add chains

// sum_i f(p[i]) with kLanes interleaved accumulators.
template <class C, class F>
C lane_sum(const C* p, int64_t n, F&& f) {
  C lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] += f(p[i + j]);
  for (int j = 0; i + j < n; ++j) lanes[j] += f(p[i + j]);
  for (int w = kLanes / 2; w >= 1; w /= 2)  // tree merge, log2(kLanes) steps
    for (int j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  return lanes[0];
}

// exp(x) for x <= 0 (softmax arguments are x - max), written without branches or
// library calls so the row loop vectorizes: exp(x) = 2^n * e^r with n = round(x / ln 2),
// |r| <= ln2 / 2, e^r by Cephes' degree-6 polynomial (about 1 ulp). 2^n is applied as two
// normal factors so that results down to the subnormals come out right; below -104
// the result is 0; NaN stays NaN.
inline float exp_nonpositive(float x) {
  // Selects are done on bit masks: a ?: on floats is control flow the vectorizer refuses.
  const uint32_t tiny = 0u - uint32_t(x < -104.0f);  // all ones below the range (false for NaN)
  const float xc =
      std::bit_cast<float>((std::bit_cast<uint32_t>(x) & ~tiny) | (std::bit_cast<uint32_t>(-104.0f) & tiny));
  const float shifted = xc * 1.44269504f + 12582912.0f;  // 1.5 * 2^23 + n: n in the low mantissa bits
  const float n = shifted - 12582912.0f;                 // round to nearest
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  // n read from the bits, not converted: a NaN x (whose result stays NaN) makes n NaN, and
  // converting a NaN to an integer is undefined.
  const int32_t ni = int32_t(std::bit_cast<uint32_t>(shifted) & 0x7fffffu) - 0x400000;
  const int32_t half = ni >> 1;  // n in [-150, 0]: each half stays normal
  const float s1 = std::bit_cast<float>((half + 127) << 23);
  const float s2 = std::bit_cast<float>((ni - half + 127) << 23);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(y * s1 * s2) & ~tiny);
}
inline double exp_nonpositive(double x) { return std::exp(x); }

template <class C>
C row_max(const C* p, int64_t n) {
  C lanes[kLanes];
  for (C& v : lanes) v = -INFINITY;
  bool nan = false;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      nan |= p[i + j] != p[i + j];
      lanes[j] = p[i + j] > lanes[j] ? p[i + j] : lanes[j];
    }
  for (int j = 0; i + j < n; ++j) {
    nan |= p[i + j] != p[i + j];
    lanes[j] = p[i + j] > lanes[j] ? p[i + j] : lanes[j];
  }
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) lanes[j] = lanes[j + w] > lanes[j] ? lanes[j + w] : lanes[j];
  return nan ? C(NAN) : lanes[0];
}

// Calls fn(in_row, out_row) for every row of x's last dim, with in_row a compute-type
// row (x's own memory when it already is one, else a converted scratch copy) and
// out_row a compute-type row whose values are stored into out afterwards.
template <class T, class Fn>
void for_each_row(const Tensor& x, const Tensor& out, Fn&& fn) {
  using C = compute_t<T>;
  const int64_t n = x.rank() ? x.shape()[x.rank() - 1] : 1;
  const int64_t xs = x.rank() ? x.strides()[x.rank() - 1] : 1;
  const int64_t rows = n ? x.numel() / n : 0;
  std::vector<int64_t> outer_shape(x.shape().begin(), x.shape().end() - (x.rank() ? 1 : 0));
  std::vector<int64_t> outer_strides(x.strides().begin(), x.strides().end() - (x.rank() ? 1 : 0));
  const T* xp = cpu::base_ptr<const T>(x) + x.offset();
  T* op = cpu::base_ptr<T>(out) + out.offset();  // out is contiguous (fresh)
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, n) / 4);
  cpu::parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    std::vector<C> in_buf, out_buf;
    for (int64_t r = b; r < e; ++r) {
      int64_t off = 0, rem = r;
      for (size_t d = outer_shape.size(); d-- > 0;) {
        off += (rem % outer_shape[d]) * outer_strides[d];
        rem /= outer_shape[d];
      }
      const T* row = xp + off;
      const C* in = nullptr;
      if constexpr (std::is_same_v<T, C>) {
        if (xs == 1) in = row;
      }
      if (!(std::is_same_v<T, C> && xs == 1)) {
        in_buf.resize(size_t(n));
        for (int64_t k = 0; k < n; ++k) in_buf[size_t(k)] = C(row[k * xs]);
        in = in_buf.data();
      }
      if constexpr (std::is_same_v<T, C>) {
        fn(in, op + r * n, n);
      } else {
        out_buf.resize(size_t(n));
        fn(in, out_buf.data(), n);
        for (int64_t k = 0; k < n; ++k) op[r * n + k] = T(out_buf[size_t(k)]);
      }
    }
  });
}

// A 1-D parameter (weight or bias) as compute-type values; empty when undefined.
template <class T>
std::vector<compute_t<T>> param(const Tensor& p) {
  if (!p.defined()) return {};
  return p.to_vector<compute_t<T>>();
}

}  // namespace

void CpuBackend::softmax(const Tensor& x, const Tensor& out, bool log) {
  dispatch_float(x.dtype(), log ? "log_softmax" : "softmax", [&]<class T>() {
    using C = compute_t<T>;
    for_each_row<T>(x, out, [&](const C* in, C* o, int64_t n) {
      const C m = row_max(in, n);
      if (log) {
        const C lse = m + std::log(lane_sum(in, n, [&](C v) { return exp_nonpositive(v - m); }));
        for (int64_t k = 0; k < n; ++k) o[k] = in[k] - lse;
      } else {
        for (int64_t k = 0; k < n; ++k) o[k] = exp_nonpositive(in[k] - m);
        const C inv = C(1) / lane_sum(o, n, [](C v) { return v; });
        for (int64_t k = 0; k < n; ++k) o[k] *= inv;
      }
    });
  });
}

void CpuBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out) {
  dispatch_float(x.dtype(), "layer_norm", [&]<class T>() {
    using C = compute_t<T>;
    const auto w = param<T>(weight), bv = param<T>(bias);
    for_each_row<T>(x, out, [&](const C* in, C* o, int64_t n) {
      // Two passes over the row (mean, then centred squares): no cancellation.
      const C mean = lane_sum(in, n, [](C v) { return v; }) / C(n);
      const C var = lane_sum(in, n, [&](C v) { return (v - mean) * (v - mean); }) / C(n);
      const C rstd = C(1) / std::sqrt(var + C(eps));
      for (int64_t k = 0; k < n; ++k) {
        C y = (in[k] - mean) * rstd;
        if (!w.empty()) y *= w[size_t(k)];
        if (!bv.empty()) y += bv[size_t(k)];
        o[k] = y;
      }
    });
  });
}

void CpuBackend::rms_norm(const Tensor& x, const Tensor& weight, double eps, const Tensor& out) {
  dispatch_float(x.dtype(), "rms_norm", [&]<class T>() {
    using C = compute_t<T>;
    const auto w = param<T>(weight);
    for_each_row<T>(x, out, [&](const C* in, C* o, int64_t n) {
      const C ms = lane_sum(in, n, [](C v) { return v * v; }) / C(n);
      const C inv = C(1) / std::sqrt(ms + C(eps));
      for (int64_t k = 0; k < n; ++k) o[k] = w.empty() ? in[k] * inv : in[k] * inv * w[size_t(k)];
    });
  });
}

}  // namespace wick
