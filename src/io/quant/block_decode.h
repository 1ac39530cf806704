// Host/device block decoders for every ggml type wick reads, used by the CUDA kernels
// (kernels_quant.cu) and checked on the host against dequantize_blocks.cpp bit for bit.
//
// Each decoder mirrors the arithmetic of dequantize_blocks.cpp exactly (same products in
// the same order, f16 scales through half_bits::f16_to_f32), so its values are identical
// to the CPU path: every product there is exact in f32 and the only rounding is the final
// add or subtract of the block minimum, which FMA contraction cannot change.
//
// Interface of a decoder D:
//   D::kElems, D::kBytes          values and bytes per block (1 and the element size for
//                                 the float types)
//   D::value(row, e)              value e of a packed row
//   D::decode8(row, e0, v)        the 8 consecutive values e0..e0+7 (e0 % 8 == 0); they
//                                 always share one scale, so it is decoded once.
// Fields are read byte by byte at their offsetof in blocks.h: packed bytes may sit at
// any address and the result does not depend on the host's endianness.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "io/quant/blocks.h"
#include "wick/error.h"
#include "wick/half.h"
#include "wick/quant.h"

namespace wick::quant {

WICK_HD inline uint16_t u16_at(const uint8_t* p) { return uint16_t(p[0] | (uint16_t(p[1]) << 8)); }
WICK_HD inline float f16_at(const uint8_t* p) { return half_bits::f16_to_f32(u16_at(p)); }

struct DecodeF32 {
  static constexpr int kElems = 1, kBytes = 4;
  WICK_HD static float value(const uint8_t* row, int64_t e) {
    const uint8_t* p = row + 4 * e;
    return std::bit_cast<float>(uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) |
                                (uint32_t(p[3]) << 24));
  }
};
struct DecodeF16 {
  static constexpr int kElems = 1, kBytes = 2;
  WICK_HD static float value(const uint8_t* row, int64_t e) { return f16_at(row + 2 * e); }
};
struct DecodeBF16 {
  static constexpr int kElems = 1, kBytes = 2;
  WICK_HD static float value(const uint8_t* row, int64_t e) { return half_bits::bf16_to_f32(u16_at(row + 2 * e)); }
};

