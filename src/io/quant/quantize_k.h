// k-quant quantizers (q4_K, q6_K) after ggml's quantize_row_*_ref without importance
// weights: a per-sub-block scale (and min) search, then 6/8-bit quantization of those
// scales against one f16 super-block scale.
#pragma once

#include <cstdint>

namespace wick::quant {

// n is a multiple of 256; dst receives n / 256 blocks.
void quantize_q4_k(const float* x, uint8_t* dst, int64_t n);
void quantize_q6_k(const float* x, uint8_t* dst, int64_t n);

}  // namespace wick::quant
