// quantize(): f32 rows to ggml blocks with ggml's reference scalar algorithms
// (quantize_row_*_ref, no importance matrix). Other quantizers may pick other bytes for
// the same input; tests compare the quantization error, not bytes.
#include <cmath>
#include <vector>

#include "backend/cpu/thread_pool.h"
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
    default: break;
  }
  fail(ErrorKind::Unsupported, "quantize: no quantizer for ", ggml_type_name(type),
       " (supported: f32, f16, bf16, q8_0, q4_0, q4_K, q6_K)");
}

}  // namespace quant

QuantTensor quantize(const Tensor& src, GgmlType type, std::string name) {
  WICK_CHECK(src.defined(), InvalidArgument, "quantize: undefined tensor");
  WICK_CHECK(src.device().is_cpu(), Unsupported, "quantize: tensor must be on the CPU, got ", src.device());
  WICK_CHECK(is_float(src.dtype()), DTypeMismatch, "quantize: expected a floating-point tensor, got ", src.dtype());
  QuantTensor q;
  q.name = std::move(name);
  q.type = type;
  q.shape = src.shape();
  const int64_t n = q.row_elems(), rows = q.rows();
  const size_t row_bytes = ggml_row_bytes(type, n, "quantize");
  const size_t total = size_t(checked_mul(int64_t(row_bytes), rows, "quantize"));
  q.bytes = Buffer::allocate(Device::cpu(), DType::U8, Shape{int64_t(total)});
  if (total == 0) return q;
  const Tensor x = src.to(DType::F32).contiguous();
  const auto* xp = static_cast<const float*>(x.data());
  auto* dst = static_cast<uint8_t*>(q.bytes.mutable_data());
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, n));
  cpu::parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) quant::quantize_run(type, xp + r * n, dst + size_t(r) * row_bytes, n);
  });
  return q;
}

}  // namespace wick
