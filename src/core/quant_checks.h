// The argument checks of a product with a packed (ggml block-quantized) weight, shared by
// quant_matmul (core/ops_quant.cpp) and the quantized linears (nn/linear.cpp).
#pragma once

#include <string_view>

#include "wick/quant.h"
#include "wick/tensor.h"

namespace wick::detail {

// x (M, K) floating point on W's device, W (N, K) whose bytes hold exactly N rows of its
// type, K % 32 == 0 for q8 activations. Throws wick::Error naming op otherwise.
void check_quant_product(std::string_view op, const Tensor& x, const QuantTensor& w, QuantActivation act);

}  // namespace wick::detail
