// Per-type block dequantizers: one function per ggml block layout, after ggml's
// dequantize_row_* (ggml-quants.c). Every product below (f16 scale x small integer,
// scale x 6-bit sub-scale, ...) is exact in f32, so the only rounding is the final add of
// the block minimum, and the result is bit-identical to ggml whatever the evaluation
// order or FMA contraction.
#include "io/quant/blocks.h"
#include "io/quant/dequantize_row.h"
#include "wick/error.h"

namespace wick::quant {

namespace {

// Splits one packed 4-bit byte array the legacy way: value j is the low nibble of
// qs[j], value j + 16 the high nibble.
inline int lo(uint8_t b) { return b & 0x0F; }
inline int hi(uint8_t b) { return b >> 4; }
// Fifth bit of value j (0 or 16) from a 32-bit little-endian qh field.
inline int bit5(const uint8_t* qh, int j) { return ((qh[j / 8] >> (j % 8)) & 1) << 4; }

// Low nibbles then high nibbles, each a contiguous run of 16 outputs: loops the compiler
// vectorizes (the interleaved form, two stores per step, stayed scalar).
void block_q4_0(const BlockQ4_0& b, float* y) {
  const float d = f16_value(b.d);
  for (int j = 0; j < kQK / 2; ++j) y[j] = float(lo(b.qs[j]) - 8) * d;
  for (int j = 0; j < kQK / 2; ++j) y[j + kQK / 2] = float(hi(b.qs[j]) - 8) * d;
}

void block_q4_1(const BlockQ4_1& b, float* y) {
  const float d = f16_value(b.d), m = f16_value(b.m);
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = float(lo(b.qs[j])) * d + m;
    y[j + kQK / 2] = float(hi(b.qs[j])) * d + m;
  }
}

void block_q5_0(const BlockQ5_0& b, float* y) {
  const float d = f16_value(b.d);
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = float((lo(b.qs[j]) | bit5(b.qh, j)) - 16) * d;
    y[j + kQK / 2] = float((hi(b.qs[j]) | bit5(b.qh, j + kQK / 2)) - 16) * d;
  }
}

void block_q5_1(const BlockQ5_1& b, float* y) {
  const float d = f16_value(b.d), m = f16_value(b.m);
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = float(lo(b.qs[j]) | bit5(b.qh, j)) * d + m;
    y[j + kQK / 2] = float(hi(b.qs[j]) | bit5(b.qh, j + kQK / 2)) * d + m;
  }
}

void block_q8_0(const BlockQ8_0& b, float* y) {
  const float d = f16_value(b.d);
  for (int j = 0; j < kQK; ++j) y[j] = float(b.qs[j]) * d;
}

// q2_K: each 128-value half reads 32 bytes of qs four times (2 bits per pass); each pass
// covers two sub-blocks of 16 (bytes 0..15 and 16..31).
void block_q2_k(const BlockQ2_K& b, float* y) {
  const float d = f16_value(b.d), dmin = f16_value(b.dmin);
  int is = 0;
  for (int half = 0; half < 2; ++half) {
    const uint8_t* q = b.qs + 32 * half;
    for (int shift = 0; shift < 8; shift += 2) {
      for (int part = 0; part < 2; ++part, ++is) {
        const float dl = d * float(b.scales[is] & 0xF), ml = dmin * float(b.scales[is] >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * float((q[l + 16 * part] >> shift) & 3) - ml;
      }
    }
  }
}

// The sixteen 6-bit q3_K scales: low nibbles in bytes 0..7 (sub-blocks 0..7 low
// nibble, 8..15 high nibble), the two high bits of each in bytes 8..11.
void q3_k_scales(const uint8_t* s, int* out) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = (low | (high << 4)) - 32;
  }
}

void block_q3_k(const BlockQ3_K& b, float* y) {
  const float d = f16_value(b.d);
  int scales[16];
  q3_k_scales(b.scales, scales);
  int is = 0;
  uint8_t m = 1;
  for (int half = 0; half < 2; ++half) {
    const uint8_t* q = b.qs + 32 * half;
    for (int shift = 0; shift < 8; shift += 2, m = uint8_t(m << 1)) {
      for (int part = 0; part < 2; ++part, ++is) {
        const float dl = d * float(scales[is]);
        for (int l = 0; l < 16; ++l) {
          const int i = l + 16 * part;
          const int v = ((q[i] >> shift) & 3) - ((b.hmask[i] & m) ? 0 : 4);
          *y++ = dl * float(v);
        }
      }
    }
  }
}

