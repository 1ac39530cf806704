// Argument checks shared by the front-end ops. Each throws wick::Error naming the op.
#pragma once

#include <initializer_list>
#include <string_view>

#include "backend/backend.h"
#include "core/overlap.h"
#include "wick/tensor.h"

namespace wick::detail {

inline void check_defined(std::string_view op, const Tensor& t, std::string_view what = "input") {
  WICK_CHECK(t.defined(), InvalidArgument, op, ": ", what, " is an undefined tensor");
}

// All tensors defined and on one device; returns that device.
inline Device common_device(std::string_view op, std::initializer_list<const Tensor*> ts) {
  const Tensor* first = nullptr;
  for (const Tensor* t : ts) {
    check_defined(op, *t);
    if (!first) {
      first = t;
      continue;
    }
    WICK_CHECK(t->device() == first->device(), DeviceMismatch, op, ": expected all tensors on one device, got ",
               first->device(), " and ", t->device());
  }
  return first ? first->device() : Device::cpu();
}

inline void check_float(std::string_view op, const Tensor& t) {
  WICK_CHECK(is_float(t.dtype()), DTypeMismatch, op, ": expected a floating-point tensor, got ", t.dtype());
}

inline void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b) {
  WICK_CHECK(a.dtype() == b.dtype(), DTypeMismatch, op, ": dtypes differ: ", a.dtype(), " and ", b.dtype());
}

// Every in-place op's destination check: writable memory, and no element reachable
// from two indices (see core/overlap.h).
inline void check_writable(std::string_view op, const Tensor& t) {
  WICK_CHECK(!t.read_only(), ReadOnly, op, ": refusing to modify a read-only tensor (",
             t.storage().allocation()->origin(), "); clone() it first");
  check_no_internal_overlap(op, t);
}

inline Backend& backend_of(const Tensor& t) { return backend_for(t.device()); }

// A fresh contiguous output tensor.
inline Tensor new_tensor(const Shape& shape, DType dtype, Device device) { return Tensor::empty(shape, dtype, device); }

}  // namespace wick::detail
