// ggml's block layouts (ggml-common.h), byte for byte. All multi-byte fields are little
// endian; f16 fields are raw IEEE binary16 bits decoded with wick::f16. Packed bytes may
// sit at any address, so blocks are always memcpy'd into these structs (load_block), never
// read through a cast pointer; every struct has a static_assert on its size.
#pragma once

#include <cstdint>
#include <cstring>

#include "wick/half.h"

namespace wick::quant {

inline constexpr int kQK = 32;     // values per block of the "legacy" quants
inline constexpr int kQK_K = 256;  // values per super-block of the k-quants
inline constexpr int kScaleBytesK = 12;

inline float f16_value(uint16_t bits) { return float(f16::from_bits(bits)); }

template <class Block>
inline Block load_block(const void* p) {
  Block b;
  std::memcpy(&b, p, sizeof(Block));
  return b;
}

// d * (q - 8), q a 4-bit value
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];  // value j in the low nibble of qs[j], value j+16 in the high one
};
// d * q + m
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[kQK / 2];
};
// d * (q - 16), q = nibble | fifth bit from qh
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // bit j: fifth bit of value j
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};

// 16 sub-blocks of 16: scale (low nibble) and min (high nibble) per sub-block, 2-bit q.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d, dmin;
};
// 16 sub-blocks of 16: 6-bit signed scales packed into 12 bytes, 2 low bits in qs and
// the third bit in hmask (set bit means "no -4").
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[kScaleBytesK];
  uint16_t d;
};
// 8 sub-blocks of 32: 6-bit scale and min each, packed into 12 bytes (get_scale_min_k4).
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[kScaleBytesK];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[kScaleBytesK];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
// 16 sub-blocks of 16 with int8 scales; 6-bit q = 4 low bits (ql) + 2 high bits (qh).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

// MXFP4 (OCP microscaling): 32 e2m1 values, value j (< 16) in the low nibble of qs[j] and
// j + 16 in the high one, times 2^(e - 127). ggml stores the e2m1 values doubled (kvalues
// 0, 1, 2, 3, 4, 6, 8, 12 and their negatives) and halves the scale instead.
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK / 2];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockMXFP4) == 17);

// The doubled e2m1 value of a 4-bit code: magnitudes 0, 1, 2, 3, 4, 6, 8, 12 (one per
// nibble of kMxfp4Magnitudes, no table in memory: the same code on the host and the
// device), bit 3 the sign.
inline constexpr uint32_t kMxfp4Magnitudes = 0xC8643210u;
WICK_HD inline int mxfp4_value(uint32_t code) {
  const int m = int((kMxfp4Magnitudes >> (4 * (code & 7u))) & 15u);
  return (code & 8u) ? -m : m;
}

// ggml_e8m0_to_fp32_half: 2^(x - 128) as f32 bits (x < 2 gives the subnormals 2^-128 and
// 2^-127), exact, so value * scale rounds only where ggml's does.
WICK_HD inline float e8m0_half(uint8_t x) {
  const uint32_t bits = x < 2 ? 0x00200000u << x : uint32_t(x - 1) << 23;
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// The 6-bit scale and min of sub-block j (0..7) of a q4_K/q5_K block: the first four
// pairs sit in the low 6 bits of bytes 0..7; the last four are split into a nibble in
// bytes 8..11 and the two spare high bits of bytes 0..7.
WICK_HD inline void scale_min_k4(int j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace wick::quant
