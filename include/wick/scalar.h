// Scalar: a number handed to an op (fill value, affine factors, clamp bounds). It keeps
// an integer exactly (up to 64 bits) as well as its double value, so that i64 fills and
// clamps are exact and float ones are not truncated.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "wick/half.h"

namespace wick {

class Scalar {
 public:
  constexpr Scalar() = default;
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  constexpr Scalar(T v) : f_(double(v)), i_(int64_t(v)), is_int_(true) {}
  constexpr Scalar(double v) : f_(v), i_(0), is_int_(false) {}
  constexpr Scalar(float v) : Scalar(double(v)) {}
  Scalar(f16 v) : Scalar(double(v)) {}
  Scalar(bf16 v) : Scalar(double(v)) {}

  constexpr bool is_integral() const { return is_int_; }
  constexpr double to_double() const { return f_; }
  constexpr int64_t to_int64() const { return is_int_ ? i_ : saturating_int64(f_); }

  // The value as T: floats round to nearest; integers take the exact integer, or a
  // double truncated toward zero and saturated to T's range (NaN gives 0).
  template <class T>
  T to() const {
    if constexpr (std::is_floating_point_v<T>) {
      return T(f_);
    } else if constexpr (std::is_integral_v<T>) {
      if (is_int_) return T(i_);
      if (std::isnan(f_)) return T(0);
      const double lo = double(std::numeric_limits<T>::lowest());
      const double hi = double(std::numeric_limits<T>::max());
      if (f_ <= lo) return std::numeric_limits<T>::lowest();
      if (f_ >= hi) return std::numeric_limits<T>::max();
      return T(f_);
    } else {
      return T(f_);  // f16, bf16
    }
  }

 private:
  static constexpr int64_t saturating_int64(double v) {
    if (v != v) return 0;
    if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
    if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
    return int64_t(v);
  }
  double f_ = 0.0;
  int64_t i_ = 0;
  bool is_int_ = true;
};

}  // namespace wick
