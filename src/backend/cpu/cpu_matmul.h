// The CPU matmul for the other CPU kernels: the fused linear adds its product onto an
// output it has already filled with the bias (and residual).
#pragma once

#include "wick/tensor.h"

namespace wick::cpu {

// out (batch..., M, N, contiguous) = a @ b as CpuBackend::matmul, any operand strides; with
// accumulate, out += a @ b (f32 and f64 only: BLAS's beta = 1).
void matmul_into(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate);

}  // namespace wick::cpu
