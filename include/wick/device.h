// Device: where a tensor's memory lives. "cpu", "cuda:N"; "metal:N" is reserved.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace wick {

enum class DeviceType : uint8_t { CPU, CUDA, Metal };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static constexpr Device cpu() { return {DeviceType::CPU, 0}; }
  static constexpr Device cuda(int index = 0) { return {DeviceType::CUDA, index}; }
  // Parses "cpu", "cuda", "cuda:1", "metal:0"; throws wick::Error on anything else.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;
  bool operator==(const Device&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

// Devices present at run time.
int cuda_device_count();  // 0 when the CUDA backend is not compiled or no GPU is found
bool cuda_available();
// The best device present: cuda:0 if a GPU is found, else cpu.
Device default_device();

}  // namespace wick
