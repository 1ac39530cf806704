// Elementwise op functors shared by the CPU and CUDA backends. Each is a template over
// the compute type C (float for f16/bf16, else the dtype itself) and says with
// kIntegers whether it is defined on integer dtypes; kernels reject the rest with
// DTypeMismatch. Semantics (wrapping, x/0, NaN handling) are documented in docs/ops.md.
//
// Integer arithmetic goes through the unsigned type of the same width, so overflow
// wraps (two's complement) instead of being undefined behaviour.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "backend/backend.h"
#include "backend/convert.h"
#include "backend/math.h"
#include "wick/scalar.h"

namespace wick::ew {

using namespace wick::math;

template <class C>
using uint_of = std::make_unsigned_t<C>;

template <class C>
inline constexpr bool is_int_v = std::is_integral_v<C>;

// ---- unary ------------------------------------------------------------------------------

template <class C>
struct Neg {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C x) const {
    if constexpr (is_int_v<C>)
      return C(uint_of<C>(0) - uint_of<C>(x));  // neg u8 1 -> 255, neg i64 min -> min
    else
      return -x;
  }
};

template <class C>
struct Abs {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>)
      return x;
    else if constexpr (is_int_v<C>)
      return x < 0 ? C(uint_of<C>(0) - uint_of<C>(x)) : x;  // abs(i64 min) wraps to min
    else
      return wfabs(x);
  }
};

template <class C>
struct Sqr {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C x) const {
    if constexpr (is_int_v<C>)
      return C(uint_of<C>(x) * uint_of<C>(x));
    else
      return x * x;
  }
};

// Float-only functors of one math call.
#define WICK_EW_FLOAT_UNARY(Name, expr)              \
  template <class C>                                 \
  struct Name {                                      \
    static constexpr bool kIntegers = false;         \
    WICK_HD C operator()(C x) const { return expr; } \
  };

WICK_EW_FLOAT_UNARY(Sqrt, wsqrt(x))
WICK_EW_FLOAT_UNARY(Recip, C(1) / x)
WICK_EW_FLOAT_UNARY(Exp, wexp(x))
WICK_EW_FLOAT_UNARY(Log, wlog(x))
WICK_EW_FLOAT_UNARY(Sin, wsin(x))
WICK_EW_FLOAT_UNARY(Cos, wcos(x))
WICK_EW_FLOAT_UNARY(Tanh, wtanh(x))
WICK_EW_FLOAT_UNARY(Erf, werf(x))
// PyTorch gelu(approximate='tanh'): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
WICK_EW_FLOAT_UNARY(Gelu, C(0.5) * x * (C(1) + wtanh(C(0.7978845608028654) * (x + C(0.044715) * x * x * x))))
// Exact gelu: 0.5 x (1 + erf(x / sqrt(2))).
WICK_EW_FLOAT_UNARY(GeluErf, C(0.5) * x * (C(1) + werf(x * C(0.7071067811865476))))
WICK_EW_FLOAT_UNARY(Silu, x / (C(1) + wexp(-x)))
WICK_EW_FLOAT_UNARY(Sigmoid, C(1) / (C(1) + wexp(-x)))
#undef WICK_EW_FLOAT_UNARY

// x < 0 ? 0 : x keeps NaN and -0 as PyTorch's relu does.
template <class C>
struct Relu {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C x) const { return x < C(0) ? C(0) : x; }
};

// -1, 0 or 1; NaN and -0 give +0 as in PyTorch (torch.sign(nan) == 0).
template <class C>
struct Sign {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C x) const { return C(int(C(0) < x) - int(x < C(0))); }
};

// floor/ceil/round are the identity on integers (as PyTorch).
template <class C>
struct Floor {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C x) const {
    if constexpr (is_int_v<C>)
      return x;
    else
      return wfloor(x);
  }
};
template <class C>
struct Ceil {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C x) const {
    if constexpr (is_int_v<C>)
      return x;
    else
      return wceil(x);
  }
};
template <class C>
struct Round {  // half to even
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C x) const {
    if constexpr (is_int_v<C>)
      return x;
    else
      return wrint(x);
  }
};

