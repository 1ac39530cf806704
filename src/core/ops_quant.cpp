// The quant family's front end: dequantize, quantize and quant_matmul check their
// arguments here and make one backend call (CPU kernels: backend/cpu/cpu_quant.cpp; CUDA:
// backend/cuda/cuda_quant.cpp). The block formats themselves live in src/io/quant.
#include "core/checks.h"
#include "core/quant_checks.h"
#include "wick/ops.h"
#include "wick/quant.h"

namespace wick {

namespace {
// Checks that q's bytes hold exactly its logical shape in its type.
void check_quant_bytes(const QuantTensor& q, std::string_view op) {
  WICK_CHECK(q.bytes.defined() || q.shape.numel() == 0, InvalidArgument, op, ": tensor '", q.name, "' has no bytes");
  const size_t row = ggml_row_bytes(q.type, q.row_elems(), op);
  const size_t need = size_t(checked_mul(int64_t(row), q.rows(), op));
  WICK_CHECK(q.bytes.nbytes() == need, ShapeMismatch, op, ": tensor '", q.name, "' of ", ggml_type_name(q.type), " ",
             q.shape, " needs ", need, " bytes but holds ", q.bytes.nbytes());
}
}  // namespace

QuantTensor QuantTensor::to(Device device) const {
  WICK_CHECK(bytes.defined() || shape.numel() == 0, InvalidArgument, "QuantTensor::to: tensor '", name,
             "' has no bytes");
  if (!bytes.defined() || device == bytes.device()) return *this;
  QuantTensor out = *this;
  // Tensor::to copies a (contiguous u8) tensor between devices; its storage is exactly
  // the new bytes.
  const Buffer flat = bytes.view(DType::U8, Shape{int64_t(bytes.nbytes())});
  out.bytes = Tensor::from_buffer(flat).to(device).storage();
  return out;
}

Tensor dequantize(const QuantTensor& q, DType dtype) {
  WICK_CHECK(dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16, DTypeMismatch,
             "dequantize: output dtype must be f32, f16 or bf16, got ", dtype);
  check_quant_bytes(q, "dequantize");
  Tensor out = Tensor::empty(q.shape, dtype, q.device());
  if (q.shape.numel() != 0) backend_for(q.device()).dequantize(q, out);
  return out;
}

QuantTensor quantize(const Tensor& src, GgmlType type, std::string name) {
  WICK_CHECK(src.defined(), InvalidArgument, "quantize: undefined tensor");
  WICK_CHECK(is_float(src.dtype()), DTypeMismatch, "quantize: expected a floating-point tensor, got ", src.dtype());
  QuantTensor q;
  q.name = std::move(name);
  q.type = type;
  q.shape = src.shape();
  const size_t row_bytes = ggml_row_bytes(type, q.row_elems(), "quantize");
  const size_t total = size_t(checked_mul(int64_t(row_bytes), q.rows(), "quantize"));
  q.bytes = Buffer::allocate(src.device(), DType::U8, Shape{int64_t(total)});
  if (total == 0) return q;
  backend_for(src.device()).quantize(src.to(DType::F32).contiguous(), q);
  return q;
}

void detail::check_quant_product(std::string_view op, const Tensor& x, const QuantTensor& w, QuantActivation act) {
  WICK_CHECK(x.defined(), InvalidArgument, op, ": undefined activation");
  WICK_CHECK(x.device() == w.device(), DeviceMismatch, op, ": x is on ", x.device(), " but W '", w.name, "' is on ",
             w.device());
  WICK_CHECK(is_float(x.dtype()), DTypeMismatch, op, ": x must be floating point, got ", x.dtype());
  WICK_CHECK(x.rank() == 2 && w.shape.rank() == 2, ShapeMismatch, op, ": expected x (M, K) and W (N, K), got ",
             x.shape(), " and ", w.shape, " for '", w.name, "'");
  const int64_t K = x.dim(1), N = w.shape[0];
  WICK_CHECK(w.shape[1] == K, ShapeMismatch, op, ": x ", x.shape(), " and W '", w.name, "' ", w.shape,
             " disagree on K");
  const size_t row_bytes = ggml_row_bytes(w.type, K, op);
  WICK_CHECK(w.bytes.nbytes() == size_t(checked_mul(int64_t(row_bytes), N, op)), ShapeMismatch, op, ": W '", w.name,
             "' holds ", w.bytes.nbytes(), " bytes, not ", N, " rows of ", row_bytes);
  WICK_CHECK(act == QuantActivation::F32 || K % 32 == 0, ShapeMismatch, op,
             ": q8 activations round x per 32 values, so K must be a multiple of 32, got K = ", K, " for '", w.name,
             "'");
}

Tensor quant_matmul(const Tensor& x, const QuantTensor& w, QuantActivation act) {
  detail::check_quant_product("quant_matmul", x, w, act);
  const int64_t M = x.dim(0), K = x.dim(1), N = w.shape[0];
  if (M == 0 || N == 0 || K == 0) return zeros(Shape{M, N}, DType::F32, x.device());
  Tensor out = Tensor::empty(Shape{M, N}, DType::F32, x.device());
  backend_for(x.device()).quant_matmul(x, w, act, out);
  return out;
}

}  // namespace wick
