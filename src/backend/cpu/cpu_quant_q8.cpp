// The q8-activation matmul, as ggml's CPU does it: x is rounded per 32 values to q8_0
// (ggml's reference rounding) for q8_0 and q4_0 weights, and per 256 to q8_K for the
// K-quants; then each (weight block, activation block) pair contributes the block scales
// times the integer dot product of the quants (cpu_qdot_avx2.h, cpu_qdot_k.h). The result
// matches ggml's quantized output up to the float summation order, not the exact product of
// x with the dequantized weight.
#include "backend/cpu/cpu_quant_q8.h"

#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/cpu_qdot_avx2.h"
#include "backend/cpu/cpu_qdot_k.h"
#include "backend/cpu/thread_pool.h"
#include "io/quant/blocks.h"
#include "io/quant/dequantize_row.h"

namespace wick::cpu {

using namespace wick::quant;

namespace {

// The threads split W's rows from n_first on; each weight row is decoded block by block
// once per `rows` rows of x (dot(row, m, r, y) computes r of them).
template <class Dot>
void rows_against_weights(int64_t M, int64_t n_first, int64_t N, int64_t K, const uint8_t* w, size_t row_bytes,
                          int64_t rows, float* y, Dot&& dot) {
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, K * M));
  cpu::parallel_for(N - n_first, grain, [&](int64_t i0, int64_t i1) {
    for (int64_t n = n_first + i0; n < n_first + i1; ++n)
      for (int64_t m = 0; m < M; m += rows)
        dot(w + size_t(n) * row_bytes, m, int(std::min<int64_t>(rows, M - m)), y + m * N + n);
  });
}

int64_t quantize_grain(int64_t K) { return std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, K)); }

}  // namespace

bool has_q8_kernel(GgmlType type) { return qdot::has_kernel(type) || qdot::has_k_kernel(type); }

void matmul_q8(const float* x, int64_t M, int64_t K, const uint8_t* w, GgmlType type, size_t row_bytes, int64_t N,
               float* y) {
  // x is quantized once per call (rows in parallel).
  if (qdot::has_k_kernel(type)) {
    qdot::ActQ8K a;
    qdot::resize_act_k(a, M, K);
    cpu::parallel_for(M, quantize_grain(K),
                      [&](int64_t m0, int64_t m1) { qdot::quantize_act_k_rows(x, K, m0, m1, a); });
    // Prefill-sized products: the tile kernel over bands of kTileRows weight rows (AVX-512
    // VNNI); the rows past the last band, and everything elsewhere, by the row kernel.
    int64_t banded = 0;
    if (M >= 4 && cpu_has_avx512_vnni()) {
      const int64_t bands = N / qdot::kTileRows;
      cpu::parallel_for(bands, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t band = b0; band < b1; ++band) {
          const int64_t n = band * qdot::kTileRows;
          qdot::avx512_dot_tile_k(type, w + size_t(n) * row_bytes, row_bytes, a, y + n, N);
        }
      });
      banded = bands * qdot::kTileRows;
    }
    rows_against_weights(
        M, banded, N, K, w, row_bytes, qdot::kMaxKRows, y,
        [&](const uint8_t* row, int64_t m, int r, float* out) { qdot::dot_rows_k(type, row, a, m, r, out, N); });
    return;
  }
  qdot::ActQ8 a;
  qdot::resize_act(a, M, K);
  cpu::parallel_for(M, quantize_grain(K), [&](int64_t m0, int64_t m1) { qdot::quantize_act_rows(x, K, m0, m1, a); });
  // The wide AVX-512 VNNI kernel for prefill-sized products where the CPU has it (q8_0 /
  // q4_0), else the AVX2 one (also for a few rows: the AVX2 kernel streams a decode step's
  // weights faster, 1B Q4_0 tg 25.1 against 19.6 tok/s).
  // Prefill-sized products: the tile kernel over bands of kTileRows8 weight rows (AVX-512
  // VNNI); the rest by the row kernels.
  int64_t banded = 0;
  if (M >= 4 && cpu_has_avx512_vnni()) {
    const int64_t bands = N / qdot::kTileRows8;
    cpu::parallel_for(bands, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t band = b0; band < b1; ++band) {
        const int64_t n = band * qdot::kTileRows8;
        qdot::avx512_dot_tile(type, w + size_t(n) * row_bytes, row_bytes, a, y + n, N);
      }
    });
    banded = bands * qdot::kTileRows8;
  }
  const bool wide = M > qdot::kMaxRows && qdot::has_wide_kernel(type) && qdot::wide_available();
  if (wide) qdot::prepare_wide(a);
  rows_against_weights(M, banded, N, K, w, row_bytes, wide ? qdot::kMaxWideRows : qdot::kMaxRows, y,
                       [&](const uint8_t* row, int64_t m, int r, float* out) {
                         if (wide)
                           qdot::dot_rows_wide(type, row, a, m, r, out, N);
                         else
                           qdot::dot_rows(type, row, a, m, r, out, N);
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