// x * mul + add. Integers compute in f64 and convert back like to_dtype (truncation
// toward zero, saturation), so affine(u8, 0.5, 0) halves instead of multiplying by 0.
template <class C>
struct Affine {
  static constexpr bool kIntegers = true;
  using P = std::conditional_t<is_int_v<C>, double, C>;
  P mul, add;
  static Affine from(const UnaryParams& p) { return {P(p.a.to_double()), P(p.b.to_double())}; }
  WICK_HD C operator()(C x) const {
    if constexpr (is_int_v<C>)
      return convert<C>(double(x) * mul + add);
    else
      return x * mul + add;
  }
};

template <class C>
struct Powf {
  static constexpr bool kIntegers = false;
  C exponent;
  static Powf from(const UnaryParams& p) { return {C(p.a.to_double())}; }
  WICK_HD C operator()(C x) const { return wpow(x, exponent); }
};

template <class C>
struct Elu {
  static constexpr bool kIntegers = false;
  C alpha;
  static Elu from(const UnaryParams& p) { return {C(p.a.to_double())}; }
  WICK_HD C operator()(C x) const { return x > C(0) ? x : alpha * wexpm1(x); }
};

// min(max(x, lo), hi) with NaN kept (comparisons with NaN are false); lo > hi gives hi
// as PyTorch.
template <class C>
struct Clamp {
  static constexpr bool kIntegers = true;
  C lo, hi;
  bool has_lo, has_hi;
  static Clamp from(const UnaryParams& p);
  WICK_HD C operator()(C x) const {
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    return x;
  }
};

// A clamp bound in compute type C (host only: Scalar is a host type). On integer
// dtypes a bound outside the range saturates and a fractional bound rounds inward
// (lo up, hi down), which keeps clamp(x, lo, hi) equal to the mathematical clamp.
template <class C>
C clamp_bound(const Scalar& s, bool lower) {
  if constexpr (!is_int_v<C>) {
    return C(s.to_double());
  } else if (s.is_integral()) {
    const int64_t v = s.to_int64();
    if constexpr (std::is_unsigned_v<C>) {
      if (v < 0) return C(0);
      if (uint64_t(v) > uint64_t(std::numeric_limits<C>::max())) return std::numeric_limits<C>::max();
    }
    return C(v);
  } else {
    const double d = s.to_double();
    return convert<C>(lower ? ::ceil(d) : ::floor(d));
  }
}

template <class C>
Clamp<C> Clamp<C>::from(const UnaryParams& p) {
  return {p.has_a ? clamp_bound<C>(p.a, true) : C(0), p.has_b ? clamp_bound<C>(p.b, false) : C(0), p.has_a, p.has_b};
}

// ---- binary -----------------------------------------------------------------------------

