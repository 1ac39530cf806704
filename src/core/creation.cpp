// Creation functions: constants, ranges, identity and random tensors.
#include <atomic>
#include <cmath>
#include <mutex>

#include "core/checks.h"
#include "wick/tensor.h"

namespace wick {

Tensor full(Shape shape, Scalar value, DType dtype, Device device) {
  Tensor t = Tensor::empty(std::move(shape), dtype, device);
  backend_for(device).fill(t, value);
  return t;
}
Tensor zeros(Shape shape, DType dtype, Device device) { return full(std::move(shape), Scalar(0), dtype, device); }
Tensor ones(Shape shape, DType dtype, Device device) { return full(std::move(shape), Scalar(1), dtype, device); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype(), t.device()); }
Tensor full_like(const Tensor& t, Scalar value) { return full(t.shape(), value, t.dtype(), t.device()); }
Tensor empty_like(const Tensor& t) { return Tensor::empty(t.shape(), t.dtype(), t.device()); }

// Ranges are computed on the host in f64 (or i64 for integer dtypes), then converted.
Tensor arange(Scalar start, Scalar end, Scalar step, DType dtype, Device device) {
  const bool integral = start.is_integral() && end.is_integral() && step.is_integral();
  if (integral) {
    const int64_t s = start.to_int64(), e = end.to_int64(), st = step.to_int64();
    WICK_CHECK(st != 0, InvalidArgument, "arange: step must be non-zero");
    const int64_t n =
        st > 0 ? std::max<int64_t>(0, (e - s + st - 1) / st) : std::max<int64_t>(0, (s - e - st - 1) / -st);
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = s + i * st;
    return Tensor::from_vector(v, Shape{n}).to(dtype).to(device);
  }
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  WICK_CHECK(st != 0 && std::isfinite(s) && std::isfinite(e) && std::isfinite(st), InvalidArgument,
             "arange: start, end and step must be finite and step non-zero");
  const double count = std::ceil((e - s) / st);
  WICK_CHECK(count < 9.0e15, InvalidArgument, "arange: too many elements (", count, ")");
  const int64_t n = std::max<int64_t>(0, int64_t(count));
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = s + double(i) * st;
  return Tensor::from_vector(v, Shape{n}).to(dtype).to(device);
}

Tensor arange(int64_t end, DType dtype, Device device) {
  return arange(Scalar(0), Scalar(end), Scalar(1), dtype, device);
}

Tensor linspace(double start, double end, int64_t steps, DType dtype, Device device) {
  WICK_CHECK(steps >= 0, InvalidArgument, "linspace: steps must be non-negative, got ", steps);
  std::vector<double> v(static_cast<size_t>(steps));
  const double step = steps > 1 ? (end - start) / double(steps - 1) : 0.0;
  // Fill from both ends, as PyTorch does, so the last value is exactly `end`; a single
  // step gives `start`, as in PyTorch.
  for (int64_t i = 0; i < steps; ++i)
    v[size_t(i)] = i < steps / 2 || steps == 1 ? start + step * double(i) : end - step * double(steps - 1 - i);
  return Tensor::from_vector(v, Shape{steps}).to(dtype).to(device);
}

Tensor eye(int64_t n, int64_t m, DType dtype, Device device) {
  WICK_CHECK(n >= 0 && m >= 0, InvalidArgument, "eye: sizes must be non-negative, got ", n, " x ", m);
  std::vector<double> v(size_t(checked_mul(n, m, "eye")), 0.0);
  for (int64_t i = 0; i < std::min(n, m); ++i) v[size_t(i * m + i)] = 1.0;
  return Tensor::from_vector(v, Shape{n, m}).to(dtype).to(device);
}
Tensor eye(int64_t n, DType dtype, Device device) { return eye(n, n, dtype, device); }

namespace {
struct Generator {
  std::mutex mu;
  uint64_t seed = 0x5eed;
  uint64_t offset = 0;
  // Reserves n consecutive counters; returns (seed, first counter).
  std::pair<uint64_t, uint64_t> take(uint64_t n) {
    std::lock_guard lock(mu);
    const uint64_t first = offset;
    offset += n;
    return {seed, first};
  }
};
Generator& generator() {
  static Generator g;
  return g;
}
}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard lock(generator().mu);
  generator().seed = seed;
  generator().offset = 0;
}

Tensor rand(Shape shape, DType dtype, Device device, double low, double high) {
  WICK_CHECK(is_float(dtype), DTypeMismatch, "rand: expected a floating-point dtype, got ", dtype);
  WICK_CHECK(low <= high, InvalidArgument, "rand: low ", low, " > high ", high);
  Tensor t = Tensor::empty(std::move(shape), dtype, device);
  auto [seed, offset] = generator().take(uint64_t(t.numel()));
  backend_for(device).rand_uniform(t, low, high, seed, offset);
  return t;
}

Tensor randn(Shape shape, DType dtype, Device device, double mean, double stddev) {
  WICK_CHECK(is_float(dtype), DTypeMismatch, "randn: expected a floating-point dtype, got ", dtype);
  WICK_CHECK(stddev >= 0, InvalidArgument, "randn: stddev must be non-negative, got ", stddev);
  Tensor t = Tensor::empty(std::move(shape), dtype, device);
  auto [seed, offset] = generator().take(uint64_t(t.numel()));
  backend_for(device).rand_normal(t, mean, stddev, seed, offset);
  return t;
}

}  // namespace wick
