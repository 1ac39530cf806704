// Internal entry points of the quant family shared by the dequantizer, the matmul and
// the GGUF reader.
#pragma once

#include <cstdint>

#include "wick/quant.h"

namespace wick::quant {

// n values (a multiple of the block size, unchecked) from packed src to dst.
void dequantize_run(GgmlType type, const void* src, float* dst, int64_t n);
// n values (a multiple of the block size) from x to packed dst (quantize.cpp).
void quantize_run(GgmlType type, const float* x, uint8_t* dst, int64_t n);

// y (M, N) = x (M, K) @ W^T for a q8_0 or q4_0 W of N packed rows, with x quantized to
// q8_0 first and integer block dot products (quant_matmul_q8.cpp).
void matmul_q8(const float* x, int64_t M, int64_t K, const uint8_t* w, GgmlType type, size_t row_bytes, int64_t N,
               float* y);

// The device halves of dequantize() and quant_matmul() (quant_device.cpp): arguments
// already checked, q / x / w on one CUDA device. They throw Unsupported in a build
// without CUDA.
Tensor dequantize_device(const QuantTensor& q, size_t row_bytes, DType dtype);
Tensor quant_matmul_device(const Tensor& x, const QuantTensor& w, size_t row_bytes, QuantActivation act);

}  // namespace wick::quant
