// f16 (IEEE binary16) and bf16 (bfloat16) storage types and their conversions.
// Conversions to the narrow types round to nearest, ties to even, and keep NaN
// (quieted, sign kept), +-Inf, subnormals and overflow to Inf right.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define WICK_HD __host__ __device__
#else
#define WICK_HD
#endif

namespace wick {

namespace half_bits {

WICK_HD constexpr float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {  // Inf or NaN: keep the payload, quiet a signalling NaN
    bits = sign | 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0u);
  } else if (exp != 0) {  // normal
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {  // +-0
    bits = sign;
  } else {  // subnormal: normalize
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (uint32_t(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

// Rounds |x| (given as the 64-bit pattern of a double, sign removed) to a binary16
// magnitude. Working from double lets f64->f16 round once, not twice.
WICK_HD constexpr uint16_t f16_magnitude_from_f64_bits(uint64_t a) {
  const uint64_t exp_mask = 0x7ff0000000000000ull;
  if ((a & exp_mask) == exp_mask) {  // Inf or NaN
    const uint64_t mant = a & 0x000fffffffffffffull;
    return mant ? uint16_t(0x7e00u | uint16_t(mant >> 42)) : uint16_t(0x7c00u);
  }
  const int e = int(a >> 52) - 1023;                           // unbiased exponent
  if (e >= 16) return 0x7c00u;                                 // too large even before rounding
  uint64_t mant = (a & 0x000fffffffffffffull) | (1ull << 52);  // 53-bit significand
  int shift;                                                   // bits to drop
  uint16_t exp_field;
  if (e < -14) {            // subnormal in f16 (or underflow to zero)
    if (e < -25) return 0;  // below half the smallest subnormal
    shift = 42 + (-14 - e);
    exp_field = 0;
  } else {
    shift = 42;
    exp_field = uint16_t(e + 15);
    mant &= (1ull << 52) - 1;  // the implicit bit is carried by exp_field
  }
  uint64_t kept = mant >> shift;
  const uint64_t rest = mant & ((1ull << shift) - 1);
  const uint64_t halfway = 1ull << (shift - 1);
  if (rest > halfway || (rest == halfway && (kept & 1))) ++kept;  // ties to even
  // A carry out of the mantissa bumps the exponent, and to Inf from the top binade.
  return uint16_t((uint32_t(exp_field) << 10) + uint32_t(kept));
}

WICK_HD constexpr uint16_t f64_to_f16(double x) {
  const uint64_t b = std::bit_cast<uint64_t>(x);
  const uint16_t sign = uint16_t((b >> 48) & 0x8000u);
  return sign | f16_magnitude_from_f64_bits(b & 0x7fffffffffffffffull);
}

// Every float is exactly a double, so a single rounding from double is exact.
WICK_HD constexpr uint16_t f32_to_f16(float x) { return f64_to_f16(double(x)); }

WICK_HD constexpr float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

WICK_HD constexpr uint16_t f32_to_bf16(float x) {
  const uint32_t b = std::bit_cast<uint32_t>(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) return uint16_t((b >> 16) | 0x0040u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((b >> 16) & 1u);                       // ties to even
  return uint16_t((b + rounding) >> 16);
}

// Rounds a double straight to bf16 (no double rounding through f32).
WICK_HD constexpr uint16_t f64_to_bf16(double x) {
  const uint64_t b = std::bit_cast<uint64_t>(x);
  const uint64_t a = b & 0x7fffffffffffffffull;
  const uint16_t sign = uint16_t((b >> 48) & 0x8000u);
  if (a > 0x7ff0000000000000ull) return sign | 0x7fc0u | uint16_t((a >> 45) & 0x3fu);
  const float f = float(x);  // the nearest float; fix the one case where it misleads
  uint16_t r = f32_to_bf16(f);
  // If rounding to float landed exactly on a bf16 tie, the tie was not real: decide
  // from the sign of the double's remainder.
  const uint32_t fb = std::bit_cast<uint32_t>(f);
  if ((fb & 0xffffu) == 0x8000u && double(f) != x) {
    const bool above = (x > double(f)) == ((fb & 0x80000000u) == 0);  // larger magnitude
    const uint16_t down = uint16_t(fb >> 16);
    r = above ? uint16_t(down + 1) : down;
  }
  return r;
}

}  // namespace half_bits

// IEEE binary16 storage. Arithmetic happens in float (kernels widen, compute, narrow).
struct f16 {
  uint16_t bits = 0;
  WICK_HD constexpr f16() = default;
  WICK_HD constexpr explicit f16(float x) : bits(half_bits::f32_to_f16(x)) {}
  WICK_HD constexpr explicit f16(double x) : bits(half_bits::f64_to_f16(x)) {}
  WICK_HD static constexpr f16 from_bits(uint16_t b) {
    f16 h;
    h.bits = b;
    return h;
  }
  WICK_HD constexpr explicit operator float() const { return half_bits::f16_to_f32(bits); }
  WICK_HD constexpr explicit operator double() const { return half_bits::f16_to_f32(bits); }
};

// bfloat16 storage: the top half of an f32.
struct bf16 {
  uint16_t bits = 0;
  WICK_HD constexpr bf16() = default;
  WICK_HD constexpr explicit bf16(float x) : bits(half_bits::f32_to_bf16(x)) {}
  WICK_HD constexpr explicit bf16(double x) : bits(half_bits::f64_to_bf16(x)) {}
  WICK_HD static constexpr bf16 from_bits(uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }
  WICK_HD constexpr explicit operator float() const { return half_bits::bf16_to_f32(bits); }
  WICK_HD constexpr explicit operator double() const { return half_bits::bf16_to_f32(bits); }
};

}  // namespace wick
