// The CPU backend: the reference every other backend is tested against. Each op family
// lives in its own file (cpu_<family>.cpp) with one generic kernel per family.
#pragma once

#include "backend/backend.h"

namespace wick {

class CpuBackend final : public Backend {
 public:
  Device device() const override { return Device::cpu(); }
  std::string name() const override;
  DeviceInfo info() const override;

  std::shared_ptr<Allocation> allocate(size_t nbytes) override;
  void copy_from_host(void* dst, const void* src, size_t nbytes) override;
  void copy_to_host(void* dst, const void* src, size_t nbytes) override;

  WICK_BACKEND_OVERRIDES
};

CpuBackend& cpu_backend();

}  // namespace wick
