// Default (unsupported) entries of the Backend interface, op names and the registry.
#include "backend/backend.h"

#include "backend/cpu/cpu_backend.h"

namespace wick {

const char* unary_op_name(UnaryOp op) {
  static constexpr const char* names[] = {"neg",  "abs",   "sqr",  "sqrt",  "recip",    "exp",  "log",  "sin",
                                          "cos",  "tanh",  "erf",  "gelu",  "gelu_erf", "relu", "silu", "sigmoid",
                                          "sign", "floor", "ceil", "round", "affine",   "powf", "elu",  "clamp"};
  return names[size_t(op)];
}

const char* binary_op_name(BinaryOp op) {
  static constexpr const char* names[] = {"add", "sub", "mul", "div", "minimum", "maximum", "pow"};
  return names[size_t(op)];
}

const char* compare_op_name(CompareOp op) {
  static constexpr const char* names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return names[size_t(op)];
}

const char* reduce_op_name(ReduceOp op) {
  static constexpr const char* names[] = {"sum", "mean", "prod", "min", "max", "argmin", "argmax"};
  return names[size_t(op)];
}

void Backend::unsupported(const char* op) const {
  fail(ErrorKind::Unsupported, op, ": not supported on ", device(), " (", name(), ")");
}

void Backend::copy(const Tensor&, const Tensor&) { unsupported("copy"); }
void Backend::cast(const Tensor&, const Tensor&) { unsupported("to_dtype"); }
void Backend::fill(const Tensor&, Scalar) { unsupported("fill"); }
void Backend::rand_uniform(const Tensor&, double, double, uint64_t, uint64_t) { unsupported("rand"); }
void Backend::rand_normal(const Tensor&, double, double, uint64_t, uint64_t) { unsupported("randn"); }
void Backend::unary(UnaryOp op, const UnaryParams&, const Tensor&, const Tensor&) { unsupported(unary_op_name(op)); }
void Backend::binary(BinaryOp op, const Tensor&, const Tensor&, const Tensor&) { unsupported(binary_op_name(op)); }
void Backend::compare(CompareOp op, const Tensor&, const Tensor&, const Tensor&) { unsupported(compare_op_name(op)); }
void Backend::where(const Tensor&, const Tensor&, const Tensor&, const Tensor&) { unsupported("where"); }
void Backend::reduce(ReduceOp op, const Tensor&, const std::vector<size_t>&, const Tensor&) {
  unsupported(reduce_op_name(op));
}
void Backend::index_select(const Tensor&, size_t, const Tensor&, const Tensor&) { unsupported("index_select"); }
void Backend::gather(const Tensor&, size_t, const Tensor&, const Tensor&) { unsupported("gather"); }
void Backend::scatter(const Tensor&, size_t, const Tensor&, const Tensor&, ScatterMode) { unsupported("scatter"); }
void Backend::index_add(const Tensor&, size_t, const Tensor&, const Tensor&) { unsupported("index_add"); }
void Backend::matmul(const Tensor&, const Tensor&, const Tensor&) { unsupported("matmul"); }
void Backend::conv(const ConvParams&, const Tensor&, const Tensor&, const Tensor&) { unsupported("conv"); }
void Backend::pool2d(const PoolParams&, const Tensor&, const Tensor&) { unsupported("pool2d"); }
void Backend::upsample(const UpsampleParams&, const Tensor&, const Tensor&) { unsupported("upsample"); }
void Backend::softmax(const Tensor&, const Tensor&, bool) { unsupported("softmax"); }
void Backend::layer_norm(const Tensor&, const Tensor&, const Tensor&, double, const Tensor&) {
  unsupported("layer_norm");
}
void Backend::rms_norm(const Tensor&, const Tensor&, double, const Tensor&) { unsupported("rms_norm"); }
void Backend::rope(const Tensor&, const Tensor&, const Tensor&, bool, const Tensor&) { unsupported("rope"); }
void Backend::attention(const AttentionParams&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                        const Tensor&) {
  unsupported("attention");
}

DeviceInfo Backend::info() const {
  DeviceInfo d;
  d.device = device().str();
  d.name = name();
  return d;
}

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out{cpu_backend().info()};
  for (int i = 0; i < cuda_backend_device_count(); ++i) out.push_back(cuda_backend(i).info());
  return out;
}

Backend& backend_for(Device device) {
  switch (device.type) {
    case DeviceType::CPU: return cpu_backend();
    case DeviceType::CUDA: {
      const int n = cuda_backend_device_count();
      WICK_CHECK(device.index < n, Device, "device: ", device, " is not available (", n, " CUDA device",
                 n == 1 ? "" : "s", " found", n == 0 ? "; is this a CUDA build on a machine with a GPU?" : "", ")");
      return cuda_backend(device.index);
    }
    case DeviceType::Metal: fail(ErrorKind::Unsupported, "device: ", device, " is reserved; no Metal backend is built");
  }
  fail(ErrorKind::Internal, "device: unknown device type");
}

}  // namespace wick
