// DType properties, promotion, and f16/bf16 conversions over all 65,536 bit patterns.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "support/golden.h"
#include "wick/wick.h"

namespace wick {
namespace {

TEST(DType, NamesSizesCategories) {
  EXPECT_EQ(kNumDTypes, 7);
  EXPECT_EQ(dtype_name(DType::BF16), "bf16");
  EXPECT_EQ(dtype_size(DType::U8), 1u);
  EXPECT_EQ(dtype_size(DType::U32), 4u);
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::F64), 8u);
  EXPECT_TRUE(is_float(DType::F16));
  EXPECT_FALSE(is_float(DType::U32));
  EXPECT_TRUE(is_signed(DType::I64));
  EXPECT_FALSE(is_signed(DType::U8));
  EXPECT_EQ(dtype_from_name("float32"), DType::F32);
  EXPECT_EQ(dtype_from_name("BF16"), DType::BF16);
  EXPECT_EQ(dtype_from_name("half"), DType::F16);
  EXPECT_WICK_ERROR(dtype_from_name("f8"), InvalidArgument, "unknown dtype name 'f8'");
}

TEST(DType, Promotion) {
  EXPECT_EQ(promote_types(DType::F32, DType::F32), DType::F32);
  EXPECT_EQ(promote_types(DType::U8, DType::F16), DType::F16);
  EXPECT_EQ(promote_types(DType::I64, DType::BF16), DType::BF16);
  EXPECT_EQ(promote_types(DType::F16, DType::BF16), DType::F32);
  EXPECT_EQ(promote_types(DType::F16, DType::F32), DType::F32);
  EXPECT_EQ(promote_types(DType::F64, DType::BF16), DType::F64);
  EXPECT_EQ(promote_types(DType::U8, DType::U32), DType::U32);
  EXPECT_EQ(promote_types(DType::U32, DType::I64), DType::I64);
  EXPECT_EQ(promote_types(DType::U8, DType::I64), DType::I64);
  // Symmetric for every pair.
  for (int a = 0; a < kNumDTypes; ++a)
    for (int b = 0; b < kNumDTypes; ++b)
      EXPECT_EQ(promote_types(DType(a), DType(b)), promote_types(DType(b), DType(a)));
}

TEST(DType, DispatchCallsTheRightType) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType dt = DType(i);
    const size_t size = dispatch(dt, []<class T>() { return sizeof(T); });
    EXPECT_EQ(size, dtype_size(dt));
    const DType back = dispatch(dt, []<class T>() { return dtype_v<T>; });
    EXPECT_EQ(back, dt);
  }
  EXPECT_WICK_ERROR(dispatch_float(DType::U8, "exp", []<class T>() { return 0; }), DTypeMismatch, "exp");
}

// An independent binary16 decoder: sign * 2^(e-15) * (1 + m/1024), subnormals 2^-14 * m/1024.
double reference_f16(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 31)
    v = m ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else if (e == 0)
    v = std::ldexp(double(m), -24);
  else
    v = std::ldexp(1.0 + m / 1024.0, e - 15);
  return s ? -v : v;
}

TEST(Half, F16ToF32AllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float got = float(f16::from_bits(uint16_t(h)));
    const double want = reference_f16(uint16_t(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
      ASSERT_EQ(std::signbit(got), bool(h >> 15)) << h;
    } else {
      ASSERT_EQ(double(got), want) << "pattern " << h;
      ASSERT_EQ(std::signbit(got), bool(h >> 15)) << h;  // -0 stays -0
    }
  }
}

