// The q8-activation matmul: like ggml's CPU path for q8_0/q4_0 weights, x is quantized
// per 32 values to q8_0 (ggml's reference rounding), then each (weight block, activation
// block) pair contributes d_w * d_x * (integer dot product of the 32 quants). The int8
// products vectorize well, and the result matches ggml's quantized output (mm_xq), not
// the exact product of x with the dequantized weight.
#include "backend/cpu/cpu_quant_q8.h"

#include <vector>

#include "backend/cpu/thread_pool.h"
#include "io/quant/blocks.h"
#include "io/quant/dequantize_row.h"

namespace wick::cpu {

using namespace wick::quant;

namespace {
inline int32_t dot32(const int8_t* a, const int8_t* b) {
  int32_t s = 0;
  for (int i = 0; i < kQK; ++i) s += int32_t(a[i]) * int32_t(b[i]);
  return s;
}

// The weight block's signed quants and scale.
inline float unpack(GgmlType type, const uint8_t* p, int8_t* q) {
  if (type == GgmlType::Q8_0) {
    const auto b = load_block<BlockQ8_0>(p);
    std::memcpy(q, b.qs, kQK);
    return f16_value(b.d);
  }
  const auto b = load_block<BlockQ4_0>(p);
  for (int j = 0; j < kQK / 2; ++j) {
    q[j] = int8_t((b.qs[j] & 0x0F) - 8);
    q[j + kQK / 2] = int8_t((b.qs[j] >> 4) - 8);
  }
  return f16_value(b.d);
}
}  // namespace

void matmul_q8(const float* x, int64_t M, int64_t K, const uint8_t* w, GgmlType type, size_t row_bytes, int64_t N,
               float* y) {
  const int64_t nb = K / kQK;
  std::vector<BlockQ8_0> xq(size_t(M * nb));
  for (int64_t m = 0; m < M; ++m)
    quantize_run(GgmlType::Q8_0, x + m * K, reinterpret_cast<uint8_t*>(xq.data() + m * nb), K);
  const size_t block_bytes = ggml_type_info(type).block_bytes;
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, K * M));
  cpu::parallel_for(N, grain, [&](int64_t n0, int64_t n1) {
    std::vector<int8_t> wq(static_cast<size_t>(K));
    std::vector<float> wd(static_cast<size_t>(nb));
    for (int64_t n = n0; n < n1; ++n) {
      const uint8_t* row = w + size_t(n) * row_bytes;
      for (int64_t b = 0; b < nb; ++b) wd[size_t(b)] = unpack(type, row + size_t(b) * block_bytes, wq.data() + b * kQK);
      for (int64_t m = 0; m < M; ++m) {
        const BlockQ8_0* xb = xq.data() + m * nb;
        float sum = 0.0f;
        for (int64_t b = 0; b < nb; ++b)
          sum += float(dot32(wq.data() + b * kQK, xb[b].qs)) * (wd[size_t(b)] * f16_value(xb[b].d));
        y[m * N + n] = sum;
      }
    }
  });
}

Tensor round_to_q8_0(const Tensor& x) {
  const int64_t n = x.numel();
  std::vector<uint8_t> q(size_t(n / kQK) * sizeof(BlockQ8_0));
  Tensor out = Tensor::empty(x.shape(), DType::F32);
  quantize_run(GgmlType::Q8_0, static_cast<const float*>(x.data()), q.data(), n);
  dequantize_run(GgmlType::Q8_0, q.data(), static_cast<float*>(out.mutable_data()), n);
  return out;
}

}  // namespace wick::cpu
