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

double yarn_mscale(double factor, double mscale) { return factor <= 1 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0; }

double rope_attention_factor(const RopeConfig& r) {
  if (r.scaling != RopeScaling::Yarn && r.scaling != RopeScaling::LongRope) return 1.0;
  if (r.attention_factor) return *r.attention_factor;
  if (r.factor <= 1) return 1.0;
  if (r.scaling == RopeScaling::Yarn) return 0.1 * std::log(r.factor) + 1.0;
  return std::sqrt(1 + std::log(r.factor) / std::log(double(r.original_context)));
}

namespace {
constexpr int64_t kFirstRows = 4096;  // positions of the first tables; more on demand
}

RopeTables::RopeTables(const LlamaConfig& c, DType dtype, Device device)
    : inv_(rope_inv_freq(c.rope)),
      scale_(rope_attention_factor(c.rope)),
      context_(c.context_length),
      dtype_(dtype),
      device_(device) {
  if (c.rope.scaling == RopeScaling::LongRope) inv_long_ = rope_inv_freq(c.rope, true);
  if (c.rope_local_theta > 0) {
    RopeConfig local;
    local.theta = c.rope_local_theta;
    local.dims = c.rope.dims;
    inv_local_ = rope_inv_freq(local);
  }
  (void)at_least(std::min(context_, kFirstRows));
}

size_t RopeTables::initial_bytes(const LlamaConfig& c, DType dtype) {
  const size_t tables = c.rope.scaling == RopeScaling::LongRope || c.rope_local_theta > 0 ? 4 : 2;
  return tables * size_t(std::min(c.context_length, kFirstRows) * (c.rope.dims / 2)) * dtype_size(dtype);
}

Tensor RopeTables::table(const std::vector<double>& inv, int64_t rows, bool sine, double scale) const {
  const int64_t n = int64_t(inv.size());
  std::vector<float> t(static_cast<size_t>(rows * n));
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t i = 0; i < n; ++i) {
      const double a = double(p) * inv[size_t(i)];
      t[size_t(p * n + i)] = float((sine ? std::sin(a) : std::cos(a)) * scale);
    }
  return Tensor::from_vector(t, Shape{rows, n}).to(dtype_).to(device_);
}

RopeTables::Rows RopeTables::at_least(int64_t rows) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (rows > rows_) {
    const int64_t n = std::min(context_, std::max(rows, 2 * rows_));
    tables_ = {table(inv_, n, false, scale_), table(inv_, n, true, scale_), {}, {}, {}, {}};
    if (!inv_long_.empty()) {
      tables_.cos_long = table(inv_long_, n, false, scale_);
      tables_.sin_long = table(inv_long_, n, true, scale_);
    }
    if (!inv_local_.empty()) {  // no scaling: the local layers' factor is 1
      tables_.cos_local = table(inv_local_, n, false, 1.0);
      tables_.sin_local = table(inv_local_, n, true, 1.0);
    }
    rows_ = n;
  }
  return tables_;
}

}  // namespace wick::models
