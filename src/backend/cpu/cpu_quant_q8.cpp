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

// Prefill-sized products (4 or more rows of x, AVX-512 VNNI): tile(first row of a band,
// its output column) over the whole bands of `band` weight rows, in parallel; returns how
// many rows the bands covered (0 where it does not apply), the rest left to the row kernels.
template <class Tile>
int64_t tile_bands(int64_t M, int64_t N, int64_t band, const uint8_t* w, size_t row_bytes, float* y, Tile&& tile) {
  if (M < 4 || !cpu_has_avx512_vnni()) return 0;
  const int64_t bands = N / band;
  cpu::parallel_for(bands, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) tile(w + size_t(b * band) * row_bytes, y + b * band);
  });
  return bands * band;
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
    // The tile kernel over bands of weight rows, the row kernel for the rest.
    const int64_t banded = tile_bands(M, N, qdot::kTileRows, w, row_bytes, y, [&](const uint8_t* band, float* out) {
      qdot::avx512_dot_tile_k(type, band, row_bytes, a, out, N);
    });
    rows_against_weights(
        M, banded, N, K, w, row_bytes, qdot::kMaxKRows, y,
        [&](const uint8_t* row, int64_t m, int r, float* out) { qdot::dot_rows_k(type, row, a, m, r, out, N); });
    return;
  }
  qdot::ActQ8 a;
  qdot::resize_act(a, M, K);
  cpu::parallel_for(M, quantize_grain(K), [&](int64_t m0, int64_t m1) { qdot::quantize_act_rows(x, K, m0, m1, a); });
  // The tile kernel over bands of weight rows; the rest by the wide AVX-512 VNNI row kernel
  // past kMaxRows rows where the CPU has it, else the AVX2 one (also for a few rows: it
  // streams a decode step's weights faster, 1B Q4_0 tg 25.1 against 19.6 tok/s).
  const int64_t banded = tile_bands(M, N, qdot::kTileRows8, w, row_bytes, y, [&](const uint8_t* band, float* out) {
    qdot::avx512_dot_tile(type, band, row_bytes, a, out, N);
  });
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
