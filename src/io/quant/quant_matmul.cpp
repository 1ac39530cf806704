// quant_matmul(): y = x @ W^T with W packed. Each thread owns a range of W's rows (N),
// dequantizes one row at a time into a K-float scratch buffer and dots it with every
// row of x, so the weight is read once and never expanded as a whole.
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "io/quant/dequantize_row.h"
#include "wick/quant.h"

namespace wick {

namespace {
// f32 dot product with 8 independent partial sums, so the compiler can vectorize it
// without reassociating (no -ffast-math needed).
float dot(const float* a, const float* b, int64_t k) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= k; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  for (; i < k; ++i) acc[0] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}
}  // namespace

Tensor quant_matmul(const Tensor& x, const QuantTensor& w, QuantActivation act) {
  WICK_CHECK(x.defined(), InvalidArgument, "quant_matmul: undefined activation");
  WICK_CHECK(x.device() == w.device(), DeviceMismatch, "quant_matmul: x is on ", x.device(), " but W '", w.name,
             "' is on ", w.device());
  WICK_CHECK(is_float(x.dtype()), DTypeMismatch, "quant_matmul: x must be floating point, got ", x.dtype());
  WICK_CHECK(x.rank() == 2 && w.shape.rank() == 2, ShapeMismatch, "quant_matmul: expected x (M, K) and W (N, K), got ",
             x.shape(), " and ", w.shape, " for '", w.name, "'");
  const int64_t M = x.dim(0), K = x.dim(1), N = w.shape[0];
  WICK_CHECK(w.shape[1] == K, ShapeMismatch, "quant_matmul: x ", x.shape(), " and W '", w.name, "' ", w.shape,
             " disagree on K");
  const size_t row_bytes = ggml_row_bytes(w.type, K, "quant_matmul");
  WICK_CHECK(w.bytes.nbytes() == size_t(checked_mul(int64_t(row_bytes), N, "quant_matmul")), ShapeMismatch,
             "quant_matmul: W '", w.name, "' holds ", w.bytes.nbytes(), " bytes, not ", N, " rows of ", row_bytes);
  WICK_CHECK(act == QuantActivation::F32 || K % 32 == 0, ShapeMismatch,
             "quant_matmul: q8 activations round x per 32 values, so K must be a multiple of 32, got K = ", K, " for '",
             w.name, "'");
  if (!x.device().is_cpu()) return quant::quant_matmul_device(x, w, row_bytes, act);
  Tensor out = Tensor::empty(Shape{M, N}, DType::F32);
  if (M == 0 || N == 0) return out;
  float* y = static_cast<float*>(out.mutable_data());
  if (K == 0) {
    std::fill(y, y + M * N, 0.0f);
    return out;
  }
  Tensor xc = x.to(DType::F32).contiguous();
  const auto* wp = static_cast<const uint8_t*>(w.bytes.data());
  if (act == QuantActivation::Q8) {
    if (w.type == GgmlType::Q8_0 || w.type == GgmlType::Q4_0) {
      quant::matmul_q8(static_cast<const float*>(xc.data()), M, K, wp, w.type, row_bytes, N, y);
      return out;
    }
    // Other weight types: the f32 product with x rounded to q8_0, the same value up to
    // the f32 summation order.
    xc = dequantize(quantize(xc, GgmlType::Q8_0));
  }
  const float* xp = static_cast<const float*>(xc.data());
  // Enough rows per task that a task does ~32k multiply-adds.
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, K * M));
  cpu::parallel_for(N, grain, [&](int64_t n0, int64_t n1) {
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t n = n0; n < n1; ++n) {
      quant::dequantize_run(w.type, wp + size_t(n) * row_bytes, row.data(), K);
      for (int64_t m = 0; m < M; ++m) y[m * N + n] = dot(xp + m * K, row.data(), K);
    }
  });
  return out;
}

}  // namespace wick
