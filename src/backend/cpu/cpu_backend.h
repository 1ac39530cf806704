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

  void copy(const Tensor& src, const Tensor& dst) override;
  void cast(const Tensor& src, const Tensor& dst) override;
  void fill(const Tensor& dst, Scalar value) override;
  void rand_uniform(const Tensor& dst, double low, double high, uint64_t seed, uint64_t offset) override;
  void rand_normal(const Tensor& dst, double mean, double stddev, uint64_t seed, uint64_t offset) override;

  void unary(UnaryOp op, const UnaryParams& p, const Tensor& x, const Tensor& out) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void compare(CompareOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void where(const Tensor& cond, const Tensor& t, const Tensor& f, const Tensor& out) override;

  void reduce(ReduceOp op, const Tensor& x, const std::vector<size_t>& dims, const Tensor& out) override;

  void index_select(const Tensor& src, size_t dim, const Tensor& indices, const Tensor& out) override;
  void gather(const Tensor& src, size_t dim, const Tensor& index, const Tensor& out) override;
  void scatter(const Tensor& dst, size_t dim, const Tensor& index, const Tensor& src, ScatterMode mode) override;
  void index_add(const Tensor& dst, size_t dim, const Tensor& indices, const Tensor& src) override;

  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override;

  void conv(const ConvParams& p, const Tensor& x, const Tensor& weight, const Tensor& out) override;
  void pool2d(const PoolParams& p, const Tensor& x, const Tensor& out) override;
  void upsample(const UpsampleParams& p, const Tensor& x, const Tensor& out) override;

  void softmax(const Tensor& x, const Tensor& out, bool log) override;
  void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out) override;
  void rms_norm(const Tensor& x, const Tensor& weight, double eps, const Tensor& out) override;
  void rope(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved, const Tensor& out) override;
  void attention(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 const Tensor& out) override;
};

CpuBackend& cpu_backend();

}  // namespace wick
