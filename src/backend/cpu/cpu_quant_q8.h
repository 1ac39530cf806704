// The q8-activation halves of the CPU quant_matmul (cpu_quant_q8.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "wick/quant.h"
#include "wick/tensor.h"

namespace wick::cpu {

// Whether matmul_q8 has integer kernels for this weight type: q8_0 and q4_0 (x rounded to
// q8_0, cpu_qdot_avx2.h), q4_K, q5_K and q6_K (x rounded to q8_K, cpu_qdot_k.h).
bool has_q8_kernel(GgmlType type);

// y (M, N) = x (M, K) @ W^T for a W of N packed rows of a type has_q8_kernel takes, with x
// rounded as ggml's CPU rounds it for that type and integer block dot products (K % 32 == 0;
// K % 256 for the K-quants, as their rows are).
void matmul_q8(const float* x, int64_t M, int64_t K, const uint8_t* w, GgmlType type, size_t row_bytes, int64_t N,
               float* y);

// x (contiguous f32 rows, the last dimension K) rounded as matmul_q8 rounds it for a weight
// of this type and back to f32: per 256 values to q8_K for the K-quants (K % 256 == 0), per
// 32 to q8_0 for the others (numel % 32 == 0), dequantize(quantize(x)) bit for bit.
Tensor round_activations(const Tensor& x, GgmlType weight_type);

}  // namespace wick::cpu
