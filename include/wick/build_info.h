// What this build of wick contains.
#pragma once

#include <string>
#include <vector>

namespace wick {

struct BuildInfo {
  std::string version;
  std::string build_type;
  std::string compiler;
  std::string cpu_arch;  // -march the CPU kernels were built for
  bool cuda = false;     // CUDA backend compiled
  std::string cuda_archs;
  std::string blas;
};
const BuildInfo& build_info();

struct DeviceInfo {
  std::string device;  // "cpu", "cuda:0"
  std::string name;
  size_t total_memory = 0;  // bytes; 0 if unknown
  size_t free_memory = 0;
  std::string compute_capability;  // CUDA only
};
// Every device present, cpu first.
std::vector<DeviceInfo> list_devices();

}  // namespace wick
