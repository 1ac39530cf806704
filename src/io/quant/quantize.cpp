// The encoders: f32 rows to ggml blocks with ggml's reference scalar algorithms
// (quantize_row_*_ref, no importance matrix). Other quantizers may pick other bytes for
// the same input; tests compare the quantization error, not bytes.
#include <cmath>
#include <vector>

#include "io/quant/blocks.h"
#include "io/quant/quantize_k.h"
#include "wick/quant.h"

namespace wick {

namespace quant {
namespace {

template <class Block>
void store_block(const Block& b, uint8_t* dst) {
  std::memcpy(dst, &b, sizeof(Block));
}

// q8_0: d = max|x| / 127, q = round(x / d) (halves away from zero, like roundf).
void quantize_q8_0(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = f16(d).bits;
    for (int j = 0; j < kQK; ++j) b.qs[j] = int8_t(std::roundf(x[j] * id));
    store_block(b, dst + i * int64_t(sizeof b));
  }
}

// q4_0: the value of largest magnitude (with its sign) maps to -8, so d = max / -8 and
// q = clamp(trunc(x / d + 8.5), 0, 15).
void quantize_q4_0(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j)
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = f16(d).bits;
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = std::min(15, int(int8_t(x[j] * id + 8.5f)));
      const int q1 = std::min(15, int(int8_t(x[j + kQK / 2] * id + 8.5f)));
      b.qs[j] = uint8_t(q0 | (q1 << 4));
    }
    store_block(b, dst + i * int64_t(sizeof b));
  }
}

// mxfp4: e = floor(log2(max|x|)) - 2 + 127 (so max|x| / 2^(e - 127) lands in [4, 8), the top
// e2m1 values), then each value takes the nearest doubled kvalue times the halved scale,
// the lower code on a tie. The f32 log2 and the wrap of an exponent below 0 into a byte
// are ggml's (x86); a block with an infinite or NaN value gets e = 255.
int best_mxfp4_code(float x, float d) {
  int best = 0;
  float best_err = std::fabs(float(mxfp4_value(0)) * d - x);
  for (int c = 1; c < 16; ++c) {
    const float err = std::fabs(float(mxfp4_value(uint32_t(c))) * d - x);
    if (err < best_err) best = c, best_err = err;
  }
  return best;
}

void quantize_mxfp4(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0.0f;
    bool finite = true;
    for (int j = 0; j < kQK; ++j) {
      finite = finite && std::isfinite(x[j]);
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    }
    BlockMXFP4 b;
    b.e = !finite ? uint8_t(255) : amax > 0.0f ? uint8_t(int(std::floor(std::log2(amax)) - 2 + 127)) : uint8_t(0);
    const float d = e8m0_half(b.e);
    for (int j = 0; j < kQK / 2; ++j)
      b.qs[j] = uint8_t(best_mxfp4_code(x[j], d) | (best_mxfp4_code(x[j + kQK / 2], d) << 4));
    store_block(b, dst + i * int64_t(sizeof b));
  }
}

template <class H>
void store_half(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t bits = H(x[i]).bits;
    std::memcpy(dst + 2 * i, &bits, 2);
  }
}

}  // namespace

void quantize_run(GgmlType type, const float* x, uint8_t* dst, int64_t n) {
  switch (type) {
    case GgmlType::F32: std::memcpy(dst, x, size_t(n) * sizeof(float)); return;
    case GgmlType::F16: return store_half<f16>(x, dst, n);
    case GgmlType::BF16: return store_half<bf16>(x, dst, n);
    case GgmlType::Q8_0: return quantize_q8_0(x, dst, n);
    case GgmlType::Q4_0: return quantize_q4_0(x, dst, n);
    case GgmlType::Q4_K: return quantize_q4_k(x, dst, n);
    case GgmlType::Q6_K: return quantize_q6_k(x, dst, n);
    case GgmlType::MXFP4: return quantize_mxfp4(x, dst, n);
    default: break;
  }
  fail(ErrorKind::Unsupported, "quantize: no quantizer for ", ggml_type_name(type),
       " (supported: f32, f16, bf16, q8_0, q4_0, q4_K, q6_K, mxfp4)");
}

}  // namespace quant

}  // namespace wick