template <class C>
struct Add {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C a, C b) const {
    if constexpr (is_int_v<C>)
      return C(uint_of<C>(a) + uint_of<C>(b));
    else
      return a + b;
  }
};
template <class C>
struct Sub {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C a, C b) const {
    if constexpr (is_int_v<C>)
      return C(uint_of<C>(a) - uint_of<C>(b));
    else
      return a - b;
  }
};
template <class C>
struct Mul {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C a, C b) const {
    if constexpr (is_int_v<C>)
      return C(uint_of<C>(a) * uint_of<C>(b));
    else
      return a * b;
  }
};
// Integers truncate toward zero as C++; x / 0 = 0 (a kernel cannot raise per element);
// i64 min / -1 wraps to i64 min.
template <class C>
struct Div {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C a, C b) const {
    if constexpr (is_int_v<C>) {
      if (b == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return C(uint_of<C>(0) - uint_of<C>(a));
      return C(a / b);
    } else {
      return a / b;
    }
  }
};
// NaN in either operand gives NaN, as torch.minimum/maximum.
template <class C>
struct Minimum {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C a, C b) const {
    if constexpr (!is_int_v<C>)
      if (a != a || b != b) return a + b;
    return a < b ? a : b;
  }
};
template <class C>
struct Maximum {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C a, C b) const {
    if constexpr (!is_int_v<C>)
      if (a != a || b != b) return a + b;
    return a > b ? a : b;
  }
};
// Integers: repeated squaring, wrapping; a negative exponent gives 0 except for bases
// 1 (-> 1) and -1 (-> +-1 by parity), the values of the exact result truncated.
template <class C>
struct Pow {
  static constexpr bool kIntegers = true;
  WICK_HD C operator()(C a, C b) const {
    if constexpr (is_int_v<C>) {
      if constexpr (std::is_signed_v<C>) {
        if (b < 0) {
          if (a == C(1)) return C(1);
          if (a == C(-1)) return (b & 1) ? C(-1) : C(1);
          return C(0);
        }
      }
      using U = uint_of<C>;
      U result = 1, base = U(a);
      for (uint64_t e = uint64_t(b); e; e >>= 1) {
        if (e & 1) result = U(result * base);
        base = U(base * base);
      }
      return C(result);
    } else {
      return wpow(a, b);
    }
  }
};

// ---- comparisons (results 0 or 1; any comparison with NaN is false except ne) -------------

template <class C>
struct Eq {
  WICK_HD bool operator()(C a, C b) const { return a == b; }
};
template <class C>
struct Ne {
  WICK_HD bool operator()(C a, C b) const { return a != b; }
};
template <class C>
struct Lt {
  WICK_HD bool operator()(C a, C b) const { return a < b; }
};
template <class C>
struct Le {
  WICK_HD bool operator()(C a, C b) const { return a <= b; }
};
template <class C>
struct Gt {
  WICK_HD bool operator()(C a, C b) const { return a > b; }
};
template <class C>
struct Ge {
  WICK_HD bool operator()(C a, C b) const { return a >= b; }
};

// ---- the enum -> functor tables, shared by every backend ------------------------------------
// fn is called with the functor built for compute type C; the caller's kernel runs it.

// The functor of a table entry built for op's parameters: the parameterized ones
// (affine, powf, elu, clamp) take them from UnaryParams through F::from, the rest have none.
template <class F>
F make_unary(const UnaryParams& p) {
  if constexpr (requires { F::from(p); })
    return F::from(p);
  else
    return F{};
}

template <class C, class F>
decltype(auto) with_unary_op(UnaryOp op, const UnaryParams& p, F&& fn) {
  switch (op) {
#define WICK_CASE(e, name) \
  case UnaryOp::e: return fn(make_unary<e<C>>(p));
    WICK_UNARY_OPS(WICK_CASE)
#undef WICK_CASE
  }
  fail(ErrorKind::Internal, "unary: invalid op id ", int(op));
}

// Whether op accepts integer dtypes (the front end checks this before any backend): what
// its functor says.
constexpr bool unary_takes_integers(UnaryOp op) {
  switch (op) {
#define WICK_CASE(e, name) \
  case UnaryOp::e: return e<int64_t>::kIntegers;
    WICK_UNARY_OPS(WICK_CASE)
#undef WICK_CASE
  }
  return false;
}

template <class C, class F>
decltype(auto) with_binary_op(BinaryOp op, F&& fn) {
  switch (op) {
#define WICK_CASE(e, name) \
  case BinaryOp::e: return fn(e<C>{});
    WICK_BINARY_OPS(WICK_CASE)
#undef WICK_CASE
  }
  fail(ErrorKind::Internal, "binary: invalid op id ", int(op));
}

template <class C, class F>
decltype(auto) with_compare_op(CompareOp op, F&& fn) {
  switch (op) {
#define WICK_CASE(e, name) \
  case CompareOp::e: return fn(e<C>{});
    WICK_COMPARE_OPS(WICK_CASE)
#undef WICK_CASE
  }
  fail(ErrorKind::Internal, "compare: invalid op id ", int(op));
}

}  // namespace wick::ew
