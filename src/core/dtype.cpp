#include "wick/dtype.h"

#include <algorithm>
#include <string>

namespace wick {

DType dtype_from_name(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias aliases[] = {
      {"uint8", DType::U8},      {"uint32", DType::U32},  {"int64", DType::I64},  {"long", DType::I64},
      {"bfloat16", DType::BF16}, {"float16", DType::F16}, {"half", DType::F16},   {"float32", DType::F32},
      {"float", DType::F32},     {"float64", DType::F64}, {"double", DType::F64},
  };
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (int i = 0; i < kNumDTypes; ++i)
    if (dtype_name(DType(i)) == lower) return DType(i);
  for (const Alias& a : aliases)
    if (a.name == lower) return a.dtype;
  fail(ErrorKind::InvalidArgument, "dtype: unknown dtype name '", name,
       "' (expected u8, u32, i64, bf16, f16, f32 or f64)");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  const bool fa = is_float(a), fb = is_float(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16)) return DType::F32;
    return dtype_size(a) >= dtype_size(b) ? a : b;
  }
  // Integers: i64 holds every u8 and u32 value; u32 holds every u8 value.
  if (a == DType::I64 || b == DType::I64) return DType::I64;
  return DType::U32;
}

}  // namespace wick
