// Argument preparation shared by the elementwise front ends (ops_elementwise.cpp,
// ops_compare.cpp).
#pragma once

#include <utility>

#include "wick/tensor.h"

namespace wick::detail {

// a and b on one device, promoted to one dtype (promote_types) and broadcast to one shape
// (stride-0 views; a cast only where the dtype differs, made before broadcasting so it
// touches each element once). Errors name op and both shapes/devices.
std::pair<Tensor, Tensor> promote_and_broadcast(const char* op, const Tensor& a, const Tensor& b);

}  // namespace wick::detail
