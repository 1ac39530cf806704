// Registry hooks when the CUDA backend is not compiled: no CUDA devices.
#include "backend/backend.h"
#include "backend/cuda_events.h"

namespace wick {
int cuda_backend_device_count() { return 0; }
Backend& cuda_backend(int ordinal) {
  fail(ErrorKind::Unsupported, "device: cuda:", ordinal, " requested, but wick was built without the CUDA backend");
}
}  // namespace wick

// DeviceEvent's CUDA half: unreachable without CUDA devices (cuda_backend() raises first).

namespace wick::detail {
void* cuda_event_record(int ordinal) {
  fail(ErrorKind::Unsupported, "DeviceEvent: cuda:", ordinal, " requested, but wick was built without CUDA");
}
float cuda_event_elapsed_ms(int, void*, void*) {
  fail(ErrorKind::Unsupported, "DeviceEvent: wick was built without CUDA");
}
void cuda_event_destroy(int, void*) noexcept {}
}  // namespace wick::detail