// The legacy 32-value blocks: value j (< 16) in the low nibble of qs[j], value j + 16 in
// the high nibble; q5 types take a fifth bit j from the 32-bit qh field.
template <class Block, bool kHasMin, bool kHasQh>
struct DecodeQ4Q5 {
  static constexpr int kElems = kQK, kBytes = int(sizeof(Block));
  static constexpr int kOffset = kHasQh ? 16 : 8;
  WICK_HD static int q(const uint8_t* b, int i) {
    const uint8_t byte = b[offsetof(Block, qs) + (i & 15)];
    int v = i < 16 ? (byte & 0x0F) : (byte >> 4);
    if constexpr (kHasQh) v |= ((b[offsetof(Block, qh) + i / 8] >> (i % 8)) & 1) << 4;
    return v;
  }
  WICK_HD static float from_q(const uint8_t* b, int v) {
    const float d = f16_at(b + offsetof(Block, d));
    if constexpr (kHasMin) {
      return float(v) * d + f16_at(b + offsetof(Block, m));
    } else {
      return float(v - kOffset) * d;
    }
  }
  WICK_HD static float value(const uint8_t* row, int64_t e) {
    const uint8_t* b = row + (e / kElems) * kBytes;
    return from_q(b, q(b, int(e % kElems)));
  }
  WICK_HD static void decode8(const uint8_t* row, int64_t e0, float* v) {
    const uint8_t* b = row + (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const float d = f16_at(b + offsetof(Block, d));
    float m = 0.0f;
    if constexpr (kHasMin) m = f16_at(b + offsetof(Block, m));
    for (int k = 0; k < 8; ++k) {
      const int qv = q(b, i0 + k);
      if constexpr (kHasMin) {
        v[k] = float(qv) * d + m;
      } else {
        v[k] = float(qv - kOffset) * d;
      }
    }
  }
};
using DecodeQ4_0 = DecodeQ4Q5<BlockQ4_0, false, false>;
using DecodeQ4_1 = DecodeQ4Q5<BlockQ4_1, true, false>;
using DecodeQ5_0 = DecodeQ4Q5<BlockQ5_0, false, true>;
using DecodeQ5_1 = DecodeQ4Q5<BlockQ5_1, true, true>;

struct DecodeQ8_0 {
  static constexpr int kElems = kQK, kBytes = int(sizeof(BlockQ8_0));
  WICK_HD static float value(const uint8_t* row, int64_t e) {
    const uint8_t* b = row + (e / kElems) * kBytes;
    return float(int8_t(b[offsetof(BlockQ8_0, qs) + e % kElems])) * f16_at(b + offsetof(BlockQ8_0, d));
  }
  WICK_HD static void decode8(const uint8_t* row, int64_t e0, float* v) {
    const uint8_t* b = row + (e0 / kElems) * kBytes;
    const uint8_t* qs = b + offsetof(BlockQ8_0, qs) + e0 % kElems;
    const float d = f16_at(b + offsetof(BlockQ8_0, d));
    for (int k = 0; k < 8; ++k) v[k] = float(int8_t(qs[k])) * d;
  }
};

// q2_K and q3_K walk a 256-value super-block as 2 halves x 4 shifts x 2 parts x 16:
// value i reads 2 bits at shift 2 * ((i % 128) / 32) of qs[32 * (i / 128) + i % 32], and
// belongs to sub-block i / 16.
struct DecodeQ2_K {
  static constexpr int kElems = kQK_K, kBytes = int(sizeof(BlockQ2_K));
  WICK_HD static void decode8(const uint8_t* row, int64_t e0, float* v) {
    const uint8_t* b = row + (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const float d = f16_at(b + offsetof(BlockQ2_K, d)), dmin = f16_at(b + offsetof(BlockQ2_K, dmin));
    const uint8_t sc = b[offsetof(BlockQ2_K, scales) + i0 / 16];
    const float dl = d * float(sc & 0xF), ml = dmin * float(sc >> 4);
    const int shift = 2 * ((i0 % 128) / 32);
    const uint8_t* q = b + offsetof(BlockQ2_K, qs) + 32 * (i0 / 128) + i0 % 32;
    for (int k = 0; k < 8; ++k) v[k] = dl * float((q[k] >> shift) & 3) - ml;
  }
  WICK_HD static float value(const uint8_t* row, int64_t e) {
    float v[8];
    decode8(row, e & ~int64_t(7), v);
    return v[e & 7];
  }
};

struct DecodeQ3_K {
  static constexpr int kElems = kQK_K, kBytes = int(sizeof(BlockQ3_K));
  // Sub-block j's 6-bit signed scale (see q3_k_scales in dequantize_blocks.cpp).
  WICK_HD static int scale(const uint8_t* s, int j) {
    const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (low | (high << 4)) - 32;
  }
  WICK_HD static void decode8(const uint8_t* row, int64_t e0, float* v) {
    const uint8_t* b = row + (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const float d = f16_at(b + offsetof(BlockQ3_K, d));
    const float dl = d * float(scale(b + offsetof(BlockQ3_K, scales), i0 / 16));
    const int pass = (i0 % 128) / 32;  // shift / 2
    const int shift = 2 * pass;
    const uint8_t m = uint8_t(1u << (4 * (i0 / 128) + pass));
    const int l0 = i0 % 32;
    const uint8_t* q = b + offsetof(BlockQ3_K, qs) + 32 * (i0 / 128) + l0;
    const uint8_t* hm = b + offsetof(BlockQ3_K, hmask) + l0;
    for (int k = 0; k < 8; ++k) {
      const int x = ((q[k] >> shift) & 3) - ((hm[k] & m) ? 0 : 4);
      v[k] = dl * float(x);
    }
  }
  WICK_HD static float value(const uint8_t* row, int64_t e) {
    float v[8];
    decode8(row, e & ~int64_t(7), v);
    return v[e & 7];
  }
};

// q4_K / q5_K: sub-block j = i / 32 of 32 values takes the low (j even) or high (j odd)
// nibbles of qs[32 * (j / 2) + i % 32]; q5_K adds bit j of qh[i % 32] as the fifth bit.
template <class Block, bool kHasQh>
struct DecodeK4Like {
  static constexpr int kElems = kQK_K, kBytes = int(sizeof(Block));
  WICK_HD static void decode8(const uint8_t* row, int64_t e0, float* v) {
    const uint8_t* b = row + (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const int sub = i0 / 32, l0 = i0 % 32;
    const float d = f16_at(b + offsetof(Block, d)), dmin = f16_at(b + offsetof(Block, dmin));
    uint8_t sc, m;
    scale_min_k4(sub, b + offsetof(Block, scales), sc, m);  // shared with the CPU decoder
    const float d1 = d * float(sc), m1 = dmin * float(m);
    const uint8_t* q = b + offsetof(Block, qs) + 32 * (sub / 2) + l0;
    for (int k = 0; k < 8; ++k) {
      int x = (sub & 1) ? (q[k] >> 4) : (q[k] & 0x0F);
      if constexpr (kHasQh) x += ((b[offsetof(Block, qh) + l0 + k] >> sub) & 1) << 4;
      v[k] = d1 * float(x) - m1;
    }
  }
  WICK_HD static float value(const uint8_t* row, int64_t e) {
    float v[8];
    decode8(row, e & ~int64_t(7), v);
    return v[e & 7];
  }
};
using DecodeQ4_K = DecodeK4Like<BlockQ4_K, false>;
using DecodeQ5_K = DecodeK4Like<BlockQ5_K, true>;

// q6_K: value i of half h = i / 128 is quarter t = (i % 128) / 32, position l = i % 32:
// low bits from the low (t < 2) or high nibble of ql[64h + l + 32 (t & 1)], high bits
// (qh[32h + l] >> 2t) & 3, scale scales[8h + l / 16 + 2t].
struct DecodeQ6_K {
  static constexpr int kElems = kQK_K, kBytes = int(sizeof(BlockQ6_K));
  WICK_HD static void decode8(const uint8_t* row, int64_t e0, float* v) {
    const uint8_t* b = row + (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const int h = i0 / 128, t = (i0 % 128) / 32, l0 = i0 % 32;
    const float d = f16_at(b + offsetof(BlockQ6_K, d));
    const float sc = float(int8_t(b[offsetof(BlockQ6_K, scales) + 8 * h + l0 / 16 + 2 * t]));
    const uint8_t* ql = b + offsetof(BlockQ6_K, ql) + 64 * h + l0 + 32 * (t & 1);
    const uint8_t* qh = b + offsetof(BlockQ6_K, qh) + 32 * h + l0;
    for (int k = 0; k < 8; ++k) {
      const int low = t < 2 ? (ql[k] & 0x0F) : (ql[k] >> 4);
      const int x = (low | (((qh[k] >> (2 * t)) & 3) << 4)) - 32;
      v[k] = d * sc * float(x);
    }
  }
  WICK_HD static float value(const uint8_t* row, int64_t e) {
    float v[8];
    decode8(row, e & ~int64_t(7), v);
    return v[e & 7];
  }
};

// decode8 for the float types (8 one-value blocks) and any decoder without its own.
template <class D>
WICK_HD inline void decode8(const uint8_t* row, int64_t e0, float* v) {
  if constexpr (requires { D::decode8(row, e0, v); }) {
    D::decode8(row, e0, v);
  } else {
    for (int k = 0; k < 8; ++k) v[k] = D::value(row, e0 + k);
  }
}

// Calls f.template operator()<Decoder>() for type; the one switch over ggml types that
// the CUDA kernels use.
template <class F>
decltype(auto) dispatch_decoder(GgmlType type, F&& f) {
  switch (type) {
    case GgmlType::F32: return f.template operator()<DecodeF32>();
    case GgmlType::F16: return f.template operator()<DecodeF16>();
    case GgmlType::BF16: return f.template operator()<DecodeBF16>();
    case GgmlType::Q4_0: return f.template operator()<DecodeQ4_0>();
    case GgmlType::Q4_1: return f.template operator()<DecodeQ4_1>();
    case GgmlType::Q5_0: return f.template operator()<DecodeQ5_0>();
    case GgmlType::Q5_1: return f.template operator()<DecodeQ5_1>();
    case GgmlType::Q8_0: return f.template operator()<DecodeQ8_0>();
    case GgmlType::Q2_K: return f.template operator()<DecodeQ2_K>();
    case GgmlType::Q3_K: return f.template operator()<DecodeQ3_K>();
    case GgmlType::Q4_K: return f.template operator()<DecodeQ4_K>();
    case GgmlType::Q5_K: return f.template operator()<DecodeQ5_K>();
    case GgmlType::Q6_K: return f.template operator()<DecodeQ6_K>();
  }
  fail(ErrorKind::Internal, "dispatch_decoder: unhandled ggml type ", uint32_t(type));
}

}  // namespace wick::quant
