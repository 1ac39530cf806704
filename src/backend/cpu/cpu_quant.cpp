// The CPU kernels of the quant family: dequantize (rows in parallel), quantize (ggml's
// reference encoders, rows in parallel) and quant_matmul. quant_matmul splits W's rows
// (N) over the threads; each dequantizes one row at a time into a K-float buffer and dots
// it with every row of x, so the weight is read once and never expanded as a whole.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_qdot_avx2.h"
#include "backend/cpu/cpu_quant_q8.h"
#include "backend/cpu/thread_pool.h"
#include "io/quant/dequantize_row.h"
#include "wick/experts.h"

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

// Rows per task so that a task handles ~32k values.
int64_t rows_grain(int64_t work_per_row) {
  return std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, work_per_row));
}
}  // namespace

void CpuBackend::dequantize(const QuantTensor& q, const Tensor& out) {
  const int64_t rows = q.rows(), n = q.row_elems();
  const size_t row_bytes = ggml_row_bytes(q.type, n, "dequantize");
  const auto* src = static_cast<const uint8_t*>(q.bytes.data());
  dispatch_float(out.dtype(), "dequantize", [&]<class T>() {
    T* dst = static_cast<T*>(out.mutable_data());
    cpu::parallel_for(rows, rows_grain(n), [&](int64_t r0, int64_t r1) {
      std::vector<float> tmp;
      for (int64_t r = r0; r < r1; ++r) {
        if constexpr (std::is_same_v<T, float>) {
          quant::dequantize_run(q.type, src + size_t(r) * row_bytes, dst + r * n, n);
        } else if constexpr (is_half_v<T>) {
          tmp.resize(size_t(n));
          quant::dequantize_run(q.type, src + size_t(r) * row_bytes, tmp.data(), n);
          for (int64_t i = 0; i < n; ++i) dst[r * n + i] = T(tmp[size_t(i)]);
        }
      }
    });
  });
}

void CpuBackend::quantize(const Tensor& src, const QuantTensor& out) {
  const int64_t n = out.row_elems(), rows = out.rows();
  const size_t row_bytes = ggml_row_bytes(out.type, n, "quantize");
  const auto* xp = static_cast<const float*>(src.data());
  auto* dst = static_cast<uint8_t*>(out.bytes.mutable_data());
  cpu::parallel_for(rows, rows_grain(n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) quant::quantize_run(out.type, xp + r * n, dst + size_t(r) * row_bytes, n);
  });
}

void CpuBackend::quant_matmul(const Tensor& x, const QuantTensor& w, QuantActivation act, const Tensor& out) {
  const int64_t M = x.dim(0), K = x.dim(1), N = w.shape[0];
  const size_t row_bytes = ggml_row_bytes(w.type, K, "quant_matmul");
  float* y = static_cast<float*>(out.mutable_data());
  Tensor xc = x.to(DType::F32).contiguous();
  const auto* wp = static_cast<const uint8_t*>(w.bytes.data());
  if (act == QuantActivation::Q8) {
    if (cpu::has_q8_kernel(w.type)) {
      cpu::matmul_q8(static_cast<const float*>(xc.data()), M, K, wp, w.type, row_bytes, N, y);
      return;
    }
    // Other weight types (q4_1, q5_0, q5_1): the f32 product with x rounded to q8_0, the
    // same value up to the f32 summation order.
    xc = cpu::round_to_q8_0(xc);
  }
  const float* xp = static_cast<const float*>(xc.data());
  cpu::parallel_for(N, rows_grain(K * M), [&](int64_t n0, int64_t n1) {
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t n = n0; n < n1; ++n) {
      quant::dequantize_run(w.type, wp + size_t(n) * row_bytes, row.data(), K);
      for (int64_t m = 0; m < M; ++m) y[m * N + n] = dot(xp + m * K, row.data(), K);
    }
  });
}

// Pair by pair through quant_matmul (the front end groups pairs by expert on the CPU
// instead; this entry is the op table's reference form of the per-pair product).
void CpuBackend::mul_mat_id(const Tensor& x, const QuantTensor& w, const Tensor& ids, bool per_slot,
                            QuantActivation act, const Tensor& out) {
  const int64_t E = w.shape[0], k = ids.dim(1), P = out.dim(0);
  const std::vector<int64_t> id = ids.to(DType::I64).to_vector<int64_t>();
  for (int64_t p = 0; p < P; ++p)
    WICK_CHECK(id[size_t(p)] >= 0 && id[size_t(p)] < E, IndexOutOfRange, "mul_mat_id: ids[", p / k, ", ", p % k,
               "] is ", id[size_t(p)], ", outside [0, ", E, ")");
  for (int64_t p = 0; p < P; ++p)
    quant_matmul(x.narrow(0, per_slot ? p : p / k, 1), expert_matrix(w, id[size_t(p)]), act, out.narrow(0, p, 1));
}

}  // namespace wick
