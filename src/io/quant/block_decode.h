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

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace wick::quant {

WICK_HD inline uint16_t u16_at(const uint8_t* p) { return uint16_t(p[0] | (uint16_t(p[1]) << 8)); }
WICK_HD inline float f16_at(const uint8_t* p) { return half_bits::f16_to_f32(u16_at(p)); }

// ---- the affine form used by the CUDA matrix-vector product --------------------------------
//
// decode8_affine<D>(row, e0, u, a, b) gives the same 8 values as decode8 as a * u[k] + b:
// u[k] small integers held exactly in floats (decode8_u<D>: the bytes of
// decode8_bytes<D> minus D::kByteOffset; the CUDA kernel's q8-activation path feeds the
// packed bytes straight to dp4a instead), a and b shared by the 8 values
// and by all D::kScaleVals values of their sub-block (D::scale_affine; b is 0 where
// D::kAffineOffset is false), so a dot product can factor the scale out of its inner sum:
// sum_k v_k x_k = a * sum_k u_k x_k + b * sum_k x_k. Every a * u[k] is exact in f32, so
// fma(a, u[k], b) (a * u[k] without an offset) is bit-exact with decode8 (the host test
// checks it). The packed bytes are read 8 at a time through bytes8_at, which on the device
// loads the whole aligned 32-bit words around them from SHARED memory: there row must
// point into shared memory with at least 8 readable bytes past the end of the bytes it
// decodes.

// f16 bits to f32 (exact either way): the hardware conversion on the device.
// On the device p must be 2-byte aligned (f16 fields sit at even offsets of every block,
// and the kernel keeps blocks at even addresses).
WICK_HD inline float f16_fast(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short*>(p)));
#else
  return f16_at(p);
#endif
}

struct Bytes8 {
  uint32_t lo, hi;  // bytes 0..3 and 4..7, little endian
};
#if defined(__CUDACC__)
// The 8 bytes that start shift / 8 bytes into the 4-byte-aligned shared address w: three
// aligned word loads and two funnel shifts instead of eight byte loads, as shared-memory
// loads on 32-bit addresses (a generic pointer turned into an integer would take generic
// loads and 64-bit address arithmetic). volatile: kept in order with the kernels'
// cp.async waits.
__device__ __forceinline__ Bytes8 bytes8_shared(uint32_t w, uint32_t shift) {
  uint32_t w0, w1, w2;
  asm volatile("ld.shared.u32 %0, [%3];\n\tld.shared.u32 %1, [%3+4];\n\tld.shared.u32 %2, [%3+8];"
               : "=r"(w0), "=r"(w1), "=r"(w2)
               : "r"(w));
  return {__funnelshift_r(w0, w1, shift), __funnelshift_r(w1, w2, shift)};
}
#endif

WICK_HD inline Bytes8 bytes8_at(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  const auto addr = static_cast<unsigned>(__cvta_generic_to_shared(p));  // p is in shared memory
  return bytes8_shared(addr & ~3u, (addr & 3u) * 8);
#else
  auto word = [](const uint8_t* q) {
    return uint32_t(q[0]) | (uint32_t(q[1]) << 8) | (uint32_t(q[2]) << 16) | (uint32_t(q[3]) << 24);
  };
  return {word(p), word(p + 4)};
#endif
}

// Where the byte decoders (decode8_bytes_at / decode16_bytes_at) read a row's packed
// bytes: bytes8(off) = bytes8_at(row + off), byte(off) = row[off]. The CUDA matvec passes
// its own reader for the rows of a tile (quant_matvec.cuh: every row read at the same
// offsets, the alignment worked out once for all of them).
struct PtrBytes {
  const uint8_t* row;
  WICK_HD Bytes8 bytes8(int64_t off) const { return bytes8_at(row + off); }
  WICK_HD uint32_t byte(int64_t off) const { return row[off]; }
};

// Byte i of w minus bias, exactly, without an int-to-float conversion (a quarter-rate
// instruction): the float with bits 0x4B0000xx is 2^23 + xx, so subtracting
// bias = 2^23 + offset leaves xx - offset.
inline constexpr float kByteFloatBias = 8388608.0f;  // 2^23
WICK_HD inline float byte_minus(uint32_t w, int i, float bias) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7540u | unsigned(i))) - bias;
#else
  return std::bit_cast<float>(0x4B000000u | ((w >> (8 * i)) & 0xFFu)) - bias;
