// CUDA kernels of the quant family (kernels_quant.cu), called by the device-dispatching
// front ends in src/io/quant (quant_device.cpp) when wick is built with CUDA. Plain C++
// declarations: this header needs no CUDA include.
#pragma once

#include <cstddef>
#include <cstdint>

#include "wick/quant.h"
#include "wick/tensor.h"

namespace wick::cuda {

// rows packed rows of row_elems values (row_bytes each, at src on out's device) decoded
// into out, a contiguous f32/f16/bf16 tensor of rows * row_elems elements. Bit-exact
// with the CPU dequantizer.
void quant_dequantize(GgmlType type, const void* src, size_t row_bytes, int64_t rows, int64_t row_elems,
                      const Tensor& out);

// The largest M quant_matvec accepts.
inline constexpr int64_t kQuantMatvecMaxM = 8;

// y (M, N) = x (M, K) @ W^T with x and y contiguous f32 on W's device (x 16-byte
// aligned), W N packed rows of K values (row_bytes each), M <= kQuantMatvecMaxM,
// K % 8 == 0. With q8_x (K % 32 == 0, quant_matvec_q8_supported(type)) x is first rounded
// to q8_0 per 32 values (as quantize(x, Q8_0) does) and the products run on dp4a; the
// result is the exact product of that rounded x with W up to f32 summation order. Kernels
// and design: quant_matvec.cuh.
void quant_matvec(GgmlType type, const void* w, size_t row_bytes, int64_t N, int64_t K, const Tensor& x,
                  const Tensor& y, bool q8_x);

// Whether quant_matvec has a q8-activation kernel for type (the block types with a byte
// form: q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K, q6_K).
bool quant_matvec_q8_supported(GgmlType type);

// out = x rounded to q8_0 per 32 values and back to f32 (dequantize(quantize(x, Q8_0))
// bit for bit), for x and out contiguous, 16-byte aligned f32 with numel % 32 == 0.
void quant_round_q8(const Tensor& x, const Tensor& out);

}  // namespace wick::cuda
