// The quantized matrix-vector rows (qmatvec_<type>, M = 1) shared by the CPU and CUDA
// lists; bench/quant_h200.py reads them.
#pragma once

#include <vector>

#include "bench/bench.h"

namespace wick::bench {

// y (1, N) = x (1, K) @ W^T for W (N, K) in q4_0, q8_0, q4_K, q6_K at 4096x4096 and
// 14336x4096 (N x K; quick: 512x1024). bytes = packed weight bytes, so the GB/s column is
// the weight bandwidth. with_f32_blas adds the same shapes as an f32 matmul (1,K)x(K,N)
// through the backend's BLAS (op qmatvec_f32_blas), for comparison.
std::vector<Row> qmatvec_rows(bool quick, bool with_f32_blas);

}  // namespace wick::bench
