// The table of ggml types wick reads, and the row-size arithmetic every reader of packed
// data goes through (overflow-checked, block-multiple-checked).
#include <array>
#include <cctype>
#include <string>

#include "wick/quant.h"

namespace wick {

namespace {
// clang-format off
constexpr std::array<GgmlTypeInfo, 19> kTypes{{
    {GgmlType::F32, "f32", 1, 4},
    {GgmlType::F16, "f16", 1, 2},
    {GgmlType::Q4_0, "q4_0", 32, 18},
    {GgmlType::Q4_1, "q4_1", 32, 20},
    {GgmlType::Q5_0, "q5_0", 32, 22},
    {GgmlType::Q5_1, "q5_1", 32, 24},
    {GgmlType::Q8_0, "q8_0", 32, 34},
    {GgmlType::Q2_K, "q2_K", 256, 84},
    {GgmlType::Q3_K, "q3_K", 256, 110},
    {GgmlType::Q4_K, "q4_K", 256, 144},
    {GgmlType::Q5_K, "q5_K", 256, 176},
    {GgmlType::Q6_K, "q6_K", 256, 210},
    {GgmlType::I8, "i8", 1, 1},
    {GgmlType::I16, "i16", 1, 2},
    {GgmlType::I32, "i32", 1, 4},
    {GgmlType::I64, "i64", 1, 8},
    {GgmlType::F64, "f64", 1, 8},
    {GgmlType::BF16, "bf16", 1, 2},
    {GgmlType::MXFP4, "mxfp4", 32, 17},
}};
// clang-format on

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = char(std::tolower(static_cast<unsigned char>(c)));
  return r;
}
}  // namespace

std::optional<GgmlType> ggml_type_from_id(uint32_t id) {
  for (const auto& t : kTypes)
    if (uint32_t(t.type) == id) return t.type;
  return std::nullopt;
}

const GgmlTypeInfo& ggml_type_info(GgmlType type) {
  for (const auto& t : kTypes)
    if (t.type == type) return t;
  fail(ErrorKind::InvalidArgument, "ggml_type_info: unknown ggml type id ", uint32_t(type));
}

std::string_view ggml_type_name(GgmlType type) { return ggml_type_info(type).name; }

GgmlType ggml_type_from_name(std::string_view name) {
  const std::string want = lower(name);
  for (const auto& t : kTypes)
    if (lower(t.name) == want) return t.type;
  fail(ErrorKind::InvalidArgument, "ggml_type_from_name: unknown ggml type '", name,
       "' (known: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, mxfp4, i8, i16, i32, "
       "i64, f64)");
}

QuantActivation quant_activation_from_name(std::string_view name) {
  const std::string want = lower(name);
  if (want == "f32") return QuantActivation::F32;
  if (want == "q8") return QuantActivation::Q8;
  fail(ErrorKind::InvalidArgument, "quant_activation_from_name: unknown activation rounding '", name,
       "' (known: f32, q8)");
}

size_t ggml_row_bytes(GgmlType type, int64_t row_elems, std::string_view op) {
  const GgmlTypeInfo& t = ggml_type_info(type);
  WICK_CHECK(row_elems >= 0, InvalidArgument, op, ": negative row length ", row_elems);
  WICK_CHECK(row_elems % t.block_elems == 0, InvalidArgument, op, ": row of ", row_elems,
             " values is not a multiple of ", t.name, "'s block size ", t.block_elems);
  return size_t(checked_mul(row_elems / t.block_elems, int64_t(t.block_bytes), op));
}

int64_t QuantTensor::rows() const {
  const int64_t r = row_elems();
  return r == 0 ? 0 : shape.numel() / r;
}

}  // namespace wick
