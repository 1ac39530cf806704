// dequantize(): a packed QuantTensor to a contiguous f32/f16/bf16 CPU tensor, one row at
// a time (rows in parallel), through the per-type block dequantizers.
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "io/quant/dequantize_row.h"
#include "wick/quant.h"

namespace wick {

namespace {
// Checks that q's bytes hold exactly its logical shape in its type; returns the row size.
size_t checked_row_bytes(const QuantTensor& q, std::string_view op) {
  WICK_CHECK(q.bytes.defined() || q.shape.numel() == 0, InvalidArgument, op, ": tensor '", q.name, "' has no bytes");
  const size_t row = ggml_row_bytes(q.type, q.row_elems(), op);
  const size_t need = size_t(checked_mul(int64_t(row), q.rows(), op));
  WICK_CHECK(q.bytes.nbytes() == need, ShapeMismatch, op, ": tensor '", q.name, "' of ", ggml_type_name(q.type), " ",
             q.shape, " needs ", need, " bytes but holds ", q.bytes.nbytes());
  return row;
}
}  // namespace

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  (void)ggml_row_bytes(type, n, "dequantize_row");  // checks the block multiple
  quant::dequantize_run(type, src, dst, n);
}

Tensor dequantize(const QuantTensor& q, DType dtype) {
  WICK_CHECK(dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16, DTypeMismatch,
             "dequantize: output dtype must be f32, f16 or bf16, got ", dtype);
  const size_t row_bytes = checked_row_bytes(q, "dequantize");
  if (!q.device().is_cpu()) return quant::dequantize_device(q, row_bytes, dtype);
  Tensor out = Tensor::empty(q.shape, dtype);
  const int64_t rows = q.rows(), n = q.row_elems();
  if (rows == 0 || n == 0) return out;
  const auto* src = static_cast<const uint8_t*>(q.bytes.data());
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / n);
  dispatch_float(dtype, "dequantize", [&]<class T>() {
    T* dst = static_cast<T*>(out.mutable_data());
    cpu::parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
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
  return out;
}

}  // namespace wick
