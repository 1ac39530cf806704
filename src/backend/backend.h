// The Backend interface: what every device implements, one entry per op family, as
// candle's BackendStorage. The front end (src/core) has already checked arguments,
// broadcast operands to the output shape (stride-0 views), promoted dtypes and allocated
// the output; a backend reads any strides and offsets and writes `out`.
//
// The ops are listed once, in op_table.h; entries a backend does not implement throw
// ErrorKind::Unsupported naming op and device.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/op_table.h"
#include "wick/build_info.h"
#include "wick/memory.h"
#include "wick/nn.h"
#include "wick/quant.h"
#include "wick/scalar.h"
#include "wick/tensor.h"

namespace wick {

// The op families' sub-ops, from the op table.
#define WICK_ENUMERATOR(e, ...) e,
enum class UnaryOp : uint8_t { WICK_UNARY_OPS(WICK_ENUMERATOR) };
enum class BinaryOp : uint8_t { WICK_BINARY_OPS(WICK_ENUMERATOR) };
enum class CompareOp : uint8_t { WICK_COMPARE_OPS(WICK_ENUMERATOR) };
enum class ReduceOp : uint8_t { WICK_REDUCE_OPS(WICK_ENUMERATOR) };
enum class CumulativeOp : uint8_t { WICK_CUMULATIVE_OPS(WICK_ENUMERATOR) };
#undef WICK_ENUMERATOR
const char* unary_op_name(UnaryOp op);
const char* binary_op_name(BinaryOp op);
const char* compare_op_name(CompareOp op);
const char* reduce_op_name(ReduceOp op);
const char* cumulative_op_name(CumulativeOp op);

struct UnaryParams {
  Scalar a, b;
  bool has_a = true, has_b = true;
};

// Every op a user calls, one id each: the family sub-ops, then the table's rows. The ids
// Backend::supports answers for (and `wick info --ops` prints).
#define WICK_OP_ID(e, name, ...) name,
enum class OpId : uint16_t {
  WICK_UNARY_OPS(WICK_OP_ID) WICK_BINARY_OPS(WICK_OP_ID) WICK_COMPARE_OPS(WICK_OP_ID) WICK_REDUCE_OPS(WICK_OP_ID)
      WICK_CUMULATIVE_OPS(WICK_OP_ID)
#undef WICK_OP_ID
#define WICK_OP_ID(name, dtypes) name,
          WICK_OP_ROWS(WICK_OP_ID)
#undef WICK_OP_ID
              kCount
};
inline constexpr size_t kNumOpIds = size_t(OpId::kCount);
const char* op_id_name(OpId op);
OpId op_id(UnaryOp op);
OpId op_id(BinaryOp op);
OpId op_id(CompareOp op);
OpId op_id(ReduceOp op);
OpId op_id(CumulativeOp op);

// A set of dtypes (bit i: DType(i)), for the table's dtype columns.
using DTypeSet = uint32_t;
constexpr DTypeSet dtype_bit(DType d) { return DTypeSet(1) << int(d); }
inline constexpr DTypeSet kAllDTypes = (DTypeSet(1) << kNumDTypes) - 1;
inline constexpr DTypeSet kFloatDTypes =
    dtype_bit(DType::BF16) | dtype_bit(DType::F16) | dtype_bit(DType::F32) | dtype_bit(DType::F64);
// What dequantize writes and quant_matmul / quantize read.
inline constexpr DTypeSet kQuantActivationDTypes =
    dtype_bit(DType::BF16) | dtype_bit(DType::F16) | dtype_bit(DType::F32);
// The dtypes op is defined on, whatever the device.
DTypeSet op_dtypes(OpId op);

enum class ScatterMode : uint8_t { Set, Add };

// Convolution in 1-D or 2-D (1-D uses index 1 of the arrays with index 0 at identity).
// The CPU front end passes 1-D convolutions as 2-D ones over (N, C, 1, L) views.
struct ConvParams {
  int spatial_dims = 2;  // 1 or 2
  bool transposed = false;
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1}, output_padding{0, 0};
  int64_t groups = 1;
  // (C_out) contiguous, x's dtype and device, or undefined: added to every output
  // position by the kernel (fused, so conv needs no elementwise op to finish).
  Tensor bias;
};

enum class PoolKind : uint8_t { Max, Avg };
struct PoolParams {
  PoolKind kind = PoolKind::Max;
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0};
  bool count_include_pad = true;
};

enum class UpsampleMode : uint8_t { Nearest, Bilinear };
struct UpsampleParams {
  UpsampleMode mode = UpsampleMode::Nearest;
  bool align_corners = false;
};

// The fused linear's options: its epilogue, and the eps of the rms_norm applied to x first
// (when the entry's norm weight is defined).
struct LinearParams {
  LinearEpilogue e;
  double norm_eps = 0;
};

struct AttentionParams {
  bool causal = false;
  double scale = 1.0;
  Tensor sinks;  // undefined, or (H) f32 contiguous on the device: head h's sink logit (nn.h)
};

// cache_attention's options as resolved by the front end (nn.h CacheAttentionOptions).
struct CacheAttentionParams {
  double scale = 1.0;
  int64_t window = 0;  // > 0: row b sees keys [lengths[b] - window, lengths[b]) only
  double softcap = 0;  // > 0: scores = softcap * tanh(scores / softcap)
  Tensor sinks;        // undefined, or (H) f32 contiguous on the device: head h's sink logit (nn.h)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;  // "NVIDIA H200", "CPU (2 threads)"
  virtual DeviceInfo info() const;       // name, memory, compute capability

  // ---- memory ----------------------------------------------------------------------------
  virtual std::shared_ptr<Allocation> allocate(size_t nbytes) = 0;
  virtual void copy_from_host(void* dst, const void* src, size_t nbytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t nbytes) = 0;
  virtual void synchronize() {}
  virtual MemoryStats memory_stats() const { return {}; }
  virtual void reset_peak_memory() {}
  virtual void empty_cache() {}
  virtual void set_memory_limit(size_t) {}
  virtual void set_allocator(AllocatorKind) {}

  // ---- ops: one virtual per entry of WICK_BACKEND_OPS (op_table.h) ---------------------
#define WICK_DECLARE_VIRTUAL(entry, params) virtual void entry params;
  WICK_BACKEND_OPS(WICK_DECLARE_VIRTUAL)
#undef WICK_DECLARE_VIRTUAL

  // Whether this backend runs op on dtype (by default: every op on the dtypes the table
  // defines it on; a backend that implements less overrides this).
  virtual bool supports(OpId op, DType dtype) const;

 protected:
  [[noreturn]] void unsupported(const char* op) const;
};

// In a backend's class: an override of every entry of the op table.
#define WICK_DECLARE_OVERRIDE(entry, params) void entry params override;
#define WICK_BACKEND_OVERRIDES WICK_BACKEND_OPS(WICK_DECLARE_OVERRIDE)

// The backend of a device; throws if the device is absent or its backend not compiled.
Backend& backend_for(Device device);

// Registry hooks of the CUDA backend (defined in src/backend/cuda when compiled).
int cuda_backend_device_count();
Backend& cuda_backend(int ordinal);

}  // namespace wick
