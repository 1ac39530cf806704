// Registry hooks when the CUDA backend is not compiled: no CUDA devices.
#include "backend/backend.h"

namespace wick {
int cuda_backend_device_count() { return 0; }
Backend& cuda_backend(int ordinal) {
  fail(ErrorKind::Unsupported, "device: cuda:", ordinal, " requested, but wick was built without the CUDA backend");
}
}  // namespace wick
