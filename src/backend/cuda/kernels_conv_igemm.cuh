// Implicit-GEMM conv2d forward for f16/bf16 on tensor cores, and f32 in TF32 under
// allow_tf32() or else exact on FFMA (kernels_conv_igemm.cu).
#pragma once

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "wick/tensor.h"

namespace wick::cuda {

// out = conv(x, weight) + p.bias for contiguous NCHW f16/bf16 or f32 operands of a
// forward, ungrouped conv (f32 in TF32 while wick::allow_tf32() is on, else exact f32),
// straight from x (no column buffer). Returns false, doing nothing, when the case is not
// one it handles (another dtype, transposed, groups > 1, sizes past its 32-bit index
// math); the caller then takes the im2col + GEMM path.
bool conv2d_igemm(CudaBackend& be, const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out);

}  // namespace wick::cuda
