// The CUDA backend: one instance per device ordinal, with its own stream on which all
// work is ordered. Kernels live in kernels/*.cu, one generic kernel per op family.
#pragma once

#include <cuda_runtime.h>

#include <mutex>

#include "backend/backend.h"

namespace wick {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int ordinal);
  ~CudaBackend() override;

  Device device() const override { return Device::cuda(ordinal_); }
  std::string name() const override;
  DeviceInfo info() const override;

  std::shared_ptr<Allocation> allocate(size_t nbytes) override;
  void copy_from_host(void* dst, const void* src, size_t nbytes) override;
  void copy_to_host(void* dst, const void* src, size_t nbytes) override;
  void synchronize() override;

  int ordinal() const { return ordinal_; }
  cudaStream_t stream() const { return stream_; }
  // Makes this backend's device current on the calling thread.
  void activate() const;

 private:
  int ordinal_;
  cudaStream_t stream_ = nullptr;
  cudaDeviceProp props_{};
};

}  // namespace wick
