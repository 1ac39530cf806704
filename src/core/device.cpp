#include "wick/device.h"

#include <charconv>

#include "backend/backend.h"
#include "wick/error.h"

namespace wick {

Device Device::parse(std::string_view text) {
  auto parse_kind = [&](std::string_view prefix, DeviceType type) -> std::optional<Device> {
    if (text.substr(0, prefix.size()) != prefix) return std::nullopt;
    std::string_view rest = text.substr(prefix.size());
    if (rest.empty()) return Device{type, 0};
    int index = -1;
    if (rest[0] == ':') {
      auto [p, ec] = std::from_chars(rest.data() + 1, rest.data() + rest.size(), index);
      if (ec == std::errc() && p == rest.data() + rest.size() && index >= 0) return Device{type, index};
    }
    fail(ErrorKind::InvalidArgument, "device: cannot parse '", text, "' (expected cpu, cuda or cuda:N)");
  };
  if (text == "cpu") return cpu();
  if (auto d = parse_kind("cuda", DeviceType::CUDA)) return *d;
  if (auto d = parse_kind("metal", DeviceType::Metal)) return *d;
  fail(ErrorKind::InvalidArgument, "device: cannot parse '", text, "' (expected cpu, cuda or cuda:N)");
}

std::string Device::str() const {
  switch (type) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::CUDA: return "cuda:" + std::to_string(index);
    case DeviceType::Metal: return "metal:" + std::to_string(index);
  }
  return "?";
}

int cuda_device_count() { return cuda_backend_device_count(); }
bool cuda_available() { return cuda_device_count() > 0; }
Device default_device() { return cuda_available() ? Device::cuda(0) : Device::cpu(); }

}  // namespace wick
