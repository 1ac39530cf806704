// Float math that compiles on the host and in CUDA device code: one overload per
// precision forwarding to the C library's float/double function (::expf / ::exp).
// CUDA provides the same names for device code, whereas std:: math is host-only there.
// f16/bf16 never reach these: kernels widen them to float first (compute_t).
#pragma once

#include <math.h>

#include <bit>
#include <cstdint>

#include "wick/half.h"

namespace wick::math {

// exp, tanh and erf for f32 written without calls or branches, so that GCC vectorizes the
// loops that use them (glibc's expf/tanhf are scalar calls: 5-10x slower than numpy's
// SIMD exp). Cephes' polynomials: about 1 ulp (exp) and 2 ulp (tanh) on the CPU tests'
// goldens; erf below. Device code keeps CUDA's own expf/tanhf/erff.
WICK_HD inline float expf_poly(float x) {
  // Range handling without clamping x itself: a clamped x is a constant GCC would fold
  // the whole polynomial for, turning the selects into branches it cannot vectorize.
  // n = round(x / ln2) is kept within [-150, 128] and r = x - n ln2 within +-0.35, so
  // out-of-range inputs give 0.7 * 2^-150 (rounds to 0) or 1.4 * 2^128 (Inf), and NaN
  // passes through (every comparison with it is false).
  float t = x * 1.44269504088896341f;
  t = t < -150.0f ? -150.0f : t;
  t = t > 128.0f ? 128.0f : t;
  // Round to nearest by adding and removing 1.5 * 2^23 (rintf is a call GCC won't vectorize).
  const float n = (t + 12582912.0f) - 12582912.0f;
  float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;  // x - n ln2, in two parts
  r = r < -0.35f ? -0.35f : r;
  r = r > 0.35f ? 0.35f : r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // p * 2^n in two factors, so subnormal results and 2^128 * p (overflow to Inf) work.
  const int32_t ni = int32_t(n == n ? n : 0.0f);  // NaN: p is NaN already; keep the cast defined
  const int32_t n1 = ni / 2, n2 = ni - n1;
  return p * std::bit_cast<float>((n1 + 127) << 23) * std::bit_cast<float>((n2 + 127) << 23);
}

WICK_HD inline float tanhf_poly(float x) {
  const float z = x * x;
  float small = -5.70498872745e-3f;  // odd polynomial for |x| < 0.625
  small = small * z + 2.06390887954e-2f;
  small = small * z - 5.37397155531e-2f;
  small = small * z + 1.33314422036e-1f;
  small = small * z - 3.33332819422e-1f;
  small = small * z * x + x;
  const float a = x < 0 ? -x : x;  // 1 - 2 / (e^{2|x|} + 1), sign restored
  const float large = 1.0f - 2.0f / (expf_poly(2.0f * a) + 1.0f);
  return a < 0.625f ? small : (x < 0 ? -large : large);
}

// erf for f32 without calls or branches (glibc's erff is a scalar call: it was an eighth of
// all-MiniLM's CPU time, through GELU). |x| < 0.921875: x + x P(x^2); beyond,
// 1 - e^{-x^2} G(1 / (1 + |x|/2)) with erfc(a) e^{a^2} fitted up to |x| = 4 (past it erf
// rounds to +-1). P and G are minimax fits in double (scripts/fit_erf_poly.py): 1.5e-8 and
// 3.8e-8 relative, so the f32 result is within about 1 ulp (checked densely by the tests).
WICK_HD inline float erff_poly(float x) {
  const float a = x < 0 ? -x : x;
  const float z = x * x;
  float p = -6.0135135563e-04f;
  p = p * z + 4.9980286441e-03f;
  p = p * z - 2.6770255092e-02f;
  p = p * z + 1.1281928034e-01f;
  p = p * z - 3.7612505803e-01f;
  p = p * z + 1.2837915170e-01f;
  const float small = x + x * p;
  // NaN passes the clamp (comparisons with it are false) and stays NaN through e^{-a^2}.
  const float ac = a > 4.0f ? 4.0f : a;
  const float t = 1.0f / (1.0f + 0.5f * ac);
  float g = -5.2173625575e-02f;
  g = g * t - 6.0803738697e-02f;
  g = g * t + 4.0736930615e-01f;
  g = g * t + 9.9432780063e-02f;
  g = g * t + 3.3134655904e-01f;
  g = g * t + 2.7355000272e-01f;
  g = g * t + 6.0968786699e-04f;
  const float large = 1.0f - expf_poly(-ac * ac) * g;
  // The sign of x onto the large branch by bits (a float ?: would be a branch GCC keeps).
  const float signed_large =
      std::bit_cast<float>(std::bit_cast<uint32_t>(large) | (std::bit_cast<uint32_t>(x) & 0x80000000u));
  return a < 0.921875f ? small : signed_large;
}

#define WICK_MATH_UNARY(name, ffn, dfn)                   \
  WICK_HD inline float name(float x) { return ::ffn(x); } \
  WICK_HD inline double name(double x) { return ::dfn(x); }

#if defined(__CUDA_ARCH__)
WICK_MATH_UNARY(wexp, expf, exp)
WICK_MATH_UNARY(wtanh, tanhf, tanh)
WICK_MATH_UNARY(werf, erff, erf)
#else
inline float wexp(float x) { return expf_poly(x); }
inline double wexp(double x) { return ::exp(x); }
inline float wtanh(float x) { return tanhf_poly(x); }
inline double wtanh(double x) { return ::tanh(x); }
inline float werf(float x) { return erff_poly(x); }
inline double werf(double x) { return ::erf(x); }
#endif
WICK_MATH_UNARY(wexpm1, expm1f, expm1)
WICK_MATH_UNARY(wlog, logf, log)
WICK_MATH_UNARY(wsqrt, sqrtf, sqrt)
WICK_MATH_UNARY(wsin, sinf, sin)
WICK_MATH_UNARY(wcos, cosf, cos)
WICK_MATH_UNARY(wfloor, floorf, floor)
WICK_MATH_UNARY(wceil, ceilf, ceil)
// rint rounds in the current rounding mode, which is to nearest, ties to even.
WICK_MATH_UNARY(wrint, rintf, rint)
WICK_MATH_UNARY(wfabs, fabsf, fabs)
#undef WICK_MATH_UNARY

WICK_HD inline float wpow(float x, float y) { return ::powf(x, y); }
WICK_HD inline double wpow(double x, double y) { return ::pow(x, y); }

// The factor an online softmax's accumulator takes at the end, 1 / (sum + exp(sink - max)),
// for a row whose scores peaked at max with denominator sum (relative to max), and a sink
// logit (gpt-oss's attention sinks: a key of that logit whose value is zero; -inf for none).
// Computed without overflow when the sink exceeds the scores. A row that saw no key gives
// 0 with a sink (only the sink had weight) and NaN without one (0/0, as PyTorch).
template <class C>
WICK_HD inline C softmax_inv(C max, C sum, C sink) {
  if (sink == C(-INFINITY)) return sum > C(0) ? C(1) / sum : C(NAN);
  if (!(sink <= max)) {  // above the scores, or no key (max -inf)
    const C c = wexp(max - sink);
    return c / (sum * c + C(1));
  }
  return C(1) / (sum + wexp(sink - max));
}

}  // namespace wick::math
