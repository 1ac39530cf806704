// CUDA kernels of the quant family (kernels_quant.cu), called by the device-dispatching
// front ends in src/io/quant (quant_device.cpp) when wick is built with CUDA. Plain C++
// declarations: this header needs no CUDA include.
#pragma once

#include <cstddef>
#include <cstdint>

#include "wick/nn.h"
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

// What quant_matvec multiplies and writes: out (M, N) = linear_output(e, h @ W^T + bias, 0,
// residual) with h = x, or rms_norm(x, norm, eps) when norm is defined (op_table.h's
// quant_linear without glu). x (M, K) contiguous f32/f16/bf16, 16-byte aligned; norm (K)
// of x's dtype; out (M, N) contiguous f32/f16/bf16; bias (N) and residual (M, N) of out's
// dtype, contiguous, or undefined.
struct MatvecOperands {
  Tensor x, norm;
  float eps = 0;
  Tensor bias, residual, out;
  LinearEpilogue e;
};

// Whether quant_matvec takes these operands for a W of type with rows of K: M <=
// kQuantMatvecMaxM, K % 8 == 0 (q8_x: K % 32 == 0 and quant_matvec_q8_supported(type)), no
// glu, and x staged in the kernel's shared memory when it must be converted or normalized.
bool quant_matvec_takes(GgmlType type, int64_t K, const MatvecOperands& o, bool q8_x);

// The product of x with W (N packed rows of K values, row_bytes each, on x's device), one
// kernel that reads every weight block once for all M rows of x. With q8_x x is first
// rounded to q8_0 per 32 values (as quantize(x, Q8_0) does) and the products run on dp4a;
// the result is the exact product of that rounded x with W up to f32 summation order.
// The operands must satisfy quant_matvec_takes. Kernels and design: quant_matvec.cuh.
void quant_matvec(GgmlType type, const void* w, size_t row_bytes, int64_t N, int64_t K, const MatvecOperands& o,
                  bool q8_x);
// The plain product: y (M, N) f32 = x (M, K) f32 @ W^T.
void quant_matvec(GgmlType type, const void* w, size_t row_bytes, int64_t N, int64_t K, const Tensor& x,
                  const Tensor& y, bool q8_x);

// Whether quant_matvec has a q8-activation kernel for type (the block types with a byte
// form: q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K, q6_K, mxfp4).
bool quant_matvec_q8_supported(GgmlType type);

// out = x rounded to q8_0 per 32 values and back to f32 (dequantize(quantize(x, Q8_0))
// bit for bit), for x and out contiguous, 16-byte aligned f32 with numel % 32 == 0.
void quant_round_q8(const Tensor& x, const Tensor& out);

}  // namespace wick::cuda
