// The Backend interface: what every device implements, one entry per op family, as
// candle's BackendStorage. The front end (src/core) has already checked arguments,
// broadcast operands to the output shape (stride-0 views), promoted dtypes and allocated
// the output; a backend reads any strides and offsets and writes `out`.
//
// Entries a backend does not implement throw ErrorKind::Unsupported naming op and device.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wick/build_info.h"
#include "wick/memory.h"
#include "wick/ops.h"
#include "wick/scalar.h"
#include "wick/tensor.h"

namespace wick {

enum class UnaryOp : uint8_t {
  Neg,
  Abs,
  Sqr,
  Sqrt,
  Recip,
  Exp,
  Log,
  Sin,
  Cos,
  Tanh,
  Erf,
  Gelu,
  GeluErf,
  Relu,
  Silu,
  Sigmoid,
  Sign,
  Floor,
  Ceil,
  Round,
  Affine,  // x * a + b
  Powf,    // x ^ a
  Elu,     // alpha a
  Clamp,   // lo a (if has_a), hi b (if has_b)
};
const char* unary_op_name(UnaryOp op);

struct UnaryParams {
  Scalar a, b;
  bool has_a = true, has_b = true;
};

enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Minimum, Maximum, Pow };
const char* binary_op_name(BinaryOp op);

enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };
const char* compare_op_name(CompareOp op);

enum class ReduceOp : uint8_t { Sum, Mean, Prod, Min, Max, ArgMin, ArgMax };
const char* reduce_op_name(ReduceOp op);

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

struct AttentionParams {
  bool causal = false;
  double scale = 1.0;
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

  // ---- data movement -------------------------------------------------------------------
  // dst = src elementwise; same shape, same dtype, any strides on both sides.
  virtual void copy(const Tensor& src, const Tensor& dst);
  // dst = convert(src); same shape, any dtypes and strides.
  virtual void cast(const Tensor& src, const Tensor& dst);
  virtual void fill(const Tensor& dst, Scalar value);
  virtual void rand_uniform(const Tensor& dst, double low, double high, uint64_t seed, uint64_t offset);
  virtual void rand_normal(const Tensor& dst, double mean, double stddev, uint64_t seed, uint64_t offset);

  // ---- elementwise (inputs broadcast to out's shape, same dtype as out) -------------------
  virtual void unary(UnaryOp op, const UnaryParams& p, const Tensor& x, const Tensor& out);
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
  // a and b share a dtype; out is u8.
  virtual void compare(CompareOp op, const Tensor& a, const Tensor& b, const Tensor& out);
  virtual void where(const Tensor& cond, const Tensor& t, const Tensor& f, const Tensor& out);

  // ---- reductions ------------------------------------------------------------------------
  // out has x's rank with the reduced dims of size 1 (keepdim); dims sorted, unique.
  // ArgMin/ArgMax reduce exactly one dim and write i64.
  virtual void reduce(ReduceOp op, const Tensor& x, const std::vector<size_t>& dims, const Tensor& out);

  // ---- indexing -------------------------------------------------------------------------
  virtual void index_select(const Tensor& src, size_t dim, const Tensor& indices, const Tensor& out);
  virtual void gather(const Tensor& src, size_t dim, const Tensor& index, const Tensor& out);
  // In place on dst (a fresh copy made by the front end).
  virtual void scatter(const Tensor& dst, size_t dim, const Tensor& index, const Tensor& src, ScatterMode mode);
  virtual void index_add(const Tensor& dst, size_t dim, const Tensor& indices, const Tensor& src);

  // ---- matmul: a (batch..., M, K), b (batch..., K, N) with batch dims already broadcast
  // to out's (stride 0 where broadcast); out contiguous (batch..., M, N). -----------------
  virtual void matmul(const Tensor& a, const Tensor& b, const Tensor& out);

  // ---- convolution, pooling, resampling (NC[H]W, contiguous inputs) ---------------------
  virtual void conv(const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out);
  virtual void pool2d(const PoolParams& p, const Tensor& x, const Tensor& out);
  virtual void upsample(const UpsampleParams& p, const Tensor& x, const Tensor& out);

  // ---- fused nn ops (last dim) --------------------------------------------------------------
  virtual void softmax(const Tensor& x, const Tensor& out, bool log);
  // weight/bias may be undefined tensors.
  virtual void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out);
  virtual void rms_norm(const Tensor& x, const Tensor& weight, double eps, const Tensor& out);
  virtual void rope(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved, const Tensor& out);
  // q (B,H,Tq,D), k/v (B,H,Tk,D), mask undefined or broadcast to (B,H,Tq,Tk); out (B,H,Tq,D).
  virtual void attention(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor& mask, const Tensor& out);

 protected:
  [[noreturn]] void unsupported(const char* op) const;
};

// The backend of a device; throws if the device is absent or its backend not compiled.
Backend& backend_for(Device device);

// Registry hooks of the CUDA backend (defined in src/backend/cuda when compiled).
int cuda_backend_device_count();
Backend& cuda_backend(int ordinal);

}  // namespace wick
