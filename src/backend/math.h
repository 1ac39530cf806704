// Float math that compiles on the host and in CUDA device code: one overload per
// precision forwarding to the C library's float/double function (::expf / ::exp).
// CUDA provides the same names for device code, whereas std:: math is host-only there.
// f16/bf16 never reach these: kernels widen them to float first (compute_t).
#pragma once

#include <math.h>

#include "wick/half.h"

namespace wick::math {

#define WICK_MATH_UNARY(name, ffn, dfn)                   \
  WICK_HD inline float name(float x) { return ::ffn(x); } \
  WICK_HD inline double name(double x) { return ::dfn(x); }

WICK_MATH_UNARY(wexp, expf, exp)
WICK_MATH_UNARY(wexpm1, expm1f, expm1)
WICK_MATH_UNARY(wlog, logf, log)
WICK_MATH_UNARY(wsqrt, sqrtf, sqrt)
WICK_MATH_UNARY(wsin, sinf, sin)
WICK_MATH_UNARY(wcos, cosf, cos)
WICK_MATH_UNARY(wtanh, tanhf, tanh)
WICK_MATH_UNARY(werf, erff, erf)
WICK_MATH_UNARY(wfloor, floorf, floor)
WICK_MATH_UNARY(wceil, ceilf, ceil)
// rint rounds in the current rounding mode, which is to nearest, ties to even.
WICK_MATH_UNARY(wrint, rintf, rint)
WICK_MATH_UNARY(wfabs, fabsf, fabs)
#undef WICK_MATH_UNARY

WICK_HD inline float wpow(float x, float y) { return ::powf(x, y); }
WICK_HD inline double wpow(double x, double y) { return ::pow(x, y); }

}  // namespace wick::math
