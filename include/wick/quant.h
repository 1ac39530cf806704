// ggml block-quantized tensors on the CPU: the type table, the packed QuantTensor, and
// dequantize / quantize / matmul with an f32 activation.
//
// A quantized row of K values is K / block_elems consecutive blocks of block_bytes each
// (blocks always run along the innermost, contiguous dimension); rows follow each other
// with no padding. Dequantization is bit-exact with ggml's reference `to_float`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "wick/nn.h"
#include "wick/storage.h"
#include "wick/tensor.h"

namespace wick {

// ggml's type ids as stored in GGUF tensor infos. Only the ids below are accepted. The
// plain integer types and F64 (ids 24-28) are read and written as stored, but neither
// dequantized nor multiplied: gguf::plain_tensor() reads them exactly.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
  MXFP4 = 39,  // OCP microscaling fp4: 32 e2m1 values sharing an e8m0 scale (gpt-oss's experts)
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;  // ggml's spelling: "q4_K", "bf16", ...
  int64_t block_elems;    // values per block (1 for the float types)
  size_t block_bytes;     // bytes per block
};

// The type with this id, or nullopt for an id wick does not know.
std::optional<GgmlType> ggml_type_from_id(uint32_t id);
const GgmlTypeInfo& ggml_type_info(GgmlType type);
std::string_view ggml_type_name(GgmlType type);
// Parses "q4_K" / "q4_k" / "Q4_K", "f16", ...; throws InvalidArgument on an unknown name.
GgmlType ggml_type_from_name(std::string_view name);
// Bytes of one row of row_elems values; throws (op named) if row_elems is not a
// multiple of the block size or the byte count overflows.
size_t ggml_row_bytes(GgmlType type, int64_t row_elems, std::string_view op = "ggml_row_bytes");

// A tensor whose bytes stay packed in ggml's block format. shape is the logical
// (dequantized) row-major shape: reverse of ggml's ne. bytes is a u8 view of exactly
// shape.numel() / block_elems * block_bytes bytes (zero-copy into a GGUF mapping when
// read from a file).
struct QuantTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  Shape shape;
  Buffer bytes;
  // Innermost dimension (a row), 1 for rank-0, and the number of rows.
  int64_t row_elems() const { return shape.rank() == 0 ? 1 : shape[shape.rank() - 1]; }
  int64_t rows() const;
  // The device holding the bytes (the CPU for an undefined, empty tensor).
  Device device() const { return bytes.defined() ? bytes.device() : Device::cpu(); }
  // The same tensor with its bytes copied, still packed, to device (shares the bytes
  // when already there). The copy is contiguous and owned by device's allocator.
  QuantTensor to(Device device) const;
};

// Dequantizes one row run: n values (a multiple of the block size) from packed src to
// dst. The building block of everything below; exposed for tools and kernels.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

// The whole tensor dequantized into a new contiguous tensor of dtype (f32, f16 or bf16;
// the narrow types are rounded to nearest even from the exact f32 values) on q's device.
// The CUDA result is bit-identical to the CPU one.
Tensor dequantize(const QuantTensor& q, DType dtype = DType::F32);

// Quantizes a floating-point CPU tensor (any layout) to type with ggml's reference
// scalar algorithms. Supported: Q8_0, Q4_0, Q4_K, Q6_K, MXFP4 and the float types F32/F16/BF16.
// The last dimension must be a multiple of the block size.
QuantTensor quantize(const Tensor& src, GgmlType type, std::string name = {});

// How quant_matmul treats the activation x.
enum class QuantActivation {
  F32,  // exact f32 x against W (any weight type)
  Q8,   // x rounded to 8-bit blocks first, as ggml's matmuls round it, and the product of
        // that rounded x with W. On the CPU (as ggml's CPU): per 32 values to q8_0 (K % 32 ==
        // 0), per 256 to q8_K for the K-quants; q8_0, q4_0, mxfp4 and every K-quant (q2_K to q6_K)
        // take integer block dot products (AVX-512 VNNI or AVX2 where present, else the
        // scalar formula). On CUDA (as ggml's CUDA): per 32 for every type; the block types but
        // q2_K / q3_K take a dp4a kernel for M <= 8. Other combinations multiply the rounded
        // x in f32: the same value up to summation order.
};
// Parses "f32" / "q8" (any case); throws InvalidArgument naming the choices otherwise.
QuantActivation quant_activation_from_name(std::string_view name);

// y = x @ W^T for x (M, K) floating point and W a (N, K) QuantTensor on the same device:
// returns (M, N) f32 there. W is never expanded as a whole. On the CPU, with
// QuantActivation::F32 each thread dequantizes one row of W at a time into a small
// buffer; the work is split over N. On CUDA, M <= 8 runs a matrix-vector kernel that
// reads every weight block once for all M rows of x (with QuantActivation::Q8 on dp4a
// integer dot products: far fewer instructions per weight byte); larger M dequantizes bands of W rows to f32 and
// multiplies them with cuBLAS. Accumulates in f32.
Tensor quant_matmul(const Tensor& x, const QuantTensor& w, QuantActivation act = QuantActivation::F32);

// nn.h's fused linear for a packed weight: epilogue(x @ W^T + bias) (+ residual) for x (..., K)
// f32/f16/bf16 and W (N, K), or (2N, K) [gate; up] rows with a glu epilogue; the output (..., N)
// is out_dtype (default x's), and so are bias (N or 2N) and residual (..., N). The product is
// quant_matmul's (act says how x is rounded), accumulated in f32 and rounded once. On CUDA, for
// up to 64 rows of x, one kernel per 8 rows takes x in its dtype and writes the epilogue's
// value (a glu epilogue: one more pass); elsewhere quant_matmul, then linear_epilogue.
Tensor quant_linear(const Tensor& x, const QuantTensor& weight, QuantActivation act, const Tensor& bias = {},
                    const Tensor& residual = {}, const LinearEpilogue& epilogue = {},
                    std::optional<DType> out_dtype = {});
// quant_linear(rms_norm(x, norm_weight, eps), ...) as one op: on CUDA the matrix-vector kernel
// normalizes x while it stages it (in f32: the normalized x is never rounded to x's dtype).
Tensor rms_norm_quant_linear(const Tensor& x, const Tensor& norm_weight, double eps, const QuantTensor& weight,
                             QuantActivation act, const Tensor& bias = {}, const Tensor& residual = {},
                             const LinearEpilogue& epilogue = {}, std::optional<DType> out_dtype = {});

}  // namespace wick
