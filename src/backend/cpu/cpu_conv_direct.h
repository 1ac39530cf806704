// Forward convolution on the CPU without im2col, for the f32 compute type (f32, f16, bf16)
// and unit stride along the width: the convolutions of image models (3x3 with padding 1,
// 5x5, dilated kernels, groups). cpu_conv.cpp calls it where it applies and keeps im2col +
// GEMM for the rest (strided widths, f64, 1x1 without padding, transposed convolutions).
//
// The kernel reads each output tile's inputs straight from a zero-padded copy of a band of
// input rows (no K-fold im2col matrix): with stride 1 along W, the 24 outputs of a tile at
// one kernel tap are 24 consecutive floats of that copy. Work is split over the thread pool
// by (image, group, band of output rows); the scratch is a band buffer and a buffer of
// staged sums per thread (a few hundred KB together), whatever the batch.
#pragma once

#include "backend/backend.h"

namespace wick::cpu {

// Whether conv_direct computes this convolution (x and weight contiguous NCHW): a forward
// conv of f32, f16 or bf16 with stride 1 along W, not 1x1 unpadded with stride 1; never
// where the build lacks AVX2/FMA.
bool conv_direct_applies(const ConvParams& p, const Tensor& x, const Tensor& weight);

// out = conv(x, weight) + p.bias, accumulated in f32 and rounded to out's dtype once.
void conv_direct(const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out);

}  // namespace wick::cpu
