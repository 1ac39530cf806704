// Rotary inverse frequencies by the rules of transformers' modeling_rope_utils.py, in
// double precision (transformers computes them in f32; the difference is far below the
// tolerance of any test and shrinks the phase error at long positions).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "llama_config.h"

namespace wick::models {

namespace {

// Dimension index at which a frequency completes num_rotations turns over the context.
double yarn_correction_dim(double num_rotations, double dim, double base, double context) {
  return dim * std::log(context / (num_rotations * 2 * std::numbers::pi)) / (2 * std::log(base));
}

}  // namespace

std::vector<double> rope_inv_freq(const RopeConfig& r, bool long_factors) {
  const int64_t n_freq = r.dims / 2;
  std::vector<double> inv(static_cast<size_t>(n_freq));
  for (int64_t i = 0; i < n_freq; ++i) inv[size_t(i)] = 1.0 / std::pow(r.theta, double(2 * i) / double(r.dims));
  switch (r.scaling) {
    case RopeScaling::None: break;
    case RopeScaling::Linear:
      for (double& f : inv) f /= r.factor;
      break;
    case RopeScaling::Llama3: {
      const double ctx = double(r.original_context);
      const double low_wavelen = ctx / r.low_freq_factor, high_wavelen = ctx / r.high_freq_factor;
      for (double& f : inv) {
        const double wavelen = 2 * std::numbers::pi / f;
        if (wavelen > low_wavelen) {
          f /= r.factor;  // low frequencies: interpolated
        } else if (wavelen >= high_wavelen) {
          const double smooth = (ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
          f = (1 - smooth) * f / r.factor + smooth * f;
        }  // high frequencies: kept
      }
      break;
    }
    case RopeScaling::LongRope: {
      const std::vector<double>& ext = long_factors ? r.long_factor : r.short_factor;
      for (size_t i = 0; i < inv.size() && i < ext.size(); ++i) inv[i] /= ext[i];
      break;
    }
    case RopeScaling::Yarn: {
      const double dim = double(r.dims), ctx = double(r.original_context);
      double low = yarn_correction_dim(r.beta_fast, dim, r.theta, ctx);
      double high = yarn_correction_dim(r.beta_slow, dim, r.theta, ctx);
      if (r.yarn_truncate) {
        low = std::floor(low);
        high = std::ceil(high);
      }
      low = std::max(low, 0.0);
      high = std::min(high, dim - 1);
      if (low == high) high += 0.001;  // as transformers: no division by zero
      for (int64_t i = 0; i < n_freq; ++i) {
        const double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
        const double extrapolation = 1 - ramp;  // weight of the unscaled frequency
        double& f = inv[size_t(i)];
        f = f / r.factor * (1 - extrapolation) + f * extrapolation;
      }
      break;
    }
  }
  for (size_t i = 0; i < r.freq_factors.size() && i < inv.size(); ++i) inv[i] /= r.freq_factors[i];
  return inv;
}

double rope_attention_factor(const RopeConfig& r) {
  if (r.scaling != RopeScaling::Yarn && r.scaling != RopeScaling::LongRope) return 1.0;
  if (r.attention_factor) return *r.attention_factor;
  if (r.factor <= 1) return 1.0;
  if (r.scaling == RopeScaling::Yarn) return 0.1 * std::log(r.factor) + 1.0;
  return std::sqrt(1 + std::log(r.factor) / std::log(double(r.original_context)));
}

}  // namespace wick::models
