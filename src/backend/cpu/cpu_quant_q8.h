// The q8-activation halves of the CPU quant_matmul (cpu_quant_q8.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "wick/quant.h"
#include "wick/tensor.h"

namespace wick::cpu {

// y (M, N) = x (M, K) @ W^T for a W of N packed rows of a type with a q8 kernel
// (qdot::has_kernel: q8_0, q4_0, q4_K, q6_K), with x quantized to q8_0 first and integer
// block dot products (K % 32 == 0; K % 256 for the K-quants, as their rows are).
void matmul_q8(const float* x, int64_t M, int64_t K, const uint8_t* w, GgmlType type, size_t row_bytes, int64_t N,
               float* y);

// x (contiguous f32, numel % 32 == 0) rounded to q8_0 per 32 values and back to f32:
// dequantize(quantize(x, Q8_0)) bit for bit.
Tensor round_to_q8_0(const Tensor& x);

}  // namespace wick::cpu
