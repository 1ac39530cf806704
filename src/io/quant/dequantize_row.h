// Internal entry points of the quant family shared by the dequantizer, the matmul and
// the GGUF reader.
#pragma once

#include <cstdint>

#include "wick/quant.h"

namespace wick::quant {

// n values (a multiple of the block size, unchecked) from packed src to dst.
void dequantize_run(GgmlType type, const void* src, float* dst, int64_t n);

}  // namespace wick::quant
