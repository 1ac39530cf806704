// Which ops each backend runs, and on which dtypes: the op table (src/backend/op_table.h)
// as the backends answer it. `wick info --ops` prints it; docs/ops.md's table is that
// output (a test keeps them equal).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wick/device.h"
#include "wick/dtype.h"

namespace wick {

// Every op name, in table order: the unary, binary, comparison, reduction and cumulative
// families, then the other ops.
std::vector<std::string> op_names();

// Whether the backend of `type` runs `op` on `dtype` (the input dtype; the output's for
// dequantize). nullopt when that backend is not available in this process (CUDA: not
// built, or its module could not be loaded). Asks the backend, not a device: a CUDA
// build answers for CUDA on a machine without a GPU. Throws InvalidArgument for an
// unknown op name.
std::optional<bool> op_supported(DeviceType type, std::string_view op, DType dtype);

// The CUDA backend module's state in one line: "loaded from <path>", or why it is not
// available ("not built: ...", "cannot load <path>: <reason>").
std::string cuda_backend_status();

}  // namespace wick
