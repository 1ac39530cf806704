// DType: the element types wick computes on, their properties, promotion and dispatch.
// Adding a dtype is one line in WICK_FOR_EACH_DTYPE plus its C++ type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <type_traits>

#include "wick/error.h"
#include "wick/half.h"

namespace wick {

// X(Enumerator, C++ type, name, category)
#define WICK_FOR_EACH_DTYPE(X)                                \
  X(U8, uint8_t, "u8", ::wick::DTypeCategory::UnsignedInt)    \
  X(U32, uint32_t, "u32", ::wick::DTypeCategory::UnsignedInt) \
  X(I64, int64_t, "i64", ::wick::DTypeCategory::SignedInt)    \
  X(BF16, ::wick::bf16, "bf16", ::wick::DTypeCategory::Float) \
  X(F16, ::wick::f16, "f16", ::wick::DTypeCategory::Float)    \
  X(F32, float, "f32", ::wick::DTypeCategory::Float)          \
  X(F64, double, "f64", ::wick::DTypeCategory::Float)

enum class DTypeCategory { UnsignedInt, SignedInt, Float };

enum class DType : uint8_t {
#define WICK_ENUM(e, T, name, cat) e,
  WICK_FOR_EACH_DTYPE(WICK_ENUM)
#undef WICK_ENUM
};

inline constexpr int kNumDTypes = 0
#define WICK_COUNT(e, T, name, cat) +1
    WICK_FOR_EACH_DTYPE(WICK_COUNT)
#undef WICK_COUNT
    ;

// C++ type <-> DType.
template <class T>
struct dtype_of;
#define WICK_DTYPE_OF(e, T, name, cat)       \
  template <>                                \
  struct dtype_of<T> {                       \
    static constexpr DType value = DType::e; \
  };
WICK_FOR_EACH_DTYPE(WICK_DTYPE_OF)
#undef WICK_DTYPE_OF
template <class T>
inline constexpr DType dtype_v = dtype_of<std::remove_cv_t<T>>::value;

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;
template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

// The type kernels compute in: float for the 16-bit floats, the type itself otherwise.
template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

constexpr size_t dtype_size(DType dt) {
  switch (dt) {
#define WICK_SIZE(e, T, name, cat) \
  case DType::e: return sizeof(T);
    WICK_FOR_EACH_DTYPE(WICK_SIZE)
#undef WICK_SIZE
  }
  return 0;
}

constexpr std::string_view dtype_name(DType dt) {
  switch (dt) {
#define WICK_NAME(e, T, name, cat) \
  case DType::e: return name;
    WICK_FOR_EACH_DTYPE(WICK_NAME)
#undef WICK_NAME
  }
  return "?";
}

constexpr DTypeCategory dtype_category(DType dt) {
  switch (dt) {
#define WICK_CAT(e, T, name, cat) \
  case DType::e: return cat;
    WICK_FOR_EACH_DTYPE(WICK_CAT)
#undef WICK_CAT
  }
  return DTypeCategory::Float;
}

constexpr bool is_float(DType dt) { return dtype_category(dt) == DTypeCategory::Float; }
constexpr bool is_integer(DType dt) { return !is_float(dt); }
constexpr bool is_signed(DType dt) { return dtype_category(dt) != DTypeCategory::UnsignedInt; }

// Parses "f32", "float32", "bf16", "bfloat16", "half", ...; throws on an unknown name.
DType dtype_from_name(std::string_view name);

// The result dtype of a binary op on a and b (PyTorch's rules for these dtypes):
// equal dtypes give themselves; a float beats an integer; the wider float wins and
// f16 with bf16 gives f32; among integers i64 beats u32 beats u8.
DType promote_types(DType a, DType b);

inline std::ostream& operator<<(std::ostream& os, DType dt) { return os << dtype_name(dt); }

// Calls f.template operator()<T>() with the C++ type of dt: the one dtype switch of
// the library. Kernels exclude meaningless combinations with `if constexpr` inside f.
template <class F>
decltype(auto) dispatch(DType dt, F&& f) {
  switch (dt) {
#define WICK_DISPATCH(e, T, name, cat) \
  case DType::e: return f.template operator()<T>();
    WICK_FOR_EACH_DTYPE(WICK_DISPATCH)
#undef WICK_DISPATCH
  }
  fail(ErrorKind::Internal, "dispatch: invalid dtype id ", int(dt));
}

// Same, restricted to floating-point dtypes; op names the caller for the error.
template <class F>
decltype(auto) dispatch_float(DType dt, std::string_view op, F&& f) {
  WICK_CHECK(is_float(dt), DTypeMismatch, op, ": expected a floating-point dtype, got ", dt);
  return dispatch(dt, [&]<class T>() -> decltype(auto) {
    if constexpr (is_float_v<T>) {
      return f.template operator()<T>();
    } else {
      fail(ErrorKind::Internal, op, ": unreachable dtype");
      return f.template operator()<float>();
    }
  });
}

// Same, restricted to index dtypes (u8, u32, i64).
template <class F>
decltype(auto) dispatch_index(DType dt, std::string_view op, F&& f) {
  WICK_CHECK(is_integer(dt), DTypeMismatch, op, ": indices must be u8, u32 or i64, got ", dt);
  return dispatch(dt, [&]<class T>() -> decltype(auto) {
    if constexpr (std::is_integral_v<T>) {
      return f.template operator()<T>();
    } else {
      fail(ErrorKind::Internal, op, ": unreachable dtype");
      return f.template operator()<int64_t>();
    }
  });
}

}  // namespace wick
