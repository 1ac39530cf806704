// The q8-activation halves of the CPU quant_matmul (cpu_quant_q8.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "wick/quant.h"
#include "wick/tensor.h"

namespace wick::cpu {

// Whether matmul_q8 has integer kernels for this weight type: q8_0 and q4_0 (x rounded to
// q8_0, cpu_qdot_avx2.h) and every K-quant, q2_K to q6_K (x rounded to q8_K, cpu_qdot_k.h).
bool has_q8_kernel(GgmlType type);

// y (M, N) = x (M, K) @ W^T for a W of N packed rows of a type has_q8_kernel takes, with x
// rounded as ggml's CPU rounds it for that type and integer block dot products (K % 32 == 0;
// K % 256 for the K-quants, as their rows are).
void matmul_q8(const float* x, int64_t M, int64_t K, const uint8_t* w, GgmlType type, size_t row_bytes, int64_t N,
               float* y);

// x (contiguous f32, numel % 32 == 0) rounded to q8_0 per 32 values and back to f32:
// dequantize(quantize(x, Q8_0)) bit for bit (the 32-value block types without an integer
// kernel: q4_1, q5_0, q5_1; every K-quant has one).
Tensor round_to_q8_0(const Tensor& x);

}  // namespace wick::cpu
