// The CUDA half of wick::DeviceEvent (src/core/device_event.cpp): forwarded by
// module_loader.cpp to the CUDA module (backend/cuda/cuda_event.cpp), raising Unsupported
// when the module is not available.
#pragma once

namespace wick::detail {

// An event recorded on cuda:ordinal's stream (an opaque cudaEvent_t).
void* cuda_event_record(int ordinal);
// Milliseconds from `start` to `stop` (both recorded on cuda:ordinal); waits for stop.
float cuda_event_elapsed_ms(int ordinal, void* start, void* stop);
void cuda_event_destroy(int ordinal, void* event) noexcept;

}  // namespace wick::detail