#endif
}

// The 8 u values of two words of packed bytes.
WICK_HD inline void bytes_minus8(uint32_t lo, uint32_t hi, float bias, float* u) {
  for (int k = 0; k < 4; ++k) {
    u[k] = byte_minus(lo, k, bias);
    u[4 + k] = byte_minus(hi, k, bias);
  }
}

// Bit k (k < 4) of x moved to bit 4 of byte k: a q5 fifth bit next to its nibble.
WICK_HD inline uint32_t spread_bit4(uint32_t x) {
  return ((x & 1u) << 4) | ((x & 2u) << 11) | ((x & 4u) << 18) | ((x & 8u) << 25);
}

// scale_min_k4 without a branch on j (lanes of a warp decode different sub-blocks).
WICK_HD inline void scale_min_k4_select(int j, const uint8_t* q, int& sc, int& m) {
  const int k = j & 3;
  const int s0 = q[k], s4 = q[k + 4], s8 = q[k + 8];
  const bool high = j >= 4;
  sc = high ? ((s8 & 0xF) | ((s0 >> 6) << 4)) : (s0 & 63);
  m = high ? ((s8 >> 4) | ((s4 >> 6) << 4)) : (s4 & 63);
}

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
  static constexpr bool kAffineOffset = kHasMin;
  static constexpr int kScaleVals = kElems;
  static constexpr int kByteOffset = kHasMin ? 0 : kOffset;
  // e0 % 32 is 0, 8, 16 or 24: nibbles (low for 0 and 8, high for 16 and 24) of
  // qs[e0 % 16 ..], fifth bits from byte (e0 % 32) / 8 of qh.
  template <class R>
  WICK_HD static Bytes8 decode8_bytes_at(const R& rd, int64_t e0) {
    const int64_t blk = (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const Bytes8 q = rd.bytes8(blk + offsetof(Block, qs) + (i0 & 15));
    const int shift = (i0 & 16) >> 2;
    uint32_t lo = (q.lo >> shift) & 0x0F0F0F0Fu, hi = (q.hi >> shift) & 0x0F0F0F0Fu;
    if constexpr (kHasQh) {
      const uint32_t h = rd.byte(blk + offsetof(Block, qh) + i0 / 8);
      lo |= spread_bit4(h & 0xFu);
      hi |= spread_bit4(h >> 4);
    }
    return {lo, hi};
  }
  WICK_HD static void scale_affine(const uint8_t* row, int64_t e0, float& a, float& b) {
    const uint8_t* blk = row + (e0 / kElems) * kBytes;
    a = f16_fast(blk + offsetof(Block, d));
    b = 0.0f;
    if constexpr (kHasMin) b = f16_fast(blk + offsetof(Block, m));
  }
  // The wide form: decode8_bytes(e0 + kWideStride) from the same bytes (for e0 % 32 of 0
  // or 8): the high nibbles, fifth bits from qh byte 2 + i0 / 8. Both halves share the
  // block's scale.
  static constexpr int kWideStride = 16;
  template <class R>
  WICK_HD static void decode16_bytes_at(const R& rd, int64_t e0, Bytes8& low, Bytes8& high) {
    const int64_t blk = (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const Bytes8 q = rd.bytes8(blk + offsetof(Block, qs) + i0);
    low = {q.lo & 0x0F0F0F0Fu, q.hi & 0x0F0F0F0Fu};
    high = {(q.lo >> 4) & 0x0F0F0F0Fu, (q.hi >> 4) & 0x0F0F0F0Fu};
    if constexpr (kHasQh) {
      const uint32_t hl = rd.byte(blk + offsetof(Block, qh) + i0 / 8),
                     hh = rd.byte(blk + offsetof(Block, qh) + 2 + i0 / 8);
      low.lo |= spread_bit4(hl & 0xFu);
      low.hi |= spread_bit4(hl >> 4);
      high.lo |= spread_bit4(hh & 0xFu);
      high.hi |= spread_bit4(hh >> 4);
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
  static constexpr bool kAffineOffset = false;
  static constexpr int kScaleVals = kElems;
  static constexpr int kByteOffset = 128;  // int8 s ^ 0x80 read unsigned is s + 128
  template <class R>
  WICK_HD static Bytes8 decode8_bytes_at(const R& rd, int64_t e0) {
    const Bytes8 q = rd.bytes8((e0 / kElems) * kBytes + offsetof(BlockQ8_0, qs) + e0 % kElems);
    return {q.lo ^ 0x80808080u, q.hi ^ 0x80808080u};
  }
  WICK_HD static void scale_affine(const uint8_t* row, int64_t e0, float& a, float& b) {
    a = f16_fast(row + (e0 / kElems) * kBytes + offsetof(BlockQ8_0, d));
    b = 0.0f;
  }
};

// MXFP4: the legacy 32-value layout (Q4_0's nibbles) with a table instead of an offset. The
// byte form maps each 4-bit code to its kvalue + 12 (0..24), so the dp4a kernel's
// byte - kByteOffset is the kvalue and the block scale 2^(e - 128) factors out.
// The 4 codes in the bytes of w (each 0..15) as bytes kvalue + 12.
WICK_HD inline uint32_t mxfp4_bytes4(uint32_t w) {
#if defined(__CUDA_ARCH__)
  // Two 8-entry byte tables (codes 0..7 and 8..15) through byte_perm's 3-bit selectors,
  // then bit 3 of each code picks the table.
  const uint32_t sel = (w & 0x7u) | ((w >> 4) & 0x70u) | ((w >> 8) & 0x700u) | ((w >> 12) & 0x7000u);
  const uint32_t pos = __byte_perm(0x0F0E0D0Cu, 0x18141210u, sel);
  const uint32_t neg = __byte_perm(0x090A0B0Cu, 0x00040608u, sel);
  const uint32_t m = ((w >> 3) & 0x01010101u) * 0xFFu;
  return (pos & ~m) | (neg & m);
#else
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) r |= uint32_t(mxfp4_value((w >> (8 * k)) & 15u) + 12) << (8 * k);
  return r;
#endif
}

struct DecodeMXFP4 {
  static constexpr int kElems = kQK, kBytes = int(sizeof(BlockMXFP4));
  WICK_HD static float value(const uint8_t* row, int64_t e) {
    const uint8_t* b = row + (e / kElems) * kBytes;
    const int i = int(e % kElems);
    const uint8_t byte = b[offsetof(BlockMXFP4, qs) + (i & 15)];
    return float(mxfp4_value(i < 16 ? byte & 0x0Fu : byte >> 4)) * e8m0_half(b[offsetof(BlockMXFP4, e)]);
  }
  WICK_HD static void decode8(const uint8_t* row, int64_t e0, float* v) {
    const uint8_t* b = row + (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const uint8_t* qs = b + offsetof(BlockMXFP4, qs) + (i0 & 15);
    const float d = e8m0_half(b[offsetof(BlockMXFP4, e)]);
    for (int k = 0; k < 8; ++k) v[k] = float(mxfp4_value(i0 < 16 ? qs[k] & 0x0Fu : qs[k] >> 4)) * d;
  }
  static constexpr bool kAffineOffset = false;
  static constexpr int kScaleVals = kElems;
  static constexpr int kByteOffset = 12;
  template <class R>
  WICK_HD static Bytes8 decode8_bytes_at(const R& rd, int64_t e0) {
    const int i0 = int(e0 % kElems);
    const Bytes8 q = rd.bytes8((e0 / kElems) * kBytes + offsetof(BlockMXFP4, qs) + (i0 & 15));
    const int shift = (i0 & 16) >> 2;
    return {mxfp4_bytes4((q.lo >> shift) & 0x0F0F0F0Fu), mxfp4_bytes4((q.hi >> shift) & 0x0F0F0F0Fu)};
  }
  WICK_HD static void scale_affine(const uint8_t* row, int64_t e0, float& a, float& b) {
    a = e8m0_half(row[(e0 / kElems) * kBytes + offsetof(BlockMXFP4, e)]);
    b = 0.0f;
  }
  // The wide form, as Q4_0's: the low and high nibbles of the same 8 bytes.
  static constexpr int kWideStride = 16;
  template <class R>
  WICK_HD static void decode16_bytes_at(const R& rd, int64_t e0, Bytes8& low, Bytes8& high) {
    const Bytes8 q = rd.bytes8((e0 / kElems) * kBytes + offsetof(BlockMXFP4, qs) + e0 % kElems);
    low = {mxfp4_bytes4(q.lo & 0x0F0F0F0Fu), mxfp4_bytes4(q.hi & 0x0F0F0F0Fu)};
    high = {mxfp4_bytes4((q.lo >> 4) & 0x0F0F0F0Fu), mxfp4_bytes4((q.hi >> 4) & 0x0F0F0F0Fu)};
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
  static constexpr bool kAffineOffset = true;
  static constexpr int kScaleVals = 32;  // a sub-block
  static constexpr int kByteOffset = 0;
  template <class R>
  WICK_HD static Bytes8 decode8_bytes_at(const R& rd, int64_t e0) {
    const int64_t blk = (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const int sub = i0 / 32, l0 = i0 % 32;
    const Bytes8 q = rd.bytes8(blk + offsetof(Block, qs) + 32 * (sub / 2) + l0);
    const int shift = (sub & 1) * 4;
    uint32_t lo = (q.lo >> shift) & 0x0F0F0F0Fu, hi = (q.hi >> shift) & 0x0F0F0F0Fu;
    if constexpr (kHasQh) {
      const Bytes8 h = rd.bytes8(blk + offsetof(Block, qh) + l0);
      lo |= ((h.lo >> sub) & 0x01010101u) << 4;
      hi |= ((h.hi >> sub) & 0x01010101u) << 4;
    }
    return {lo, hi};
  }
  // The wide form: sub-blocks 2p and 2p + 1 take the low and high nibbles of the same
  // bytes, so decode8_bytes(e0 + 32) comes from the read of decode8_bytes(e0) (e0 in an
  // even sub-block); q5_K's fifth bits are bits sub and sub + 1 of the same qh bytes.
  static constexpr int kWideStride = 32;
  template <class R>
  WICK_HD static void decode16_bytes_at(const R& rd, int64_t e0, Bytes8& low, Bytes8& high) {
    const int64_t blk = (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const int sub = i0 / 32, l0 = i0 % 32;
    const Bytes8 q = rd.bytes8(blk + offsetof(Block, qs) + 32 * (sub / 2) + l0);
    low = {q.lo & 0x0F0F0F0Fu, q.hi & 0x0F0F0F0Fu};
    high = {(q.lo >> 4) & 0x0F0F0F0Fu, (q.hi >> 4) & 0x0F0F0F0Fu};
    if constexpr (kHasQh) {
      const Bytes8 h = rd.bytes8(blk + offsetof(Block, qh) + l0);
      low.lo |= ((h.lo >> sub) & 0x01010101u) << 4;
      low.hi |= ((h.hi >> sub) & 0x01010101u) << 4;
      high.lo |= ((h.lo >> (sub + 1)) & 0x01010101u) << 4;
      high.hi |= ((h.hi >> (sub + 1)) & 0x01010101u) << 4;
    }
  }
  WICK_HD static void scale_affine(const uint8_t* row, int64_t e0, float& a, float& b) {
    const uint8_t* blk = row + (e0 / kElems) * kBytes;
    int sc, m;
    scale_min_k4_select(int(e0 % kElems) / 32, blk + offsetof(Block, scales), sc, m);
    a = f16_fast(blk + offsetof(Block, d)) * float(sc);
    b = -(f16_fast(blk + offsetof(Block, dmin)) * float(m));
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
  static constexpr bool kAffineOffset = false;
  static constexpr int kScaleVals = 16;  // a sub-block
  static constexpr int kByteOffset = 32;
  template <class R>
  WICK_HD static Bytes8 decode8_bytes_at(const R& rd, int64_t e0) {
    const int64_t blk = (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const int h = i0 / 128, t = (i0 % 128) / 32, l0 = i0 % 32;
    const Bytes8 ql = rd.bytes8(blk + offsetof(BlockQ6_K, ql) + 64 * h + l0 + 32 * (t & 1));
    const Bytes8 qh = rd.bytes8(blk + offsetof(BlockQ6_K, qh) + 32 * h + l0);
    const int shift = (t >> 1) * 4;
    const uint32_t lo = ((ql.lo >> shift) & 0x0F0F0F0Fu) | (((qh.lo >> (2 * t)) & 0x03030303u) << 4);
    const uint32_t hi = ((ql.hi >> shift) & 0x0F0F0F0Fu) | (((qh.hi >> (2 * t)) & 0x03030303u) << 4);
    return {lo, hi};
  }
  // The wide form: quarters t and t + 2 (t < 2) take the low and high nibbles of the same
  // ql bytes and bits 2t, 2t + 4 of the same qh bytes: decode8_bytes(e0 + 64) comes from
  // the reads of decode8_bytes(e0).
  static constexpr int kWideStride = 64;
  template <class R>
  WICK_HD static void decode16_bytes_at(const R& rd, int64_t e0, Bytes8& low, Bytes8& high) {
    const int64_t blk = (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const int h = i0 / 128, t = (i0 % 128) / 32, l0 = i0 % 32;
    const Bytes8 ql = rd.bytes8(blk + offsetof(BlockQ6_K, ql) + 64 * h + l0 + 32 * t);
    const Bytes8 qh = rd.bytes8(blk + offsetof(BlockQ6_K, qh) + 32 * h + l0);
    low = {(ql.lo & 0x0F0F0F0Fu) | (((qh.lo >> (2 * t)) & 0x03030303u) << 4),
           (ql.hi & 0x0F0F0F0Fu) | (((qh.hi >> (2 * t)) & 0x03030303u) << 4)};
    high = {((ql.lo >> 4) & 0x0F0F0F0Fu) | (((qh.lo >> (2 * t + 4)) & 0x03030303u) << 4),
            ((ql.hi >> 4) & 0x0F0F0F0Fu) | (((qh.hi >> (2 * t + 4)) & 0x03030303u) << 4)};
  }
  WICK_HD static void scale_affine(const uint8_t* row, int64_t e0, float& a, float& b) {
    const uint8_t* blk = row + (e0 / kElems) * kBytes;
    const int i0 = int(e0 % kElems);
    const int h = i0 / 128, t = (i0 % 128) / 32, l0 = i0 % 32;
    a = f16_fast(blk + offsetof(BlockQ6_K, d)) *
        float(int8_t(blk[offsetof(BlockQ6_K, scales) + 8 * h + l0 / 16 + 2 * t]));
    b = 0.0f;
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

// Whether decode8_affine<D> can give a nonzero b.
template <class D>
inline constexpr bool kAffineOffsetOf = [] {
  if constexpr (requires { D::kAffineOffset; }) {
    return D::kAffineOffset;
  } else {
    return false;
  }
}();

// Whether D has its own decode8_bytes / scale_affine pair (else decode8_affine falls back).
template <class D>
inline constexpr bool kHasAffine = requires {
  D::kScaleVals;
};

// Whether D has the wide form: decode16_bytes(row, e0, low, high) gives
// decode8_bytes(e0) and decode8_bytes(e0 + D::kWideStride) from one set of reads (both
// nibbles of every byte read), for e0 with (e0 % (2 * kWideStride)) < kWideStride.
template <class D>
inline constexpr bool kHasWideBytes = requires {
  D::kWideStride;
};

// The byte forms read from a plain pointer (row + offset).
template <class D>
WICK_HD inline Bytes8 decode8_bytes(const uint8_t* row, int64_t e0) {
  return D::decode8_bytes_at(PtrBytes{row}, e0);
}
template <class D>
WICK_HD inline void decode16_bytes(const uint8_t* row, int64_t e0, Bytes8& low, Bytes8& high) {
  D::decode16_bytes_at(PtrBytes{row}, e0, low, high);
}

// The 8 values' u = byte - D::kByteOffset, as exact floats.
template <class D>
WICK_HD inline void decode8_u(const uint8_t* row, int64_t e0, float* u) {
  const Bytes8 q = decode8_bytes<D>(row, e0);
  bytes_minus8(q.lo, q.hi, kByteFloatBias + float(D::kByteOffset), u);
}

// decode8_affine for every decoder: those without their own give decode8's values with
// a = 1, b = 0.
template <class D>
WICK_HD inline void decode8_affine(const uint8_t* row, int64_t e0, float* u, float& a, float& b) {
  if constexpr (kHasAffine<D>) {
    decode8_u<D>(row, e0, u);
    D::scale_affine(row, e0, a, b);
  } else {
    decode8<D>(row, e0, u);
    a = 1.0f;
    b = 0.0f;
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
    case GgmlType::MXFP4: return f.template operator()<DecodeMXFP4>();
    case GgmlType::I8:
    case GgmlType::I16:
    case GgmlType::I32:
    case GgmlType::I64:
    case GgmlType::F64: break;  // plain values, not a packed float format
  }
  fail(ErrorKind::Unsupported, "quant: ", ggml_type_name(type),
       " tensors are plain values, not a float or block-quantized format; read them with gguf::plain_tensor");
}

}  // namespace wick::quant