// q4_K and q5_K share the super-block walk: 4 chunks of 64 = two sub-blocks of 32 that
// take the low and the high nibbles of the same 32 bytes.
template <class Block, class Fifth>
void block_k4_like(const Block& b, float* y, Fifth fifth) {
  const float d = f16_value(b.d), dmin = f16_value(b.dmin);
  for (int chunk = 0; chunk < 4; ++chunk) {
    const uint8_t* q = b.qs + 32 * chunk;
    for (int nib = 0; nib < 2; ++nib) {
      uint8_t sc, m;
      scale_min_k4(2 * chunk + nib, b.scales, sc, m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      for (int l = 0; l < 32; ++l) {
        const int v = (nib ? hi(q[l]) : lo(q[l])) + fifth(l, 2 * chunk + nib);
        *y++ = d1 * float(v) - m1;
      }
    }
  }
}

void block_q4_k(const BlockQ4_K& b, float* y) {
  block_k4_like(b, y, [](int, int) { return 0; });
}

void block_q5_k(const BlockQ5_K& b, float* y) {
  block_k4_like(b, y, [&](int l, int sub) { return ((b.qh[l] >> sub) & 1) << 4; });
}

// q6_K: each 128-value half uses 64 bytes of ql (low nibbles, then high nibbles) and 32
// bytes of qh (2 bits per quarter).
void block_q6_k(const BlockQ6_K& b, float* y) {
  const float d = f16_value(b.d);
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b.ql + 64 * half;
    const uint8_t* qh = b.qh + 32 * half;
    const int8_t* sc = b.scales + 8 * half;
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = (lo(ql[l]) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = (lo(ql[l + 32]) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = (hi(ql[l]) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = (hi(ql[l + 32]) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l + 0] = d * float(sc[is + 0]) * float(q1);
      y[l + 32] = d * float(sc[is + 2]) * float(q2);
      y[l + 64] = d * float(sc[is + 4]) * float(q3);
      y[l + 96] = d * float(sc[is + 6]) * float(q4);
    }
    y += 128;
  }
}

// ggml's dequantize_row_mxfp4: the int8 kvalue times the halved e8m0 scale (exact).
void block_mxfp4(const BlockMXFP4& b, float* y) {
  const float d = e8m0_half(b.e);
  for (int j = 0; j < kQK / 2; ++j) y[j] = float(mxfp4_value(lo(b.qs[j]))) * d;
  for (int j = 0; j < kQK / 2; ++j) y[j + kQK / 2] = float(mxfp4_value(hi(b.qs[j]))) * d;
}

// The block decoder is a template argument, not a function pointer argument, so the
// compiler inlines it into the loop over blocks.
template <class Block, int N, void (*Decode)(const Block&, float*)>
void blocks(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / N; ++i) Decode(load_block<Block>(p + i * int64_t(sizeof(Block))), dst + i * N);
}

}  // namespace

void dequantize_run(GgmlType type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case GgmlType::F32: std::memcpy(dst, src, size_t(n) * sizeof(float)); return;
    case GgmlType::F16:
    case GgmlType::BF16: {
      const auto* p = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, p + 2 * i, 2);
        dst[i] = type == GgmlType::F16 ? float(f16::from_bits(bits)) : float(bf16::from_bits(bits));
      }
      return;
    }
    case GgmlType::Q4_0: return blocks<BlockQ4_0, kQK, block_q4_0>(src, dst, n);
    case GgmlType::Q4_1: return blocks<BlockQ4_1, kQK, block_q4_1>(src, dst, n);
    case GgmlType::Q5_0: return blocks<BlockQ5_0, kQK, block_q5_0>(src, dst, n);
    case GgmlType::Q5_1: return blocks<BlockQ5_1, kQK, block_q5_1>(src, dst, n);
    case GgmlType::Q8_0: return blocks<BlockQ8_0, kQK, block_q8_0>(src, dst, n);
    case GgmlType::Q2_K: return blocks<BlockQ2_K, kQK_K, block_q2_k>(src, dst, n);
    case GgmlType::Q3_K: return blocks<BlockQ3_K, kQK_K, block_q3_k>(src, dst, n);
    case GgmlType::Q4_K: return blocks<BlockQ4_K, kQK_K, block_q4_k>(src, dst, n);
    case GgmlType::Q5_K: return blocks<BlockQ5_K, kQK_K, block_q5_k>(src, dst, n);
    case GgmlType::Q6_K: return blocks<BlockQ6_K, kQK_K, block_q6_k>(src, dst, n);
    case GgmlType::MXFP4: return blocks<BlockMXFP4, kQK, block_mxfp4>(src, dst, n);
    case GgmlType::I8:
    case GgmlType::I16:
    case GgmlType::I32:
    case GgmlType::I64:
    case GgmlType::F64: break;  // plain values: gguf::plain_tensor reads them exactly
  }
  fail(ErrorKind::Unsupported, "dequantize: ", ggml_type_name(type),
       " tensors are plain values, not a float or block-quantized format; read them with gguf::plain_tensor");
}

}  // namespace wick::quant

namespace wick {
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  (void)ggml_row_bytes(type, n, "dequantize_row");  // checks the block multiple
  quant::dequantize_run(type, src, dst, n);
}
}  // namespace wick
