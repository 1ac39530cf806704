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

// y (M, N) = x (M, K) @ W^T with x and y contiguous f32 on W's device, W N packed rows of
// K values (row_bytes each), M <= kQuantMatvecMaxM, K % 8 == 0. Each warp streams 4 rows of
// W through shared memory with cp.async (16-byte rows take the fast copy; others a
// byte-wise one) and factors the block scales out of the inner products.
void quant_matvec(GgmlType type, const void* w, size_t row_bytes, int64_t N, int64_t K, const Tensor& x,
                  const Tensor& y);

}  // namespace wick::cuda
