// The sink logits of an attention call (nn.h AttentionOptions::sinks), checked and made the
// backends' form: (H) f32 contiguous on the call's device, or undefined for none.
#pragma once

#include <string_view>

#include "core/checks.h"
#include "wick/ops.h"

namespace wick::detail {

inline Tensor attention_sinks(std::string_view op, const Tensor& sinks, int64_t H, Device device) {
  if (!sinks.defined()) return {};
  check_float(op, sinks);
  WICK_CHECK(sinks.device() == device, DeviceMismatch, op, ": sinks are on ", sinks.device(), ", q on ", device);
  WICK_CHECK(sinks.rank() == 1 && sinks.dim(0) == H, ShapeMismatch, op, ": sinks must have shape (", H,
             ") (one logit per query head), got ", sinks.shape());
  return sinks.to(DType::F32).contiguous();
}

}  // namespace wick::detail
