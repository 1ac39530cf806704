// The public view of the op table: names and Backend::supports, per device type.
#include "wick/op_support.h"

#include "backend/device_module.h"

namespace wick {

std::vector<std::string> op_names() {
  std::vector<std::string> out;
  for (size_t i = 0; i < kNumOpIds; ++i) out.emplace_back(op_id_name(OpId(i)));
  return out;
}

std::optional<bool> op_supported(DeviceType type, std::string_view op, DType dtype) {
  size_t id = 0;
  while (id < kNumOpIds && op != op_id_name(OpId(id))) ++id;
  WICK_CHECK(id < kNumOpIds, InvalidArgument, "op_supported: unknown op '", op, "'");
  switch (type) {
    case DeviceType::CPU: return backend_for(Device::cpu()).supports(OpId(id), dtype);
    case DeviceType::CUDA:
      if (DeviceModule* m = cuda_module()) return m->supports(OpId(id), dtype);
      return std::nullopt;
    case DeviceType::Metal: return std::nullopt;
  }
  return std::nullopt;
}

std::string cuda_backend_status() { return cuda_module_status(); }

}  // namespace wick
