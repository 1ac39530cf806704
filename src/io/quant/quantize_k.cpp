// q4_K and q6_K reference quantizers (see quantize_k.h).
#include "io/quant/quantize_k.h"

#include <algorithm>
#include <cmath>

#include "io/quant/blocks.h"

namespace wick::quant {

namespace {

constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even (ggml's nearest_int via the 1.5 * 2^23 trick).
inline int nearest_int(float v) { return int(std::nearbyint(v)); }

// Asymmetric search (ggml make_qkx2_quants): for levels 0..nmax, find scale and min
// (min <= 0) minimizing the weighted squared error over a sweep of candidate scales.
// Returns the scale, sets the_min to -min and L to the levels.
float scale_min_search(int n, int nmax, const float* x, const float* w, uint8_t* L, float& the_min) {
  float min = x[0], max = x[0], sum_w = w[0], sum_x = w[0] * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t(0));
    the_min = -min;
    return 0.0f;
  }
  auto levels = [&](float iscale, float mn, uint8_t* out) {
    for (int i = 0; i < n; ++i) out[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - mn)), 0, nmax));
  };
  auto error = [&](const uint8_t* l, float scale, float mn) {
    float e = 0;
    for (int i = 0; i < n; ++i) {
      const float diff = scale * float(l[i]) + mn - x[i];
      e += w[i] * diff * diff;
    }
    return e;
  };
  float scale = (max - min) / float(nmax);
  levels(float(nmax) / (max - min), min, L);
  float best = error(L, scale, min);
  uint8_t aux[32];
  constexpr float rmin = -1.0f, rdelta = 0.1f;
  constexpr int nstep = 20;
  for (int is = 0; is <= nstep; ++is) {
    levels((rmin + rdelta * float(is) + float(nmax)) / (max - min), min, aux);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const float l = aux[i];
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D <= 0) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float e = error(aux, this_scale, this_min);
    if (e < best) {
      std::copy(aux, aux + n, L);
      best = e;
      scale = this_scale;
      min = this_min;
    }
  }
  the_min = -min;
  return scale;
}

// Symmetric search (ggml make_qx_quants, rmse_type 1): levels -nmax..nmax-1 weighted by
// x^2, trying 19 scales around nmax / max|x|. Returns the (signed) scale.
float symmetric_search(int n, int nmax, const float* x, int8_t* L) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t(0));
    return 0.0f;
  }
  auto fit = [&](float iscale, float& sumlx, float& suml2, int8_t* out) {
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      if (out) out[i] = int8_t(l + nmax);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * float(l);
      suml2 += w * float(l * l);
    }
  };
  float sumlx, suml2;
  fit(-float(nmax) / max, sumlx, suml2, L);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float iscale = -(float(nmax) + 0.1f * float(is)) / max;
    fit(iscale, sumlx, suml2, nullptr);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      fit(iscale, sumlx, suml2, L);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

}  // namespace

void quantize_q4_k(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, x += kQK_K) {
    uint8_t L[kQK_K];
    float weights[32], mins[8], scales[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
      float sum_x2 = 0;
      for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
      const float av_x = std::sqrt(sum_x2 / 32);
      for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
      scales[j] = scale_min_search(32, 15, x + 32 * j, weights, L + 32 * j, mins[j]);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    BlockQ4_K b{};
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; ++j) {
      const int ls = std::min(63, nearest_int(inv_scale * scales[j]));
      const int lm = std::min(63, nearest_int(inv_min * mins[j]));
      if (j < 4) {  // the packing scale_min_k4 undoes
        b.scales[j] = uint8_t(ls);
        b.scales[j + 4] = uint8_t(lm);
      } else {
        b.scales[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
        b.scales[j - 4] |= uint8_t((ls >> 4) << 6);
        b.scales[j] |= uint8_t((lm >> 4) << 6);
      }
    }
    b.d = f16(max_scale / 63.f).bits;
    b.dmin = f16(max_min / 63.f).bits;
    // Requantize against the scales as stored (rounded to 6 bits and f16).
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      scale_min_k4(j, b.scales, sc, m);
      const float d = f16_value(b.d) * float(sc);
      if (d == 0.0f) continue;
      const float dm = f16_value(b.dmin) * float(m);
      for (int i = 0; i < 32; ++i) L[32 * j + i] = uint8_t(std::clamp(nearest_int((x[32 * j + i] + dm) / d), 0, 15));
    }
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) b.qs[32 * c + l] = uint8_t(L[64 * c + l] | (L[64 * c + l + 32] << 4));
    std::memcpy(dst + ib * int64_t(sizeof b), &b, sizeof b);
  }
}

void quantize_q6_k(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t ib = 0; ib < n / kQK_K; ++ib, x += kQK_K) {
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = symmetric_search(16, 32, x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    BlockQ6_K b{};
    if (max_abs_scale >= kGroupMaxEps) {
      const float iscale = -128.f / max_scale;
      b.d = f16(1 / iscale).bits;
      for (int j = 0; j < 16; ++j) b.scales[j] = int8_t(std::min(127, nearest_int(iscale * scales[j])));
      for (int j = 0; j < 16; ++j) {
        const float d = f16_value(b.d) * float(b.scales[j]);
        if (d == 0.0f) continue;
        for (int i = 0; i < 16; ++i) L[16 * j + i] = int8_t(std::clamp(nearest_int(x[16 * j + i] / d), -32, 31) + 32);
      }
      for (int half = 0; half < 2; ++half) {
        const int8_t* l = L + 128 * half;
        uint8_t* ql = b.ql + 64 * half;
        uint8_t* qh = b.qh + 32 * half;
        for (int i = 0; i < 32; ++i) {
          ql[i] = uint8_t((l[i] & 0xF) | ((l[i + 64] & 0xF) << 4));
          ql[i + 32] = uint8_t((l[i + 32] & 0xF) | ((l[i + 96] & 0xF) << 4));
          qh[i] = uint8_t((l[i] >> 4) | ((l[i + 32] >> 4) << 2) | ((l[i + 64] >> 4) << 4) | ((l[i + 96] >> 4) << 6));
        }
      }
    }
    std::memcpy(dst + ib * int64_t(sizeof b), &b, sizeof b);
  }
}

}  // namespace wick::quant
