// The op surface on tensors. Every op checks its arguments (shapes, dtypes, devices)
// and raises wick::Error naming itself and the offending values; then it makes one call
// into the backend of the tensors' device. Elementwise binary ops broadcast numpy style
// and promote dtypes with promote_types (see docs/dtypes.md).
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "wick/tensor.h"

namespace wick {

// ---- unary ------------------------------------------------------------------------------
// Float dtypes unless noted; neg/abs/sqr/sign/relu also take integers (abs/neg of
// unsigned wrap as in C++, see docs/ops.md).
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sqr(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor recip(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor gelu(const Tensor& x);      // tanh approximation
Tensor gelu_erf(const Tensor& x);  // exact, with erf
Tensor relu(const Tensor& x);
Tensor silu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // half to even, as PyTorch
// x * mul + add, in x's dtype.
Tensor affine(const Tensor& x, double mul, double add);
Tensor powf(const Tensor& x, double exponent);
Tensor elu(const Tensor& x, double alpha = 1.0);
// min(max(x, lo), hi); either bound may be absent.
Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi);

// ---- binary (broadcasting, promoting) ---------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);

// ---- comparisons: u8 results (1 true, 0 false) ------------------------------------------------
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);

// cond (u8, u32 or i64; non-zero is true) ? t : f, all three broadcast together.
Tensor where(const Tensor& cond, const Tensor& t, const Tensor& f);

// Operators: tensor-tensor and tensor-scalar (the scalar takes the tensor's dtype).
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);

// ---- reductions -----------------------------------------------------------------------------
// dims empty means all dims. f16/bf16 sums accumulate in f32; integer sums in i64 then
// stored in the input dtype (wrapping like C++ unsigned arithmetic for u8/u32).
Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);  // floats only
Tensor prod(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor min(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);  // error if empty
Tensor max(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);  // error if empty
// Index (i64) of the first minimum/maximum along dim; over the flattened tensor when dim
// is absent. NaN counts as the maximum (and minimum), as in PyTorch.
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

// ---- scans, sorting, top-k (along one dim; docs/ops.md "Scans, sorting, top-k") ----------------
// Running sum / product along dim, x's shape. Integer inputs (u8, u32, i64) give i64 (as
// PyTorch), wrapping on overflow; floats keep their dtype (f16/bf16 accumulate in f32).
Tensor cumsum(const Tensor& x, int64_t dim);
Tensor cumprod(const Tensor& x, int64_t dim);
// values (x's dtype) and indices (i64) of the elements along dim in order. NaN is greater
// than every number, as PyTorch: last ascending, first descending.
struct SortResult {
  Tensor values, indices;
};
// Stable: equal elements keep their index order (in both directions).
SortResult sort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);  // sort's indices
// The k largest (or smallest) along dim, sorted best first, equal values by smaller index;
// 0 <= k <= x.shape[dim]. The result has x's shape with dim of size k.
SortResult topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true);

// ---- indexing (indices u8, u32 or i64; every index bounds-checked) ---------------------------
// Rows of src along dim picked by the 1-D indices.
Tensor index_select(const Tensor& src, int64_t dim, const Tensor& indices);
// out[i][j] = src[index[i][j]][j] (dim 0), etc.; index has src's rank.
Tensor gather(const Tensor& src, int64_t dim, const Tensor& index);
// A copy of dst with dst[index[i][j]][j] = src[i][j] (dim 0), etc.
Tensor scatter(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_add(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src);
// A copy of dst with the slices of src added at the 1-D indices along dim.
Tensor index_add(const Tensor& dst, int64_t dim, const Tensor& indices, const Tensor& src);
// In place: the slices of dst along dim at the 1-D indices become the slices of src (src
// has dst's shape except dim, whose size is indices.numel()). Indices must be distinct.
// The one in-place indexing op: it writes a KV cache at a position held on the device,
// which a CUDA graph can replay. Indices are read on the host and a bad or repeated
// index raises before anything is written; several indices held on an accelerator are
// copied to the host for that (so that call waits for the device and cannot be captured
// in a CUDA graph). A single index on an accelerator is only checked by the device: a
// bad one is raised at the next synchronization. src or indices sharing memory with dst
// are read through copies; dst must not be an expand()ed view (docs/ops.md).
void index_copy_(const Tensor& dst, int64_t dim, const Tensor& indices, const Tensor& src);
// weight[ids]: ids of any shape, weight (num_embeddings, dim) -> ids.shape + (dim).
Tensor embedding(const Tensor& ids, const Tensor& weight);

// ---- linear algebra -------------------------------------------------------------------------
// PyTorch's matmul: 1-D operands are promoted and the added dim removed; batch dims
// broadcast. Transposed/strided operands go to BLAS without copies where it can take them.
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- convolution, pooling, resampling ----------------------------------------------------------
struct Conv1dOptions {
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1, output_padding = 0;
};
struct Conv2dOptions {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1}, output_padding{0, 0};
  int64_t groups = 1;
};
// x (N, C, L), weight (C_out, C/groups, K) -> (N, C_out, L_out). bias may be undefined.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Conv1dOptions& opt = {});
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Conv2dOptions& opt = {});
// weight (C_in, C_out/groups, K...), as PyTorch.
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Conv1dOptions& opt = {});
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Conv2dOptions& opt = {});
struct Pool2dOptions {
  std::array<int64_t, 2> kernel{2, 2}, stride{0, 0} /* 0: = kernel */, padding{0, 0};
  bool count_include_pad = true;  // avg_pool2d only
};
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& opt);
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& opt);
Tensor upsample_nearest1d(const Tensor& x, int64_t out_len);
Tensor upsample_nearest2d(const Tensor& x, int64_t out_h, int64_t out_w);
Tensor upsample_bilinear2d(const Tensor& x, int64_t out_h, int64_t out_w, bool align_corners);

}  // namespace wick
