// The block decoders and encoders of the quant family, by type: what the backends' kernels
// and the GGUF reader build on.
#pragma once

#include <cstdint>

#include "wick/quant.h"

namespace wick::quant {

// n values (a multiple of the block size, unchecked) from packed src to dst.
void dequantize_run(GgmlType type, const void* src, float* dst, int64_t n);
// n values (a multiple of the block size) from x to packed dst (quantize.cpp).
void quantize_run(GgmlType type, const float* x, uint8_t* dst, int64_t n);

}  // namespace wick::quant
