// CUDA events for wick::DeviceEvent (through the module interface), recorded on the backend's stream of each device.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_module_parts.h"

namespace wick::cuda {

void* event_record(int ordinal) {
  CudaBackend& b = cuda_backend_impl(ordinal);
  WICK_CHECK(!b.capturing(), InvalidArgument, "DeviceEvent: cannot record an event on cuda:", ordinal,
             " while a CUDA graph capture is open");
  b.activate();
  cudaEvent_t e = nullptr;
  WICK_CUDA_CHECK(cudaEventCreate(&e));
  const cudaError_t err = cudaEventRecord(e, b.stream());
  if (err != cudaSuccess) {
    cudaEventDestroy(e);
    WICK_CUDA_CHECK(err);
  }
  return e;
}

float event_elapsed_ms(int ordinal, void* start, void* stop) {
  cuda_backend_impl(ordinal).activate();
  WICK_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(stop)));
  float ms = 0;
  WICK_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(stop)));
  return ms;
}

void event_destroy(int ordinal, void* event) noexcept {
  (void)ordinal;
  cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

}  // namespace wick::cuda
