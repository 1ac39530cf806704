// What the fused-linear tests (test_linear_fused, test_quant_linear) share: seeded random
// inputs with the values their dtype rounded them to, and the epilogue's activations and
// rounding units in double, the reference's precision.
#pragma once

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "wick/wick.h"

namespace wick::test {

inline std::vector<float> random_normal(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// A tensor of dtype on dev and its values as the dtype rounded them, in double.
inline std::pair<Tensor, std::vector<double>> rounded_random(Shape shape, DType dtype, Device dev, uint32_t seed,
                                                             float scale = 1.0f) {
  const Tensor t = Tensor::from_vector(random_normal(size_t(shape.numel()), seed, scale), shape).to(dtype);
  return {t.to(dev), t.to(DType::F64).to_vector<double>()};
}

inline double epilogue_act(Activation a, double v) {
  using Act = Activation;
  switch (a) {
    case Act::Silu: return v / (1 + std::exp(-v));
    case Act::GeluTanh: return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    case Act::GeluErf: return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    case Act::Relu: return v < 0 ? 0 : v;
    case Act::None: break;
  }
  return v;
}

// The unit roundoff of a float dtype.
inline double unit_roundoff(DType dt) {
  return dt == DType::F64 ? 0x1p-52 : dt == DType::F32 ? 0x1p-23 : dt == DType::F16 ? 0x1p-10 : 0x1p-7;
}

// rms_norm of the M rows of K values in xv, in place, in double (eps 1e-5, weight g).
inline void rms_normalize(std::vector<double>& xv, const std::vector<double>& g, int64_t M, int64_t K) {
  for (int64_t m = 0; m < M; ++m) {
    double ss = 0;
    for (int64_t k = 0; k < K; ++k) ss += xv[size_t(m * K + k)] * xv[size_t(m * K + k)];
    const double inv = 1 / std::sqrt(ss / double(K) + 1e-5);
    for (int64_t k = 0; k < K; ++k) xv[size_t(m * K + k)] *= inv * g[size_t(k)];
  }
}

}  // namespace wick::test
