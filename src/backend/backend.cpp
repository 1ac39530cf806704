// The op table made into names, dtype sets and the Backend's default (unsupported)
// entries; the registry of backends.
#include "backend/backend.h"

#include <iterator>

#include "backend/cpu/cpu_backend.h"
#include "backend/elementwise_ops.h"

namespace wick {

namespace {

// The name of every OpId, in enum order.
#define WICK_OP_NAME(e, name, ...) #name,
constexpr const char* kOpNames[] = {WICK_UNARY_OPS(WICK_OP_NAME) WICK_BINARY_OPS(WICK_OP_NAME)
                                        WICK_COMPARE_OPS(WICK_OP_NAME) WICK_REDUCE_OPS(WICK_OP_NAME)
                                            WICK_CUMULATIVE_OPS(WICK_OP_NAME)
#undef WICK_OP_NAME
#define WICK_OP_NAME(name, dtypes) #name,
                                                WICK_OP_ROWS(WICK_OP_NAME)
#undef WICK_OP_NAME
};
static_assert(std::size(kOpNames) == kNumOpIds);

// Where each family's sub-ops start among the OpIds.
#define WICK_ONE(...) +1
constexpr size_t kUnaryBase = 0;
constexpr size_t kBinaryBase = kUnaryBase WICK_UNARY_OPS(WICK_ONE);
constexpr size_t kCompareBase = kBinaryBase WICK_BINARY_OPS(WICK_ONE);
constexpr size_t kReduceBase = kCompareBase WICK_COMPARE_OPS(WICK_ONE);
constexpr size_t kCumulativeBase = kReduceBase WICK_REDUCE_OPS(WICK_ONE);
#undef WICK_ONE

// The dtypes of each OpId: unary and binary ops take integers when their functor says so.
constexpr DTypeSet integers_if(bool integers) { return integers ? kAllDTypes : kFloatDTypes; }
#define WICK_EW_DTYPES(e, name) integers_if(ew::e<int64_t>::kIntegers),
#define WICK_ALL_DTYPES(e, name) kAllDTypes,
#define WICK_TABLE_DTYPES(e, name, dtypes) dtypes,
#define WICK_ROW_DTYPES(name, dtypes) dtypes,
constexpr DTypeSet kOpDTypes[] = {WICK_UNARY_OPS(WICK_EW_DTYPES) WICK_BINARY_OPS(WICK_EW_DTYPES)
                                      WICK_COMPARE_OPS(WICK_ALL_DTYPES) WICK_REDUCE_OPS(WICK_TABLE_DTYPES)
                                          WICK_CUMULATIVE_OPS(WICK_ALL_DTYPES) WICK_OP_ROWS(WICK_ROW_DTYPES)};
#undef WICK_EW_DTYPES
#undef WICK_ALL_DTYPES
#undef WICK_TABLE_DTYPES
#undef WICK_ROW_DTYPES
static_assert(std::size(kOpDTypes) == kNumOpIds);

}  // namespace

const char* op_id_name(OpId op) { return size_t(op) < kNumOpIds ? kOpNames[size_t(op)] : "?"; }
DTypeSet op_dtypes(OpId op) { return size_t(op) < kNumOpIds ? kOpDTypes[size_t(op)] : 0; }
OpId op_id(UnaryOp op) { return OpId(kUnaryBase + size_t(op)); }
OpId op_id(BinaryOp op) { return OpId(kBinaryBase + size_t(op)); }
OpId op_id(CompareOp op) { return OpId(kCompareBase + size_t(op)); }
OpId op_id(ReduceOp op) { return OpId(kReduceBase + size_t(op)); }
OpId op_id(CumulativeOp op) { return OpId(kCumulativeBase + size_t(op)); }
const char* unary_op_name(UnaryOp op) { return op_id_name(op_id(op)); }
const char* binary_op_name(BinaryOp op) { return op_id_name(op_id(op)); }
const char* compare_op_name(CompareOp op) { return op_id_name(op_id(op)); }
const char* reduce_op_name(ReduceOp op) { return op_id_name(op_id(op)); }
const char* cumulative_op_name(CumulativeOp op) { return op_id_name(op_id(op)); }

bool Backend::supports(OpId op, DType dtype) const { return (op_dtypes(op) & dtype_bit(dtype)) != 0; }

void Backend::unsupported(const char* op) const {
  fail(ErrorKind::Unsupported, op, ": not supported on ", device(), " (", name(), ")");
}

// The entries a backend leaves out raise Unsupported.
#define WICK_DEFINE_UNSUPPORTED(entry, params) \
  void Backend::entry params { unsupported(#entry); }
WICK_BACKEND_OPS(WICK_DEFINE_UNSUPPORTED)
#undef WICK_DEFINE_UNSUPPORTED

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