// Rounding to nearest even checked at, just below and just above every midpoint
// between adjacent binary16 values (in f32 and in f64), plus round trips.
TEST(Half, F32AndF64ToF16AllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t bits = uint16_t(h);
    const double v = reference_f16(bits);
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(float(f16(float(v)))));
      continue;
    }
    ASSERT_EQ(f16(float(v)).bits, bits) << "round trip f32 " << h;
    ASSERT_EQ(f16(v).bits, bits) << "round trip f64 " << h;
    if ((h & 0x7fff) >= 0x7c00) continue;  // Inf: no value above
    const double next = (h & 0x7fff) == 0x7bff ? 65536.0 * (v < 0 ? -1 : 1) : reference_f16(uint16_t(h + 1));
    const double mid = (v + next) / 2;  // exact in double
    const uint16_t even = (bits & 1) ? uint16_t(h + 1) : bits;
    const uint16_t up = uint16_t(h + 1);
    // Largest finite: the midpoint to 65536 rounds to even, i.e. to Inf (0x7c00).
    ASSERT_EQ(f16(mid).bits, even) << "f64 midpoint above pattern " << h;
    ASSERT_EQ(f16(float(mid)).bits, even) << "f32 midpoint above pattern " << h;
    ASSERT_EQ(f16(std::nextafter(mid, 0.0)).bits, bits) << "below midpoint " << h;
    ASSERT_EQ(f16(std::nextafter(mid, mid * 2)).bits, up) << "above midpoint " << h;
    ASSERT_EQ(f16(std::nextafterf(float(mid), 0.0f)).bits, bits) << "f32 below midpoint " << h;
  }
}

TEST(Half, F16SpecialValues) {
  EXPECT_EQ(f16(65504.0f).bits, 0x7bffu);
  EXPECT_EQ(f16(65519.0f).bits, 0x7bffu);  // rounds down to the largest finite
  EXPECT_EQ(f16(65520.0f).bits, 0x7c00u);  // the midpoint to 65536 rounds to Inf
  EXPECT_EQ(f16(1e10f).bits, 0x7c00u);
  EXPECT_EQ(f16(-1e10f).bits, 0xfc00u);
  EXPECT_EQ(f16(INFINITY).bits, 0x7c00u);
  EXPECT_EQ(f16(1.0f + 1.0f / 2048).bits, 0x3c00u);     // tie to even (1.0)
  EXPECT_EQ(f16(std::ldexp(1.0f, -24)).bits, 0x0001u);  // smallest subnormal
  EXPECT_EQ(f16(std::ldexp(1.0f, -25)).bits, 0x0000u);  // half of it: tie to even (0)
  EXPECT_EQ(f16(std::ldexp(1.5f, -25)).bits, 0x0001u);
  EXPECT_EQ(f16(-0.0f).bits, 0x8000u);
  const uint16_t nan = f16(std::numeric_limits<float>::quiet_NaN()).bits;
  EXPECT_EQ(nan & 0x7c00u, 0x7c00u);
  EXPECT_NE(nan & 0x3ffu, 0u);
  // Double rounding would turn 1 + 2^-11 + 2^-40 (just above a tie) into 1.0 via f32.
  EXPECT_EQ(f16(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).bits, 0x3c01u);
}

TEST(Half, BF16AllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t f32bits = h << 16;
    const float v = std::bit_cast<float>(f32bits);
    const float got = float(bf16::from_bits(uint16_t(h)));
    if (std::isnan(v)) {
      ASSERT_TRUE(std::isnan(got));
      ASSERT_TRUE(std::isnan(float(bf16(v))));
      ASSERT_TRUE(std::isnan(float(bf16(double(v)))));
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(got), f32bits) << h;
    ASSERT_EQ(bf16(v).bits, h) << h;
    ASSERT_EQ(bf16(double(v)).bits, h) << h;
    if ((h & 0x7fff) >= 0x7f80) continue;
    // Midpoint to the next pattern (away from zero), and either side of it.
    const uint16_t even = (h & 1) ? uint16_t(h + 1) : uint16_t(h);
    const float mid = std::bit_cast<float>(f32bits | 0x8000u);
    ASSERT_EQ(bf16(mid).bits, even) << h;
    ASSERT_EQ(bf16(std::bit_cast<float>(f32bits | 0x7fffu)).bits, h) << h;
    ASSERT_EQ(bf16(std::bit_cast<float>(f32bits | 0x8001u)).bits, uint16_t(h + 1)) << h;
    // From f64: just above a tie rounds up even when f32 would have made it a tie.
    const double above = double(mid) + std::fabs(double(mid)) * 1e-12;
    ASSERT_EQ(bf16(std::signbit(mid) ? double(mid) - std::fabs(double(mid)) * 1e-12 : above).bits, uint16_t(h + 1))
        << h;
  }
  EXPECT_EQ(bf16(3.4e38f).bits, 0x7f80u);  // rounds past the largest finite bf16 to Inf
}

}  // namespace
}  // namespace wick
