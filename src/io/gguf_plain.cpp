// GGUF tensors of the plain (unblocked) types read as exact wick tensors, and the test
// for which types dequantize() takes.
#include <cstring>

#include "wick/gguf.h"

namespace wick::gguf {

namespace {
// Copies n little-endian values of S from src, widening each to D.
template <class S, class D>
void widen(const uint8_t* src, D* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    S v;
    std::memcpy(&v, src + i * int64_t(sizeof(S)), sizeof(S));
    dst[i] = D(v);
  }
}
}  // namespace

bool dequantizable(GgmlType type) {
  switch (type) {
    case GgmlType::I8:
    case GgmlType::I16:
    case GgmlType::I32:
    case GgmlType::I64:
    case GgmlType::F64: return false;
    default: return true;
  }
}

Tensor plain_tensor(const QuantTensor& t) {
  WICK_CHECK(t.device().is_cpu(), Unsupported, "gguf plain_tensor: tensor '", t.name, "' must be on the CPU");
  DType dtype;
  switch (t.type) {
    case GgmlType::F32: dtype = DType::F32; break;
    case GgmlType::F16: dtype = DType::F16; break;
    case GgmlType::BF16: dtype = DType::BF16; break;
    case GgmlType::F64: dtype = DType::F64; break;
    case GgmlType::I8:
    case GgmlType::I16:
    case GgmlType::I32:
    case GgmlType::I64: dtype = DType::I64; break;  // wick's one signed integer type
    default:
      fail(ErrorKind::Unsupported, "gguf plain_tensor: tensor '", t.name, "' is block-quantized (",
           ggml_type_name(t.type), "); dequantize it");
  }
  const int64_t n = t.shape.numel();
  const size_t elem = ggml_type_info(t.type).block_bytes;
  WICK_CHECK(t.bytes.nbytes() == size_t(n) * elem, ShapeMismatch, "gguf plain_tensor: tensor '", t.name, "' of ",
             ggml_type_name(t.type), " ", t.shape, " holds ", t.bytes.nbytes(), " bytes");
  Tensor out = Tensor::empty(t.shape, dtype);
  if (n == 0) return out;
  const auto* src = static_cast<const uint8_t*>(t.bytes.data());
  auto* i64 = static_cast<int64_t*>(out.mutable_data());
  switch (t.type) {
    case GgmlType::I8: widen<int8_t>(src, i64, n); break;
    case GgmlType::I16: widen<int16_t>(src, i64, n); break;
    case GgmlType::I32: widen<int32_t>(src, i64, n); break;
    default: std::memcpy(out.mutable_data(), src, t.bytes.nbytes());  // same width, little-endian
  }
  return out;
}

}  // namespace wick::gguf
