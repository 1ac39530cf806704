// The q8-activation matmul: like ggml's CPU path for q8_0/q4_0 weights, x is quantized
// per 32 values to q8_0 (ggml's reference rounding), then each (weight block, activation
// block) pair contributes d_w * d_x * (integer dot product of the 32 quants); q4_K and
// q6_K take the same route with their sub-block scales (cpu_qdot_avx2.h). The result
// matches ggml's quantized output (mm_xq) for q8_0/q4_0, not the exact product of x with
// the dequantized weight. ggml itself rounds x to q8_K (blocks of 256) for the K-quants;
// wick keeps q8_0 blocks of 32 for every type, as QuantActivation::Q8 promises.
#include "backend/cpu/cpu_quant_q8.h"

#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_qdot_avx2.h"
#include "backend/cpu/thread_pool.h"
#include "io/quant/blocks.h"
#include "io/quant/dequantize_row.h"

namespace wick::cpu {

using namespace wick::quant;

void matmul_q8(const float* x, int64_t M, int64_t K, const uint8_t* w, GgmlType type, size_t row_bytes, int64_t N,
               float* y) {
  // x is quantized once per call (rows in parallel); then the threads split W's rows, and
  // each weight row is decoded block by block once per qdot::kMaxRows rows of x.
  qdot::ActQ8 a;
  qdot::resize_act(a, M, K);
  cpu::parallel_for(M, std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, K)),
                    [&](int64_t m0, int64_t m1) { qdot::quantize_act_rows(x, K, m0, m1, a); });
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, K * M));
  // The wide AVX-512 VNNI kernel for prefill-sized products where the CPU has it (q8_0 /
  // q4_0), else the AVX2 one (also for a few rows: the AVX2 kernel streams a decode step's
  // weights faster, 1B Q4_0 tg 25.1 against 19.6 tok/s).
  const bool wide = M > qdot::kMaxRows && qdot::has_wide_kernel(type) && qdot::wide_available();
  if (wide) qdot::prepare_wide(a);
  const int64_t rows = wide ? qdot::kMaxWideRows : qdot::kMaxRows;
  cpu::parallel_for(N, grain, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const uint8_t* row = w + size_t(n) * row_bytes;
      for (int64_t m = 0; m < M; m += rows) {
        const int r = int(std::min<int64_t>(rows, M - m));
        if (wide)
          qdot::dot_rows_wide(type, row, a, m, r, y + m * N + n, N);
        else
          qdot::dot_rows(type, row, a, m, r, y + m * N + n, N);
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
